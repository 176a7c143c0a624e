"""The application: modes (overview, tree, health, history), loading, time travel, jumps.

:func:`make_app` is the one factory: the program and the tests build the app the same way.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from functools import partial
from typing import ClassVar

from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.events import Resize
from textual.screen import Screen

from .engine import CheckRow, Engine
from .loading import ErrorScreen, LoadingScreen, TooSmallScreen

MIN_WIDTH, MIN_HEIGHT = 60, 16
SWITCH_INTERVAL = 0.001  # seconds (CPython's default is 0.005)
HEALTH_DELAY = 0.2  # seconds after the overview is shown


class MdshellApp(App[int]):
    """mdshell's full-screen interface over one loaded source."""

    TITLE = "mdshell"
    CSS = """
    Screen { background: $background; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "mode('overview')", "Overview"),
        Binding("t", "mode('tree')", "Tree"),
        Binding("h", "mode('health')", "Health"),
        Binding("l", "mode('history')", "History"),
        Binding("slash", "search", "Search"),
        Binding("colon", "command_bar", "Command"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(self, engine: Engine, at: str | None = None) -> None:
        super().__init__()
        self.engine = engine
        self.start_at = at
        self.loaded = False
        self.fatal: str | None = None  # a load error: shown, then printed on exit
        self.generation = 0  # bumped when the image changes (time travel)
        self.checks: list[CheckRow] | None = None
        self.fault_prefixes: set[str] = set()
        self.load_seconds = 0.0
        self.pending_jump: str | None = None

    def compose(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        # Loads run in threads: a short switch interval lets the UI thread take the GIL
        # back within a millisecond, so keys are answered while a load runs.
        sys.setswitchinterval(SWITCH_INTERVAL)
        self.push_screen(LoadingScreen(self.engine.source.describe()))
        self.load_source()

    # ---------------------------------------------------------------- loading

    @work(thread=True, exclusive=True, group="load")
    def load_source(self) -> None:
        start = time.perf_counter()
        try:
            self.engine.load()
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
        self.fatal = f"cannot load {self.engine.source.describe()}: {message}"
        self.switch_screen(ErrorScreen(self.fatal))

    def _loaded(self) -> None:
        from .browser import BrowserScreen
        from .health import HealthScreen
        from .history import HistoryScreen
        from .overview import OverviewScreen

        self.loaded = True
        self.add_mode("overview", OverviewScreen)
        self.add_mode("tree", BrowserScreen)
        self.add_mode("health", HealthScreen)
        self.add_mode("history", HistoryScreen)
        self.switch_mode("overview")
        # Health reads every partition; start it once the overview is on screen, so that the
        # first paint does not share the interpreter with it.
        self.set_timer(HEALTH_DELAY, self.check_health)

    @work(thread=True, exclusive=True, group="health")
    def check_health(self) -> None:
        """Health reads every partition: in a worker, so the overview paints first."""
        generation = self.generation
        checks = self.engine.checks()
        self.call_from_thread(self._checked, checks, generation)

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

    def action_mode(self, mode: str) -> None:
        if self.loaded:
            self.switch_mode(mode)

    def action_search(self) -> None:
        if self.loaded:
            from .search import SearchScreen

            self.push_screen(SearchScreen())

    def action_command_bar(self) -> None:
        if self.loaded:
            self.switch_mode("tree")
            self.call_after_refresh(self._focus_bar)

    def _focus_bar(self) -> None:
        screen = self.screen
        if hasattr(screen, "open_command_bar"):
            screen.open_command_bar()

    def jump(self, path: str) -> None:
        """Show ``path`` in the tree, selected, with its details."""
        self.pending_jump = path
        self.switch_mode("tree")
        self.call_after_refresh(self._do_jump)

    def _do_jump(self) -> None:
        screen = self.screen
        if self.pending_jump and hasattr(screen, "select_path"):
            path, self.pending_jump = self.pending_jump, None
            screen.select_path(path)

    # ---------------------------------------------------------------- time travel

    def image_changed(self) -> None:
        """The image moved (``at``): every screen re-reads; health is checked again."""
        self.generation += 1
        self.checks = None
        self.fault_prefixes = set()
        self.refresh_screens()
        self.check_health()

    def refresh_screens(self) -> None:
        screen = self.screen
        if hasattr(screen, "refresh_data"):
            screen.refresh_data()

    # ---------------------------------------------------------------- terminal manners

    def on_resize(self, event: Resize) -> None:
        small = event.size.width < MIN_WIDTH or event.size.height < MIN_HEIGHT
        on_top = isinstance(self.screen, TooSmallScreen)
        if small and not on_top:
            self.push_screen(TooSmallScreen(MIN_WIDTH, MIN_HEIGHT))
        elif on_top:
            top = self.screen
            assert isinstance(top, TooSmallScreen)
            if small:
                top.show(event.size.width, event.size.height)
            else:
                self.pop_screen()

    async def action_quit(self) -> None:
        self.exit(return_code=1 if self.fatal else 0)


def make_app(engine: Engine, at: str | None = None) -> MdshellApp:
    """The app over a source; the program and the tests both start here."""
    return MdshellApp(engine, at)
