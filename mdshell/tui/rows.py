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
class Timeline:
    first: int | None
    last: int | None
    batches: list[tuple[int, int, int, int]]  # base offset, last offset, records, max time
    snapshots: list[int]  # last offsets covered by each snapshot
    leader_changes: list[tuple[int, int, int]]  # offset, leader id, epoch
    noops: frozenset[int] = frozenset()  # base offsets of the batches of one NoOpRecord

    def bucket(self, offset: int, n: int) -> int:
        """Which of ``n`` equal offset ranges holds ``offset`` (what :meth:`buckets` counts
        it in; with more ranges than offsets, some ranges hold none)."""
        first, last = self.first or 0, self.last or 0
        span = max(last - first + 1, 1)
        return min(max(offset - first, 0) * n // span, n - 1)

    def buckets(self, n: int, changes: bool = False) -> tuple[list[int], list[int]]:
        """Records per bucket and each bucket's first offset, ``n`` equal offset ranges;
        ``changes``: without the NoOp batches (what an operator looks for)."""
        if self.first is None or self.last is None or n <= 0:
            return [], []
        span = max(self.last - self.first + 1, 1)
        # the least offset each range holds: i*span/n rounded up
        starts = [self.first + -(-i * span // n) for i in range(n)]
        ends = [s - 1 for s in starts[1:]] + [self.last]
        counts = [0] * n
        for base, last, records, _t in self.batches:
            if changes and base in self.noops:
                continue
            lo, hi = self.bucket(base, n), self.bucket(last, n)
            if lo == hi:
                counts[lo] += records
                continue
            for i in range(lo, hi + 1):  # a batch over several ranges: its offsets in each
                counts[i] += max(0, min(last, ends[i]) - max(base, starts[i]) + 1)
        return counts, starts


@dataclass
class ListTable:
    """A list as a table (Topics, Brokers): its columns, and each row's cells and path."""

    columns: list[str]
    rows: list[list[str]]
    keys: list[str]
