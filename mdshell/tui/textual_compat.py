"""Every use of Textual's private internals, in one place (textual is pinned below 9 in
pyproject.toml; tests/test_compat.py fails loudly when an upgrade moves one of them).

- ``textual._context.active_app`` and ``_css_update_count`` (on App and Screen): a screen
  mounted lazily is marked as styled with the app's current CSS, or Textual re-parses every CSS
  source of the app twice when switching to it (~10 ms each time);
- ``App._exit``: set once ``exit()`` was called, so keys typed after ``q`` mount nothing;
- ``Screen._callbacks`` and ``MessagePump._next_callbacks``: what waits for the next paint
  or the end of the current message (the key gate waits for them, keygate.py);
- ``Tree._tree_lines``: the tree's lines laid out now, so that a node found by a jump has
  its line at once (not after the next paint).
"""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widgets import Tree


def mark_styled(screen: Screen[Any]) -> None:
    """Tell a new screen it already has the running app's CSS (see the module's docstring)."""
    from textual._context import active_app

    screen._css_update_count = active_app.get()._css_update_count


def exiting(app: App[Any]) -> bool:
    """Whether ``app.exit()`` was called (Textual keeps it in ``_exit``)."""
    return bool(getattr(app, "_exit", False))


def pending_callbacks(node: DOMNode) -> bool:
    """Whether callbacks wait to run after the current message or the next paint."""
    return bool(getattr(node, "_callbacks", None)) or bool(node._next_callbacks)


def lay_out(tree: Tree[Any]) -> None:
    """Lay the tree's lines out now (each node's ``line`` is then known)."""
    tree._tree_lines  # noqa: B018 (the property builds them)
