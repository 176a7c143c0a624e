"""The base of the screens that show image data.

A screen gets the engine (its door to the data) when it is made, and what the app knows
pushed down as reactive attributes, each the app's own, bound on mount: ``header`` (the
status bar), ``generation`` (bumped when the image shown changes: time travel, live
records, a re-read), ``checks`` (the health checks of that image, None until known) and
``theme``. A screen not on show only notes that it is behind and catches up when shown
again. Upward it posts messages (``messages.Jump``, ``GoBack``, ``ImageMoved``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual.events import ScreenResume
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen

from .widgets import StatusBar

if TYPE_CHECKING:
    from .engine import Engine
    from .rows import CheckRow, Header

# The app's reactive attributes each data screen mirrors (same names).
BOUND = ("header", "generation", "checks")


class DataScreen(Screen[None]):
    """A screen that shows image data; subclasses draw in :meth:`refresh_data` and
    :meth:`checks_ready` and set themselves up in :meth:`mounted`."""

    header: reactive[Header | None] = reactive(None, always_update=True, init=False)
    generation: reactive[int] = reactive(-1, always_update=True, init=False)
    checks: reactive[list[CheckRow] | None] = reactive(None, always_update=True, init=False)
    HOME_FOCUS: ClassVar[str | None] = None  # the widget `t`/Esc gives the focus back to

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine
        self._ready = False
        self._behind = False  # the image or the checks changed while not on show

    _resume_due: ScreenResume | None = None  # posted, not handled yet
    _shown = False  # resumed once (shown)

    def post_message(self, message: Message) -> bool:
        """Textual restyles every widget of a screen each time it resumes (it posts two
        resumes when a mode is first shown: 15 ms each on the tree screen). Needless when
        the screen was never shown (its widgets were styled as they mounted, with the
        app's CSS: tests/test_tui_work.py compares with a full restyle), and for a resume
        posted while another is still queued (the later one restyles)."""
        if isinstance(message, ScreenResume):
            if self._resume_due is not None and message.refresh_styles:
                self._resume_due.refresh_styles = False
            self._resume_due = message
            if not self._shown:
                message.refresh_styles = False
        return super().post_message(message)

    def on_mount(self) -> None:
        for name in BOUND:
            self.watch(self.app, name, self._mirror(name), init=True)
        # After the theme's CSS variables are made (what the palette is computed from).
        self.app.theme_changed_signal.subscribe(self, self._theme_changed)
        self.mounted()
        self._ready = True
        self.refresh_data()

    def _mirror(self, name: str) -> Any:
        def copy(value: object) -> None:
            setattr(self, name, value)
        return copy

    def mounted(self) -> None:
        """Set up once the screen is composed (before the first :meth:`refresh_data`)."""

    def watch_header(self, header: Header | None) -> None:
        if header is not None:
            for bar in self.query(StatusBar):
                bar.show(header)

    def watch_generation(self) -> None:
        self._changed(self.refresh_data)

    def watch_checks(self) -> None:
        self._changed(self.checks_ready)

    def _theme_changed(self, _theme: object) -> None:
        for bar in self.query(StatusBar):
            bar.redraw()
        self._changed(self.refresh_data)

    def _changed(self, draw: Any) -> None:
        if not self._ready:
            return
        if self.is_current:
            draw()
        else:
            self._behind = True

    def on_screen_resume(self) -> None:
        self._resume_due = None
        self._shown = True
        if self._behind and self._ready:
            self._behind = False
            self.refresh_data()

    def refresh_data(self) -> None:
        """Draw the image's data (again)."""

    def checks_ready(self) -> None:
        """The health checks of the image shown are in (``self.checks``)."""

    def focus_home(self) -> None:
        """The focus back on the screen's main widget (``t`` on the tree, Esc)."""
        if self.HOME_FOCUS is not None:
            self.query_one(self.HOME_FOCUS).focus()

    def location(self) -> str | None:
        """Where the user is on this screen (the back stack keeps it; None: its top)."""
        return None

    def restore(self, where: str | None) -> None:
        """Go back to ``where`` (what :meth:`location` said)."""
