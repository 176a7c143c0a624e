"""The View tab of Topics and Brokers: a sortable table (one row per topic or broker) in
place of the list of names, built in a worker (it reads every partition); Enter on a row
opens it in the tree, ``F`` filters, ``s`` or a header sorts, ``y``/``Y`` copy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from .fmt import plural
from .listrows import BROKERS, TOPICS
from .resulttable import ResultTable

if TYPE_CHECKING:
    from .detail import DetailPane
    from .rows import ListTable

NOUN = {TOPICS: "topic", BROKERS: "broker"}
SHOWN = 500  # rows in the widget at most (a DataTable measures every cell it holds)


def is_list(path: str) -> bool:
    return path in NOUN


def mode(detail: DetailPane, on: bool) -> None:
    """The View tab as a table (on) or as text."""
    detail.query_one("#view-scroll").display = not on
    detail.query_one("#view-status").display = on
    detail.query_one("#view-table").display = on


def show(detail: DetailPane, path: str) -> None:
    mode(detail, True)
    table = detail.query_one("#view-table", ResultTable)
    if table.row_count == 0 or getattr(table, "list_path", None) != path:
        detail.query_one("#view-status", Static).update(Text(
            f"{path}\nreading every partition…", style="dim"))
    engine = detail.engine

    def build() -> None:
        made = engine.list_table(path)
        if made is not None:
            detail.app.call_from_thread(fill, detail, path, made)

    detail.run_worker(build, thread=True, exclusive=True, group="list-table")


def fill(detail: DetailPane, path: str, made: ListTable) -> None:
    if detail.path != path:
        return  # the cursor moved on meanwhile
    table = detail.query_one("#view-table", ResultTable)
    if getattr(table, "made", None) is made:
        return  # on show already (the cursor came back to the node)
    if getattr(table, "list_path", None) != path:  # another list: sort and filter afresh
        table.clear(columns=True)
        table.sorted_by = None
        table.filter_text = ""
        table.add_columns(*made.columns)
        table.list_path = path  # type: ignore[attr-defined]
    table.limit = SHOWN
    table.made = made  # type: ignore[attr-defined]
    table.fill(list(zip(made.keys, made.rows, strict=True)))
    t = Text(f"{path}\n", style="bold")
    t.append(plural(len(made.rows), NOUN[path]), style="bold")
    if len(made.rows) > SHOWN:
        t.append(f", the first {SHOWN} shown (F and s work on all)", style="bold")
    t.append("  (Enter opens · s or a header sorts · F filters · y/Y copy)", style="dim")
    detail.query_one("#view-status", Static).update(t)
