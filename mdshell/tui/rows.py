"""Plain rows the engine hands to the screens: what each screen shows, free of core types."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Entry:
    name: str
    path: str
    is_dir: bool


@dataclass
class NodeRow:
    """A broker or controller as the overview shows it."""

    id: int
    state: str  # broker: active/fenced/shutting down; controller: leader/voter/observer/...
    endpoints: list[str]
    rack: str = ""
    dirs: int | None = None  # registered log dirs; None: none registered (before 3.7-IV2)
    incarnation: str = ""


@dataclass
class Item:
    text: str
    path: str | None  # where the fault lives in the tree (None: nowhere to jump)


@dataclass
class CheckRow:
    name: str
    status: str
    summary: str
    items: list[Item] = field(default_factory=list)
    as_read: bool = False  # passed on an image the data check fails (health's ``_unsure``)


@dataclass
class Header:
    cluster_id: str
    source: str
    kind: str
    offset: int
    epoch: int
    time: str
    metadata_version: str
    redacted: bool
    at: int | None  # None: the end of the log
    live: LiveRow | None = None  # -q: how far behind the quorum the image is
    # The image's verdict: DAMAGED, INCOMPLETE, TIME TRAVEL, LIVE STALE (none: a sound latest
    # image), and its words (the health panel's data check says the same).
    badges: list[str] = field(default_factory=list)
    verdict: str = ""


@dataclass
class LiveRow:
    """Where a live view stands against the quorum (shown in the header)."""

    next_offset: int  # the next offset to fetch
    high_watermark: int | None  # the quorum's committed end
    shown: int  # the last offset of the image shown
    seconds_since_fetch: float | None
    error: str | None = None  # the follower stopped: why
    word: str = "LIVE"  # FOLLOWING: a directory followed (``f``), not a quorum

    @property
    def lag(self) -> int | None:
        """Committed records not in the image shown yet."""
        if self.high_watermark is None:
            return None
        return max(0, self.high_watermark - 1 - self.shown)


@dataclass
class Overview:
    header: Header
    controllers: list[NodeRow]
    brokers: list[NodeRow]
    features: list[tuple[str, str, str]]  # name, finalized level, range every node supports
    topics: int
    partitions: int
    warnings: list[str]


@dataclass
class ListTable:
    """A list as a table (Topics, Brokers): its columns, and each row's cells and path."""

    columns: list[str]
    rows: list[list[str]]
    keys: list[str]
