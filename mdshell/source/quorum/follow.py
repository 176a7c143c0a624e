"""Following the log after catch-up: a background thread of long-poll Fetches.

The thread only touches the observer (whose lock guards its state changes, never a long
poll) through its own connections; front ends ask the source between commands whether the
committed log moved, and rebuild their image from it. Failures are retried with
backoff (a leader killed mid-follow, a dropped connection) and the last one is kept for /live.
"""

from __future__ import annotations

import threading
import time

from .client import backoff
from .errors import LiveError, RetriableError
from .observer import FOLLOW_WAIT_MS, Observer

REDISCOVER_S = 0.5  # the longest pause between rounds of asking who leads


class Follower:
    def __init__(self, observer: Observer) -> None:
        self.observer = observer
        self.stop_event = threading.Event()
        self.version = 0  # bumps whenever something new was committed
        self.error: str | None = None
        # Wall time since when the view is stale (None: fresh): the leader's last answer
        # before a Fetch went unanswered or failed. Cleared by the next answer.
        self.stale_since: float | None = None
        self.thread = threading.Thread(target=self._run, name="mdshell-follow", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(timeout=(FOLLOW_WAIT_MS / 1000) + 5)

    def _stale(self, why: str) -> None:
        if self.stale_since is None:
            self.stale_since = self.observer.last_answer or time.time()
        since = time.strftime("%H:%M:%S", time.localtime(self.stale_since))
        self.error = f"stale since {since}: {why}; asking the other controllers who leads"

    def _run(self) -> None:
        failures = 0
        while not self.stop_event.is_set():
            try:
                answered = self.observer.last_answer
                advanced = self.observer.step(FOLLOW_WAIT_MS)
                if advanced:
                    self.version += 1
                if self.observer.last_answer != answered:  # the leader answered
                    failures, self.error, self.stale_since = 0, None, None
            except RetriableError as e:
                failures += 1
                self._stale(str(e))
                self.observer.leader = None
                self.stop_event.wait(min(backoff(failures), REDISCOVER_S))
            except LiveError as e:  # not retriable: keep the image, say why
                self.error = str(e)
                self.stop_event.wait(5.0)
            except Exception as e:  # never kill the shell from the thread
                self.error = f"internal error while following: {type(e).__name__}: {e}"
                self.stop_event.wait(5.0)
            time.sleep(0)
