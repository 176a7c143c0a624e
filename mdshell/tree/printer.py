"""A subtree as Kafka's shell prints it (``tree``), and as nested JSON."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .node import Node, RenderOptions


def tree_lines(node: Node, opts: RenderOptions, indent: int = 0) -> Iterator[str]:
    """Kafka's ShellNodePrinter: a directory prints its children, sorted, two spaces a level."""
    pad = "  " * indent
    if not node.is_dir:
        yield pad + node.text(opts)
        return
    for name in sorted(node.names()):
        child = node.child(name)
        if child is None:
            continue
        yield f"{pad}{name}:"
        yield from tree_lines(child, opts, indent + 1)


def tree_data(node: Node, opts: RenderOptions) -> Any:
    if not node.is_dir:
        return node.data(opts)
    out: dict[str, Any] = {}
    for name in sorted(node.names()):
        child = node.child(name)
        if child is not None:
            out[name] = tree_data(child, opts)
    return out
