"""``r`` re-reads the directory (``-d``): what Kafka appended since shows, every screen
follows, and the verdict is the one of what is on disk now; ``f`` follows it (reads it again
every half second, as live mode polls a quorum), the header saying ``● FOLLOWING`` with the
time of the last read, in the same colours as live mode's ``● LIVE``; ``f`` again stops."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..session.appends import Follow
from .messages import Reread, RereadFailed

if TYPE_CHECKING:
    from textual.app import App

    from .background import Background
    from .engine import Engine


class Follower:
    """``r`` and ``f`` for one app. A followed directory is read by the app's tick (every
    half second, as a live quorum is polled) through ``Background.poll``."""

    def __init__(self, app: App[Any], engine: Engine, background: Background) -> None:
        self.app = app
        self.engine = engine
        self.background = background

    def _directory(self, key: str) -> bool:
        if self.engine.rereadable:
            return True
        what = "a live quorum is followed already" if self.engine.live else "not a directory"
        self.app.notify(f"{key} reads a directory (-d) again; {what}", severity="warning",
                        timeout=3)
        return False

    def reread(self) -> None:
        """``r``: in a worker; a ``Reread`` (or ``RereadFailed``) message says how it went."""
        if self._directory("r"):
            self.app.run_worker(self._reread, thread=True, group="reread", exclusive=True)

    def _reread(self) -> None:
        engine = self.engine
        words = engine.verdict_words()
        try:
            before, after, reloaded = engine.reread()
        except ValueError as e:
            self.app.post_message(RereadFailed(f"cannot re-read {engine.label}: {e}"))
            return
        now = engine.verdict_words()
        self.background.verdict = now
        said = [f"loaded afresh: {reloaded}"] if reloaded else []
        said += [f"verdict: {now}"] if now != words or reloaded else []
        self.app.post_message(Reread(before, after, said))

    @property
    def following(self) -> bool:
        return self.engine.follow is not None

    def toggle(self) -> None:
        """``f``: follow the directory, or stop."""
        if not self._directory("f"):
            return
        if self.following:
            self.engine.follow = None
            self.app.notify("stopped following (f follows again)", timeout=3)
            return
        self.engine.follow = Follow()
        self.app.notify(f"following {self.engine.label} (f stops)", timeout=3)
