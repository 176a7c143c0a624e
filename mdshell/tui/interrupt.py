"""Ctrl+C as a shell user means it: cancel what runs, clear what is typed, and quit only when
pressed twice (``q`` and Ctrl+Q quit at once)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual.screen import ModalScreen

if TYPE_CHECKING:
    from textual.app import App

QUIT_WINDOW = 2.0  # seconds: a second Ctrl+C within this quits


class Interrupt:
    """What one Ctrl+C does depends on what is under way; ``last`` remembers an idle press."""

    def __init__(self) -> None:
        self.last = 0.0

    def press(self, app: App[int]) -> bool:
        """Handle a Ctrl+C; True when it asks the app to quit."""
        if self._cancel_or_clear(app):
            self.last = 0.0
            return False
        now = time.monotonic()
        if now - self.last <= QUIT_WINDOW:
            return True
        self.last = now
        app.notify("Ctrl+C again to quit (or q, Ctrl+Q)", timeout=QUIT_WINDOW)
        return False

    @staticmethod
    def _cancel_or_clear(app: App[int]) -> bool:
        from .commandbar import CommandBar

        screen = app.screen
        if isinstance(screen, ModalScreen):
            screen.dismiss()
            return True
        for bar in screen.query(CommandBar):
            if bar.running:
                bar.action_close()  # cancels the command (sql included)
                return True
            if bar.has_class("open"):
                if bar.value:
                    bar.value = ""
                else:
                    bar.action_close()
                return True
        return False
