"""The log's timeline for the history screen: its batches (up to the first damaged one),
snapshots and leader changes, scanned once; and the time of an offset over it (what an
offset or a time typed there means is the shell's ``at`` rule). No textual."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .fmt import ui_time
from .rows import Timeline

if TYPE_CHECKING:
    from ..commands import Shell
    from ..source import Source


def scan_timeline(source: Source, sh: Shell) -> Timeline:
    from ..source.batchscan import iter_batch_infos, snapshot_points
    from ..wire import control as ctl

    first, last = sh.session.offset_range()  # cut where damage stops a load
    batches = []
    for b in iter_batch_infos(source):
        if b.header_damage is not None:
            continue  # the loader skips it: its header may claim any offset
        if not b.crc_valid:
            break  # what the loader can use ends here
        batches.append((b.base_offset, b.last_offset, b.count, b.max_timestamp))
    snaps = sorted(p.offset for p in snapshot_points(source))
    leaders = [(c.offset, c.value["leaderId"], c.epoch) for c in sh.latest.controls
               if c.ctype == ctl.LEADER_CHANGE and isinstance(c.value, dict)]
    return Timeline(first, last, batches, snaps, leaders)


def time_at(timeline: Timeline, offset: int) -> str:
    """The timestamp of the batch holding ``offset`` (for the history cursor)."""
    for base, last, _n, t in timeline.batches:
        if base <= offset <= last:
            return ui_time(t)
    return "-"
