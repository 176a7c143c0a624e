"""Every record of a source in offset order, decoded: what ``records`` and ``changes`` read."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..problems import Problem
from ..wire import frames
from ..wire.batch import UNDECODABLE, iter_records
from ..wire.control import CONTROL, control_name
from ..wire.records import METADATA, record_name
from .base import BatchStream, Source
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
    same stream as the load: damage stops it, with the same warnings."""
    problems = problems if problems is not None else []
    if snapshot is not None:
        stream = source.snapshot_stream(snapshot)
    else:
        segments = source.segments()
        start = first if first is not None else (segments[0].base_offset if segments else 0)
        stream = source.log_stream(start, last)
    try:
        yield from _records(stream, first, last)
    finally:
        problems.extend(stream.problems)


def _records(stream: BatchStream, first: int | None,
             last: int | None) -> Iterator[LogRecord]:
    for located in stream:
        batch = located.batch
        name = os.path.basename(located.file)
        if last is not None and batch.base_offset > last:
            return
        try:
            records = list(iter_records(batch))
        except UNDECODABLE as e:
            stream.damaged(Problem(
                "corrupt", f"{name}: the batch at offsets {batch.base_offset}-"
                f"{batch.last_offset} does not decode ({e}); the rest is not shown",
                located.file, batch.base_offset))
            continue
        for rec in records:
            if (first is not None and rec.offset < first) or (
                    last is not None and rec.offset > last):
                continue
            if batch.is_control:
                ctype = frames.control_type(rec.key)
                yield LogRecord(rec.offset, batch.epoch, rec.timestamp, name, True, ctype, 0,
                                frames.decode_control(ctype, rec.value))
            else:
                if rec.value_end < 0:
                    continue
                key, ver, value = frames.decode_metadata(rec.buf, rec.value_pos,
                                                         rec.value_end)
                yield LogRecord(rec.offset, batch.epoch, rec.timestamp, name, False, key,
                                ver, value)


def schema_of(r: LogRecord) -> Any:
    return CONTROL.get(r.key) if r.control else METADATA.get(r.key)
