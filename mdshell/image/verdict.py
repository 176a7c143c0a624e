"""One verdict on an image's soundness, in one set of words every front end shows.

An image is *complete* (every record the data holds up to its offset is in it), *may be wrong*
(records were lost, skipped or not understood: damage) or *incomplete* (data was never read
here: offsets missing before the log, a live fetch refused). The verdict is judged once from
what reading found (the load's problems and the notes of records decoded later); the session
adds where the view stands (time travel to an older offset, a live view that stopped
following). ``health``, ``--strict``, one-shot stderr, the REPL and the TUI all read it, so
they cannot disagree.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..problems import INCOMPLETE as MISSING
from ..problems import NOTICES, Problem
from .model import Notes

COMPLETE, DAMAGED, INCOMPLETE = "complete", "damaged", "incomplete"
OK, WARN, FAIL = "ok", "warn", "fail"  # the health statuses (one colour rule for both)
BADGES = {DAMAGED: "DAMAGED", INCOMPLETE: "INCOMPLETE"}
TIME_TRAVEL, LIVE_STALE = "TIME TRAVEL", "LIVE STALE"

# What each problem is, said after "because of" (a code not here: a problem named by it).
_NOT_HELD = "a record naming what the image does not hold"
CAUSES = {
    "crc": "a CRC mismatch", "truncated": "a file cut short",
    "corrupt": "a batch that cannot be read", "unreadable": "a file that cannot be read",
    "stopped": "segments not applied after damage", "gap": "offsets missing",
    "epoch": "a leader epoch going backwards", "overlap": "batches repeating offsets",
    "unknown-record": "an unknown record type or version (not applied)",
    "unknown-tag": "unknown tagged fields", "bad-value": "an invalid value",
    "bad-partition": "a partition record that does not decode",
    "txn": "a broken metadata transaction", "broker-epoch": _NOT_HELD,
    "no-topic": _NOT_HELD, "no-partition": _NOT_HELD, "no-broker": _NOT_HELD,
    "no-controller": _NOT_HELD, "no-acl": _NOT_HELD,
    "incomplete": "data missing", "degraded": "a log that could not be fetched",
    "unrecognized": "a file not read",
    "unauthorized": "a log this principal may not fetch (ClusterAction is needed)",
    "header": "a damaged batch header (batch skipped)",
    "headless": "a snapshot no node loads (it does not open with its SnapshotHeader)",
}
_FROM = frozenset({"gap", "incomplete"})
# Records naming a topic, partition, broker... the image does not hold: when data is missing
# (a log without its start), that is what the missing records held.
_CONSEQUENCES = frozenset({"broker-epoch", "no-topic", "no-partition", "no-broker",
                           "no-controller", "no-acl"})  # "missing from offset N", not "at offset N"


@dataclass(frozen=True)
class Verdict:
    """Whether the image shown can be trusted, and why not."""

    state: str  # COMPLETE, DAMAGED or INCOMPLETE
    offset: int  # the image's offset (its last applied record; -1: none)
    problems: tuple[Problem, ...] = ()  # what makes it unsound, the deciding one first
    at: int | None = None  # time travel: the offset asked for (older than the latest)
    latest: int | None = None  # with ``at``: the latest image's offset
    stale: str | None = None  # live: why the view stopped following the quorum
    # One directory: why its tail may hold records the quorum never committed (its files
    # show the quorum went on without it); the image is sound, with a warning.
    unsure: str | None = None

    @property
    def sound(self) -> bool:
        """Nothing lost, skipped or missing (``--strict`` fails exactly when not)."""
        return self.state == COMPLETE

    @property
    def status(self) -> str:
        """fail (not sound), warn (sound, but not the latest image), ok."""
        if not self.sound:
            return FAIL
        return WARN if (self.at is not None or self.stale is not None
                        or self.unsure is not None) else OK

    @property
    def badges(self) -> list[str]:
        """What a header shows whenever the image is not a sound latest image."""
        out = [BADGES[self.state]] if self.state in BADGES else []
        if self.at is not None:
            out.append(TIME_TRAVEL)
        if self.stale is not None:
            out.append(LIVE_STALE)
        return out

    def words(self) -> str:
        """The verdict in one line, the same in every front end."""
        as_of = self._as_of()
        if self.sound:
            text = "the image is complete " + ("and " if self.offset < 0 and self.at is None
                                               else "")
        else:
            text = ("the image may be wrong because of " if self.state == DAMAGED
                    else "the image is incomplete because of ") + cause(self.problems[0])
            more = len(self.problems) - 1
            if more:
                text += f" (and {more} more problem{'s' if more > 1 else ''})"
            text += "; it is "
        text += as_of
        if self.stale is not None:
            text += f"; it may be behind the quorum: {self.stale}"
        if self.unsure is not None:
            text += f"; {self.unsure}"
        return text

    def _as_of(self) -> str:
        if self.at is not None:
            return f"as of offset {self.at} (time travel: the latest is offset {self.latest})"
        if self.offset < 0:
            return "empty (no metadata record applied)"
        return f"as of offset {self.offset}"

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "sound": self.sound, "status": self.status,
                "text": self.words(), "offset": self.offset, "at": self.at,
                "latest": self.latest, "stale": self.stale, "unsure": self.unsure,
                "badges": self.badges,
                "problems": [{"code": p.code, "message": p.message, "file": p.file,
                              "offset": p.offset} for p in self.problems]}

    def viewed(self, at: int | None, latest: int | None, stale: str | None,
               unsure: str | None = None) -> Verdict:
        """The same verdict, with where the view stands (``unsure``: see the field)."""
        return replace(self, at=at, latest=latest if at is not None else None, stale=stale,
                       unsure=unsure)


def cause(p: Problem) -> str:
    """What a problem is, and where: ``a file cut short at offset 15``."""
    text = CAUSES.get(p.code, f"a problem in the data ({p.code})")
    if p.offset is not None and p.offset >= 0:
        text += f" {'from' if p.code in _FROM else 'at'} offset {p.offset}"
    elif p.file:
        text += f" ({os.path.basename(p.file)})"
    return text


def judge(problems: Iterable[Problem], offset: int, notes: Notes | None = None) -> Verdict:
    """The verdict on an image of ``offset`` from what reading it found: damage first (it
    decides), then missing data; notices leave the image sound."""
    found = [p for p in problems if p.code not in NOTICES]
    if notes is not None:
        found += [Problem(code, message) for code, message in zip(notes.codes, notes.messages,
                                                                     strict=True)
                  if code not in NOTICES]
    damaged = [p for p in found if p.code not in MISSING]
    missing = [p for p in found if p.code in MISSING]
    if missing and all(p.code in _CONSEQUENCES for p in damaged):
        # Records naming what the missing data held: what missing data does, not damage.
        return Verdict(INCOMPLETE, offset, tuple(missing + damaged))
    state = DAMAGED if damaged else INCOMPLETE if missing else COMPLETE
    return Verdict(state, offset, tuple(damaged + missing))
