"""Every record of a source in offset order, decoded: what ``records`` and ``changes`` read."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..problems import Problem
from ..wire import frames, framing
from ..wire.batch import UNDECODABLE, Batch
from ..wire.control import CONTROL, control_name
from ..wire.decoding import decode_records
from ..wire.framing import INT64_MAX, INT64_MIN
from ..wire.records import METADATA, record_name
from .base import BatchStream, Source, undecodable
from .layout import Checkpoint


@dataclass(slots=True)
class LogRecord:
    """One record of the log as ``records`` lists it."""

    offset: int
    epoch: int
    timestamp: int
    file: str
    control: bool
    key: int  # metadata api key, or control type
    version: int
    value: dict[str, Any] | frames.Unknown

    @property
    def name(self) -> str:
        if self.control:
            msg = CONTROL.get(self.key)
            return msg.name if msg else control_name(self.key)
        return record_name(self.key)


def iter_log(source: Source, *, first: int | None = None, last: int | None = None,
             snapshot: Checkpoint | None = None,
             problems: list[Problem] | None = None) -> Iterator[LogRecord]:
    """Records with ``first <= offset <= last``, from the log (or one snapshot), read by the
    same stream as the load: damage stops it, with the same warnings. The log is read from
    where it starts: a ``first`` below its first segment (offsets Kafka deleted after a
    snapshot) is no gap in it, and says nothing of the image."""
    problems = problems if problems is not None else []
    if snapshot is not None:
        stream = source.snapshot_stream(snapshot)
    else:
        segments = source.segments()
        begins = segments[0].base_offset if segments else 0
        start = begins if first is None else max(first, begins)
        stream = source.log_stream(start, last)
    try:
        yield from _records(stream, first, last)
    finally:
        problems.extend(stream.problems)


def _records(stream: BatchStream, first: int | None,
             last: int | None) -> Iterator[LogRecord]:
    for located in stream:
        batch = located.batch
        if last is not None and batch.base_offset > last:
            return
        try:
            rows = batch_records(batch, os.path.basename(located.file), first, last)
        except UNDECODABLE as e:
            stream.damaged(undecodable(located, e))
            continue
        yield from rows


def batch_records(batch: Batch, name: str, first: int | None = None,
                  last: int | None = None) -> list[LogRecord]:
    """The records of one batch with ``first <= offset <= last``, decoded as replay decodes
    them (:func:`~mdshell.wire.decoding.decode_records`, every PartitionRecord decoded,
    NoOps kept), all before any is handed out: a
    batch that does not decode raises, as it stops the load."""
    buf, pos, end = batch.payload()
    shape = framing.FULL if batch.is_control else framing.METADATA
    framed = framing.frame(buf, pos, end, batch.count, batch.base_offset,
                           batch.base_timestamp, shape, batch.is_control, batch.size)
    lo = first if first is not None else INT64_MIN
    hi = last if last is not None else INT64_MAX
    if batch.is_control:
        out: list[LogRecord] = []
        for off, ts, _a, kpos, kend, vpos, vend, _h in framed:
            ctype = frames.control_type(bytes(buf[kpos:kend]))
            if lo <= off <= hi:
                out.append(LogRecord(off, batch.epoch, ts, name, True, ctype, 0,
                                     frames.decode_control(ctype, bytes(buf[vpos:vend]))))
        return out
    decoded, _ = decode_records(buf, framed, lo, hi, lazy=False, noops=True)
    ts = batch.base_timestamp  # every record's: the framing takes timestamp deltas of 0 only
    return [LogRecord(off, batch.epoch, ts, name, False, key, ver, value)
            for off, key, ver, value, _vpos in decoded]


def schema_of(r: LogRecord) -> Any:
    return CONTROL.get(r.key) if r.control else METADATA.get(r.key)
