"""Problems found while reading: one clear line each (what, where, what to do)."""

from __future__ import annotations

from dataclasses import dataclass

# Problems after which reading stops: later records are not in the image.
STOPS = frozenset({"crc", "truncated", "corrupt", "stopped", "unreadable"})
# Problems after which the image may not be the cluster's (records lost or skipped).
DAMAGE = STOPS | {"gap", "incomplete", "epoch"}
# Problems meaning data is missing here (never read, or refused): the image is incomplete, not
# damaged. "incomplete" is the code for any such problem (a log that does not start at zero
# and no snapshot, a live image that could not be fetched); a file named unlike a segment is
# not read, so what it holds is missing too.
INCOMPLETE = frozenset({"incomplete", "degraded", "unrecognized"})
# Problems that leave the image as Kafka would build it from this data: worth a word, but the
# image is sound (an older snapshot used instead of a damaged one, an empty segment, a segment
# named for another offset but read, a quorum-state or meta.properties that only the quorum
# view reads). Every other code (a new one too) questions the image: mdshell.image.verdict.
NOTICES = frozenset({"snapshot", "empty", "misnamed", "cluster-id",
                     "quorum-state", "notice", "live", "no-metadata", "open-transaction",
                     "image"})


class SourceError(Exception):
    """Nothing usable can be read: the load cannot produce an image at all."""


class CommandError(Exception):
    """A command cannot run (e.g. an offset outside the log, Spark refusing a query): one
    line, exit 1. Shared so that the layers below the commands (Spark) can say it too."""


@dataclass(frozen=True, slots=True)
class Problem:
    """A warning about the data; the load goes on with the best image the valid data allows."""

    code: str  # short identifier, e.g. "crc", "truncated", "unknown-record"
    message: str  # the full one-line message
    file: str | None = None
    offset: int | None = None
    position: int | None = None  # byte in ``file`` where the damage starts, when known

    def __str__(self) -> str:
        return self.message
