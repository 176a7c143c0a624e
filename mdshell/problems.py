"""Problems found while reading: one clear line each (what, where, what to do)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

# Problems after which reading stops: later records are not in the image.
STOPS = frozenset({"crc", "truncated", "corrupt", "stopped", "unreadable"})
# Problems after which the image is missing whole: it could not be fetched ("unauthorized":
# live mode without ClusterAction, so no snapshot and no log). Health fails, and one-shot
# commands exit 1 after printing what they can (/live and /quorum come from other requests).
UNFETCHED = frozenset({"unauthorized"})
# Problems after which the image may not be the cluster's (records lost or skipped).
DAMAGE = STOPS | {"gap", "incomplete", "epoch", "header"} | UNFETCHED
# Problems meaning data is missing here (never read, or refused): the image is incomplete, not
# damaged. "incomplete" is the code for any such problem (a log that does not start at zero
# and no snapshot, a live image that could not be fetched); a file named unlike a segment is
# not read, so what it holds is missing too.
INCOMPLETE = frozenset({"incomplete", "degraded", "unrecognized"}) | UNFETCHED
# Problems that leave the image as Kafka would build it from this data: worth a word, but the
# image is sound (an older snapshot used instead of a damaged one, an empty segment, a segment
# named for another offset but read, a quorum-state or meta.properties that only the quorum
# view reads). Every other code (a new one too) questions the image: mdshell.image.verdict.
NOTICES = frozenset({"snapshot", "empty", "misnamed", "cluster-id",
                     "quorum-state", "notice", "live", "no-metadata", "open-transaction",
                     "image", "reloaded", "writing"})


class SourceError(Exception):
    """Nothing usable can be read: the load cannot produce an image at all."""


class CommandError(Exception):
    """A command cannot run (e.g. an offset outside the log, Spark refusing a query): one
    line, exit 1. Shared so that the layers below the commands (Spark) can say it too."""


@dataclass(frozen=True, slots=True)
class Problem:
    """A warning about the data; the load goes on with the best image the valid data allows.

    A problem that repeats (one per later batch or record) is said once: ``each`` holds every
    occurrence folded into it (the first one included; empty for a single problem), for
    ``--debug``."""

    code: str  # short identifier, e.g. "crc", "truncated", "unknown-record"
    message: str  # the full one-line message
    file: str | None = None
    offset: int | None = None
    position: int | None = None  # byte in ``file`` where the damage starts, when known
    each: list[Problem] = field(default_factory=list, compare=False, repr=False)

    def __str__(self) -> str:
        return self.message

    @property
    def count(self) -> int:
        """How many occurrences this problem stands for."""
        return max(1, len(self.each))


# Problems that can come once per batch or record, and how the rest of a run is counted
# (one, many).
_FLOODS = {
    "no-topic": ("more record names an unknown topic", "more records name unknown topics"),
    "no-partition": ("more record changes a partition that does not exist",
                     "more records change partitions that do not exist"),
    "no-broker": ("more record names a broker that is not registered",
                  "more records name brokers that are not registered"),
    "broker-epoch": ("more record names a broker epoch that is not the registration's",
                     "more records name broker epochs that are not the registration's"),
    "no-controller": ("more record names a controller that is not registered",
                      "more records name controllers that are not registered"),
    "no-acl": ("more record removes an ACL that does not exist",
               "more records remove ACLs that do not exist"),
    "txn": ("more transaction marker is out of place",
            "more transaction markers are out of place"),
    "bad-value": ("more record has an unknown value", "more records have unknown values"),
    "overlap": ("more batch repeats offsets already read (skipped)",
                "more batches repeat offsets already read (skipped)"),
    "epoch": ("more batch has a leader epoch lower than before",
              "more batches have a leader epoch lower than before"),
    "gap": ("more gap in the offsets", "more gaps in the offsets"),
    "header": ("more batch has a damaged header field (skipped)",
               "more batches have a damaged header field (skipped)"),
}
_LOOK_BACK = 8  # how far back a repeat finds the problem it folds into


def add(problems: list[Problem], p: Problem) -> None:
    """Append ``p``, or fold it into a recent problem of the same kind: a flood (one warning
    per later batch or record, across files) becomes one line with a count and the
    offsets; the first occurrence names its file."""
    phrase = _FLOODS.get(p.code)
    if phrase is not None:
        for i in range(len(problems) - 1, max(-1, len(problems) - 1 - _LOOK_BACK), -1):
            q = problems[i]
            if q.code == p.code:
                problems[i] = _fold(q, p, phrase)
                return
    problems.append(p)


def _fold(q: Problem, p: Problem, phrase: tuple[str, str]) -> Problem:
    each = q.each or [q]
    each.append(p)
    offsets = sorted({x.offset for x in (each[1], p) if x.offset is not None})
    where = ("" if not offsets else f" (offset {offsets[0]})" if len(offsets) == 1
             else f" (offsets {offsets[0]}-{offsets[-1]})")
    more = len(each) - 1
    message = f"{each[0].message}; {more:,} {phrase[more > 1]}{where}"
    return Problem(q.code, message, q.file, q.offset, q.position, each)


def merge(old: list[Problem], new: Iterable[Problem]) -> list[Problem]:
    """``old`` and the problems of ``new`` it lacks; a folded problem that grew replaces
    its earlier self (live follow reports problems as batches arrive)."""
    out = list(old)
    for p in new:
        if p in out:
            continue
        grown = next((i for i, q in enumerate(out) if p.each and q.each is p.each), None)
        if grown is None:
            out.append(p)
        else:
            out[grown] = p
    return out
