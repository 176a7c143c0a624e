"""Problems found while reading: one clear line each (what, where, what to do)."""

from __future__ import annotations

from dataclasses import dataclass

# Problems after which reading stops: later records are not in the image.
STOPS = frozenset({"crc", "truncated", "corrupt", "stopped", "unreadable"})
# Problems after which the image is missing whole: it could not be fetched ("unauthorized":
# live mode without ClusterAction, so no snapshot and no log). Health fails, and one-shot
# commands exit 1 after printing what they can (/live and /quorum come from other requests).
UNFETCHED = frozenset({"unauthorized"})
# Problems after which the image may not be the cluster's (records lost or skipped).
DAMAGE = STOPS | {"gap", "incomplete", "epoch"} | UNFETCHED


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
