"""Every record of a source in offset order, decoded: what ``records`` and ``changes`` read."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .loader import UNDECODABLE, DirectorySource, Source
from .problems import Problem, SourceError
from .source.reader import iter_batches
from .source.reader import skip_below as skip_below_offset
from .wire import frames
from .wire.batch import iter_records
from .wire.control import CONTROL, control_name
from .wire.records import METADATA, record_name


@dataclass(slots=True)
class LogRecord:
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


def _files(source: Source, snapshot: str | None,
           problems: list[Problem]) -> Iterator[tuple[str, bytes]]:
    if not isinstance(source, DirectorySource):
        yield source.path, source.data()
        return
    paths = [snapshot] if snapshot is not None else [s.path for s in source.layout.segments]
    for path in paths:
        try:
            yield path, source.data(path)
        except SourceError as e:
            problems.append(Problem("unreadable", f"{e}; not shown", path))


def iter_log(source: Source, *, first: int | None = None, last: int | None = None,
             snapshot: str | None = None,
             problems: list[Problem] | None = None) -> Iterator[LogRecord]:
    """Records with ``first <= offset <= last``, from the log segments (or one snapshot)."""
    problems = problems if problems is not None else []
    for path, data in _files(source, snapshot, problems):
        name = os.path.basename(path)
        start = skip_below_offset(data, first)[0] if first else 0
        for batch in iter_batches(path, data, problems, start=start):
            if last is not None and batch.base_offset > last:
                return
            if first is not None and batch.last_offset < first:
                continue
            try:
                records = list(iter_records(batch))
            except UNDECODABLE as e:
                problems.append(Problem(
                    "corrupt", f"{name}: the batch at offsets {batch.base_offset}-"
                    f"{batch.last_offset} does not decode ({e}); the rest of the file is not "
                    "shown", path, batch.base_offset))
                break
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
