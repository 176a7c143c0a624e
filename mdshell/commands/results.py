"""What commands return: one typed value per kind of result, no text.

A command puts one of these in :attr:`~.base.Result.value`; :mod:`.render` turns it into text
(Kafka's shell format) or JSON, and a full-screen front end may use the fields directly. The
kinds are named tuples: immutable, typed, and cheap to define (a one-shot command imports them
all). Values that can be huge (``tree``, ``find``, ``records``) hold nodes or a function that
yields rows, so nothing is built before it is printed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..tree.node import Node, RenderOptions

if TYPE_CHECKING:
    from ..image.health import Check
    from ..image.verdict import Verdict
    from ..source.nodes.report import Report
    from .base import Command

Rows = Callable[[], Iterator[dict[str, Any]]]


class NodeAt(NamedTuple):
    """A node found at ``path`` (``name`` is its last component, as matched)."""

    path: str
    name: str
    node: Node


class DirListing(NamedTuple):
    path: str
    name: str
    children: list[str]  # sorted


class Listing(NamedTuple):
    """``ls``: leaves named first, then each directory's children."""

    files: list[NodeAt]
    dirs: list[DirListing]


class Leaves(NamedTuple):
    """``cat``: leaves, rendered with ``opts`` (redaction)."""

    leaves: list[NodeAt]
    opts: RenderOptions


class Tree(NamedTuple):
    """``tree``: whole subtrees, walked lazily when rendered."""

    roots: list[NodeAt]
    opts: RenderOptions


class Paths(NamedTuple):
    """``find``: matching paths; ``paths()`` starts a fresh lazy walk each call."""

    paths: Callable[[], Iterator[str]]


class WorkingDir(NamedTuple):
    """``pwd`` (shown) and ``cd`` (silent in text)."""

    cwd: str
    show: bool = True


class Moved(NamedTuple):
    """``at``: the image now shown, and how it was found."""

    offset: int | None  # None: latest
    cwd: str
    applied_offset: int
    applied_epoch: int
    applied_time_ms: int
    asked: str | None = None  # the time asked, when a time chose the offset
    how: str | None = None  # how that time became the offset
    moved_to: str | None = None  # the working directory, when it had to move


class Records(NamedTuple):
    """``records``: JSON-ready rows (secrets redacted); ``rows()`` reads the log again."""

    rows: Rows


class Batches(NamedTuple):
    """``records --batches``: one row per batch, in kafka-dump-log's fields."""

    rows: Rows


class Changes(NamedTuple):
    """``changes``: the records that touched ``target`` (JSON-ready rows)."""

    target: str
    rows: list[dict[str, Any]]
    read: str = ""  # when no record touched it: the records read, in words


class DiffEntry(NamedTuple):
    kind: str  # "added", "removed" or "changed"
    path: str
    before: Any = None
    after: Any = None
    before_text: str | None = None
    after_text: str | None = None
    secret: bool = False  # only redacted values differ
    topic: str | None = None  # the topic's name, for a path under topics/byId


class Diff(NamedTuple):
    """``diff``: offsets asked (None: latest), what each image last applied, the changes."""

    from_offset: int | None
    to_offset: int | None
    path: str
    from_applied: int
    to_applied: int
    changes: Iterable[DiffEntry]  # found as they are read (each time)
    from_node: str | None = None  # diff --node: the nodes whose images are compared
    to_node: str | None = None


class Health(NamedTuple):
    checks: list[Check]
    limit: int | None  # items shown per check in text (None: all)
    ok: bool  # no check failed
    verdict: Verdict | None = None  # the image's (its 'data' check says the same)


class Nodes(NamedTuple):
    """``nodes``: the nodes' logs compared (:class:`~mdshell.source.nodes.report.Report`)."""

    report: Report


class Help(NamedTuple):
    commands: list[Command]
    interactive: bool


class Manual(NamedTuple):
    command: Command


class HistoryEntry(NamedTuple):
    number: int  # from 1 across the whole history
    command: str


class History(NamedTuple):
    entries: list[HistoryEntry]


# How much JSON text a streamed result writes at a time.
CHUNK = 1 << 18


class RowStream(ABC):
    """A table's rows made as they are read, never held (``topics --describe`` of 100k
    partitions): iterating gives the JSON objects afresh each time."""

    @abstractmethod
    def __iter__(self) -> Iterator[dict[str, Any]]: ...

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def cells(self) -> Iterator[list[Any]]:
        """The cells of each row, as :class:`Table` holds them."""

    @abstractmethod
    def text_lines(self, columns: Sequence[str]) -> Iterator[str]:
        """The aligned table, header first (the rows are not empty)."""

    @abstractmethod
    def json_chunks(self) -> Iterator[str]:
        """The text of ``json.dumps(list(self), indent=2)`` in pieces."""


class Table(NamedTuple):
    """An aligned table (``topics``, ``brokers``...): column titles, the cells of each row
    (lists render as ``a,b``, None as ``-``), and the same rows as JSON objects (a list, or
    a :class:`RowStream` whose ``cells`` are made when read)."""

    columns: list[str]
    cells: Sequence[Sequence[Any]]
    rows: Any
    header_when_empty: bool = True  # a filter that keeps nothing prints nothing
    note: str | None = None  # said in text instead of an empty table: why it is empty


class Fields(NamedTuple):
    """``Key: value`` lines, aligned (``quorum --status``), and their JSON object."""

    pairs: list[tuple[str, Any]]
    data: Any


class Text(NamedTuple):
    """Lines and JSON data made by the command itself (tables, plug-in commands).

    ``data`` may be a function, called when the JSON is wanted (a lazy command)."""

    lines: Iterable[str] = ()
    data: Any = None
