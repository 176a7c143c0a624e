"""``?`` (or F1): every key of the screen it was opened on, the focused pane's first, then
the screen's and the app's; Esc, ``?`` or ``q`` closes it."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

# Keys no binding lists (widgets handle them), by screen class name.
EXTRA: dict[str, list[tuple[str, str]]] = {
    "BrowserScreen": [("↑↓ j k", "move in the tree or table"),
                      ("Enter", "open a node (on a Topics or Brokers row: that one)"),
                      ("s S", "on a table: sort by the next column / the other way"),
                      ("Tab", "next pane (tree, details, command bar)"),
                      ("Esc", "cancel the command; else back to where a jump came from")],
    "HealthScreen": [("↑↓ j k", "move"), ("Enter", "jump to the node at fault")],
    "OverviewScreen": [("Enter", "health details")],
}
COMMON = [("Ctrl+C", "cancel the command / clear the bar; twice: quit"),
          ("Ctrl+Q", "quit"), ("Ctrl+P", "palette: every action by name")]


def key_rows(screen: Screen[object]) -> list[tuple[str, str]]:
    """(key, what it does) for ``screen``: its active bindings in order, then EXTRA."""
    rows: list[tuple[str, str]] = []
    seen: set[str] = set()
    for key, (node, binding, _enabled, _tip) in screen.active_bindings.items():
        if not binding.description or key in seen or binding.system or key == "ctrl+c" \
                or key.startswith("super+") \
                or not _ours(node, binding.action):
            continue
        seen.add(key)
        rows.append((screen.app.get_key_display(binding), binding.description))
    return rows + EXTRA.get(type(screen).__name__, []) + COMMON


def _ours(node: object, action: str) -> bool:
    """A binding mdshell declares (the screen's, the app's, or one of its widgets' own), not
    the scrolling keys every Textual widget has."""
    if isinstance(node, Screen | App):
        return True
    own = type(node).__dict__.get("BINDINGS", [])
    return type(node).__module__.startswith("mdshell") and any(
        isinstance(b, Binding) and b.action == action for b in own)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen VerticalScroll { width: 72; max-width: 100%; height: auto; max-height: 100%;
                                border: thick $accent; background: $surface; padding: 0 1; }
    HelpScreen Static { width: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q,f1", "dismiss", "Close"),
    ]

    def __init__(self, title: str, rows: list[tuple[str, str]]) -> None:
        super().__init__()
        self.title_text = title
        self.rows = rows

    def compose(self) -> ComposeResult:
        t = Table(box=None, show_header=False, pad_edge=False)
        t.add_column(style="bold", no_wrap=True)
        t.add_column()
        for key, what in self.rows:
            t.add_row(key, what)
        with VerticalScroll() as box:
            box.border_title = f"Keys: {self.title_text}"
            box.border_subtitle = "Esc closes"
            yield Static(t)


def open_help(app: App[int]) -> None:
    """The overlay over the current screen (not over itself)."""
    if not isinstance(app.screen, HelpScreen):
        app.push_screen(HelpScreen(app.current_mode or "mdshell", key_rows(app.screen)))
