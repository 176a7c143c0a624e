"""A subtree as Kafka's shell prints it (``tree``), and as nested JSON.

``tree`` is fast enough for 100k partitions because leaves are rendered inline (no generator
per leaf), lines travel in chunks, and a directory whose image object was already rendered at
the same depth is not rendered again. Images share what did not change, and
``/image/topics/byName/X`` and ``/image/topics/byId/Y`` are the same topic object: the
contract of :meth:`Node.ident` (same object, same subtree) makes the second rendering a copy
of the first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .node import Node, RenderOptions

# How many rendered lines are kept for reuse at most (~300 bytes each): beyond it, subtrees
# are rendered again rather than held (a million-partition tree stays within memory).
MEMO_LINES = 300_000


def tree_lines(node: Node, opts: RenderOptions, indent: int = 0) -> Iterator[str]:
    """Kafka's ShellNodePrinter: a directory prints its children, sorted, two spaces a level."""
    if not node.is_dir:
        yield "  " * indent + node.text(opts)
        return
    for chunk in _Walk(opts).chunks(node, indent):
        yield from chunk


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
            yield out
            out = []
            ident = child.ident()
            if ident is None:
                yield from self.chunks(child, indent + 1)
                continue
            seen = self.memo.get(id(ident))
            if seen is not None and seen[0] is ident and seen[1] == indent + 1:
                yield seen[2]
                continue
            yield from self._recorded(child, ident, indent + 1)
        if out:
            yield out

    def _recorded(self, node: Node, ident: object, indent: int) -> Iterator[list[str]]:
        """The chunks of ``node`` as they are made, kept for reuse while within the budget."""
        kept: list[str] | None = []
        for chunk in self.chunks(node, indent):
            if kept is not None:
                if len(kept) + len(chunk) <= self.budget:
                    kept += chunk
                else:
                    kept = None
            yield chunk
        if kept is not None:
            self.budget -= len(kept)
            self.memo[id(ident)] = (ident, indent, kept)


def tree_data(node: Node, opts: RenderOptions) -> Any:
    if not node.is_dir:
        return node.data(opts)
    out: dict[str, Any] = {}
    for name in sorted(node.names()):
        child = node.child(name)
        if child is not None:
            out[name] = tree_data(child, opts)
    return out
