"""The loading screen's first frame, drawn before Textual is imported.

Importing Textual takes 130 ms of CPU before the app can draw anything (0.3 s and more
on a busy machine), during which the terminal showed nothing. So the frame the loading
screen (loading.py) first shows, its words where it puts them, on its background, is
drawn on the terminal's alternate screen at once (about 0.1 s of CPU after the start);
Textual's own loading screen, or the overview when the load is done by then, replaces it
(Textual enters the alternate screen again, which keeps the cursor and the screen saved
on the first entry). Keys typed meanwhile are not echoed over it and wait for the app,
as keys typed while loading do.

:meth:`Splash.handed_over` is called just before Textual takes the terminal; if it never
does (an error, Ctrl-C), :meth:`Splash.undo` leaves the alternate screen. No textual here.
"""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from typing import Any, TextIO

ENTER = "\x1b[?1049h\x1b[?25l"  # the alternate screen (saving the cursor), cursor hidden
LEAVE = "\x1b[0m\x1b[?25h\x1b[?1049l"
# The default theme's colours as Textual draws them on a 256-colour terminal (tmux).
COLOURS = {"bg": "\x1b[48;5;233m", "text": "\x1b[1;38;5;253m", "dim": "\x1b[1;38;5;246m"}
MIN_WIDTH, MIN_HEIGHT = 60, 16  # below this the app says the terminal is too small


def frame_lines(label: str) -> list[tuple[str, str]]:
    """The loading screen's words at its start (loading.LoadingScreen._text), by style."""
    begun = "connecting..." if label.startswith("live:") else "starting..."
    return [(f"Reading {label}", "text"), (begun, "text"), ("(q quits)", "dim")]


class Splash:
    """The frame on ``out`` (a terminal), and what undoes it."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out
        self.drawn = False
        self._tty_attrs: list[Any] | None = None

    def draw(self, label: str) -> bool:
        """Draw the frame (False, nothing drawn: not a terminal, or too small for the app's
        layout)."""
        try:
            fd = self.out.fileno()
            if not os.isatty(fd):
                return False
            width, height = os.get_terminal_size(fd)
        except (OSError, ValueError):
            return False
        if width < MIN_WIDTH or height < MIN_HEIGHT:
            return False
        colour = os.environ.get("NO_COLOR", "") == ""
        lines = frame_lines(label)
        block = max(len(text) for text, _ in lines) + 4  # the text's margin: 0 2
        left = max(0, (width - block) // 2) + 2
        top = max(0, (height - 1 - 6) // 2) + 1  # 3 lines, a margin, the bar; the footer
        parts = [ENTER, COLOURS["bg"] if colour else "", "\x1b[2J"]
        for i, (text, style) in enumerate(lines):
            parts.append(f"\x1b[{top + i + 1};{left + 1}H")
            parts.append((COLOURS[style] if colour else "\x1b[1m") + text[:width - left])
            parts.append("\x1b[0m" + (COLOURS["bg"] if colour else ""))
        self._quiet(fd)
        self.out.write("".join(parts))
        self.out.flush()
        self.drawn = True
        return True

    def _quiet(self, fd: int) -> None:
        """Keys typed over the frame are not echoed on it (the app reads them)."""
        try:
            import termios

            attrs = termios.tcgetattr(fd)
            quiet = list(attrs)
            quiet[3] = quiet[3] & ~termios.ECHO
            termios.tcsetattr(fd, termios.TCSANOW, quiet)
            self._tty_attrs = attrs
        except (ImportError, OSError):
            self._tty_attrs = None

    def _echo(self) -> None:
        if self._tty_attrs is not None:
            import termios

            with suppress(OSError):
                termios.tcsetattr(self.out.fileno(), termios.TCSANOW, self._tty_attrs)
            self._tty_attrs = None

    def handed_over(self) -> None:
        """Textual takes the terminal now: the terminal's modes as they were before the
        frame (Textual keeps them, and restores them on exit)."""
        self._echo()

    def undo(self) -> None:
        """Textual never took the terminal: leave the frame's alternate screen."""
        self._echo()
        if self.drawn:
            self.drawn = False
            self.out.write(LEAVE)
            self.out.flush()
