"""The one walker over the record batches of a file, with the one set of damage rules.

Files are opened read-only and never locked: a directory in use by a running Kafka is read as
it is. A truncated tail, an impossible length, a wrong magic or a CRC mismatch ends the file
with a :class:`Problem`; what came before is still used. Loading, ``records``, ``changes`` and
``/log`` all walk files through :func:`iter_batches` (``skip_to`` only fast-forwards it).
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Iterator

from ..problems import Problem, SourceError
from ..wire.batch import HEADER_SIZE, LOG_OVERHEAD, MIN_BATCH_LENGTH, Batch, parse_header

_PREFIX = struct.Struct(">qi")
# KRaft writes batches of at most 8 MiB; anything far above is a damaged length field.
MAX_BATCH_LENGTH = 64 * 1024 * 1024


def read_bytes(path: str, *, regular_only: bool = False) -> bytes:
    """The whole file, read-only; errors become one-line :class:`SourceError`.

    ``regular_only`` refuses FIFOs and devices, which could block or never end.
    """
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise SourceError(f"{path}: is a directory, not a file")
        if regular_only and not stat.S_ISREG(st.st_mode):
            raise SourceError(f"{path}: not a regular file (a FIFO or device?); not read")
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file (deleted while mdshell read the directory? "
                          "Kafka removes old segments after a snapshot)") from None
    except PermissionError:
        raise SourceError(f"{path}: permission denied; run mdshell as a user who can read it "
                          "(read access is enough)") from None
    except OSError as e:
        raise SourceError(f"{path}: cannot read ({e.strerror})") from None


_SKIP = struct.Struct(">qi9xhi")  # baseOffset, batchLength, attributes, lastOffsetDelta


def skip_to(data: bytes, offset: int) -> tuple[int, list[int], int | None]:
    """Where the first batch reaching ``offset`` starts, the positions of the control
    batches before it, and the last offset passed over (None: none). Only headers are read:
    batches below a snapshot's end offset do not contribute to the image, so they are neither
    checked nor decoded (a fast path for logs with tens of thousands of small batches).
    Anything odd stops the skip: the walker then applies its damage rules from there."""
    pos = 0
    controls: list[int] = []
    last: int | None = None
    limit = len(data) - HEADER_SIZE
    while pos <= limit:
        base, length, attrs, last_delta = _SKIP.unpack_from(data, pos)
        if (length < MIN_BATCH_LENGTH or pos + LOG_OVERHEAD + length > len(data)
                or base + last_delta >= offset):
            break  # reached the offset, or a header to check properly from here
        if attrs & 0x20:
            controls.append(pos)
        last = base + last_delta
        pos += LOG_OVERHEAD + length
    return min(pos, len(data)), controls, last


def iter_batches(path: str, data: bytes, problems: list[Problem],
                 *, check_crc: bool = True, start: int = 0,
                 after: int | None = None) -> Iterator[Batch]:
    """Yield the batches of ``data`` (the bytes of ``path``) until the end or the first damage
    (then one :class:`Problem` whose ``position`` is the byte where the damage starts).
    ``start`` and ``after`` go on from where :func:`skip_to` stopped."""
    name = os.path.basename(path)
    pos = start
    size = len(data)
    last = after  # the last offset of the last good batch (``after``: before ``start``)
    while pos < size:
        if size - pos < LOG_OVERHEAD:
            if data[pos:].strip(b"\0"):
                problems.append(_truncated(path, name, pos, None, size - pos, last))
            return
        base_offset, length = _PREFIX.unpack_from(data, pos)
        if length == 0 and not data[pos:].strip(b"\0"):
            return  # zero-filled (preallocated) tail: nothing more was written
        if length < MIN_BATCH_LENGTH or length > MAX_BATCH_LENGTH:
            # The header is garbage (a zeroed or overwritten region): its offset means nothing.
            problems.append(Problem(
                "corrupt",
                f"{name}: the batch at byte {pos} ({_after(last)}) has an impossible length "
                f"{length}; reading of this file stops there, later records are ignored "
                "(the file is damaged: copy it again from a healthy node)",
                path, _next(last, base_offset), pos))
            return
        end = pos + LOG_OVERHEAD + length
        if end > size or size - pos < HEADER_SIZE:
            problems.append(_truncated(path, name, pos, base_offset, size - pos, last,
                                       LOG_OVERHEAD + length))
            return
        batch = parse_header(data, pos)
        if batch.magic != 2:
            problems.append(Problem(
                "corrupt",
                f"{name}: the batch at byte {pos} ({_after(last)}) has magic {batch.magic}, "
                "not 2; reading of this file stops there (KRaft metadata logs only use v2 batches)",
                path, _next(last, base_offset), pos))
            return
        if check_crc and not batch.crc_ok():
            problems.append(Problem(
                "crc",
                f"{name}: CRC mismatch in the batch at byte {pos} (offsets {base_offset}-"
                f"{batch.last_offset}); this batch and everything after it in the file are "
                "ignored (the file is damaged: copy it again from a healthy node, or use "
                "--strict to fail on it)",
                path, base_offset, pos))
            return
        yield batch
        last = batch.last_offset
        pos = end


def _after(last: int | None) -> str:
    return "at the start of the file" if last is None else f"after offset {last}"


def _next(last: int | None, claimed: int) -> int:
    """Where the damage starts in offsets: after the last good batch, when there is one."""
    return claimed if last is None else last + 1


def _truncated(path: str, name: str, pos: int, base_offset: int | None, have: int,
               last: int | None, need: int | None = None) -> Problem:
    where = f"offset {base_offset}, byte {pos}" if base_offset is not None else f"byte {pos}"
    size = f" ({have} of {need} bytes)" if need else f" ({have} bytes)"
    stops = ("nothing in it is read" if last is None
             else f"reading of this file stops after offset {last}")
    return Problem(
        "truncated",
        f"{name}: the last batch ({where}) is incomplete{size}; {stops} (Kafka stopped while "
        "writing, or the copy is partial)",
        path, base_offset, pos)
