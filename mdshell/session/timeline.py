"""The log's timeline, as a front end draws it: its batches (up to the first damaged one),
snapshots and leader changes, scanned once from batch headers; and the time of an offset
over it. What an offset or a time typed by a user means is the shell's ``at`` rule, not
this module's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import Session


@dataclass
class Timeline:
    first: int | None
    last: int | None
    batches: list[tuple[int, int, int, int]]  # base offset, last offset, records, max time
    snapshots: list[int]  # last offsets covered by each snapshot
    leader_changes: list[tuple[int, int, int]]  # offset, leader id, epoch
    noops: frozenset[int] = frozenset()  # base offsets of the batches of one NoOpRecord

    def bucket(self, offset: int, n: int) -> int:
        """Which of ``n`` equal offset ranges holds ``offset`` (what :meth:`buckets` counts
        it in; with more ranges than offsets, some ranges hold none)."""
        first, last = self.first or 0, self.last or 0
        span = max(last - first + 1, 1)
        return min(max(offset - first, 0) * n // span, n - 1)

    def buckets(self, n: int, changes: bool = False) -> tuple[list[int], list[int]]:
        """Records per bucket and each bucket's first offset, ``n`` equal offset ranges;
        ``changes``: without the NoOp batches (what an operator looks for)."""
        if self.first is None or self.last is None or n <= 0:
            return [], []
        span = max(self.last - self.first + 1, 1)
        # the least offset each range holds: i*span/n rounded up
        starts = [self.first + -(-i * span // n) for i in range(n)]
        ends = [s - 1 for s in starts[1:]] + [self.last]
        counts = [0] * n
        for base, last, records, _t in self.batches:
            if changes and base in self.noops:
                continue
            lo, hi = self.bucket(base, n), self.bucket(last, n)
            if lo == hi:
                counts[lo] += records
                continue
            for i in range(lo, hi + 1):  # a batch over several ranges: its offsets in each
                counts[i] += max(0, min(last, ends[i]) - max(base, starts[i]) + 1)
        return counts, starts

    def time_at(self, offset: int) -> int | None:
        """The max timestamp (ms) of the batch holding ``offset``; None: no batch holds it."""
        for base, last, _n, t in self.batches:
            if base <= offset <= last:
                return t
        return None


def scan_timeline(session: Session) -> Timeline:
    """The timeline of what ``session`` reads: batch headers of every segment up to the first
    one the loader cannot use, the snapshots, the latest image's leader changes."""
    from ..source.batchscan import _files, file_batches, snapshot_points
    from ..wire import control as ctl

    source = session.source
    first, last = session.offset_range()  # cut where damage stops a load
    batches = []
    noops = set()
    for path, data, base, dense in _files(source, None, []):
        for b in file_batches(path, data, [], first=base, dense=dense):
            if b.header_damage is not None:
                continue  # the loader skips it: its header may claim any offset
            if not b.crc_valid:
                break  # what the loader can use ends here
            batches.append((b.base_offset, b.last_offset, b.count, b.max_timestamp))
            if b.count == 1 and not b.control and b.compression == "none" \
                    and is_noop(data, b.position):
                noops.add(b.base_offset)
        else:
            continue
        break
    snaps = sorted(p.offset for p in snapshot_points(source))
    leaders = [(c.offset, c.value["leaderId"], c.epoch) for c in session.latest.controls
               if c.ctype == ctl.LEADER_CHANGE and isinstance(c.value, dict)]
    return Timeline(first, last, batches, snaps, leaders, frozenset(noops))



def is_noop(data: bytes, position: int) -> bool:
    """Whether the uncompressed batch at ``position`` holds one NoOpRecord (the wire layer's
    one framing says)."""
    from ..wire.batch import is_noop_batch

    return is_noop_batch(data, position)
