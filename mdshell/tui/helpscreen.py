"""``?`` (or F1): every key of the screen it was opened on, the focused pane's first, then
the screen's and the app's; Esc, ``?`` or ``q`` closes it; when it does not fit (80x24),
``j``/``k`` (or the arrows, PageUp/PageDown, ``g``/``G``) scroll it and its border says so."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from .nav import edge, move

# Keys no binding lists (widgets handle them), by screen class name.
EXTRA: dict[str, list[tuple[str, str]]] = {
    "BrowserScreen": [("↑↓ j k", "move in the tree or table"),
                      ("Enter", "open a node (on a Topics or Brokers row: that one)"),
                      ("g G", "first / last line of the tree or table"),
                      ("s S", "on a table: sort by the next column / the other way")],
    "HealthScreen": [("↑↓ j k", "move"), ("g G", "first / last line")],
    "OverviewScreen": [("Enter", "health details")],
}
COMMON = [("Esc Backspace", "back to where you were (screens and jumps)"),
          ("Ctrl+C", "cancel the command / clear the bar; twice: quit"),
          ("Ctrl+Q", "quit"), ("Ctrl+P", "palette: every action by name"),
          ("Tab Shift+Tab", "next / previous pane (tree, details, command bar)")]
LEFT_OUT = {"ctrl+c", "ctrl+q", "ctrl+p"}  # COMMON says what they do
KEY_NAMES = {"esc": "escape", "f1": "f1", "?": "question_mark", "/": "slash", ":": "colon"}


def _keys(words: str) -> set[str]:
    """The key names (Textual's) a row of EXTRA or COMMON describes: "Esc Backspace" is
    escape and backspace."""
    return {KEY_NAMES.get(w.lower(), w.lower() if len(w) > 1 else w) for w in words.split()}
FOCUS = {"focus_next", "focus_previous"}  # Textual's Tab keys: COMMON again


def key_rows(screen: Screen[object]) -> list[tuple[str, str]]:
    """(key, what it does) for ``screen``: the keys of its panes and its own first (at 80x24
    they were under the app's, out of sight), then EXTRA, the app's, COMMON; keys for one
    action share a row (``? F1``); a binding's tooltip, when it has one, says more than its
    footer label. A key EXTRA describes, or an app key COMMON describes, is not listed
    again."""
    extra = EXTRA.get(type(screen).__name__, [])
    described = set().union(*(_keys(keys) for keys, _what in extra))  # not j, k again
    common = set().union(*(_keys(keys) for keys, _what in COMMON))
    own: dict[str, list[str]] = {}
    app: dict[str, list[str]] = {}
    what: dict[str, str] = {}
    taken: set[str] = set()
    for key, (node, binding, _enabled, _tip) in screen.active_bindings.items():
        if not binding.description or binding.system or key in LEFT_OUT \
                or key.startswith("super+") or binding.action.split(".")[-1] in FOCUS \
                or not _ours(node, binding.action):
            continue
        if key in described or (isinstance(node, App) and key in common):
            continue  # said once, in EXTRA's or COMMON's words (it was "⏎" and "Enter")
        shown = screen.app.get_key_display(binding)
        taken.add(key)
        rows = app if isinstance(node, App) else own
        rows.setdefault(binding.action, []).append(shown)
        what.setdefault(binding.action, binding.tooltip or binding.description)
    listed = [(" ".join(keys), what[action]) for rows in (own, app)
              for action, keys in rows.items()]
    mine, theirs = listed[:len(own)], listed[len(own):]
    return mine + extra + theirs + _common(taken)


def _common(taken: set[str]) -> list[tuple[str, str]]:
    """COMMON without the keys ``taken`` by a binding listed above (the tree's own Esc says
    what Esc does there)."""
    rows = []
    for keys, what in COMMON:
        left = [k for k in keys.split() if not _keys(k) & taken]
        if left:
            rows.append((" ".join(left), what))
    return rows


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
        # The app's keys do not reach a modal screen: the movement keys again, here.
        Binding("j", "move(1)", "Down", show=False),
        Binding("k", "move(-1)", "Up", show=False),
        Binding("g", "edge(False)", "Top", show=False),
        Binding("G", "edge(True)", "Bottom", show=False),
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
        with VerticalScroll(id="help") as box:
            box.border_title = f"Keys: {self.title_text}"
            box.border_subtitle = "Esc closes"
            yield Static(t)

    def action_move(self, step: int) -> None:
        move(self.focused, step)

    def action_edge(self, end: bool) -> None:
        edge(self.focused, end)

    def on_mount(self) -> None:
        box = self.query_one("#help", VerticalScroll)
        box.focus()  # j/k, the arrows, PageUp/PageDown scroll it
        self.call_after_refresh(self._hint)

    def _hint(self) -> None:
        """Say how to see the rest when the keys do not fit."""
        box = self.query_one("#help", VerticalScroll)
        if box.max_scroll_y > 0:
            box.border_subtitle = "j/k ↑↓ scroll · Esc closes"


def open_help(app: App[int]) -> None:
    """The overlay over the current screen (not over itself)."""
    if not isinstance(app.screen, HelpScreen):
        mode = app.current_mode
        title = mode if mode and mode != "_default" else "mdshell"  # no screen's mode yet
        app.push_screen(HelpScreen(title, key_rows(app.screen)))
