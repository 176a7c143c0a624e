"""A command under way in the detail pane's Output tab: a spinner, the seconds so far and
how to cancel, until its result replaces them (sql has its own, with Spark's tasks)."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text
from textual.timer import Timer
from textual.widgets import Static

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK = 0.1  # seconds between frames


def running_text(line: str, seconds: float, frame: int, cancelled: bool = False) -> Text:
    t = Text(f"{line}\n", style="bold reverse")
    if cancelled:
        t.append("cancelling… (the result will be dropped)", style="bold yellow")
    else:
        t.append(f"{FRAMES[frame % len(FRAMES)]} running", style="bold")
        t.append("  (Esc or Ctrl+C cancels)", style="dim")
    t.append(f"  {seconds:.1f} s", style="dim")
    return t


def start(body: Static, line: str, still_running: Callable[[], bool]) -> Timer:
    """Draw the spinner in ``body`` every TICK until the caller stops the timer."""
    started = time.perf_counter()
    frame = 0

    def tick() -> None:
        nonlocal frame
        frame += 1
        body.update(running_text(line, time.perf_counter() - started, frame,
                                 cancelled=not still_running()))

    tick()
    return body.set_interval(TICK, tick)
