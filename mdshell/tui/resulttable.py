"""What scrolls sideways in the detail pane: the table a command or ``sql`` fills (rows are
selected whole, so the arrows left and right scroll) and the text of each tab. An ENDPOINTS or
FEATURES cell, or a line of Kafka's text form, is wider than an 80-column terminal leaves the
pane; Left/Right move by STEP columns, Shift+Left/Right by a page, at once (no animation:
held keys do not queue up)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer
from textual.widget import Widget
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from .filterbar import matches

STEP = 8  # columns scrolled per Left/Right press
PAGE_KEYS: list[BindingType] = [
    Binding("shift+right", "page_right", "Page right", show=False),
    Binding("shift+left", "page_left", "Page left", show=False),
]


def _by(widget: Widget, columns: int) -> None:
    widget.scroll_to(x=widget.scroll_target_x + columns, animate=False)


def sort_key(cell: Any) -> tuple[int, float, str]:
    """Numbers as numbers, before words."""
    text = cell.plain if isinstance(cell, Text) else str(cell)
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def as_text(cell: object) -> Any:
    """A cell as the table should show it: a string holding ``[`` as its characters (a
    DataTable reads a ``str`` as markup: a topic ``a[red]b``, a ``[redacted]`` value or a
    ``sql`` result's ``[x]`` lost their brackets); anything else as it is (a number stays
    the string it was)."""
    return Text(cell) if isinstance(cell, str) and "[" in cell else cell


ARROWS = {False: " ▲", True: " ▼"}  # the sorted column's header: ascending, descending
ROOM = "  "  # every header keeps room for an arrow (its width does not change when sorted)


class FilterTable(DataTable[str]):
    """A table whose rows ``F`` narrows (:meth:`fill` keeps them all, the filter shows those
    holding the text) and sort: a header click, or ``s`` for the next column (again on the
    same column: the other way, as a second click); the sorted column's header shows an
    arrow. Filter and sort run over every row; at most ``limit`` of them are put in the
    widget (a DataTable measures every cell it holds: 5,000 topics would freeze the screen
    for a second)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "sort_next", "Sort", show=False),
        Binding("S", "sort_again", "Sort the other way", show=False),
    ]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.names: dict[ColumnKey, str] = {}  # each column's header without the arrow

    filter_text = ""
    sorted_by: tuple[ColumnKey, bool] | None = None  # column, reversed
    limit: int | None = None  # rows put in the widget at most (None: all)
    matching = 0  # rows the filter keeps (all of them are sorted)

    def add_column(self, label: Any, *, width: int | None = None, key: str | None = None,
                   default: Any = None) -> ColumnKey:
        """A column whose header has room for the sort arrow."""
        text = label.plain if isinstance(label, Text) else str(label)
        added = super().add_column(Text(text + ROOM), width=width, key=key, default=default)
        self.names[added] = text
        return added


    def sort_by(self, column: ColumnKey, reverse: bool | None = None) -> None:
        """Sort by ``column``; by it again: the other way."""
        if reverse is None:
            reverse = self.sorted_by == (column, False)
        self.sorted_by = (column, reverse)
        for key, col in self.columns.items():
            name = self.names.get(key, col.label.plain.rstrip())
            col.label = Text(name + (ARROWS[reverse] if key == column else ROOM))
        self._show()

    def header(self, key: ColumnKey) -> str:
        """A column's header as shown (with its arrow when it is the sorted one)."""
        return self.columns[key].label.plain

    def action_sort_next(self) -> None:
        keys = list(self.columns)
        if keys:
            at = keys.index(self.sorted_by[0]) + 1 if self.sorted_by else 0
            self.sort_by(keys[at % len(keys)], reverse=False)

    def action_sort_again(self) -> None:
        if self.sorted_by is not None:
            self.sort_by(self.sorted_by[0], reverse=not self.sorted_by[1])

    def fill(self, rows: Sequence[tuple[str | None, Sequence[object]]]) -> None:
        """Every row, as (key, cells); the filter typed and the sort stay applied."""
        self.all_rows = rows
        self._show()

    def apply_filter(self, text: str) -> tuple[int, int]:
        self.filter_text = text
        self._show()
        return self.matching, len(getattr(self, "all_rows", []))

    def _show(self) -> None:
        low = self.filter_text.lower()
        rows = [(k, c) for k, c in getattr(self, "all_rows", [])
                if not low or matches(low, *c)]
        if self.sorted_by is not None:
            column, reverse = self.sorted_by
            at = list(self.columns).index(column)
            rows.sort(key=lambda r: sort_key(r[1][at]), reverse=reverse)
        self.matching = len(rows)
        cursor = self.cursor_row
        self.clear()
        for key, cells in rows[:self.limit]:
            self.add_row(*map(as_text, cells), key=key)
        if self.row_count:
            self.move_cursor(row=min(cursor, self.row_count - 1))

    def filter_name(self) -> str:
        return "rows"


class ResultTable(FilterTable):
    """Up/Down move over rows; Left/Right scroll by STEP columns, Shift+Left/Right by a
    page, Home/End to either edge; a header click or ``s`` sorts."""

    BINDINGS: ClassVar[list[BindingType]] = PAGE_KEYS

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, zebra_stripes=True, cursor_type="row")

    def action_cursor_right(self) -> None:
        _by(self, STEP)

    def action_cursor_left(self) -> None:
        _by(self, -STEP)

    def action_scroll_home(self) -> None:
        self.scroll_to(x=0, animate=False)

    def action_scroll_end(self) -> None:
        self.scroll_to(x=self.max_scroll_x, animate=False)

    def action_page_right(self) -> None:
        _by(self, self.scrollable_content_region.width)

    def action_page_left(self) -> None:
        _by(self, -self.scrollable_content_region.width)


class TextScroll(ScrollableContainer):
    """A tab's text: Up/Down/PageUp/PageDown as usual; Left/Right by STEP columns."""

    BINDINGS: ClassVar[list[BindingType]] = PAGE_KEYS

    def action_scroll_right(self) -> None:
        _by(self, STEP)

    def action_scroll_left(self) -> None:
        _by(self, -STEP)

    def action_page_right(self) -> None:
        _by(self, self.scrollable_content_region.width)

    def action_page_left(self) -> None:
        _by(self, -self.scrollable_content_region.width)
