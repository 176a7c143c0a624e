"""The log's timeline for the history screen: its batches (up to the first damaged one),
snapshots and leader changes, scanned once; and the lookups between offsets and times over
it. No textual."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..tree.javafmt import iso_zoned_utc
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
            return iso_zoned_utc(t)
    return "-"


def offset_for(text: str, timeline: Callable[[], Timeline]) -> int | None:
    """An offset typed by the user: a number, 'latest', or a UTC time (ISO 8601, prefix
    allowed: 2024-04-24T23:06) meaning the last offset written at or before it.
    An offset past the log's end is refused here, so the box that asked stays open; ``at``
    checks the rest (below the log). ``timeline`` is not called for 'latest' (a scan of the
    log is slow; the history screen that asks has made it)."""
    text = text.strip()
    if text.lower() in ("latest", "end", "now", ""):
        return None
    if text.lstrip("-").isdigit():
        offset = int(text)
        if offset < 0:
            raise ValueError(f"offset {offset}: offsets are 0 or more")
        last = timeline().last
        if last is not None and offset > last:
            raise ValueError(f"offset {offset} is after the end of the log "
                             f"(the last is {last})")
        return offset
    ms = _epoch_ms(text)
    before = [last for _b, last, _n, t in timeline().batches if t <= ms]
    if not before:
        raise ValueError(f"nothing was written at or before {text}")
    return max(before)


def _epoch_ms(text: str) -> int:
    """A time typed as ISO 8601 (UTC unless it says otherwise), in ms since the epoch."""
    from datetime import UTC, datetime

    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is neither an offset nor a time like "
                         "2024-04-24T23:06") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)
