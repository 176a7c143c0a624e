"""The app's keys, in one place: screens, search, filter, copy, reload, command bar, help,
movement, quit (the README's key table, docs/tui.md and the help overlay list them).

``/``, ``:`` and ``F`` open a box: they are priority keys, handled as the app reads them, so
the box is open and focused before the next key is read (a key typed right after went to
the screen left: the ``o`` of ``Fcon`` showed the overview). In a box, or over a modal
screen, they step aside (``KeyActions.check_action``): there they are characters."""

from __future__ import annotations

from textual.binding import Binding, BindingType

APP_KEYS: list[BindingType] = [
    Binding("o", "mode('overview')", "Overview"),
    Binding("t", "mode('tree')", "Tree"),
    Binding("h", "mode('health')", "Health"),
    Binding("l", "mode('history')", "History"),
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
    Binding("q", "quit", "Quit"),
    Binding("ctrl+c", "interrupt", "Cancel", show=False, priority=True),
    Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
]
