"""The table a command or ``sql`` fills in the detail pane: rows are selected whole, so the
arrows left and right scroll sideways (an ENDPOINTS or FEATURES cell is wider than an
80-column terminal leaves the pane)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import DataTable

STEP = 8  # columns scrolled per Left/Right press


class ResultTable(DataTable[str]):
    """Up/Down move over rows; Left/Right scroll by STEP columns, Shift+Left/Right by a
    page, Home/End to either edge; a header click sorts (the detail pane handles it)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("shift+right", "page_right", "Page right", show=False),
        Binding("shift+left", "page_left", "Page left", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, zebra_stripes=True, cursor_type="row")

    def action_cursor_right(self) -> None:
        self.scroll_to(x=self.scroll_target_x + STEP, animate=False)

    def action_cursor_left(self) -> None:
        self.scroll_to(x=self.scroll_target_x - STEP, animate=False)

    def action_scroll_home(self) -> None:
        self.scroll_to(x=0, animate=False)

    def action_scroll_end(self) -> None:
        self.scroll_to(x=self.max_scroll_x, animate=False)

    def action_page_right(self) -> None:
        self.scroll_to(x=self.scroll_target_x + self.scrollable_content_region.width,
                       animate=False)

    def action_page_left(self) -> None:
        self.scroll_to(x=self.scroll_target_x - self.scrollable_content_region.width,
                       animate=False)
