"""The JSON (``J``) and Changes (``c``) tabs of a node, made in a worker and cut at
TAB_LINES lines: on a directory they can be the whole image (the Topics of 500k
partitions: J built every partition's JSON on the UI thread, c listed 524k records, and
the screen froze for minutes)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text

if TYPE_CHECKING:
    from .engine import Engine

TAB_LINES = 2000  # lines a slow tab shows at most (a Syntax of 2,000 lines draws at once)
SLOW_TABS = ("json", "changes")
MORE = {"json": "the JSON goes on: open a node lower down",
        "changes": "more records touched it: open a node lower down, or `:changes PATH`"}


def first_lines(lines: Iterable[str], limit: int,
                cancelled: Callable[[], bool]) -> tuple[list[str], bool] | None:
    """The first ``limit`` lines and whether there are more; None when ``cancelled()``
    (checked every 256 lines)."""
    out: list[str] = []
    for i, line in enumerate(lines):
        if i % 256 == 0 and cancelled():
            return None
        if i == limit:
            return out, True
        out.append(line)
    return out, False


def json_lines(eng: Engine, path: str) -> Iterator[str]:
    """The node's JSON (``json.dumps(..., indent=2)``), line by line as it is made."""
    from ..tree.printer import tree_json

    node = eng.node(path)
    if node is None:
        yield json.dumps(None)
        return
    rest = ""
    for piece in tree_json(node, eng.opts):
        *done, rest = (rest + piece).split("\n")
        yield from done
    yield rest


def slow_tab(eng: Engine, tab: str, path: str,
             cancelled: Callable[[], bool]) -> RenderableType | None:
    """What the tab shows (in a worker); None when ``cancelled()`` meanwhile."""
    source = json_lines(eng, path) if tab == "json" else eng.changes_lines(path)
    got = first_lines(source, TAB_LINES, cancelled)
    if got is None:
        return None
    lines, more = got
    if tab == "json":
        shown: RenderableType = Syntax("\n".join(lines), "json", theme="ansi_dark",
                                       word_wrap=True)
    else:
        shown = Text("\n".join(lines) or "no record touched this node")
    if not more:
        return shown
    return Group(shown, Text(f"... {MORE[tab]}", style="dim"))
