"""Issue 22's features, each driven by Pilot: filter in place, copy, tables for lists,
breadcrumbs, search over partitions and ports, reload."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input, Static

from mdshell.tui.health import HealthScreen
from mdshell.tui.history import HistoryScreen

from .conftest import FIXTURES
from .test_tui import SIZE, aio, app_for, browser_tree, ready, text_of, until


def _children(node: Any) -> list[str]:
    return [c.data.rsplit("/", 1)[1] for c in node.children]


@aio
async def test_filter_narrows_the_tree_list_in_place() -> None:
    """F on a topic: the Topics list narrows as you type, over every topic; Enter keeps the
    filter (the node says so), Esc in the bar shows all again; `/` is untouched."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        app.jump("/image/topics/byName/topic-1")
        tree = await browser_tree(pilot)
        await until(pilot, lambda: tree.cursor_node is not None
                    and tree.cursor_node.data == "/image/topics/byName/topic-1", "the jump")
        topics = tree.nodes["/image/topics/byName"]
        assert _children(topics) == ["topic-0", "topic-1", "topic-2", "topic-3"]
        await pilot.press("F")
        await until(pilot, lambda: isinstance(app.screen.focused, Input), "the filter bar")
        await pilot.press("2")
        await until(pilot, lambda: _children(topics) == ["topic-2"], "the narrowed list")
        count = app.screen.query_one("#filter-count", Static)
        assert "1 of 4" in text_of(count)
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.focused is tree, "the tree focused")
        assert "[filter: 2]" in str(topics.label)
        assert tree.cursor_node is not None and tree.cursor_node.data.endswith("topic-2")
        await pilot.press("F")
        await until(pilot, lambda: isinstance(app.screen.focused, Input), "the bar again")
        assert app.screen.focused.value == "2"  # type: ignore[union-attr]
        await pilot.press("escape")
        await until(pilot, lambda: len(topics.children) == 4, "every topic back")
        assert "filter" not in str(topics.label)


@aio
async def test_filter_narrows_health_items_and_history_events() -> None:
    """F on health keeps the checks and items holding the text; on history, the events
    (an offset picks one)."""
    async with app_for(FIXTURES / "health-fenced").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("h")
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "health")
        checks = app.screen.query_one("#checks")
        total = len(checks.root.children)  # type: ignore[attr-defined]
        await pilot.press("F", *"broker 4")
        await until(pilot, lambda: len(checks.root.children) < total, "fewer checks")
        shown = [str(leaf.label) for c in checks.root.children  # type: ignore[attr-defined]
                 for leaf in c.children]
        assert shown and all("broker 4" in s for s in shown), shown
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.focused is checks, "the checks focused")
    async with app_for(FIXTURES / "segments-snapshots").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen), "history")
        events = app.screen.query_one("#events")
        await until(pilot, lambda: events.row_count > 1, "the events")  # type: ignore
        offsets = [events.get_row_at(i)[1]  # type: ignore[attr-defined]
                   for i in range(events.row_count)]  # type: ignore[attr-defined]
        await pilot.press("F", *offsets[-1])
        await until(pilot, lambda: events.row_count == 1, "one event")  # type: ignore
        assert events.get_row_at(0)[1] == offsets[-1]  # type: ignore[attr-defined]


@aio
async def test_y_copies_the_path_and_Y_the_value_or_the_row() -> None:
    """y puts the tree node's path on the clipboard (OSC 52), Y its value; on a table, Y
    copies the row under the cursor; a one-line notification says what was copied. (F on
    the table narrows its rows.)"""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        path = "/image/topics/byName/topic-2/name"
        app.jump(path)
        tree = await browser_tree(pilot)
        await until(pilot, lambda: tree.cursor_node is not None
                    and tree.cursor_node.data == path, "the jump")
        await pilot.press("y")
        await until(pilot, lambda: app.clipboard == path, "the path copied")
        await pilot.press("Y")
        await until(pilot, lambda: app.clipboard == app.engine.text(path), "the value")
        assert "topic-2" in app.clipboard
        said = [n.message for n in app._notifications]
        assert said[-1].startswith("copied value: ") and "\n" not in said[-1]
        await pilot.press("colon", *"brokers", "enter", "escape")
        table = app.screen.query_one("#sql-table")
        await until(pilot, lambda: app.screen.focused is table, "the table focused")
        await pilot.press("Y")
        await until(pilot, lambda: app.clipboard.startswith("0\tunfenced\t"), "the row")
        await pilot.press("F", *"rack-2", "enter")  # a command's table filters too
        await until(pilot, lambda: table.row_count == 1, "one broker")  # type: ignore
        await until(pilot, lambda: app.screen.focused is table, "the table again")
        await pilot.press("Y")
        await until(pilot, lambda: app.clipboard.startswith("2\tunfenced\t"), "its row")
