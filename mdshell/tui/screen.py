"""The base of the screens that show image data (its own module: the screens and the app
both build on it, and the app opens the screens)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.screen import Screen

if TYPE_CHECKING:
    from .app import MdshellApp


class DataScreen(Screen[None]):
    """A screen that shows image data: re-reads it when the image moved while away."""

    seen_generation = -1
    seen_checks: object = None

    def on_screen_resume(self) -> None:
        app = cast("MdshellApp", self.app)
        if self.seen_generation != app.generation:
            self.refresh_data()
        else:
            if app.loaded:  # the header's states (f stopped while away) are not data
                from .widgets import StatusBar

                for bar in self.query(StatusBar):
                    bar.refresh_header(app.engine.header())
            if self.seen_checks is not app.checks:
                self.checks_ready()
        self.seen_checks = app.checks

    def refresh_data(self) -> None:
        app = cast("MdshellApp", self.app)
        self.seen_generation = app.generation

    def checks_ready(self) -> None:
        """The health checks of the current image are in (``app.checks``)."""

    @property
    def mdapp(self) -> MdshellApp:
        app = cast("MdshellApp", self.app)
        return app
