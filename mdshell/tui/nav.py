"""Movement and the way back, as k9s and a browser have them.

``j``/``k`` move whatever has the focus (tree, table, list, text, the help overlay) and
``g``/``G`` go to its top and bottom. Every screen switch and every jump (search, health's
Enter, a row of a table) remembers where it came from; Esc or backspace, when nothing on the
screen takes them (a box to close, a filter to clear, a command to cancel), go back there:
the screen, and the place on it (the tree's node, health's item, history's offset). No
knowledge of the app here: screens say where they are with ``location()`` and go back with
``restore()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from textual.widget import Widget

BACK_LIMIT = 100


@runtime_checkable
class Placed(Protocol):
    """A screen that can say where it is and go back there."""

    def location(self) -> str | None: ...

    def restore(self, where: str | None) -> None: ...


@dataclass(frozen=True)
class Location:
    mode: str
    where: str | None  # the screen's own place (a tree path, an offset...), None: its top


@dataclass
class BackStack:
    """Where the user was, newest last."""

    stack: list[Location] = field(default_factory=list)

    def push(self, here: Location) -> None:
        if self.stack and self.stack[-1] == here:
            return
        self.stack.append(here)
        del self.stack[:-BACK_LIMIT]

    def pop(self) -> Location | None:
        return self.stack.pop() if self.stack else None

    def __len__(self) -> int:
        return len(self.stack)


def move(focused: Widget | None, step: int) -> None:
    """j (1) / k (-1): the focused widget's cursor, else its scroll position."""
    if focused is None:
        return
    name = "down" if step > 0 else "up"
    for action in (f"action_cursor_{name}", f"action_scroll_{name}"):
        fn = getattr(focused, action, None)
        if fn is not None:
            fn()
            return


def edge(focused: Widget | None, end: bool) -> None:
    """g (top) / G (bottom): the focused widget's first or last line (a table's row, a
    tree's node, a list's option), else the top or bottom of what it scrolls."""
    from textual.widgets import DataTable, OptionList, Tree

    if isinstance(focused, DataTable):
        if focused.row_count:
            focused.move_cursor(row=focused.row_count - 1 if end else 0, animate=False)
    elif isinstance(focused, Tree):
        focused.cursor_line = focused.last_line if end else 0
        focused.scroll_to(y=focused.max_scroll_y if end else 0, animate=False)
    elif isinstance(focused, OptionList):
        if end:
            focused.action_last()
        else:
            focused.action_first()
    elif focused is not None:
        focused.scroll_to(y=focused.max_scroll_y if end else 0, animate=False)
