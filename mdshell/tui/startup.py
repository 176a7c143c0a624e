"""Everything the TUI changes in the process to start fast, in one place, each undone on exit.

Four changes, each worth a measurable part of the start-up or of a key's wait:

- the cyclic GC is off from the start until the first load is done (imports and the load
  allocate millions of objects and keep them all: collections would only walk them again);
  what exists then is frozen and collections resume;
- a small source (``EARLY_BYTES`` or less to read) starts loading in a thread before
  Textual's import (``Engine.start_load``), so that it is often read before the app is up
  and the overview is the first screen; a bigger one loads once the app shows its loading
  screen (at once: a load and an import running together take turns on one interpreter,
  and the loading screen came only with the overview, after 1.5 s at 500k). No process is
  forked (a fork of a process running threads can deadlock, and what a child finds never
  reaches the verdict);
- once the UI is up, a short thread switch interval lets the UI thread take the GIL back from
  a working thread quickly, so keys are answered during a load or a health check;
- once the first load is done (keys wait for it anyway), the loader's compiled decode
  handles at most ``SLICE`` records a call (``wire.decoding.set_slice``): a snapshot batch
  of 69,632 records was decoded in one call that held the interpreter 35 ms, which a key
  pressed during a re-read, a time travel or a diff waited for. Each slice frames the batch
  again (a 500k load: 327 -> 353 ms of CPU), so the first load keeps whole batches.

:func:`started` makes them and restores the GC and the switch interval in ``finally``,
whatever happened (a load that failed, an exception, Ctrl-C). ``MDSHELL_PLAIN_START=1``
turns all four off: a plain start, to compare with or to rule them out when something is
odd. The state is process-wide (as the GC and the switch interval are): one start-up at a
time. No textual here.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine import Engine

PLAIN_START = "MDSHELL_PLAIN_START"
EARLY_BYTES = 16_000_000  # up to this much to read (about 0.3 s of loading), load early
SWITCH_INTERVAL = 0.001  # seconds (CPython's default is 0.005)
SLICE = 16384  # records the loader's compiled decode handles a call, once loaded


def plain() -> bool:
    """Whether ``MDSHELL_PLAIN_START=1`` asks for a start with none of the changes."""
    return os.environ.get(PLAIN_START, "") == "1"


class Startup:
    """The changes of one start-up and what they replaced."""

    def __init__(self, plain_start: bool) -> None:
        self.plain = plain_start
        self.gc_was_enabled = gc.isenabled()
        self.switch_interval = sys.getswitchinterval()
        self.gc_off = False
        self.slice_was: int | None = None  # the loader's bound before ours (set: ours is on)

    def begin(self) -> None:
        if not self.plain:
            gc.disable()
            self.gc_off = True

    def start_load(self, engine: Engine) -> bool:
        """Start a small source's load in a thread before Textual is imported; whether it
        did (not on a plain start, nor for a big source: the app loads it in its worker,
        its loading screen up at once)."""
        if self.plain or (engine.on_disk and engine.session.bytes_to_read() > EARLY_BYTES):
            return False  # (a live quorum is reached early: the wait is the network's)
        engine.start_load()
        return True

    def ui_up(self) -> None:
        if not self.plain:
            sys.setswitchinterval(SWITCH_INTERVAL)

    def loaded(self) -> None:
        """The first load is done: freeze what exists, collections resume for what follows;
        the loader's compiled calls bounded from now on."""
        if self.gc_off:
            gc.freeze()
            self._restore_gc()
        if not self.plain and self.slice_was is None:
            from ..wire.decoding import set_slice

            self.slice_was = set_slice(SLICE)

    def end(self) -> None:
        self._restore_gc()
        sys.setswitchinterval(self.switch_interval)
        if self.slice_was is not None:
            from ..wire.decoding import set_slice

            set_slice(self.slice_was)
            self.slice_was = None

    def _restore_gc(self) -> None:
        self.gc_off = False
        if self.gc_was_enabled:
            gc.enable()


_active: Startup | None = None


@contextmanager
def started() -> Iterator[Startup]:
    """The start-up changes for the life of the block (none with ``MDSHELL_PLAIN_START=1``)."""
    global _active
    startup = Startup(plain())
    _active = startup
    try:
        startup.begin()
        yield startup
    finally:
        _active = None
        startup.end()


def ui_up() -> None:
    """The app is mounted (called by it; nothing outside a start-up, as in tests)."""
    if _active is not None:
        _active.ui_up()


def loaded() -> None:
    """The app's first load is done (called by it; nothing outside a start-up)."""
    if _active is not None:
        _active.loaded()
