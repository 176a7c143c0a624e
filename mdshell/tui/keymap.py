"""The app's keys, in one place: the screens' keys (from registry.py), search, filter, copy,
reload, follow, command bar, help, movement, back, quit (the README's key table, docs/tui.md
and the help overlay list them).

``/``, ``:`` and ``F`` open a box: they are priority keys (the app takes them whatever has
the focus). In a box, or over a modal screen, they step aside (``MdshellApp.check_action``):
there they are characters. Keys typed after any key wait for it to settle (keygate.py)."""

from __future__ import annotations

from textual.binding import Binding, BindingType

from .registry import SCREENS

APP_KEYS: list[BindingType] = [
    Binding("slash", "search", "Search", priority=True),
    Binding("colon", "command_bar", "Command", priority=True),
    Binding("F", "filter", "Filter", priority=True),
    Binding("y", "copy(False)", "Copy path", show=False),
    Binding("Y", "copy(True)", "Copy value / row", show=False),
    Binding("r", "reload", "Re-read", show=False),
    Binding("f", "follow", "Follow", show=False),
    Binding("question_mark", "help", "Help"),
    Binding("f1", "help", "Help", show=False),
    Binding("j", "move(1)", "Down", show=False),
    Binding("k", "move(-1)", "Up", show=False),
    Binding("g", "edge(False)", "Top", show=False),
    Binding("G", "edge(True)", "Bottom", show=False),
    Binding("escape,backspace", "back", "Back", show=False),
    Binding("q", "quit", "Quit"),
    Binding("ctrl+c", "interrupt", "Cancel", show=False, priority=True),
    Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
]


def screen_keys() -> list[BindingType]:
    """A key per registered screen (``o`` overview, ``t`` tree...)."""
    return [Binding(s.key, f"show('{s.mode}')", s.title) for s in SCREENS]


BOX_KEYS = {"search", "command_bar", "filter"}  # priority keys that open a box
# Keys that act on what is shown: none of them over a modal screen (help, search).
NOT_OVER_MODALS = {"show", "copy", "reload", "follow", "back"} | BOX_KEYS
BEFORE_LOADED = {"quit", "help", "interrupt"}  # what acts while there is no image
