"""The application: modes (overview, tree, health, history), loading, time travel, jumps.

:func:`make_app` is the one factory: the program and the tests build the app the same way.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import ClassVar

from textual import work
from textual.app import ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.events import Resize
from textual.screen import Screen
from textual.timer import Timer

from . import startup
from .engine import CheckRow, Engine
from .interrupt import Interrupt
from .keyactions import KeyActions
from .keymap import APP_KEYS
from .loading import ErrorScreen, LoadingScreen, TooSmallScreen
from .nav import Back, go_back
from .prefetch import Prefetch
from .textual_compat import exiting, mark_styled

MIN_WIDTH, MIN_HEIGHT = 60, 16
HEALTH_DELAY = 0.2  # seconds after the overview is shown
LOADING_DELAY = 0.15  # a load done sooner goes straight to the overview (no loading screen)
LIVE_TICK = 0.5  # seconds between polls of a live quorum (and header refreshes)
LIVE_REFRESH = 1.0  # at most one redraw of the data per this many seconds while records flow


class MdshellApp(KeyActions):
    """mdshell's full-screen interface over one loaded source."""

    TITLE = "mdshell"
    CSS = """
    Screen { background: $background; }
    Toast { width: auto; max-width: 90%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = APP_KEYS

    def __init__(self, engine: Engine, at: str | None = None,
                 prefetch: Prefetch | None = None, follow: bool = False) -> None:
        super().__init__()
        self.engine = engine
        self.start_following = follow  # --follow: as if ``f`` was pressed once loaded
        self.start_at = at
        self.prefetch = prefetch if at is None else None
        self.loaded = False
        self._modes_added = False
        self._after_load: Callable[[], None] | None = None  # a key pressed before it ended
        self.fatal: str | None = None  # a load error: shown, then printed on exit
        self.generation = 0  # bumped when the image changes (time travel)
        self.checks: list[CheckRow] | None = None
        self.search_index: list[tuple[str, str, str]] | None = None  # None: being built
        self.fault_prefixes: set[str] = set()
        self.load_seconds = 0.0
        self.pending_jump: str | None = None
        self._loading_timer: Timer | None = None
        self.advanced = False  # live: the image moved on (set from the polling thread)
        self._last_live_refresh = 0.0
        self.interrupt = Interrupt()
        self.back = Back()

    def compose(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        startup.ui_up()  # a short switch interval: keys are answered while a load runs
        if self.prefetch is not None:
            self.await_preview()
        else:
            self.load_source()
        self._loading_timer = self.set_timer(LOADING_DELAY, self._show_loading)

    def _show_loading(self) -> None:
        if not self.loaded and self.fatal is None and self.engine.preview is None:
            self.push_screen(LoadingScreen(self.engine.label, self.engine.progress))
            self._switched()

    # ---------------------------------------------------------------- loading

    @work(thread=True, group="preview")
    def await_preview(self) -> None:
        """The overview from the child forked at start (prefetch.py); then the real load."""
        assert self.prefetch is not None
        preview = self.prefetch.result()
        if preview is None:
            self.call_from_thread(self.load_source)
            return
        self.engine.preview = preview
        self.call_from_thread(self._previewed)

    def _previewed(self) -> None:
        if self._loading_timer is not None:
            self._loading_timer.stop()
        if self.fatal is None and not self.exiting:
            self._show_overview()  # the real load starts once it has painted

    def overview_painted(self) -> None:
        """The overview screen's first paint is done: a preview's real load starts now (not
        sharing the interpreter with that paint)."""
        if self.engine.preview is not None and not self._loading:
            self.load_source()

    def delay_update(self, delay: float = 0.05) -> None:
        """Textual holds updates for 50 ms when switching modes, to mask the transition;
        the first switch (to the overview, from a blank screen) has none to mask."""
        if self._modes_added:
            super().delay_update(delay)

    def _show_overview(self) -> None:
        if not self._modes_added:
            # Each screen's module is imported when the screen is first shown: the first
            # paint imports only the overview's.
            self.add_mode("overview", _lazy("overview", "OverviewScreen"))
            self.add_mode("tree", _lazy("browser", "BrowserScreen"))
            self.add_mode("health", _lazy("health", "HealthScreen"))
            self.add_mode("history", _lazy("history", "HistoryScreen"))
            self.switch_mode("overview")
            self._modes_added = True
            self._switched()

    _loading = False

    @work(thread=True, exclusive=True, group="load")
    def load_source(self) -> None:
        self._loading = True
        start = time.perf_counter()
        try:
            self.engine.finish_load()
            if self.start_at is not None:
                res = self.engine.run(f"at {self.start_at}")
                if res.errors:
                    raise ValueError(res.errors[0])
        except Exception as e:  # any failure is one line on screen, never a traceback
            self.call_from_thread(self._load_failed, str(e) or type(e).__name__)
            return
        self.load_seconds = time.perf_counter() - start
        self.call_from_thread(self._loaded)

    def _load_failed(self, message: str) -> None:
        self.fatal = f"cannot load {self.engine.label}: {message}"
        if self._loading_timer is not None:
            self._loading_timer.stop()
        if isinstance(self.screen, LoadingScreen):
            self.switch_screen(ErrorScreen(self.fatal))
        else:
            self.push_screen(ErrorScreen(self.fatal))

    def _loaded(self) -> None:
        self.loaded = True
        if self._loading_timer is not None:
            self._loading_timer.stop()
        preview, self.engine.preview = self.engine.preview, None
        if self._modes_added:  # the preview is up: redraw only if the image says otherwise
            if self.engine.overview() != preview:
                self.refresh_screens()
        else:
            self._show_overview()
        if self._after_load is not None:
            then, self._after_load = self._after_load, None
            then()
        startup.loaded()  # the cyclic GC, off since the start, is back on
        # Health reads every partition; start it once the overview is on screen, so that the
        # first paint does not share the interpreter with it.
        self.set_timer(HEALTH_DELAY, self.check_health)
        if self.engine.live:
            self.engine.subscribe(self._image_advanced)
            self.set_interval(LIVE_TICK, self._live_tick)
        elif self.start_following and self.engine.rereadable:
            from .follow import toggle

            toggle(self)

    # ---------------------------------------------------------------- live

    def _image_advanced(self) -> None:
        """Session.subscribe callback: runs in whichever thread fed the session, so it only
        raises a flag; the UI thread redraws on its next tick."""
        self.advanced = True

    def _live_tick(self) -> None:
        now = time.monotonic()
        if self.advanced and now - self._last_live_refresh >= LIVE_REFRESH:
            self.advanced = False
            self._last_live_refresh = now
            session = self.engine.session
            if session.loaded is session.latest:  # not time travelling: what is shown moved on
                self.image_changed(live=True)
        self.refresh_header()
        if not self._polling:
            self._polling = True
            self.poll_live()

    _polling = False

    @work(thread=True, group="live")
    def poll_live(self) -> None:
        try:
            self.engine.poll()
        finally:
            self._polling = False

    def refresh_header(self) -> None:
        """The status bar again (live: offset, lag, last fetch)."""
        from .widgets import StatusBar

        for bar in self.screen.query(StatusBar):
            bar.refresh_header(self.engine.header())

    @work(thread=True, exclusive=True, group="health")
    def check_health(self) -> None:
        """Health reads every partition: in a worker, so the overview paints first."""
        generation = self.generation
        checks = self.engine.checks()
        self.call_from_thread(self._checked, checks, generation)
        # `/` searches this index; built here, so that the key opens the box at once.
        index = self.engine.search_index()
        self.call_from_thread(self._indexed, index, generation)
        if not self.engine.live:
            # The history screen's timeline reads every batch header (0.3 s on 100k
            # partitions), the Topics and Brokers tables every partition: made here, so
            # that `l` and those nodes open at once.
            self.engine.timeline()
            self.engine.list_table("/image/topics/byName")

    def _indexed(self, index: list[tuple[str, str, str]], generation: int) -> None:
        if generation == self.generation:
            self.search_index = index

    def _checked(self, checks: list[CheckRow], generation: int) -> None:
        if generation != self.generation:
            return
        self.checks = checks
        prefixes: set[str] = set()
        for c in checks:
            if c.status not in ("fail", "warn"):
                continue
            for item in c.items:
                parts = (item.path or "").strip("/").split("/")
                for i in range(1, len(parts) + 1):
                    prefixes.add("/" + "/".join(parts[:i]))
        self.fault_prefixes = prefixes
        screen = self.screen
        if hasattr(screen, "checks_ready"):
            screen.checks_ready()

    # ---------------------------------------------------------------- navigation

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        """The palette (ctrl+p) lists every action, with its key."""
        yield from super().get_system_commands(screen)
        if not self.loaded:
            return
        for title, key, help_text, callback in (
            ("Overview", "o", "health, counts, brokers, controllers, features",
             partial(self.action_mode, "overview")),
            ("Tree", "t", "the whole image as a tree, with details",
             partial(self.action_mode, "tree")),
            ("Health", "h", "every check; Enter jumps to the node at fault",
             partial(self.action_mode, "health")),
            ("History", "l", "timeline, time travel (at) and diff",
             partial(self.action_mode, "history")),
            ("Search", "/", "topics, ids, brokers, controllers, configs", self.action_search),
            ("Command bar", ":", "run any shell command", self.action_command_bar),
        ):
            yield SystemCommand(f"{title} ({key})", help_text, callback)

    @property
    def exiting(self) -> bool:
        """q was pressed: keys typed after it must not mount screens on the way out."""
        return exiting(self)

    def _now(self, action: Callable[[], None]) -> bool:
        """Whether a key's action can run now; one pressed while the preview is up (the
        load not yet done) runs when the load ends."""
        if self.exiting:
            return False
        if not self.loaded and self._modes_added:
            self._after_load = action
        return self.loaded

    def action_mode(self, mode: str) -> None:
        if self._now(partial(self.action_mode, mode)):
            if mode == self.current_mode and hasattr(self.screen, "focus_home"):
                self.screen.focus_home()  # `t` on the tree: the focus back on the tree
                return
            self.switch_mode(mode)
            self._switched()

    def go_back(self) -> bool:
        """Esc after a jump: where it came from (nav.py); False: nowhere."""
        return go_back(self)

    async def action_search(self) -> None:
        def later() -> None:
            self.call_later(self.action_search)

        if self._now(later):
            from textual.widgets import Input

            from .search import SearchScreen

            screen = SearchScreen()
            await self.push_screen(screen)
            screen.set_focus(screen.query_one(Input))  # now: the next key is for the box

    async def action_command_bar(self) -> None:
        """``:``: the tree's command bar, open before the next key is read (keymap.py)."""
        def later() -> None:
            self.call_later(self.action_command_bar)

        if self._now(later):
            await self.switch_mode("tree")
            self._focus_bar()

    def _focus_bar(self) -> None:
        screen = self.screen
        if hasattr(screen, "open_command_bar"):
            screen.open_command_bar()

    def jump(self, path: str, remember: bool = True) -> None:
        """Show ``path`` in the tree, selected, with its details; Esc comes back."""
        if remember and self.current_mode:
            here = getattr(self.screen, "current_path", lambda: None)()
            self.back.push(self.current_mode, here)
        self.pending_jump = path
        self.switch_mode("tree")
        self.call_after_refresh(self._do_jump)

    def _do_jump(self) -> None:
        screen = self.screen
        if self.pending_jump and hasattr(screen, "select_path"):
            path, self.pending_jump = self.pending_jump, None
            screen.select_path(path)

    # ---------------------------------------------------------------- time travel

    def image_changed(self, live: bool = False) -> None:
        """The image moved (``at``, or live records): every screen re-reads; health is
        checked again (live: the last results stay up until then, so nothing flickers)."""
        self.generation += 1
        if not live:
            self.checks = None
            self.fault_prefixes = set()
            self.search_index = None
        self.refresh_screens()
        self.check_health()

    def refresh_screens(self) -> None:
        screen = self.screen
        if hasattr(screen, "refresh_data"):
            screen.refresh_data()

    # ---------------------------------------------------------------- terminal manners

    def on_resize(self, event: Resize) -> None:
        self.fit(event.size.width, event.size.height)

    def fit(self, width: int, height: int) -> None:
        """Too small for a layout: a message on top (in whatever mode is shown)."""
        small = width < MIN_WIDTH or height < MIN_HEIGHT
        on_top = isinstance(self.screen, TooSmallScreen)
        if small and not on_top:
            self.push_screen(TooSmallScreen(MIN_WIDTH, MIN_HEIGHT))
        elif on_top:
            top = self.screen
            assert isinstance(top, TooSmallScreen)
            if small:
                top.show(width, height)
            else:
                self.pop_screen()

    def _switched(self) -> None:
        self.fit(self.size.width, self.size.height)

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """The palette's Screenshot, saved where it can be (screenshot.py)."""
        from .screenshot import save

        save(self, filename, path)

    async def action_interrupt(self) -> None:
        """Ctrl+C: cancel or clear (interrupt.py); quits when pressed twice."""
        if self.interrupt.press(self):
            await self.action_quit()

    async def action_quit(self) -> None:
        self.exit(return_code=1 if self.fatal else 0)


def _lazy(module: str, name: str) -> Callable[[], Screen[None]]:
    def make() -> Screen[None]:
        screen: Screen[None] = getattr(importlib.import_module(f".{module}", __package__),
                                       name)()
        mark_styled(screen)  # or Textual re-parses all the app's CSS twice (~10 ms)
        return screen
    return make


def make_app(engine: Engine, at: str | None = None,
             prefetch: Prefetch | None = None, follow: bool = False) -> MdshellApp:
    """The app over a source; the program and the tests both start here."""
    return MdshellApp(engine, at, prefetch, follow)
