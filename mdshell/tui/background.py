"""The work the app does off the UI thread, each piece in a Textual worker thread that posts
its result and its problems to the app as messages (messages.py): the first load, the health
checks and the search index of each image, the Topics and Brokers tables, a live or
followed source's polls. No screens here, and no state of the app's: the app decides what
the messages mean.

The Topics and Brokers tables read every partition (about a second of CPU at 500k): their
worker gives the UI thread the interpreter whenever keys are being answered (``pause``),
so that a key never waits for them.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.worker import get_current_worker

from .messages import (
    Advanced,
    ChecksReady,
    IndexReady,
    LoadDone,
    LoadFailed,
    TablesReady,
)

if TYPE_CHECKING:
    from textual.app import App

    from .engine import Engine

PAUSE_STEP = 0.02  # seconds a courteous worker sleeps while the UI is answering keys
PAUSE_MAX = 5.0  # and at most this long in one pause (a held key must not starve it)


class Background:
    """Starts the workers; each posts what it found to ``app``."""

    def __init__(self, app: App[Any], engine: Engine, ui_busy: Callable[[], bool]) -> None:
        self.app = app
        self.engine = engine
        self.ui_busy = ui_busy
        self.polling = False
        self.verdict = ""  # the verdict's words when last polled
        # Every worker that makes the Topics and Brokers tables pauses as the judge does
        # (the View tab's own worker made them without a pause when it came first).
        engine.courtesy = self.pause

    def _post(self, message: Any) -> None:
        self.app.post_message(message)

    # ------------------------------------------------------------ the first load

    def load(self, at: str | None) -> None:
        self.app.run_worker(partial(self._load, at), thread=True, group="load",
                            exclusive=True, name="load")

    def _load(self, at: str | None) -> None:
        start = time.perf_counter()
        try:
            self.engine.finish_load()
            if at is not None:
                res = self.engine.run(f"at {at}")
                if res.errors:
                    raise ValueError(res.errors[0])
        except Exception as e:  # any failure is one line on screen, never a traceback
            self._post(LoadFailed(str(e) or type(e).__name__))
            return
        self.verdict = self.engine.verdict_words()
        self._post(LoadDone(time.perf_counter() - start))

    # ------------------------------------------------------------ modules, ahead

    def warm(self, modules: list[str]) -> None:
        """Import ``modules`` (of this package) in a worker: the screens not shown yet and
        the boxes keys open, so that the first ``t`` or ``F`` does not import them (the
        tree screen's: 25 ms of its first showing). Importing runs no app code."""
        self.app.run_worker(partial(self._warm, modules), thread=True, group="warm",
                            name="warm")

    def _warm(self, modules: list[str]) -> None:
        for name in modules:
            try:
                importlib.import_module(f".{name}", __package__)
            except Exception:  # the screen imports it again when shown, and says what
                continue

    # ------------------------------------------------------------ judging an image

    def judge(self, generation: int) -> None:
        """Health, then the search index, then (not live) the timeline and the Topics and
        Brokers tables of the image of ``generation``."""
        self.app.run_worker(partial(self._judge, generation), thread=True, group="judge",
                            exclusive=True, name="judge")

    def _judge(self, generation: int) -> None:
        worker = get_current_worker()
        engine = self.engine
        self._post(ChecksReady(engine.checks(), generation))
        self._post(IndexReady(engine.search_index(), generation))
        if engine.live or worker.is_cancelled:
            return  # a live image moves every second: its tables are made when asked
        engine.timeline()
        tables, problems = engine.list_tables(self.pause)
        if not worker.is_cancelled:
            self._post(TablesReady(tables, generation, problems))

    def pause(self) -> None:
        """Let the UI thread have the interpreter while keys are being answered (called
        from a worker thread; on the UI thread itself it returns at once)."""
        if threading.current_thread() is threading.main_thread():
            return
        waited = 0.0
        while self.ui_busy() and waited < PAUSE_MAX:
            time.sleep(PAUSE_STEP)
            waited += PAUSE_STEP

    # ------------------------------------------------------------ live and followed

    def listen(self) -> None:
        """Hear every advance of the session (a poll, a command that read appends first),
        from whichever thread made it."""
        self.engine.subscribe(lambda: self._post(Advanced()))

    def poll(self) -> None:
        """Take what the quorum (or the followed directory) has now; one poll at a time."""
        if self.polling:
            return
        self.polling = True
        self.app.run_worker(self._poll, thread=True, group="poll", name="poll")

    def _poll(self) -> None:
        try:
            moved = self.engine.poll()  # an advance: the session tells listen()'s callback
            words = self.engine.verdict_words()
            if words != self.verdict:
                # What is on disk was judged again: a verdict that changed without a new
                # offset (bytes appended that are no batch) is news too.
                self.verdict = words
                if not moved:
                    self._post(Advanced())
        finally:
            self.polling = False
