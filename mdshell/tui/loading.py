"""Screens around the data: loading (bytes and batches read, elapsed time), a load error, a
terminal too small."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Center, Middle
from textual.screen import ModalScreen, Screen
from textual.widgets import ProgressBar, Static

from ..session.progress import LoadProgress
from .footer import KeyFooter


class LoadingScreen(Screen[None]):
    """What shows while the log is read in a worker: bytes and batches read of the total, a
    bar, the time taken; keys still work (q quits)."""

    DEFAULT_CSS = """
    LoadingScreen { align: center middle; }
    LoadingScreen #what { width: auto; margin: 1 2; }
    LoadingScreen ProgressBar { width: auto; margin: 0 2; }
    """

    def __init__(self, source: str, progress: LoadProgress | None = None) -> None:
        super().__init__()
        self.source = source
        self.progress = progress or LoadProgress()
        self.started = time.perf_counter()

    def compose(self) -> ComposeResult:
        with Middle():
            with Center():
                yield Static(self._text(), id="what")
            with Center():
                yield ProgressBar(total=100, show_eta=False, id="bar")  # no animation
        yield KeyFooter()

    def on_mount(self) -> None:
        # A slow tick: every frame drawn is time taken from the load.
        self.set_interval(0.25, self._tick)

    def _tick(self) -> None:
        self.query_one("#what", Static).update(self._text())
        p = self.progress
        if p.total:
            self.query_one(ProgressBar).update(total=p.total, progress=p.done)

    def _text(self) -> Text:
        p = self.progress
        t = Text("Reading ", style="bold")
        t.append(self.source)
        t.append("\n")
        if p.total:
            t.append(f"{_mb(p.done)} of {_mb(p.total)}", style="bold")
            t.append(f"  {p.batches:,} batches", style="")
        elif p.batches:
            t.append(f"{p.batches:,} batches")
        else:
            t.append("connecting..." if self.source.startswith("live:") else "starting...")
        t.append(f"  {time.perf_counter() - self.started:.1f} s", style="dim")
        t.append("\n(q quits)", style="dim")
        return t


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n / 1e3:,.1f} kB"


class ErrorScreen(Screen[None]):
    """A load that failed: the one-line reason, and how to leave (exit code 1)."""

    DEFAULT_CSS = """
    ErrorScreen { align: center middle; }
    ErrorScreen Static { width: 80%; border: heavy $error; padding: 1 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q,escape,enter", "app.quit", "Quit")]

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        t = Text("mdshell could not open the metadata\n\n", style="bold red")
        t.append(self.message)
        t.append("\n\nPress q to quit.", style="dim")
        yield Static(t)
        yield KeyFooter()


class TooSmallScreen(ModalScreen[None]):
    """Shown instead of a cramped layout; goes away when the terminal grows."""

    DEFAULT_CSS = """
    TooSmallScreen { align: center middle; background: $background; }
    TooSmallScreen Static { width: auto; max-width: 100%; padding: 0 1; }
    """
    # The app's keys do not reach a modal screen: its own q, as the message says.
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "app.quit", "Quit")]

    def __init__(self, width: int, height: int) -> None:
        super().__init__()
        self.need = (width, height)

    def compose(self) -> ComposeResult:
        yield Static(id="msg")

    def on_mount(self) -> None:
        self.show(self.app.size.width, self.app.size.height)

    def show(self, width: int, height: int) -> None:
        w, h = self.need
        self.query_one("#msg", Static).update(Text(
            f"Terminal too small: {width}x{height}.\nmdshell needs at least {w}x{h}: "
            "enlarge the window (q quits).", style="bold"))  # wraps on a narrow one
