"""Raft snapshot files: ``<20-digit end offset>-<10-digit epoch>.checkpoint``.

Layout (offsets start at 0 inside the file): a control batch with the SnapshotHeader (plus
KRaftVersion and Voters when kraft.version >= 1), the metadata batches, a control batch with
the SnapshotFooter. Records are appended in chunks (Kafka's snapshot emitter hands over 1024 at
a time) and a batch is closed when the next chunk would take it past ``max_batch_bytes``.

Kafka 3.7 and 3.8 appended a snapshot's chunks non-atomically (``RecordsSnapshotWriter.append``
calls ``BatchAccumulator.append(..., isAtomic=false)``): a batch is closed at the first *record*
that does not fit, and the next batch starts at ``nextOffset``, which ``append`` only moves
once the whole chunk is in. So a chunk that crosses a batch boundary starts its new batch at
the offset where that chunk began, with offset deltas from 0: its records repeat offsets the
previous batch already used, and every later record of that batch is shifted by as much.
Kafka's snapshot loader replays every record in file order and never looks at those offsets.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..wire import control as ctl
from .batches import NONE, Codec, control_batch, metadata_batch
from .records import ControlRec, Record

MAX_BATCH_BYTES = 8 * 1024 * 1024  # KafkaRaftClient's maximum batch size
CHUNK_RECORDS = 1024
_RECORD_OVERHEAD = 8  # framing bytes around a small record value (approximation for sizing)


def checkpoint_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


@dataclass(frozen=True, slots=True)
class Voter:
    """A KRaft voter: id, directory id and its controller endpoints (name, host, port)."""

    voter_id: int
    directory_id: bytes
    endpoints: tuple[tuple[str, str, int], ...]
    min_kraft: int = 0
    max_kraft: int = 1

    def record(self) -> dict[str, Any]:
        return {"voterId": self.voter_id, "voterDirectoryId": self.directory_id,
                "endpoints": [{"name": n, "host": h, "port": p} for n, h, p in self.endpoints],
                "kRaftVersionFeature": {"minSupportedVersion": self.min_kraft,
                                        "maxSupportedVersion": self.max_kraft}}


def kraft_records(kraft_version: int, voters: Sequence[Voter]) -> list[ControlRec]:
    """KRaftVersion + Voters control records (nothing for kraft.version 0)."""
    if kraft_version < 1:
        return []
    return [ControlRec(ctl.KRAFT_VERSION, {"version": 0, "kRaftVersion": kraft_version}),
            ControlRec(ctl.KRAFT_VOTERS, {"version": 0,
                                          "voters": [v.record() for v in voters]})]


@dataclass(slots=True)
class SnapshotOptions:
    """How to lay out a snapshot file.

    ``non_atomic`` imitates Kafka 3.7/3.8's writer (see the module docstring): batches are
    filled record by record, and one begun inside a chunk has that chunk's first offset.
    """

    codec: Codec = NONE
    max_batch_bytes: int = MAX_BATCH_BYTES
    chunk_records: int = CHUNK_RECORDS
    non_atomic: bool = False
    kraft_version: int = 0
    voters: Sequence[Voter] = field(default_factory=tuple)


def write_snapshot(directory: str, records: Iterable[Record], *, end_offset: int, epoch: int,
                   timestamp: int, last_contained_timestamp: int,
                   options: SnapshotOptions | None = None) -> str:
    """Write a snapshot file; returns its path. ``records`` may be a generator (streamed)."""
    opts = options or SnapshotOptions()
    path = os.path.join(directory, checkpoint_name(end_offset, epoch))
    header = [ControlRec(ctl.SNAPSHOT_HEADER, {"version": 0,
                                               "lastContainedLogTimestamp":
                                                   last_contained_timestamp}),
              *kraft_records(opts.kraft_version, opts.voters)]
    with open(path, "wb") as f:
        f.write(control_batch(0, header, epoch=epoch, timestamp=timestamp))
        offset = len(header)
        batches = _non_atomic_batches if opts.non_atomic else _batches
        for base, values in batches(records, opts, offset):
            f.write(metadata_batch(base, values, epoch=epoch, timestamp=timestamp,
                                   codec=opts.codec))
            offset += len(values)
        footer = [ControlRec(ctl.SNAPSHOT_FOOTER, {"version": 0})]
        f.write(control_batch(offset, footer, epoch=epoch, timestamp=timestamp))
    return path


def _chunks(records: Iterable[Record], opts: SnapshotOptions) -> Iterator[list[bytes]]:
    it = iter(records)
    while chunk := [r.value() for r in itertools.islice(it, opts.chunk_records)]:
        yield chunk


def _batches(records: Iterable[Record], opts: SnapshotOptions,
             offset: int) -> Iterator[tuple[int, list[bytes]]]:
    """(base offset, values): whole chunks per batch, each within ``max_batch_bytes``."""
    batch: list[bytes] = []
    size = 0
    for chunk in _chunks(records, opts):
        chunk_size = sum(map(len, chunk)) + _RECORD_OVERHEAD * len(chunk)
        if batch and size + chunk_size > opts.max_batch_bytes:
            yield offset, batch
            offset += len(batch)
            batch, size = [], 0
        batch.extend(chunk)
        size += chunk_size
    if batch:
        yield offset, batch


def _non_atomic_batches(records: Iterable[Record], opts: SnapshotOptions,
                        offset: int) -> Iterator[tuple[int, list[bytes]]]:
    """(base offset, values) as Kafka 3.7's ``BatchAccumulator`` lays out non-atomic appends:
    a new batch starts at the offset where the current chunk began."""
    base, size = offset, 0
    batch: list[bytes] = []
    for chunk in _chunks(records, opts):
        for value in chunk:
            need = len(value) + _RECORD_OVERHEAD
            if batch and size + need > opts.max_batch_bytes:
                yield base, batch
                base, batch, size = offset, [], 0
            batch.append(value)
            size += need
        offset += len(chunk)
    if batch:
        yield base, batch
