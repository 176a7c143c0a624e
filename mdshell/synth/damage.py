"""Damage written files on purpose, the ways real directories get damaged.

Used for the bad-input fixtures: a tail cut mid-batch (Kafka killed while writing, or a partial
copy), a flipped byte inside a batch (CRC mismatch), a truncated snapshot.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..wire.batch import HEADER_SIZE, LOG_OVERHEAD

_PREFIX = struct.Struct(">qi")


@dataclass(frozen=True, slots=True)
class Span:
    """Where one batch lies in a file."""

    start: int
    end: int
    base_offset: int


def batch_spans(path: str) -> list[Span]:
    """The batches of a well-formed file, by their length fields."""
    with open(path, "rb") as f:
        data = f.read()
    spans = []
    pos = 0
    while pos + LOG_OVERHEAD <= len(data):
        base, length = _PREFIX.unpack_from(data, pos)
        end = pos + LOG_OVERHEAD + length
        spans.append(Span(pos, end, base))
        pos = end
    return spans


def truncate(path: str, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


def cut_last_batch(path: str, keep_fraction: float = 0.5) -> Span:
    """Cut the file inside its last batch; returns the batch that was cut."""
    last = batch_spans(path)[-1]
    truncate(path, last.start + int((last.end - last.start) * keep_fraction))
    return last


def flip_byte(path: str, batch_index: int) -> Span:
    """Invert one byte of a batch's records section, so its CRC no longer matches."""
    span = batch_spans(path)[batch_index]
    pos = span.start + HEADER_SIZE + (span.end - span.start - HEADER_SIZE) // 2
    with open(path, "r+b") as f:
        f.seek(pos)
        b = f.read(1)
        f.seek(pos)
        f.write(bytes([b[0] ^ 0xFF]))
    return span
