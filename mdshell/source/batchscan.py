"""Batch headers of a source, as ``kafka-dump-log`` lists them, and time -> offset.

Only headers are read (the CRC is checked over the bytes): listing the batches of a log or
finding the offset of a time never decodes a record.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from ..problems import Problem, SourceError, add
from ..wire.batch import (
    CONTROL_FLAG,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    TRANSACTIONAL_FLAG,
    Batch,
    parse_header,
)
from ..wire.compression import NAMES as CODEC_NAMES
from .base import Source
from .file import FileSource
from .walker import (
    MAX_BATCH_LENGTH,
    Before,
    _truncated,
    header_damage,
    peek,
    skip_of,
    true_end,
    zero_filled,
)

_BASE_LENGTH = 12


@dataclass(slots=True)
class BatchInfo:
    """One batch header: what ``kafka-dump-log`` prints for a batch."""

    file: str
    position: int
    base_offset: int
    last_offset: int
    size: int
    epoch: int
    crc: int
    crc_valid: bool
    compression: str
    producer_id: int
    producer_epoch: int
    base_sequence: int
    transactional: bool
    control: bool
    count: int
    base_timestamp: int
    max_timestamp: int
    magic: int = 2
    log_append_time: bool = False
    delete_horizon: bool = False
    header_damage: str | None = None  # a damaged header field outside the CRC (skipped)

    @property
    def last_sequence(self) -> int:
        """Kafka's DefaultRecordBatch.lastSequence (sequences wrap at Integer.MAX_VALUE)."""
        if self.base_sequence == -1:
            return -1
        delta = self.last_offset - self.base_offset
        if self.base_sequence > INT_MAX - delta:
            return delta - (INT_MAX - self.base_sequence) - 1
        return self.base_sequence + delta


INT_MAX = 2**31 - 1
_LOG_APPEND_TIME, _DELETE_HORIZON = 0x08, 0x40


def _files(source: Source, snapshot: str | None, problems: list[Problem],
           ) -> Iterator[tuple[str, bytes, int | None, bool]]:
    """Each file to list: path, bytes, the offset its name gives (None: unknown) and whether
    its offsets are dense (a log segment, not a snapshot)."""
    if isinstance(source, FileSource):
        yield source.path, source.data(), source.first, source.dense
        return
    files = ([(snapshot, None, False)] if snapshot is not None
             else [(s.path, s.base_offset, True) for s in source.segments()])
    for path, first, dense in files:
        try:
            yield path, source.file_bytes(path), first, dense
        except SourceError as e:
            problems.append(Problem("unreadable", f"{e}; not shown", path))


def file_batches(path: str, data: bytes, problems: list[Problem], *, first: int | None = None,
                 dense: bool = False) -> Iterator[BatchInfo]:
    """Every batch of one file. A CRC mismatch is shown (``crc_valid`` False) and the walk
    goes on by the batch length, as kafka-dump-log does; a length field that the CRC shows
    damaged is stepped over to where the batch really ends; an impossible length or a
    truncated batch ends the file with a warning. A header field outside the CRC that the
    walker's rules find damaged (``header_damage``) is named, with a warning: the loader
    skips that batch."""
    name = os.path.basename(path)
    pos, size = 0, len(data)
    before = Before(None if first is None else first - 1)
    while pos < size:
        if size - pos < _BASE_LENGTH or int.from_bytes(data[pos + 8:pos + 12], "big",
                                                         signed=True) == 0:
            if not zero_filled(data, pos):  # said as the loader says it: one message
                problems.append(_truncated(path, name, pos, None, size - pos, before.last))
            return
        length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        end = pos + LOG_OVERHEAD + length
        fits = (MIN_BATCH_LENGTH <= length <= MAX_BATCH_LENGTH and end <= size
                and size - pos >= HEADER_SIZE)
        b = parse_header(data, pos) if size - pos >= HEADER_SIZE else None
        if b is not None and not (fits and b.crc_ok()):
            real = true_end(data, pos, None if before.last is None else before.last + 1)
            if real is not None and real != end:
                yield _info(name, b, real - pos, "length", problems, path, before)
                pos = real
                continue
        if MIN_BATCH_LENGTH <= length <= MAX_BATCH_LENGTH and (b is None or end > size):
            # Cut short, inside its header too: in the loader's words and sizes (the
            # batch's whole size), its base offset from its first 8 bytes.
            base = int.from_bytes(data[pos:pos + 8], "big", signed=True)
            problems.append(_truncated(path, name, pos, base, size - pos, before.last,
                                       LOG_OVERHEAD + length))
            return
        if not fits or b is None:
            problems.append(Problem("corrupt", f"{name}: the batch at byte {pos} has length "
                                    f"{length}, which does not fit the file ({size} bytes); "
                                    "the listing stops there", path))
            return
        damage = None
        if b.crc_ok():
            damage = "magic" if b.magic != 2 else (
                header_damage(before, b, peek(data, end)) if dense else None)
        yield _info(name, b, b.size, damage, problems, path, before)
        pos = end


