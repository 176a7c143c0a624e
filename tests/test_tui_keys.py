"""Issue 22's defects, each driven by Pilot: keys, focus, words and colours of the TUI."""

from __future__ import annotations

from textual.widgets import Input

from mdshell.tui.browser import BrowserScreen

from .conftest import FIXTURES
from .test_tui import SIZE, aio, app_for, browser_tree, ready, until


@aio
async def test_ctrl_c_clears_the_command_bar_and_quits_only_twice() -> None:
    """Ctrl+C in the bar clears the line, then closes the bar; the app keeps running; two
    Ctrl+C in a row quit (exit 0)."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("colon")
        await browser_tree(pilot)
        await until(pilot, lambda: isinstance(app.screen.focused, Input), "the command bar")
        bar = app.screen.focused
        assert isinstance(bar, Input)
        await pilot.press(*"topics", "ctrl+c")
        await pilot.pause()
        assert not app.exiting and bar.value == "" and bar.has_class("open")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.exiting and not bar.has_class("open")
        assert isinstance(app.screen, BrowserScreen)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.exiting  # one press when nothing runs: a hint, no quit
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app.exiting, "the quit")
    assert app.return_code == 0
