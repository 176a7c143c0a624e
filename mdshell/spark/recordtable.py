"""The ``records`` table: decoded log records, one row each, payload as JSON.

A clean log is read by :mod:`.fastlog` (per-record arrays, each distinct value decoded once);
any other by the shell's own reader (:func:`mdshell.source.logscan.iter_log`), so the damage
rules (CRC, truncation, undecodable batches) and the warnings are the shell's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ..problems import Problem, SourceError
from ..source import Source
from ..source.logscan import LogRecord, iter_log
from ..tree.logrecord import record_payload as payload_of
from ..wire.primitives import uuid_str
from . import fastlog
from .columns import TIME, View
from .logfiles import LogFile, iter_file, segment_files

RECORDS = pa.schema([
    ("offset", pa.int64()), ("epoch", pa.int32()), ("timestamp", pa.int64()), ("time", TIME),
    ("file", pa.string()), ("source", pa.string()), ("control", pa.bool_()), ("type", pa.string()),
    ("version", pa.int32()), ("broker_id", pa.int32()), ("topic_id", pa.string()),
    ("partition_id", pa.int32()), ("resource_type", pa.int32()),
    ("resource_name", pa.string()), ("name", pa.string()), ("payload", pa.string()),
])
# ``source``: "log" for a segment's records, "snapshot" for a snapshot's (the shell's table and
# the data source by default hold the log's only).
# Key fields lifted out of the payload into columns: broker_id, topic_id, partition_id,
# resource_type, resource_name and name (of a config or topic), null when a record has none.


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def records_table(records: Iterable[LogRecord], show_secrets: bool,
                  payload: bool = True, source: str = "log") -> pa.Table:
    """The ``records`` table of decoded log records (payload as JSON, secrets redacted;
    without ``payload`` that column is null, which halves the cost)."""
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    rows: list[tuple[Any, ...]] = []
    add = rows.append
    for r in records:
        v = r.value
        raw = v if isinstance(v, dict) else {}
        tid = raw.get("topicId")
        if not payload:
            text = None
        elif isinstance(v, dict) and not v:
            text = "{}"  # no fields (NoOpRecord, most of a quiet log): nothing to encode
        else:
            text = dumps(payload_of(r, show_secrets))
        add((r.offset, r.epoch, r.timestamp, r.timestamp * 1000, r.file, source, r.control,
             r.name,
             r.version, _int(raw.get("brokerId")),
             uuid_str(tid) if isinstance(tid, bytes) else None, _int(raw.get("partitionId")),
             _int(raw.get("resourceType")), _str(raw.get("resourceName")),
             _str(raw.get("name")), text))
    columns: list[Any] = list(zip(*rows, strict=True)) if rows else [[] for _ in RECORDS]
    return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, RECORDS,
                                                                     strict=True)],
                                schema=RECORDS)


def log_records(view: View) -> pa.Table:
    """The log's records; the reader's warnings go to ``view.warnings`` (a clean log read
    by :mod:`.fastlog` has none)."""
    if view.source.disk_layout() is not None:
        fast = _fast_log(view.source, view.show_secrets)
        if fast is not None:
            return fast
    problems: list[Problem] = []
    table = records_table(iter_log(view.source, problems=problems), view.show_secrets)
    view.warnings.extend(p.message for p in problems)
    return table


def _fast_log(source: Source, show_secrets: bool) -> pa.Table | None:
    """The whole log through :mod:`.fastlog`, file by file, when every segment is clean and
    each follows on from the one before (epochs included): then the shell's reader would
    read it all without a word, and gives these rows. None otherwise."""
    parts = []
    top = -1
    layout = source.disk_layout()
    assert layout is not None
    for f in segment_files(layout.directory, layout.segments):
        fast = fastlog.read_file(f.directory, f.path, f.role, f.first, f.last, source,
                                 top if top >= 0 else None)
        if fast is None or fast[5] is None:
            return None
        first_epoch, max_epoch, last_offset = fast[5]
        if first_epoch < top or (f.last is not None and last_offset != f.last):
            return None
        top = max(top, max_epoch)
        parts.append(fast_table(fast, os.path.basename(f.path), show_secrets, True, "log"))
    return pa.concat_tables(parts) if parts else None


def file_records(f: LogFile, show_secrets: bool, chunk: int = 65536, payload: bool = True,
                 types: frozenset[str] | None = None) -> Iterator[tuple[pa.Table, list[str]]]:
    """The records of one file in Arrow chunks, with the reader's warnings for the file (given
    with the last chunk). A clean file is read by :mod:`.fastlog`; any other by the shell's
    reader. ``types``: only records of these types (the others' rows and payloads are never
    built)."""
    source = "log" if f.role == "segment" else "snapshot"
    fast = fastlog.read_file(f.directory, f.path, f.role, f.first, f.last)
    if fast is not None:
        table = fast_table(fast, os.path.basename(f.path), show_secrets, payload, source,
                           types)
        del fast  # its decoded values are in the table now: not held while Spark reads
        for start in range(0, max(table.num_rows, 1), chunk):
            yield table.slice(start, chunk), []
        return
    problems: list[Problem] = []
    try:
        it = iter_file(f, problems)
        if types is not None:
            it = (r for r in it if r.name in types)
        while True:
            batch = [r for _, r in zip(range(chunk), it, strict=False)]
            if len(batch) < chunk:
                yield (records_table(batch, show_secrets, payload, source),
                       file_warnings(f, problems))
                return
            yield records_table(batch, show_secrets, payload, source), []
    except SourceError as e:
        yield records_table([], show_secrets), [*file_warnings(f, problems), str(e)]


def file_warnings(f: LogFile, problems: list[Problem]) -> list[str]:
    """The reader's warnings for one file, saying what this file-by-file reading did: the
    shell stops at a damaged segment ("later segments ... are not applied"), while here each
    segment is read on its own, from its base offset."""
    out: list[str] = []
    for p in problems:
        if p.code == "stopped":
            out.append(f"{os.path.basename(f.path)}: the rest of this file after the damage is "
                       "not read; the next segment is still read, from its base offset (the "
                       "shell's image stops at this damage)")
        else:
            out.append(p.message)
    return out


_NEVER_TAKEN = LogRecord(0, 0, 0, "", False, -1, -1, {})
_VALUE_COLUMNS = ("control", "type", "version", "broker_id", "topic_id", "partition_id",
                  "resource_type", "resource_name", "name", "payload")


def fast_table(fast: tuple[Any, ...], name: str, show_secrets: bool,
               payload: bool, source: str = "log", types: frozenset[str] | None = None
               ) -> pa.Table:
    """The ``records`` table from :func:`fastlog.read_file`: per-record columns from its
    arrays, value columns from the distinct values' rows (built by :func:`records_table`,
    so they are the same cells). ``types``: only the records of these types."""
    offsets, epochs, timestamps, index, distinct = fast[:5]
    if types is not None:
        wanted = [r is not None and r.name in types for r in distinct]
        distinct = [r if w else None for r, w in zip(distinct, wanted, strict=True)]
        if len(index):
            keep = np.array(wanted, bool)[index]
            offsets, epochs, timestamps, index = (offsets[keep], epochs[keep],
                                                  timestamps[keep], index[keep])
    rows = _distinct_rows(distinct, show_secrets, payload)
    n = len(offsets)
    cols: dict[str, Any] = {
        "offset": pa.array(offsets, pa.int64()), "epoch": pa.array(epochs, pa.int32()),
        "timestamp": pa.array(timestamps, pa.int64()),
        "time": pa.array(timestamps * 1000, pa.int64()).cast(TIME),
        "file": fastlog.constant(name, pa.string(), n),
        "source": fastlog.constant(source, pa.string(), n)}
    # A snapshot's values are all distinct, in order: its rows are the distinct rows.
    same = n == rows.num_rows and bool(np.array_equal(index, np.arange(n)))
    take = None if same else pa.array(index, pa.int32())
    for c in _VALUE_COLUMNS:
        cols[c] = rows.column(c) if take is None else rows.column(c).take(take)
    return pa.Table.from_arrays([cols[f.name] for f in RECORDS], schema=RECORDS)


def _distinct_rows(distinct: list[LogRecord | None], show_secrets: bool, payload: bool,
                   chunk: int = 65536) -> pa.Table:
    """The rows of the distinct values, built ``chunk`` values at a time: a file of a
    million distinct values (a large cluster's snapshot) never holds the Python rows and
    JSON texts of all of them at once beside their Arrow columns."""
    parts = [records_table([r if r is not None else _NEVER_TAKEN
                            for r in distinct[i:i + chunk]], show_secrets, payload)
             for i in range(0, len(distinct), chunk)]
    return pa.concat_tables(parts) if parts else records_table([], show_secrets, payload)
