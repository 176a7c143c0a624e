"""Every use of Textual's private internals, in one place (textual is pinned below 9 in
pyproject.toml; tests/test_compat.py fails loudly when an upgrade moves one of them).

- ``textual._context.active_app`` and ``_css_update_count`` (on App and Screen): a screen
  mounted lazily is marked as styled with the app's current CSS, or Textual re-parses every CSS
  source of the app twice when switching to it (~10 ms each time);
- ``App._exit``: set once ``exit()`` was called, so keys typed after ``q`` mount nothing.
"""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.screen import Screen


def mark_styled(screen: Screen[Any]) -> None:
    """Tell a new screen it already has the running app's CSS (see the module's docstring)."""
    from textual._context import active_app

    screen._css_update_count = active_app.get()._css_update_count


def exiting(app: App[Any]) -> bool:
    """Whether ``app.exit()`` was called (Textual keeps it in ``_exit``)."""
    return bool(getattr(app, "_exit", False))
