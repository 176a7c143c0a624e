"""A subtree as Kafka's shell prints it (``tree``), and as nested JSON.

``tree`` is fast enough for 100k partitions because leaves are rendered inline (no generator
per leaf), lines travel in chunks (written a chunk at a time), and a directory that can make
its lines in one go does (:meth:`Node.subtree`: a topic looks its partitions' text up by
their record bytes, so 100k partitions print without being decoded). Images share what did
not change, and ``/image/topics/byName/X`` and ``/image/topics/byId/Y`` are the same topic
object: the contract of :meth:`Node.ident` (same object, same subtree) lets a subtree be
printed again from its lines. A topic's lines are shared strings (a partition's text by its
record bytes, its name line by its number), so holding 100k partitions' lines costs pointers,
not the 40 MiB of their text.

``-o json`` goes the same way (:func:`tree_json`): the text ``json.dumps`` would make of
:func:`tree_data`, written a piece at a time, a topic in one go with its partitions' JSON
looked up by their record bytes; nothing holds the whole tree as dicts or as one string
(130 MB for 100k partitions).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .jsontext import string
from .node import Lines, Node, RenderOptions, memo_cost

# How many rendered lines of their own are kept for reuse at most (~300 bytes each; a shared
# line counts a 32nd: ``memo_cost``): beyond it, subtrees are rendered again rather than held
# (a million-partition tree stays within memory).
MEMO_LINES = 300_000


def tree_lines(node: Node, opts: RenderOptions, indent: int = 0) -> Iterator[str]:
    """Kafka's ShellNodePrinter: a directory prints its children, sorted, two spaces a level."""
    for chunk in tree_chunks(node, opts, indent):
        yield from chunk


def tree_chunks(node: Node, opts: RenderOptions, indent: int = 0) -> Iterator[list[str]]:
    """:func:`tree_lines` in runs of lines (never empty), to be written a run at a time."""
    if not node.is_dir:
        yield ["  " * indent + node.text(opts)]
        return
    made = node.subtree(opts, indent)
    if made is not None:
        if made:
            yield made
        return
    yield from _Walk(opts).chunks(node, indent)


class _Walk:
    """One rendering: the subtrees already rendered, by the identity of their image object.
    Lines travel in chunks (a directory's run of leaves at once), not one by one through a
    generator per level."""

    def __init__(self, opts: RenderOptions) -> None:
        self.opts = opts
        # id(image object) -> (the object, its indent, its lines); holding the object keeps
        # its id from being reused while the walk runs.
        self.memo: dict[int, tuple[object, int, list[str]]] = {}
        self.budget = MEMO_LINES

    def chunks(self, node: Node, indent: int) -> Iterator[list[str]]:
        pad = "  " * indent
        inner = pad + "  "
        opts = self.opts
        out: list[str] = []
        for name in sorted(node.names()):
            child = node.child(name)
            if child is None:
                continue
            out.append(f"{pad}{name}:")
            if not child.is_dir:
                out.append(inner + child.text(opts))
                continue
            if out:
                yield out
                out = []
            ident = child.ident()
            if ident is not None:
                seen = self.memo.get(id(ident))
                if seen is not None and seen[0] is ident and seen[1] == indent + 1:
                    if seen[2]:
                        yield seen[2]
                    continue
            made = child.subtree(opts, indent + 1)
            if made is not None:
                if ident is not None:
                    self._keep(ident, indent + 1, made)
                if made:
                    yield made
            elif ident is None:
                yield from self.chunks(child, indent + 1)
            else:
                yield from self._recorded(child, ident, indent + 1)
        if out:
            yield out

    def _recorded(self, node: Node, ident: object, indent: int) -> Iterator[list[str]]:
        """The chunks of ``node`` as they are made, kept for reuse while within the budget."""
        kept: list[str] | None = []
        fresh = 0  # what keeping them costs (``memo_cost``)
        for chunk in self.chunks(node, indent):
            if type(chunk) is Lines:  # a directory of topics: they are kept, not it
                kept = None
            if kept is not None:
                fresh += memo_cost(chunk)
                if fresh <= self.budget:
                    kept += chunk
                else:
                    kept = None
            yield chunk
        if kept is not None:
            self._keep(ident, indent, Lines(kept, fresh))

    def _keep(self, ident: object, indent: int, lines: list[str]) -> None:
        cost = memo_cost(lines)
        if cost <= self.budget:
            self.budget -= cost
            self.memo[id(ident)] = (ident, indent, lines)


def tree_data(node: Node, opts: RenderOptions) -> Any:
    """A subtree as nested dicts: the straightforward form of :func:`tree_json`."""
    if not node.is_dir:
        return node.data(opts)
    out: dict[str, Any] = {}
    for name in sorted(node.names()):
        child = node.child(name)
        if child is not None:
            out[name] = tree_data(child, opts)
    return out


def tree_json(node: Node, opts: RenderOptions, level: int = 0) -> Iterator[str]:
    """The text of ``json.dumps(tree_data(node, opts), indent=2, ensure_ascii=False)``
    placed ``level`` deep, in pieces to be written as they come, without the dicts: a
    directory that can make its JSON in one go does (a topic looks its partitions' JSON up
    by their record bytes, so 100k partitions are written without being decoded), and its
    pieces (shared strings) are kept to write it again where the same object is met at the
    same depth (``byId`` and ``byName``), as ``tree`` keeps its lines."""
    if not node.is_dir:
        yield node.data_json(opts, level)
        return
    made = node.subtree_json(opts, level)
    if made is not None:
        yield "".join(made)
        return
    yield from _JsonWalk(opts).dir_json(node, level)


class _JsonWalk:
    """One JSON rendering: the pieces of the subtrees made in one go, by the identity of
    their image object, kept within a budget of pieces."""

    def __init__(self, opts: RenderOptions) -> None:
        self.opts = opts
        self.memo: dict[int, tuple[object, int, list[str]]] = {}
        self.budget = MEMO_LINES

    def made(self, child: Node, level: int) -> list[str] | None:
        """``child.subtree_json(opts, level)``, from the memo when made already."""
        ident = child.ident()
        if ident is not None:
            seen = self.memo.get(id(ident))
            if seen is not None and seen[0] is ident and seen[1] == level:
                return seen[2]
        made = child.subtree_json(self.opts, level)
        if made is not None and ident is not None and len(made) <= self.budget:
            self.budget -= len(made)
            self.memo[id(ident)] = (ident, level, made)
        return made

    def dir_json(self, node: Node, level: int) -> Iterator[str]:
        opts = self.opts
        pad = "  " * (level + 1)
        out: list[str] = []
        sep = "{\n"
        # Sorted as tree_data sorts them; a name listed twice is one key, where it first came.
        for name in dict.fromkeys(sorted(node.names())):
            child = node.child(name)
            if child is None:
                continue
            out.append(f"{sep}{pad}{string(name)}: ")
            sep = ",\n"
            if not child.is_dir:
                out.append(child.data_json(opts, level + 1))
                continue
            made = self.made(child, level + 1)
            yield "".join(out)  # a topic's JSON is a chunk: written before the next is made
            out = []
            if made is not None:
                yield "".join(made)
            else:
                yield from self.dir_json(child, level + 1)
        out.append("{}" if sep == "{\n" else "\n" + "  " * level + "}")
        yield "".join(out)
