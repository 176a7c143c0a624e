"""What a snapshot replay leaves behind for ``changes``: the records it decoded (few: topics,
configs, brokers...) and where each batch's records lie, so that the partitions kept
undecoded in the image can be put back in file order without reading the snapshot again.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from ..wire.batch import Batch

# (batch ordinal, value position, api key, version, record, offset)
Entry = tuple[int, int, int, int, dict[str, Any], int]


@dataclass
class SnapshotIndex:
    """The records and batches of a snapshot, by offset."""

    records: list[Entry] = field(default_factory=list)
    batches: list[Batch] = field(default_factory=list)
    # the records the snapshot's replay applied (decoded ones, and PartitionRecords kept
    # undecoded): when the image holds fewer partitions than it stored, one was stored
    # twice (a batch repeated) or dropped, and the image cannot stand for its records
    applied: int = 0
    _starts: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def add_batch(self, batch: Batch, buf: bytes, first: int) -> int:
        """Note a batch whose records lie in ``buf`` from ``first``; returns its ordinal."""
        ordinal = len(self.batches)
        self.batches.append(batch)
        self._starts.setdefault(id(buf), []).append((first, ordinal))
        return ordinal

    def ordinal(self, buf: bytes, pos: int) -> int | None:
        """The ordinal of the batch holding the record at ``buf[pos]`` (None: not here)."""
        starts = self._starts.get(id(buf))
        if not starts:
            return None
        i = bisect.bisect_right(starts, (pos, 1 << 62)) - 1
        return starts[i][1] if i >= 0 else None
