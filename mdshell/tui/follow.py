"""``r`` re-reads the directory (``-d``): what Kafka appended since shows, every screen
follows; ``f`` follows it (reads it again every half second, as live mode polls a quorum),
the header saying ``● FOLLOWING`` with the time of the last read, in the same colours as
live mode's ``● LIVE``; ``f`` again stops."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.timer import Timer

from ..session.appends import Follow

if TYPE_CHECKING:
    from .app import MdshellApp


def _directory(app: MdshellApp, key: str) -> bool:
    if app.engine.rereadable:
        return True
    what = "a live quorum is followed already" if app.engine.live else "not a directory"
    app.notify(f"{key} reads a directory (-d) again; {what}", severity="warning", timeout=3)
    return False


def reload(app: MdshellApp) -> None:
    if _directory(app, "r"):
        app.run_worker(lambda: _reread(app), thread=True, group="reread", exclusive=True)


def _reread(app: MdshellApp) -> None:
    try:
        before, after = app.engine.reread()
    except ValueError as e:
        app.call_from_thread(app.notify, f"cannot re-read {app.engine.label}: {e}",
                             severity="error", timeout=5)
        return
    app.call_from_thread(_reread_done, app, before, after)


def _reread_done(app: MdshellApp, before: int, after: int) -> None:
    if after > before:
        app.image_changed(live=True)
        app.notify(f"re-read: {after - before:,} new offsets ({before:,} → {after:,})",
                   timeout=3)
    else:
        app.refresh_header()
        app.notify(f"re-read: nothing new after offset {after - 1:,}", timeout=3)


_timers: dict[int, Timer] = {}  # app id -> its follow timer


def toggle(app: MdshellApp) -> None:
    """``f``: follow the directory, or stop."""
    if not _directory(app, "f"):
        return
    eng = app.engine
    if eng.follow is not None:
        eng.follow = None
        _timers.pop(id(app)).stop()
        app.refresh_header()
        app.notify("stopped following (f follows again)", timeout=3)
        return
    if not getattr(app, "_follow_subscribed", False):
        eng.subscribe(app._image_advanced)  # the live tick redraws on this flag
        app._follow_subscribed = True  # type: ignore[attr-defined]
    eng.follow = Follow()
    _timers[id(app)] = app.set_interval(0.5, app._live_tick)
    app.notify(f"following {app.engine.label} (f stops)", timeout=3)
