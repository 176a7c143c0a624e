"""The View tab of Topics and Brokers: a sortable table (one row per topic or broker) in
place of the list of names, made in a worker (it reads every partition, once per image);
Enter on a row opens it in the tree, ``F`` filters, ``s`` or a header sorts, ``y``/``Y``
copy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from .fmt import plural
from .listrows import BROKERS, TOPICS
from .messages import Jump
from .resulttable import ResultTable
from .rows import ListTable

if TYPE_CHECKING:
    from .engine import Engine

NOUN = {TOPICS: "topic", BROKERS: "broker"}
SHOWN = 500  # rows in the widget at most (a DataTable measures every cell it holds)


def is_list(path: str) -> bool:
    return path in NOUN


class ListTableView(Vertical):
    """A status line and the table; :meth:`show` fills them for a list's path."""

    DEFAULT_CSS = """
    ListTableView { height: 1fr; display: none; }
    ListTableView #view-status { height: auto; display: block; }
    ListTableView #view-table { height: 1fr; }
    """

    @dataclass
    class Made(Message):
        """The worker's table for ``path`` (the image's: made once, kept by the engine)."""

        path: str
        table: ListTable

    def __init__(self, engine: Engine) -> None:
        super().__init__(id="view-list")
        self.engine = engine
        self.path: str | None = None  # the list asked for last
        self.list_path: str | None = None  # the list the table holds
        self.made: ListTable | None = None
        self.status = Static(id="view-status", classes="status")
        self._table = ResultTable(id="view-table")

    def attach(self) -> None:
        """Mount the status line and the table (once this view is mounted): the pane makes
        this view when a list is first shown and fills it at once, before a compose would
        have run."""
        self.mount(self.status, self._table)

    @property
    def table(self) -> ResultTable:
        return self._table

    def show(self, path: str) -> None:
        self.path = path
        if self.made is None or self.list_path != path:
            self.status.update(Text(
                f"{path}\nreading every partition…", style="dim"))
        self._make(path)

    @work(thread=True, exclusive=True, group="list-table")
    def _make(self, path: str) -> None:
        made = self.engine.list_table(path)
        if made is not None:
            self.post_message(self.Made(path, made))

    @on(Made)
    def _made(self, event: Made) -> None:
        event.stop()
        if self.path != event.path or self.made is event.table:
            return  # the cursor moved on meanwhile, or the table is on show already
        table = self.table
        if self.list_path != event.path:  # another list: sort and filter afresh
            table.clear(columns=True)
            table.sorted_by = None
            table.filter_text = ""
            table.add_columns(*event.table.columns)
            self.list_path = event.path
        table.limit = SHOWN
        self.made = event.table
        rows = event.table.rows
        table.fill(list(zip(event.table.keys, rows, strict=True)))
        t = Text(f"{event.path}\n", style="bold")
        t.append(plural(len(rows), NOUN[event.path]), style="bold")
        if len(rows) > SHOWN:
            t.append(f", the first {SHOWN} shown (F and s work on all)", style="bold")
        t.append("  (Enter opens · s or a header sorts · F filters · y/Y copy)", style="dim")
        self.status.update(t)

    @on(DataTable.RowSelected, "#view-table")
    def _row(self, event: DataTable.RowSelected) -> None:
        """Enter on a row: that topic or broker."""
        event.stop()
        if event.row_key.value:
            self.post_message(Jump(event.row_key.value))
