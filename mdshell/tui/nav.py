"""Movement and the way back: j/k move whatever has the focus (tree, table, list, text), and
Esc returns to where a jump (search, health's Enter) came from. No screens of its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App

    from .app import MdshellApp

BACK_LIMIT = 50


def move(app: App[int], step: int) -> None:
    """j (1) / k (-1): the focused widget's cursor, else its scroll position."""
    focused = app.screen.focused
    if focused is None:
        return
    name = "down" if step > 0 else "up"
    action = (getattr(focused, f"action_cursor_{name}", None)
              or getattr(focused, f"action_scroll_{name}", None))
    if action is not None:
        action()


@dataclass
class Back:
    """Where jumps came from: (mode, tree path or None), newest last."""

    stack: list[tuple[str, str | None]] = field(default_factory=list)

    def push(self, mode: str, path: str | None) -> None:
        self.stack.append((mode, path))
        del self.stack[:-BACK_LIMIT]

    def pop(self) -> tuple[str, str | None] | None:
        return self.stack.pop() if self.stack else None


def go_back(app: MdshellApp) -> bool:
    """The mode (and tree node) the last jump came from; False when there is none."""
    where = app.back.pop()
    if where is None:
        return False
    mode, path = where
    if mode == "tree" and path:
        app.jump(path, remember=False)
    else:
        app.action_mode(mode)
    return True
