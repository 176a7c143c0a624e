"""``y`` copies the focused node's path, ``Y`` its value (or the table row under the cursor),
through OSC 52 (Textual's ``copy_to_clipboard``), so it reaches the local clipboard over ssh
too; one line says what was copied. Each screen says what its ``y``/``Y`` mean with
``copy_text(value) -> (what, text) | None``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import DataTable, Input

if TYPE_CHECKING:
    from textual.app import App

SHOWN = 50  # characters of the copied text the confirmation repeats


def row_text(table: DataTable[object]) -> str | None:
    """The row under the table's cursor, its cells tab-separated (as spreadsheets paste)."""
    if not table.row_count:
        return None
    row = table.get_row_at(table.cursor_row)
    return "\t".join(c.plain if isinstance(c, Text) else str(c) for c in row)


def row_path(table: DataTable[object]) -> tuple[str, str] | None:
    """The path a row stands for (the Topics and Brokers tables key rows by path)."""
    key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
    return ("path", key) if key and key.startswith("/") else None


def copy(app: App[int], value: bool) -> None:
    screen = app.screen
    focused = screen.focused
    if isinstance(focused, Input):
        return
    got: tuple[str, str] | None = None
    if isinstance(focused, DataTable) and focused.row_count:
        got = ("row", row_text(focused) or "") if value else row_path(focused)
    if got is None:
        got = getattr(screen, "copy_text", lambda _v: None)(value)
    if got is None:
        app.notify("nothing to copy here", severity="warning", timeout=2)
        return
    what, text = got
    app.copy_to_clipboard(text)
    app.notify(f"copied {what}: {one_line(text)}", timeout=2)


def one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SHOWN else flat[:SHOWN - 1] + "…"
