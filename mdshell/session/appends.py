"""Reading a directory again (the TUI's ``r``) and following one a running controller writes
to (``--follow``, the TUI's ``f``): the verdict comes from what is on disk now.

Kafka only appends to its files (and deletes those a snapshot holds): what was appended since
the last read is read and applied, and what was said about the end of the log (cut short,
damage, an open transaction) is judged again from the bytes there now. A last batch cut
short in the newest segment is the one Kafka is writing: said, not damage. A file that shrank or
whose bytes before the point already read are not the same (a copy replaced, a log
truncated and written again) is said, and the directory is loaded afresh. No thread: the
caller reads when it needs the newest image (before each command, on a timer).
"""

from __future__ import annotations

import os
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..problems import Problem, SourceError
from ..source.walker import MAX_BATCH_LENGTH
from ..wire.batch import MIN_BATCH_LENGTH

if TYPE_CHECKING:
    from . import Session

_OFFSET, _LENGTH = struct.Struct(">q"), struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class Reread:
    """What reading the directory again did: ``advanced``, the latest image moved (records
    appended, or a fresh load); ``reloaded``, why it was loaded afresh (None: it was not)."""

    advanced: bool
    reloaded: str | None = None


@dataclass
class Follow:
    """A directory followed: when it was last read, what stopped it (one line)."""

    read_at: float = 0.0  # time.monotonic()
    error: str | None = None
    last: Reread | None = None  # what the last read did

    def advance(self, session: Session) -> bool:
        """Read the directory again (:func:`reread`); a file that cannot be read any more
        (deleted under us, permissions) is kept for the header and the verdict instead of
        raised. True when the image advanced."""
        try:
            self.last = reread(session)
        except (SourceError, OSError) as e:
            self.error = str(e) or type(e).__name__
            return False
        self.error, self.read_at = None, time.monotonic()
        return self.last.advanced


def _being_written(p: Problem, data: bytes, expected: int) -> Problem:
    """A cut last batch of the newest segment, found by reading the directory again: when
    its bytes can start the batch after the last one read (its base offset ``expected``, a
    length Kafka writes), the batch Kafka is writing (read when it is whole), said as a
    notice; else the damage it is."""
    tail = data[p.position:] if p.position is not None else b""
    if not tail or not could_start(tail, expected):
        return p
    where = p.message.split(": the last batch", 1)[-1].split(";", 1)[0]
    return Problem("writing", f"{os.path.basename(p.file or '')}: the last batch{where}; Kafka "
                   "is still writing it (it is read when whole)", p.file, p.offset, p.position)


def could_start(head: bytes, base: int) -> bool:
    """Whether ``head`` (fewer bytes than a whole batch) can be the start of a batch at
    offset ``base``: its first 8 bytes that base offset, its length one Kafka writes."""
    if head[:8] != _OFFSET.pack(base)[:len(head)]:
        return False
    if len(head) < 12:
        return True
    (length,) = _LENGTH.unpack_from(head, 8)
    return MIN_BATCH_LENGTH <= length <= MAX_BATCH_LENGTH


def reread(session: Session) -> Reread:
    """Read ``session``'s directory again and judge it anew (see the module's docstring)."""
    source = session.source
    source.refresh()
    latest = session.latest
    for read in latest.files:
        why = source.changed(read)
        if why is not None:
            name = os.path.basename(read.path)
            session.reload([Problem(
                "reloaded", f"{name}: {why} since it was read, so the directory was loaded "
                "afresh (the image is what the files hold now)", read.path)])
            return Reread(True, f"{name}: {why}")
    stream = source.log_stream(latest.next_offset, None, latest.snapshot)
    located = list(stream)
    snapshots = source.snapshots()
    if located and located[0].batch.base_offset > latest.next_offset and snapshots and \
            snapshots[-1].end_offset >= located[0].batch.base_offset:
        # What was not read yet is gone, but a newer snapshot holds it: a controller far
        # behind replaced its log by the leader's snapshot. Load afresh, as live mode does
        # when the leader sends one. (A hole nothing holds is fed: the stream says it.)
        session.reload()
        return Reread(True, "a newer snapshot holds what was not read yet")
    before = latest.image.provenance.offset, latest.next_offset
    segments = source.segments()
    newest = segments[-1].path if segments else None
    expected = (located[-1].batch.last_offset if located else latest.next_offset - 1) + 1
    problems = [_being_written(p, source.file_bytes(newest), expected)
                if p.code == "truncated" and newest is not None and p.file == newest else p
                for p in stream.problems]
    session.feed(located, problems, rejudge=True, files=stream.files)
    after = session.latest
    return Reread((after.image.provenance.offset, after.next_offset) != before)
