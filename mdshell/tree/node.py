"""Virtual tree nodes: directories list and resolve children lazily, leaves render on demand.

Nothing is materialised up front: ``ls`` of a topic with a million partitions lists their ids
without decoding one, and a leaf is only rendered when printed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .jsontext import dumps

# How a Kafka release lays ``/image`` out: 3.7 (the default) or 4.x (Kafka 4.3: ACLs under
# ``acls/byId``, no ``zkMigrationState``, ``Optional[...]`` metadata version, Java-record ACLs,
# brokers' cordoned directories).
LAYOUTS = ("3.7", "4.x")


@dataclass(frozen=True, slots=True)
class RenderOptions:
    """How leaves render: secrets shown or redacted."""

    show_secrets: bool = False


class Lines(list):
    """A directory's ``tree`` lines made in one go, and how many of them are its own strings
    (``fresh``); the others are shared with other directories (a partition's text by its
    record bytes), so keeping them to print again costs a pointer each."""

    __slots__ = ("fresh",)

    def __init__(self, lines: list[str], fresh: int) -> None:
        super().__init__(lines)
        self.fresh = fresh


def memo_cost(lines: list[str]) -> int:
    """What keeping ``lines`` costs, in lines of their own (shared ones: a 32nd of one)."""
    if type(lines) is Lines:
        return lines.fresh + len(lines) // 32
    return len(lines)


class Node:
    """Base node. Directories override ``names``/``child``; leaves override ``text``/``data``."""

    is_dir = True

    def names(self) -> Iterable[str]:
        return ()

    def child(self, name: str) -> Node | None:
        return None

    def text(self, opts: RenderOptions) -> str:
        return ""

    def data(self, opts: RenderOptions) -> Any:
        return None

    def data_json(self, opts: RenderOptions, level: int) -> str:
        """``data`` as JSON text placed ``level`` deep (see :mod:`.jsontext`); a leaf made
        by the hundred thousand answers from its own cache."""
        return dumps(self.data(opts), level)

    def key(self) -> Any:
        """A cheap fingerprint: equal keys mean equal leaves (None: compare the text)."""
        return None

    def ident(self) -> object | None:
        """The image object behind the node, when there is one: images share what did not
        change, so the same object (``is``) means the same subtree (``diff`` skips it)."""
        return None

    def subtree(self, opts: RenderOptions, indent: int) -> list[str] | None:
        """The lines ``tree`` prints below this directory at ``indent`` levels, when the
        node makes them faster than child by child (a topic's partitions), their strings
        shared where they repeat (so keeping them to print again costs a pointer a line);
        None: walk the children."""
        return None

    def subtree_json(self, opts: RenderOptions, level: int) -> list[str] | None:
        """The JSON text of this directory's data placed ``level`` deep, in pieces to be
        joined, when the node makes it faster than child by child; None: walk the
        children."""
        return None

    def child_ident(self, name: str) -> object | None:
        """``child(name).ident()``, cheaper when a directory knows it without the node."""
        child = self.child(name)
        return None if child is None else child.ident()

    def changed_names(self, other: Node) -> list[str] | None:
        """The names of the children that may differ from ``other``'s (the same directory
        in another image): every name whose ``child_ident`` is not the same object on both
        sides. None: not known cheaply (compare every name)."""
        return None


class Dir(Node):
    """A directory whose children come from two functions."""

    __slots__ = ("_changed", "_child", "_child_ident", "_ident", "_names")

    def __init__(self, names: Callable[[], Iterable[str]],
                 child: Callable[[str], Node | None], ident: object | None = None,
                 child_ident: Callable[[str], object | None] | None = None,
                 changed: Callable[[object], list[str] | None] | None = None) -> None:
        self._names = names
        self._child = child
        self._ident = ident
        self._child_ident = child_ident
        self._changed = changed  # given the other side's ident: see changed_names

    def ident(self) -> object | None:
        return self._ident

    def changed_names(self, other: Node) -> list[str] | None:
        other_ident = other.ident()
        if self._changed is None or other_ident is None:
            return None
        return self._changed(other_ident)

    def child_ident(self, name: str) -> object | None:
        if self._child_ident is not None:
            return self._child_ident(name)
        return super().child_ident(name)

    def names(self) -> Iterable[str]:
        return self._names()

    def child(self, name: str) -> Node | None:
        return self._child(name)


class StaticDir(Node):
    """A directory with a fixed set of children, each built on first access."""

    __slots__ = ("_made", "_makers")

    def __init__(self, makers: Mapping[str, Callable[[], Node]]) -> None:
        self._makers = makers
        self._made: dict[str, Node] = {}

    def names(self) -> Iterable[str]:
        return self._makers.keys()

    def child(self, name: str) -> Node | None:
        node = self._made.get(name)
        if node is None:
            maker = self._makers.get(name)
            if maker is None:
                return None
            node = self._made[name] = maker()
        return node


class Leaf(Node):
    """A leaf rendered by functions of the render options."""

    is_dir = False
    __slots__ = ("_data", "_ident", "_key", "_text")

    def __init__(self, text: Callable[[RenderOptions], str],
                 data: Callable[[RenderOptions], Any] | None = None,
                 key: Callable[[], Any] | None = None, ident: object | None = None) -> None:
        self._text = text
        self._data = data
        self._key = key
        self._ident = ident

    def ident(self) -> object | None:
        return self._ident

    def key(self) -> Any:
        return None if self._key is None else self._key()

    def text(self, opts: RenderOptions) -> str:
        return self._text(opts)

    def data(self, opts: RenderOptions) -> Any:
        if self._data is None:
            return self._text(opts)
        return self._data(opts)


class Value(Node):
    """A leaf with fixed text (and optional structured data)."""

    is_dir = False
    __slots__ = ("_data", "_text")

    def __init__(self, text: str, data: Any = None) -> None:
        self._text = text
        self._data = text if data is None else data

    def text(self, opts: RenderOptions) -> str:
        return self._text

    def data(self, opts: RenderOptions) -> Any:
        return self._data
