"""Following a directory a running controller writes to (``--follow``, the TUI's ``f``): read
what Kafka appended since the last read, as live mode polls a quorum. No thread: the caller
reads when it needs the newest image (before each command, on a timer)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import Session


@dataclass
class Follow:
    """A directory followed: when it was last read, what stopped it (one line)."""

    read_at: float = 0.0  # time.monotonic()
    error: str | None = None

    def advance(self, session: Session) -> bool:
        """Read the appends; a failure (a segment deleted under us, a bad read) is kept for
        the header and the verdict instead of raised. True when the image advanced."""
        try:
            moved = read_appends(session)
        except Exception as e:
            self.error = str(e) or type(e).__name__
            return False
        self.error, self.read_at = None, time.monotonic()
        return moved


def read_appends(session: Session) -> bool:
    """What a running controller appended to the directory since it was read: like
    ``Session.advance``, except that a batch still being written at the end of the newest
    segment is not damage (it is read whole next time, from the same offset), and offsets
    deleted before they were read, held by a newer snapshot, make it load afresh."""
    source = session.source
    source.refresh()
    latest = session.latest
    stream = source.log_stream(latest.next_offset, None, latest.snapshot)
    batches = [loc.batch for loc in stream]
    segments = source.segments()
    newest = segments[-1].path if segments else None
    problems = [p for p in stream.problems if p.code != "truncated" or p.file != newest]
    if not batches:
        return False
    snapshots = source.snapshots()
    if batches[0].base_offset > latest.next_offset and snapshots and \
            snapshots[-1].end_offset >= batches[0].base_offset:
        # What was not read yet is gone, but a newer snapshot holds it: a controller far
        # behind replaced its log by the leader's snapshot. Load afresh, as live mode does
        # when the leader sends one. (A hole nothing holds is fed: the stream says it.)
        session.reload()
        return True
    session.feed(batches, problems)
    return True
