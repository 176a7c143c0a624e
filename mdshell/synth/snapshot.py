"""Raft snapshot files: ``<20-digit end offset>-<10-digit epoch>.checkpoint``.

Layout (offsets start at 0 inside the file): a control batch with the SnapshotHeader (plus
KRaftVersion and Voters when kraft.version >= 1), the metadata batches, a control batch with
the SnapshotFooter. Records are appended in chunks (Kafka's snapshot emitter hands over 1024 at
a time) and a batch is closed when the next chunk would take it past ``max_batch_bytes``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Sequence
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

    ``overlap`` > 0 imitates Kafka 3.7's writer: each metadata batch after the first gets a
    base offset that many offsets below where the previous batch ended.
    """

    codec: Codec = NONE
    max_batch_bytes: int = MAX_BATCH_BYTES
    chunk_records: int = CHUNK_RECORDS
    overlap: int = 0
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
        for values in _batches(records, opts):
            base = offset
            delta = 0
            if opts.overlap and base > len(header):
                base, delta = offset - opts.overlap, opts.overlap
            f.write(metadata_batch(base, values, epoch=epoch, timestamp=timestamp,
                                   codec=opts.codec, first_delta=delta))
            offset += len(values)
        footer = [ControlRec(ctl.SNAPSHOT_FOOTER, {"version": 0})]
        f.write(control_batch(offset, footer, epoch=epoch, timestamp=timestamp))
    return path


def _batches(records: Iterable[Record], opts: SnapshotOptions) -> Iterable[list[bytes]]:
    """Group record values into batches of whole chunks, each within ``max_batch_bytes``."""
    it = iter(records)
    batch: list[bytes] = []
    size = 0
    while True:
        chunk = [r.value() for r in itertools.islice(it, opts.chunk_records)]
        if not chunk:
            break
        chunk_size = sum(map(len, chunk)) + _RECORD_OVERHEAD * len(chunk)
        if batch and size + chunk_size > opts.max_batch_bytes:
            yield batch
            batch, size = [], 0
        batch.extend(chunk)
        size += chunk_size
    if batch:
        yield batch
