"""Which offsets the data can rebuild an image of: the one rule time travel obeys.

An image as of offset O needs a start (the empty image before offset 0, or a snapshot at or
before O) and the log from there to O without a missing offset. So each snapshot is an image
of its own offset, and reaches on as far as the log goes on unbroken after it; the log from
offset 0 reaches as far as it goes unbroken. Offsets outside those spans (between snapshots
once the segments were deleted or not copied, after a missing segment, before the first
snapshot the log reaches) cannot be rebuilt: ``at`` refuses them instead of answering an older
image. Only batch headers are read (the load checks the rest and says where damage stops it).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..problems import SourceError
from ..source import Source
from ..source.cleanwalk import summary
from ..source.walker import iter_batches

Span = tuple[int, int]  # first and last offset, both included


@dataclass(frozen=True, slots=True)
class Rebuildable:
    """The offsets an image can be rebuilt at, as sorted disjoint spans; ``runs`` are the
    unbroken runs of offsets the log holds, ``snapshots`` the offsets of the snapshots."""

    spans: tuple[Span, ...]
    runs: tuple[Span, ...]
    snapshots: tuple[int, ...]

    @property
    def first(self) -> int | None:
        return self.spans[0][0] if self.spans else None

    @property
    def last(self) -> int | None:
        return self.spans[-1][1] if self.spans else None

    def covers(self, offset: int) -> bool:
        return any(a <= offset <= b for a, b in self.spans)

    def at_or_below(self, offset: int) -> int | None:
        """The newest offset at or before ``offset`` that can be rebuilt."""
        found = [min(b, offset) for a, b in self.spans if a <= offset]
        return max(found) if found else None

    def above(self, offset: int) -> int | None:
        """The oldest offset after ``offset`` that can be rebuilt."""
        found = [max(a, offset + 1) for a, b in self.spans if b > offset]
        return min(found) if found else None

    def text(self) -> str:
        """The spans for people: ``0-160, 291, 394-520`` (a few, when there are many)."""
        shown = [f"{a}-{b}" if a < b else str(a) for a, b in self.spans]
        if len(shown) > 4:
            shown = [*shown[:3], "...", shown[-1]]
        return ", ".join(shown)

    def why_not(self, offset: int) -> str:
        """Why ``offset`` (between ``first`` and ``last``, not covered) cannot be rebuilt, and
        the nearest offsets that can: one line."""
        below, above = self.at_or_below(offset), self.above(offset)
        assert below is not None
        run = next((r for r in self.runs if r[0] <= offset <= r[1]), None)
        if run is None:
            gap = (max([b + 1 for a, b in self.runs if b < offset], default=below + 1),
                   min([a - 1 for a, b in self.runs if a > offset], default=None))
            why = ("this copy holds snapshots but no log segment" if not self.runs
                   else "this copy's log is missing offsets "
                   + (f"{gap[0]}-{gap[1]}" if gap[1] is not None else f"from {gap[0]} on"))
            why += " (deleted, or not copied)"
        else:
            before = max([b for a, b in self.runs if b < run[0]], default=below)
            why = (f"offsets {before + 1}-{run[0] - 1} are missing from this copy's log, "
                   f"and no snapshot after them reaches offset {offset}")
        return f"{why}; {self._nearest(below, above)} (offsets {self.text()} can be rebuilt)"

    def _nearest(self, below: int, above: int | None) -> str:
        """``the nearest images are the snapshots at offsets 10 and 20``..."""
        if above is None:
            return f"the nearest image is {self._name(below)}"
        if below in self.snapshots and above in self.snapshots:
            return f"the nearest images are the snapshots at offsets {below} and {above}"
        return f"the nearest images are {self._name(below)} and {self._name(above)}"

    def _name(self, offset: int) -> str:
        return (f"the snapshot at offset {offset}" if offset in self.snapshots
                else f"offset {offset}")


def rebuildable(source: Source, end: int | None, unusable: set[str]) -> Rebuildable:
    """What ``source`` can rebuild, cut at ``end`` (where damage stops the load), the
    ``unusable`` snapshots (paths: damaged, half-written) left out."""
    snaps = sorted({c.end_offset - 1 for c in source.snapshots() if c.path not in unusable})
    runs = _runs(source)
    spans: list[Span] = []
    if runs and (runs[0][0] == 0 or source.kind == "file"
                 or not any(s + 1 >= runs[0][0] for s in snaps)):
        # The log from offset 0; or (one file, or no snapshot reaching the log) from its
        # first batch, as the latest load reads it (incomplete, and it says so).
        spans.append(runs[0])
    for s in snaps:
        run = next((r for r in runs if r[0] <= s + 1 <= r[1]), None)
        spans.append((s, s if run is None else run[1]))
    if end is not None:
        spans = [(a, min(b, end)) for a, b in spans if a <= end]
    return Rebuildable(_merge(spans), runs, tuple(snaps))


def _runs(source: Source) -> tuple[Span, ...]:
    """The unbroken runs of offsets the log's batch headers hold: their union, so a batch
    out of order (repeated, or a damaged header far off) neither hides nor fills a hole;
    negative offsets are damage, not offsets."""
    if source.kind == "file":
        first, last = source.offset_range()
        return () if first is None or last is None else ((first, last),)
    found: list[Span] = []
    run: list[int] | None = None
    for seg in source.segments():
        try:
            data = source.file_bytes(seg.path)
        except SourceError:  # unreadable: the load says so; nothing of it can be rebuilt
            continue
        clean = summary(data, seg.base_offset)
        if clean is not None:  # one run of offsets, as the walk below would find it
            if run is not None and run[0] <= clean.first_offset <= run[1] + 1:
                run[1] = max(run[1], clean.last_offset)
            else:
                if run is not None:
                    found.append((run[0], run[1]))
                run = [clean.first_offset, clean.last_offset]
            continue
        for b in iter_batches(seg.path, data, [], check_crc=False):
            if b.last_offset < 0:
                continue
            if run is not None and run[0] <= b.base_offset <= run[1] + 1:
                run[1] = max(run[1], b.last_offset)  # the usual case: the run goes on
                continue
            if run is not None:
                found.append((run[0], run[1]))
            run = [max(b.base_offset, 0), b.last_offset]
    if run is not None:
        found.append((run[0], run[1]))
    return _merge(found)


def _merge(spans: list[Span]) -> tuple[Span, ...]:
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)
