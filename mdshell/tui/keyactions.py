"""The app's key actions that only hand over to their modules: movement (nav.py), help,
filter (filterbar.py), copy (clipboard.py), re-read and follow (follow.py). Kept out of
app.py, which holds the app's modes, loading and jumps."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from textual.app import App
from textual.screen import ModalScreen
from textual.widgets import Input

from .nav import move

if TYPE_CHECKING:
    from .app import MdshellApp


BOX_KEYS = {"search", "command_bar", "filter"}  # priority keys that open a box


class KeyActions(App[int]):
    def _now(self, action: Callable[[], None]) -> bool:
        """Whether a key's action can run now (MdshellApp: once the image is loaded)."""
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """F shows (and works) on the screens that have a list to filter; the keys that
        open a box step aside in a box and over a modal screen (keymap.py)."""
        if action in BOX_KEYS and (isinstance(self.screen.focused, Input)
                                   or isinstance(self.screen, ModalScreen)):
            return False
        if action == "filter":
            return hasattr(self.screen, "filter_target")
        return True

    def action_move(self, step: int) -> None:
        move(self, step)

    def action_help(self) -> None:
        from .helpscreen import open_help

        open_help(self)

    async def action_filter(self) -> None:
        from .filterbar import open_filter

        def later() -> None:
            self.call_later(self.action_filter)

        if self._now(later):
            await open_filter(self)

    def action_copy(self, value: bool) -> None:
        from .clipboard import copy

        copy(self, value)

    def action_reload(self) -> None:
        from .follow import reload

        if self._now(self.action_reload):
            reload(cast("MdshellApp", self))

    def action_follow(self) -> None:
        from .follow import toggle

        if self._now(self.action_follow):
            toggle(cast("MdshellApp", self))