def _info(name: str, b: Batch, size: int, damage: str | None, problems: list[Problem],
          path: str, before: Before) -> BatchInfo:
    """The listing's row for ``b`` (``size``: its true size); moves ``before`` past it."""
    if damage is not None:
        skip = skip_of(path, name, b.pos, b, before, damage, b.length,
                        size - LOG_OVERHEAD)
        add(problems, skip.problem)
        before.last = skip.last
    else:
        before.last, before.epoch = b.last_offset, b.epoch
    before.in_file = True
    return BatchInfo(name, b.pos, b.base_offset, b.last_offset, size, b.epoch, b.crc,
                     b.magic == 2 and b.crc_ok(),
                     CODEC_NAMES.get(b.compression, f"unknown({b.compression})"),
                     b.producer_id, b.producer_epoch, b.base_sequence,
                     bool(b.attributes & TRANSACTIONAL_FLAG),
                     bool(b.attributes & CONTROL_FLAG), b.count, b.base_timestamp,
                     b.max_timestamp, b.magic, bool(b.attributes & _LOG_APPEND_TIME),
                     bool(b.attributes & _DELETE_HORIZON), damage)


def iter_batch_infos(source: Source, *, snapshot: str | None = None,
                     problems: list[Problem] | None = None) -> Iterator[BatchInfo]:
    """The batches of the log segments in order (or of one snapshot file)."""
    problems = problems if problems is not None else []
    for path, data, first, dense in _files(source, snapshot, problems):
        yield from file_batches(path, data, problems, first=first, dense=dense)


# ---------------------------------------------------------------- time -> offset


def parse_time(text: str) -> int | None:
    """Epoch millis of an ISO-8601 time (``2025-01-16T04:00Z``, ``2025-01-16 04:00:00+02:00``,
    ``2025-01-16``); a time without a zone is UTC. None when ``text`` is not a time."""
    if len(text) < 10 or text[4:5] != "-" or not text[:4].isdigit():
        return None
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return int(t.timestamp() * 1000)


@dataclass(slots=True)
class TimePoint:
    """Where a time falls in the log: the last offset before the first batch stamped after
    it (Kafka's offsetsForTimes rule)."""

    offset: int | None  # None: the time is before every batch
    first_time: int | None  # the max timestamp of the first valid batch
    last_time: int | None  # of the last valid batch


def offset_at_time(source: Source, ms: int) -> TimePoint:
    """The last offset before the first batch whose max timestamp is after ``ms`` (a later
    batch stamped earlier, a clock stepping back, does not count), scanning batch headers in
    log order up to the first damage (what the loader can use)."""
    point = TimePoint(None, None, None)
    for b in iter_batch_infos(source):
        if b.header_damage is not None:
            continue  # the loader skips it; its header may claim any offset
        if not b.crc_valid:
            break
        if point.first_time is None:
            point.first_time = b.max_timestamp
        point.last_time = b.max_timestamp
        if b.max_timestamp > ms:
            break
        point.offset = b.last_offset
    return point


# ---------------------------------------------------------------- snapshots as time points


@dataclass(slots=True)
class SnapshotPoint:
    """A snapshot: the image as of ``offset`` (its end offset - 1), and the time of the last
    record it contains (its SnapshotHeader's lastContainedLogTimestamp; None if unreadable)."""

    offset: int
    time_ms: int | None
    name: str


def snapshot_points(source: Source) -> list[SnapshotPoint]:
    """The ready snapshots of a source, oldest first (the bootstrap one left out). Each
    is an exact image even when the log below the oldest segment was deleted."""
    return [SnapshotPoint(cp.end_offset - 1,
                          _header_time(cp.path, source.file_head(cp.path, 64 * 1024)), cp.name)
            for cp in source.snapshots()]


def _header_time(path: str, head: bytes | None) -> int | None:
    from ..wire import control as ctl
    from ..wire import frames
    from ..wire.batch import iter_records

    if not head:
        return None
    problems: list[Problem] = []
    for b in file_batches(path, head, problems):
        if not (b.crc_valid and b.control):
            return None
        try:
            batch = parse_header(head, b.position)
            for rec in iter_records(batch):
                if frames.control_type(rec.key) == ctl.SNAPSHOT_HEADER:
                    value = frames.decode_control(ctl.SNAPSHOT_HEADER, rec.value)
                    if isinstance(value, dict):
                        return int(value["lastContainedLogTimestamp"])
        except (ValueError, IndexError, KeyError, struct.error):
            return None
        return None
    return None
