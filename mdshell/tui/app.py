"""The application: the composition root. It makes the screens of the registry (one mode
each), holds what they all show as reactive attributes (the header, the image's generation,
its health checks, the search index) and pushes it down to them, hears what they and the
background work post upward (messages.py), keeps the back stack and lets keys in one at a
time (keygate.py).

:func:`make_app` is the one factory: the program and the tests build the app the same way.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, ClassVar

from textual import events, on
from textual.app import App, SystemCommand
from textual.binding import BindingType
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.widgets import Input

from . import startup
from .background import Background
from .engine import Engine
from .follow import Follower
from .interrupt import Interrupt
from .keygate import KeyGate
from .keymap import APP_KEYS, BEFORE_LOADED, BOX_KEYS, NOT_OVER_MODALS, screen_keys
from .loading import ErrorScreen, LoadingScreen, TooSmallScreen
from .messages import (
    Advanced,
    ChecksReady,
    GoBack,
    ImageMoved,
    IndexReady,
    Jump,
    LoadDone,
    LoadFailed,
    Reread,
    RereadFailed,
    SearchEntry,
    TablesReady,
)
from .nav import BackStack, Location, Placed, edge, move
from .registry import HOME, SCREENS, TREE, ScreenSpec
from .rows import CheckRow, Header
from .textual_compat import exiting, mark_styled

MIN_WIDTH, MIN_HEIGHT = 60, 16
HEALTH_DELAY = 0.2  # seconds after the first screen is shown
LOADING_DELAY = 0.15  # a load done sooner goes straight to the overview (no loading screen)
TICK = 0.5  # seconds between polls of a live quorum or a followed directory
LIVE_REFRESH = 1.0  # at most one redraw of the data per this many seconds while records flow
QUIET_AFTER_KEY = 0.3  # seconds after a key during which background work stays courteous
AHEAD = ("filterbar", "search", "helpscreen")  # boxes keys open, imported once loaded


class MdshellApp(App[int]):
    """mdshell's full-screen interface over one source."""

    TITLE = "mdshell"
    CSS = """
    Screen { background: $background; }
    Toast { width: auto; max-width: 90%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [*screen_keys(), *APP_KEYS]

    # What every screen shows, pushed down to them (screen.DataScreen binds these).
    header: reactive[Header | None] = reactive(None, always_update=True, init=False)
    generation: reactive[int] = reactive(0, always_update=True, init=False)
    checks: reactive[list[CheckRow] | None] = reactive(None, always_update=True, init=False)
    search_index: reactive[list[SearchEntry] | None] = reactive(None, always_update=True,
                                                                 init=False)

    def __init__(self, engine: Engine, at: str | None = None, follow: bool = False,
                 loading_at_once: bool = False) -> None:
        super().__init__()
        self.engine = engine
        # A load that takes a while (a big source, a live quorum): its screen at once.
        self.loading_delay = 0.0 if loading_at_once else LOADING_DELAY
        self.start_at = at
        self.start_following = follow  # --follow: as if ``f`` was pressed once loaded
        self.loaded = False
        self.fatal: str | None = None  # a load error: shown, then printed on exit
        self.load_seconds = 0.0
        self.back = BackStack()
        self.keys = KeyGate(self)
        self.interrupt = Interrupt()
        self.last_key = 0.0
        self.background = Background(self, engine, self._ui_busy)
        self.follower = Follower(self, engine, self.background)
        self._modes_added = False
        self._last_refresh = 0.0
        self._refresh_due = False

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """A toast whose text is shown as written, never read as markup: the messages hold
        paths, names and what was typed (``[/x]`` typed in the history's box ended the app
        with a MarkupError; a copied ``[redacted]`` value showed as nothing)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    # ---------------------------------------------------------------- keys, one at a time

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            self.last_key = time.monotonic()
            if not self.keys.admit(event):
                return  # queued: it comes back once the keys before it have settled
            try:
                await super().on_event(event)
            finally:
                self.keys.done(event)
            return
        await super().on_event(event)

    def _ui_busy(self) -> bool:
        """Keys are being answered (background work gives way)."""
        return self.keys.busy or time.monotonic() - self.last_key < QUIET_AFTER_KEY

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The keys that open a box step aside in a box; the keys that act on what is
        shown step aside over a modal screen (there they are the modal's, or nothing); F
        shows where there is something to filter. Before an image is loaded (the load failed:
        its error screen) only quit, help and Ctrl+C act (``/`` opened a search "indexing…"
        for ever)."""
        if not self.loaded and action not in BEFORE_LOADED:
            return False  # no image yet (loading, or the load failed): nothing to act on
        modal = isinstance(self.screen, ModalScreen)
        if action in BOX_KEYS and isinstance(self.screen.focused, Input):
            return False
        if action in NOT_OVER_MODALS and modal:
            return False
        if action in ("show", "command_bar") and not self._modes_added:
            return False
        if action == "filter":
            return hasattr(self.screen, "filter_target")
        return True

    # ---------------------------------------------------------------- loading

    def on_mount(self) -> None:
        startup.ui_up()  # a short switch interval: keys are answered while a load runs
        self.keys.hold()  # keys typed while loading wait for the first screen
        if self.loading_delay == 0:
            # A long load: its screen first, drawn before the load starts (the load's
            # compiled parts hold the interpreter for long stretches: a screen due meanwhile
            # would wait for them).
            self._loading_timer = self.set_timer(60, self._show_loading)
            self._loading_timer.stop()
            self._show_loading()
            self.call_after_refresh(self.background.load, self.start_at)
            return
        self.background.load(self.start_at)
        self._loading_timer = self.set_timer(self.loading_delay, self._show_loading)

    def _show_loading(self) -> None:
        if not self.loaded and self.fatal is None:
            self.push_screen(LoadingScreen(self.engine.label, self.engine.progress))
            self._fit_now()

    @on(LoadFailed)
    def _load_failed(self, message: LoadFailed) -> None:
        self.fatal = f"cannot load {self.engine.label}: {message.message}"
        self._loading_timer.stop()
        if isinstance(self.screen, LoadingScreen):
            self.switch_screen(ErrorScreen(self.fatal))
        else:
            self.push_screen(ErrorScreen(self.fatal))
        self.keys.release()

    @on(LoadDone)
    async def _load_done(self, message: LoadDone) -> None:
        self.loaded = True
        startup.loaded()  # the cyclic GC, off since the start, is back on
        self.load_seconds = message.seconds
        self._loading_timer.stop()
        self.header = self.engine.header()
        self._shown_state = self._image_state()
        for spec in SCREENS:
            self.add_mode(spec.mode, partial(self._make_screen, spec))
        await self.switch_mode(HOME)
        self._modes_added = True
        self._fit_now()
        # Health reads every partition: once the first screen is on show; the modules of
        # the other screens and boxes are imported meanwhile.
        self.set_timer(HEALTH_DELAY, lambda: self.background.judge(self.generation))
        self.set_timer(HEALTH_DELAY, lambda: self.background.warm(
            [s.module for s in SCREENS if s.mode != HOME] + list(AHEAD)))
        self.set_interval(TICK, self._tick)
        if self.engine.live:
            self.background.listen()
        elif self.engine.rereadable:
            self.background.listen()
            if self.start_following:
                self.follower.toggle()
        self.keys.release()

    def _make_screen(self, spec: ScreenSpec) -> Screen[Any]:
        """A registered screen, its module imported when it is first shown."""
        module = importlib.import_module(f".{spec.module}", __package__)
        screen: Screen[Any] = getattr(module, spec.cls)(self.engine)
        mark_styled(screen)  # or Textual re-parses all the app's CSS twice (~10 ms)
        return screen

    def delay_update(self, delay: float = 0.05) -> None:
        """Textual holds updates for 50 ms when switching modes, to mask the transition;
        the first switch (to the overview, from a blank screen) has none to mask."""
        if self._modes_added:
            super().delay_update(delay)

    # ---------------------------------------------------------------- what the screens show

    @on(ChecksReady)
    def _checks_ready(self, message: ChecksReady) -> None:
        if message.generation == self.generation:
            self.checks = message.checks
            # Checking read every partition: what did not decode is in the verdict now.
            self.header = self.engine.header()

    @on(IndexReady)
    def _index_ready(self, message: IndexReady) -> None:
        if message.generation == self.generation:
            self.search_index = message.index

    @on(TablesReady)
    def _tables_ready(self, message: TablesReady) -> None:
        """Reading every partition for the tables found records that do not decode: the
        image's verdict counts them now (the header, health's data check)."""
        if message.generation != self.generation or not message.problems:
            return
        self.header = self.engine.header()
        self.background.judge(self.generation)
        n = len(message.problems)
        self.notify(f"{n} partition record{'s' if n > 1 else ''} do{'es' if n == 1 else ''} "
                    "not decode (h: health's data check)", severity="error", timeout=6)

    def image_changed(self, live: bool = False) -> None:
        """The image shown moved (``at``, live records, a re-read): every screen shows it,
        its health is checked again (live: the last results stay up until then, so nothing
        flickers)."""
        self.generation += 1
        if not live:
            self.checks = None
            self.search_index = None
        self.header = self.engine.header()
        self._shown_state = self._image_state()
        self.background.judge(self.generation)

    @on(ImageMoved)
    def _image_moved(self) -> None:
        self.image_changed()

    # ---------------------------------------------------------------- live and followed

    def _tick(self) -> None:
        polled = self.engine.live or self.follower.following
        if polled:
            self.background.poll()
        if polled or (self.header is not None and self.header.live is not None):
            self.header = self.engine.header()

    @on(Advanced)
    def _advanced(self) -> None:
        """The session's image moved on (at most one redraw a second)."""
        wait = LIVE_REFRESH - (time.monotonic() - self._last_refresh)
        if wait > 0:
            if not self._refresh_due:
                self._refresh_due = True
                self.set_timer(wait, self._redraw_live)
            return
        self._redraw_live()

    def _redraw_live(self) -> None:
        self._refresh_due = False
        self._last_refresh = time.monotonic()
        session = self.engine.session
        state = self._image_state()
        if session.loaded is session.latest and state != self._shown_state:
            # Not time travelling, and what is shown moved on (a read that found nothing
            # new, or the same verdict, redraws only the header).
            self.image_changed(live=True)
        else:
            self.header = self.engine.header()

    _shown_state: tuple[int, int, str] | None = None

    def _image_state(self) -> tuple[int, int, str]:
        """What a redraw would change: the latest image's offset, where the log goes on,
        and the verdict's words."""
        latest = self.engine.session.latest
        return (latest.image.provenance.offset, latest.next_offset,
                self.engine.verdict_words())

    @on(Reread)
    def _reread(self, message: Reread) -> None:
        before, after = message.before, message.after
        self._redraw_live()  # what moved (if anything) shows; else the header alone
        news = [f"re-read: {after - before:,} new offsets ({before:,} → {after:,})"
                if after > before else f"re-read: nothing new after offset {after - 1:,}"]
        news += message.said
        self.notify("\n".join(news), timeout=4, severity="warning" if message.said
                    else "information")

    @on(RereadFailed)
    def _reread_failed(self, message: RereadFailed) -> None:
        self.notify(message.message, severity="error", timeout=5)

    # ---------------------------------------------------------------- where the user goes

    def _here(self) -> Location | None:
        mode = self.current_mode
        if not self._modes_added or mode not in {s.mode for s in SCREENS}:
            return None
        screen = self.screen
        return Location(mode, screen.location() if isinstance(screen, Placed) else None)

    def _remember(self) -> None:
        here = self._here()
        if here is not None:
            self.back.push(here)

    async def _show(self, mode: str) -> None:
        await self.switch_mode(mode)
        self._fit_now()

    async def action_show(self, mode: str) -> None:
        """A screen's key: that screen (the same again: the focus on its main widget)."""
        if exiting(self):
            return
        if mode == self.current_mode:
            getattr(self.screen, "focus_home", lambda: None)()
            return
        self._remember()
        await self._show(mode)

    async def jump(self, path: str, remember: bool = True) -> None:
        """Show ``path`` in the tree, selected, with its details; Esc comes back."""
        if remember:
            self._remember()
        await self._show(TREE)
        screen = self.screen
        if isinstance(screen, Placed):
            screen.restore(path)

    @on(Jump)
    async def _jump(self, message: Jump) -> None:
        await self.jump(message.path)

    async def action_back(self) -> None:
        """Esc or backspace that nothing on the screen took: where the user was before."""
        where = self.back.pop()
        if where is None:
            getattr(self.screen, "focus_home", lambda: None)()
            return
        if where.mode != self.current_mode:
            await self._show(where.mode)
        screen = self.screen
        if isinstance(screen, Placed):
            screen.restore(where.where)

    @on(GoBack)
    async def _go_back(self) -> None:
        await self.action_back()

    # ---------------------------------------------------------------- keys

    async def action_search(self) -> None:
        from .search import SearchScreen

        if exiting(self):
            return
        screen = SearchScreen(self.engine)
        await self.push_screen(screen)
        screen.set_focus(screen.query_one(Input))  # now: the next key is for the box

    async def action_command_bar(self) -> None:
        """``:``: the tree's command bar, open before the next key is read."""
        if exiting(self):
            return
        if self.current_mode != TREE:
            self._remember()
            await self._show(TREE)
        getattr(self.screen, "open_command_bar", lambda: None)()

    async def action_filter(self) -> None:
        from .filterbar import open_filter

        if not exiting(self):
            await open_filter(self)

    def action_copy(self, value: bool) -> None:
        from .clipboard import copy

        copy(self, value)

    def action_help(self) -> None:
        from .helpscreen import open_help

        open_help(self)

    def action_move(self, step: int) -> None:
        move(self.screen.focused, step)

    def action_edge(self, end: bool) -> None:
        edge(self.screen.focused, end)

    def action_reload(self) -> None:
        self.follower.reread()

    def action_follow(self) -> None:
        self.follower.toggle()
        if self.loaded:
            self.header = self.engine.header()

    async def action_interrupt(self) -> None:
        """Ctrl+C: cancel or clear (interrupt.py); quits when pressed twice."""
        if self.interrupt.press(self):
            await self.action_quit()

    async def action_quit(self) -> None:
        self.exit(return_code=1 if self.fatal else 0)

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """The palette's Screenshot, saved where it can be (screenshot.py)."""
        from .screenshot import save

        save(self, filename, path)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The palette (ctrl+p) lists every action, with its key."""
        yield from super().get_system_commands(screen)
        if not self.loaded:
            return
        actions: list[tuple[str, str, str, Callable[[], Any]]] = [
            (s.title, s.key, s.help, partial(self.action_show, s.mode)) for s in SCREENS]
        actions += [("Search", "/", "topics, ids, brokers, controllers, configs",
                     self.action_search),
                    ("Command bar", ":", "run any shell command", self.action_command_bar)]
        for title, key, help_text, callback in actions:
            yield SystemCommand(f"{title} ({key})", help_text, callback)

    @property
    def exiting(self) -> bool:
        """q was pressed: keys typed after it must not mount screens on the way out."""
        return exiting(self)

    # ---------------------------------------------------------------- terminal manners

    def on_resize(self, event: events.Resize) -> None:
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

    def _fit_now(self) -> None:
        self.fit(self.size.width, self.size.height)


def make_app(engine: Engine, at: str | None = None, follow: bool = False,
             loading_at_once: bool = False) -> MdshellApp:
    """The app over a source; the program and the tests both start here."""
    return MdshellApp(engine, at, follow, loading_at_once)
