"""The Textual interface driven by Pilot on fixtures, a corpus directory and generated data."""

from __future__ import annotations

import asyncio
import functools
import io
import subprocess
import sys
import textwrap
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from textual.containers import ScrollableContainer
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, OptionList, Static

from mdshell.commands import results
from mdshell.commands.textform import cell
from mdshell.tui.app import MdshellApp, make_app
from mdshell.tui.browser import BrowserScreen
from mdshell.tui.detail import DetailPane
from mdshell.tui.engine import Engine
from mdshell.tui.fmt import plural
from mdshell.tui.health import HealthScreen
from mdshell.tui.history import HistoryScreen
from mdshell.tui.imagetree import MORE, PAGE, ImageTree
from mdshell.tui.loading import ErrorScreen, TooSmallScreen
from mdshell.tui.overview import OverviewScreen
from mdshell.tui.resulttable import STEP

from .conftest import CORPUS, FIXTURES, ROOT, need_corpus

SIZE = (120, 40)


def aio(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test in its own event loop (no pytest plugin needed)."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))
    return run


def app_for(path: Path | str, show_secrets: bool = False) -> MdshellApp:
    return make_app(Engine.open(str(path), None, show_secrets))


async def until(pilot: Pilot[int], check: Callable[[], bool], what: str,
                steps: int = 400) -> None:
    """Let the app run until ``check`` holds (bounded: 400 pauses of 25 ms at most)."""
    for _ in range(steps):
        if check():
            return
        await pilot.pause(0.025)
    raise AssertionError(f"timed out waiting for {what}")


async def ready(pilot: Pilot[int]) -> MdshellApp:
    app = pilot.app
    assert isinstance(app, MdshellApp)
    await until(pilot, lambda: app.loaded and app.checks is not None, "the load")
    await pilot.pause()
    return app


async def browser_tree(pilot: Pilot[int]) -> ImageTree:
    """Wait for the tree screen to be shown and composed; its tree."""
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, BrowserScreen)
                and bool(app.screen.query(ImageTree)), "the tree screen")
    return app.screen.query_one(ImageTree)


def text_of(widget: Static) -> str:
    """The widget's content as plain text (rich renderables rendered 1000 columns wide)."""
    from rich.console import Console

    console = Console(width=1000, color_system=None, record=True, file=io.StringIO())
    console.print(widget.content)
    return console.export_text()


def log_dirs_column(brokers: str) -> list[str]:
    """The overview's "log dirs" cells, one per broker (the last column of the table)."""
    header, *rows = brokers.splitlines()
    at = header.index("log dirs")
    return [r[at:].strip() for r in rows if r[:1].isdigit()]


def health_cursor(app: MdshellApp) -> str | None:
    """The node the health item under the cursor is about (None: a check, or nothing)."""
    screen = app.screen
    if not isinstance(screen, HealthScreen):
        return None
    option = screen.query_one("#checks", OptionList).highlighted_option
    return screen.paths.get(option.id or "") if option is not None else None


def health_lines(app: MdshellApp) -> list[str]:
    """The health screen's checks and items, one string each, as they read (rendered 1000
    columns wide: one line each)."""
    from rich.console import Console

    listing = app.screen.query_one("#checks", OptionList)
    out = []
    for i in range(listing.option_count):
        console = Console(width=1000, color_system=None, record=True, file=io.StringIO())
        console.print(listing.get_option_at_index(i).prompt)
        out.append(console.export_text().strip())
    return out


def detail_text(app: MdshellApp, tab: str) -> str:
    return text_of(app.screen.query_one(f"#{tab}-body", Static))


@aio
async def test_overview_shows_what_is_wrong() -> None:
    async with app_for(FIXTURES / "health-offline").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        health = text_of(screen.query_one("#health", Static))
        assert "FAIL" in health and "orders-1: no leader" in health
        counts = text_of(screen.query_one("#counts", Static))
        assert "3 partitions" in counts and "1 offline" in counts
        brokers = text_of(screen.query_one("#brokers", Static))
        assert "PLAINTEXT://broker-1.kafka.internal:9092 (PLAINTEXT)" in brokers
        assert log_dirs_column(brokers) == ["1", "1", "1"]  # 3.9-IV0: one registered dir each
        controllers = text_of(screen.query_one("#controllers", Static))
        assert "leader" in controllers and "voter" in controllers
        bar = text_of(screen.query_one("StatusBar", Static))
        assert "69BetzZ3pKXy32A108FzNA" in bar and "offset 18" in bar
        assert "secrets redacted" in bar and "3.9-IV0" in bar


@aio
async def test_corpus_directory_opens() -> None:
    need_corpus()
    d = CORPUS / "ArpithaPrakash__Real-Time-Air-Quality-Prediction-with-Apache-Kafka"
    async with app_for(d).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        counts = text_of(app.screen.query_one("#counts", Static))
        assert "53 partitions" in counts and "0 offline" in counts
        brokers = text_of(app.screen.query_one("#brokers", Static))
        assert log_dirs_column(brokers) == ["-"]  # 3.4-IV0 registrations carry no log dirs
        assert "healthy" in (app.screen.query_one("#health", Static).border_title or "")


@aio
async def test_tree_navigation_and_detail_tabs() -> None:
    async with app_for(FIXTURES / "health-offline").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("t")
        tree = await browser_tree(pilot)
        labels = [str(n.label) for n in tree.root.children]
        assert labels[:2] == ["Controllers", "Brokers"] and "✗ Topics" in labels
        await pilot.press("down", "down", "down", "enter")  # open Topics
        await pilot.press("down", "enter", "down", "down", "down", "down")  # orders/1
        await pilot.pause()
        assert tree.cursor_node is not None
        assert tree.cursor_node.data == "/image/topics/byName/orders/1"
        assert "none (OFFLINE)" in detail_text(app, "view")
        await pilot.press("x")
        await pilot.pause()
        assert "PartitionRegistration(replicas=[1, 2, 3]" in detail_text(app, "text")
        await pilot.press("J")
        await pilot.pause()
        assert '"leader": -1' in detail_text(app, "json")
        await pilot.press("c")
        await until(pilot, lambda: "PartitionChange" in detail_text(app, "changes")
                    or "Partition" in detail_text(app, "changes"), "the changes tab")


def _big_topic(base: Path, partitions: int) -> Path:
    out = base / "big"
    subprocess.run([sys.executable, "-m", "mdshell.synth", "--out", str(out), "--topics", "1",
                    "--brokers", "6", "--controllers", "1", "--partitions-per-topic",
                    str(partitions), "--rf", "3", "--seed", "3"], check=True, cwd=ROOT,
                   capture_output=True, timeout=120)
    return out


@aio
async def test_large_topic_expands_a_page_at_a_time(tmp_path: Path) -> None:
    d = _big_topic(tmp_path, 2 * PAGE + 50)
    async with app_for(d).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        topic = next(iter(app.engine.loaded.image.topics_by_name))
        await app.jump(f"/image/topics/byName/{topic}")
        tree = await browser_tree(pilot)
        await until(pilot, lambda: tree.cursor_node is not None
                    and tree.cursor_node.data == f"/image/topics/byName/{topic}", "the jump")
        node = tree.cursor_node
        assert node is not None
        node.expand()
        await pilot.pause()
        kids = node.children
        assert len(kids) == PAGE + 1 and (kids[-1].data or "").startswith(MORE)
        assert "more" in str(kids[-1].label)
        tree.move_cursor(kids[-1])
        await pilot.press("enter")
        await pilot.pause()
        assert len(node.children) == 2 * PAGE + 1
        # A jump far down loads the pages on the way.
        await app.jump(f"/image/topics/byName/{topic}/{2 * PAGE + 40}")
        await until(pilot, lambda: tree.cursor_node is not None and tree.cursor_node.data
                    == f"/image/topics/byName/{topic}/{2 * PAGE + 40}", "the far jump")


@aio
async def test_search_jumps_to_a_topic_and_a_config() -> None:
    async with app_for(FIXTURES / "health-under-min-isr").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("slash")
        await until(pilot, lambda: app.screen.query("#query"), "the search box")
        await pilot.press(*"paymnts")  # fuzzy: a letter missing
        await pilot.press("enter")
        tree = await browser_tree(pilot)
        await until(pilot, lambda: tree.cursor_node is not None
                    and tree.cursor_node.data == "/image/topics/byName/payments", "payments")
        await pilot.press("slash")
        await until(pilot, lambda: app.screen.query("#query"), "the search box")
        await pilot.press(*"min.insync")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, BrowserScreen), "the jump")
        await until(pilot, lambda: tree.cursor_node is not None and (tree.cursor_node.data or "")
                    .endswith("/min.insync.replicas"), "the config key")


@aio
async def test_command_bar_runs_commands_with_completion() -> None:
    async with app_for(FIXTURES / "health-offline").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("colon")
        await until(pilot, lambda: isinstance(app.screen.focused, Input), "the command bar")
        bar = app.screen.focused
        assert isinstance(bar, Input)
        await pilot.press(*"ls /im", "tab")
        assert bar.value == "ls /image/"
        await pilot.press(*"top", "tab", "enter")
        await until(pilot, lambda: "byName" in detail_text(app, "output"), "ls output")
        assert app.screen.query_one(DetailPane).active == "output"
        await pilot.press(*"health", "enter")
        await until(pilot, lambda: "1 check failed" in detail_text(app, "output"), "health")
        await pilot.press(*"nosuch", "enter")
        await until(pilot, lambda: "unknown command" in detail_text(app, "output"), "error")


@aio
async def test_wide_table_columns_scroll_sideways_at_80x24() -> None:
    """At 80x24 the brokers table (ENDPOINTS, FEATURES) is wider than the detail pane: Esc
    closes the bar onto the table, whose Left/Right/End/Home scroll it sideways until the
    last column's end shows; the text form (x) scrolls sideways too."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        await pilot.press("colon")
        await browser_tree(pilot)
        await until(pilot, lambda: isinstance(app.screen.focused, Input), "the command bar")
        table = app.screen.query_one("#sql-table", DataTable)
        await pilot.press(*"brokers", "enter")
        await until(pilot, lambda: table.display and table.row_count == 3, "the table")
        await pilot.pause()
        want = app.engine.run("brokers").value
        assert isinstance(want, results.Table)
        features = cell(want.cells[0][want.columns.index("FEATURES")])
        assert len(features) > 80  # wider than the whole terminal

        def shown(y: int) -> str:
            return table.render_line(y).text

        assert table.max_scroll_x > len(features) - table.size.width
        assert features not in shown(1) and "FEATURES" not in shown(0)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen.focused is table, "the table focused")
        await pilot.press("right")
        await until(pilot, lambda: table.scroll_x == STEP, "a step right")
        await pilot.press("end")
        await until(pilot, lambda: table.scroll_x == table.max_scroll_x, "the right edge")
        assert shown(1).rstrip().endswith(features[-40:])
        await pilot.press("left")
        await until(pilot, lambda: table.scroll_x == table.max_scroll_x - STEP, "a step back")
        await pilot.press("home")
        await until(pilot, lambda: table.scroll_x == 0, "the left edge")
        assert shown(0).split()[:2] == ["ID", "STATE"]
        # x: the text form, in a container that scrolls sideways as well.
        await pilot.press("x")
        box = app.screen.query_one("#output-scroll", ScrollableContainer)
        await until(pilot, lambda: bool(box.display) and box.max_scroll_x > 0, "the text form")
        box.focus()
        await pilot.press("right", "right")
        await until(pilot, lambda: box.scroll_x == 2 * STEP, "the text form scrolled")
        await pilot.press("shift+left")
        await until(pilot, lambda: box.scroll_x == 0, "the text form back")


@aio
async def test_command_tables_show_as_a_sortable_data_table() -> None:
    """``:topics`` and ``:brokers`` fill the DataTable with the command's own table; a header
    sorts (numbers as numbers); ``x`` gives the text form and back."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("colon")
        await browser_tree(pilot)
        await until(pilot, lambda: isinstance(app.screen.focused, Input), "the command bar")
        table = app.screen.query_one("#sql-table", DataTable)
        status = app.screen.query_one("#sql-status", Static)
        for line in ("topics", "brokers"):
            want = app.engine.run(line).value
            assert isinstance(want, results.Table) and len(want.cells) >= 3
            await pilot.press(*line, "enter")
            await until(pilot, lambda w=want: table.display and table.row_count == len(w.cells)
                        and [str(c.label).rstrip() for c in table.columns.values()] == w.columns,
                        f"the {line} table")
            assert [list(table.get_row_at(i)) for i in range(table.row_count)] == \
                [[cell(v) for v in row] for row in want.cells]
            assert f"{len(want.cells)} rows" in text_of(status)
            assert app.screen.query_one(DetailPane).active == "output"
        # brokers' epochs (9, 10, 112 here) sort as numbers: twice on EPOCH is descending.
        epoch = want.columns.index("EPOCH")
        cols = list(table.columns.values())
        x = sum(c.get_render_width(table) for c in cols[:epoch]) + 1
        for _ in range(2):
            await pilot.click("#sql-table", offset=(x, 0))
            await pilot.pause()
        got = [int(table.get_row_at(i)[epoch]) for i in range(table.row_count)]
        assert got == sorted((int(r[epoch]) for r in want.cells), reverse=True)
        assert sorted(map(str, got)) != [str(e) for e in sorted(got, reverse=True)]
        # x: Kafka's text form of the same result, then the table again.
        await pilot.press("x")
        text = list(app.engine.run("brokers").lines)
        await until(pilot, lambda: not table.display and all(
            ln.rstrip() in detail_text(app, "output") for ln in text), "the text form")
        await pilot.press("x")
        await until(pilot, lambda: bool(table.display), "the table again")
        assert app.screen.query_one(DetailPane).active == "output"
        # A result that is not a table stays text.
        app.screen.query_one(DetailPane).active = "view"
        await pilot.press("colon", *"pwd", "enter")
        await until(pilot, lambda: not table.display and "/" in detail_text(app, "output")
                    and app.screen.query_one(DetailPane).active == "output", "pwd as text")


@aio
async def test_health_jumps_to_the_node_at_fault() -> None:
    async with app_for(FIXTURES / "health-fenced").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("h")
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "health")
        await until(pilot, lambda: health_cursor(app) is not None, "the first failing item")
        assert "FAIL" in health_lines(app)[0]
        await pilot.press("enter")
        tree = await browser_tree(pilot)
        await until(pilot, lambda: tree.cursor_node is not None
                    and tree.cursor_node.data == "/image/cluster/brokers/4", "broker 4")
        assert "FENCED" in detail_text(app, "view")
        assert "fenced" in str(tree.cursor_node.label)


@aio
async def test_time_travel_and_diff() -> None:
    async with app_for(FIXTURES / "health-offline").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen), "history")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        last = app.engine.timeline().last
        assert screen.target == last
        await pilot.press("m", "left", "left", "left")
        assert screen.target is not None and screen.target < last
        target = screen.target
        await pilot.press("d")
        await until(pilot, lambda: "changed" in text_of(screen.query_one("#result", Static)),
                    "the diff")
        diff = text_of(screen.query_one("#result", Static))
        assert f"diff {last} → {target}" in diff
        await pilot.press("enter")
        await until(pilot, lambda: app.engine.header().at == target, "time travel")
        # The status bar repaints after the engine moves: wait for it, don't race it.
        await until(pilot, lambda: f"as of offset {target}"
                    in text_of(screen.query_one("StatusBar", Static)), "the status bar")
        await pilot.press("o")  # the overview follows
        await until(pilot, lambda: isinstance(app.screen, OverviewScreen), "overview")
        await until(pilot, lambda: f"as of offset {target}"
                    in text_of(app.screen.query_one("StatusBar", Static)), "the overview's bar")
        await pilot.press("l", "e")
        await until(pilot, lambda: app.engine.header().at is None, "back to latest")


async def history_of(pilot: Pilot[int]) -> HistoryScreen:
    app = await ready(pilot)
    await pilot.press("l")
    await until(pilot, lambda: isinstance(app.screen, HistoryScreen)
                and app.screen.target is not None, "history")
    screen = app.screen
    assert isinstance(screen, HistoryScreen)
    return screen


def toasts(app: MdshellApp) -> list[str]:
    """The notifications on show (run_test(notifications=True)), as plain text."""
    from rich.console import Console

    console = Console(width=1000, color_system=None, record=True, file=io.StringIO())
    for toast in app.screen.query("Toast"):
        console.print(toast.render())
    return [line.strip() for line in console.export_text().splitlines() if line.strip()]


async def travel_via_goto(pilot: Pilot[int], screen: HistoryScreen, typed: str,
                          offset: int) -> None:
    """a, type, Enter: the image, the cursor and the header land on ``offset``."""
    app = screen.app
    box = screen.query_one("#goto", Input)
    await pilot.press("a")
    assert screen.focused is box and box.display
    await pilot.press(*typed)
    assert box.value == typed
    await pilot.press("enter")
    await until(pilot, lambda: app.engine.header().at == offset, f"travel to {offset}")
    await until(pilot, lambda: screen.target == offset, "the cursor")
    await until(pilot, lambda: f"TIME TRAVEL: as of offset {offset}"
                in text_of(screen.query_one("StatusBar", Static)), "the header")
    assert not box.display and box.value == "" and box.disabled
    assert isinstance(screen.focused, DataTable)


@aio
async def test_goto_an_offset_or_a_time() -> None:
    """The README's `g`: an offset or a UTC time, Enter travels there (the screen's own
    Enter, a priority key, must not take it from the box)."""
    from mdshell.commands.timetravel import parse_offset

    async with app_for(FIXTURES / "segments-snapshots").run_test(size=SIZE) as pilot:
        screen = await history_of(pilot)
        app = screen.app
        last = app.engine.timeline().last
        assert last is not None and last > 50
        await travel_via_goto(pilot, screen, "50", 50)
        # A UTC time means the last offset written at or before it, as for the shell's `at`.
        when = "2024-04-24T23:06:45"
        expected = parse_offset(app.engine.sh, when)
        assert expected is not None and expected not in (50, last)
        await travel_via_goto(pilot, screen, when, expected)


def test_time_travel_follows_the_shells_rule_on_a_copy_without_log(tmp_path: Path) -> None:
    """Issue 18 item 1: on a copy with snapshots but no log, an offset between snapshots is
    refused by the goto box and by travel (the header said TIME TRAVEL to it), in the
    shell's words; a snapshot's offset, or a time, gives that snapshot."""
    import shutil

    from mdshell.source.batchscan import snapshot_points

    md = tmp_path / "__cluster_metadata-0"
    md.mkdir()
    for f in (FIXTURES / "segments-snapshots" / "__cluster_metadata-0").iterdir():
        if not f.name.endswith(".log"):
            shutil.copyfile(f, md / f.name)
    engine = Engine.open(str(md), None)
    engine.load()
    points = snapshot_points(engine.session.source)
    assert [p.offset for p in points] == [67, 93]
    said = engine.sh.run(["at", "80"]).errors
    assert len(said) == 1 and "the snapshots at offsets 67 and 93" in said[0]
    with pytest.raises(ValueError) as e:
        engine.offset_for("80")
    assert said[0].endswith(str(e.value))
    assert engine.at(80).code == 1 and engine.header().at is None
    assert engine.offset_for("67") == 67
    assert engine.at(67).code == 0 and engine.header().at == 67
    assert points[0].time_ms is not None
    when = datetime.fromtimestamp(points[0].time_ms / 1000 + 1, UTC).isoformat()
    assert engine.offset_for(when) == 67


@aio
async def test_goto_box_keeps_bad_input_and_escape_closes_it() -> None:
    source = app_for(FIXTURES / "segments-snapshots")
    async with source.run_test(size=SIZE, notifications=True) as pilot:
        screen = await history_of(pilot)
        app = screen.app
        box = screen.query_one("#goto", Input)
        start = screen.target
        # The shell's own words (one rule for `at` and the box).
        cases = [("soon", "'soon' is not an offset (a number, a time such as"),
                 ("999", "offset 999 is after the end of the log (offsets 0-107 can be "
                         "rebuilt)"),
                 ("2024-04-24T23:06", "2024-04-24T23:06 is before the oldest data")]
        for typed, message in cases:
            await pilot.press("a", *typed, "enter")
            await until(pilot, lambda m=message: m in " ".join(toasts(app)),  # wrapped
                        f"the message for {typed}")
            assert box.display and screen.focused is box and box.value == typed
            assert app.engine.header().at is None and screen.target == start
            app.clear_notifications()
            await pilot.press("escape")
            assert not box.display and box.value == "" and box.disabled
            assert isinstance(screen.focused, DataTable)
        # Arrows move in the box while it is open, and the cursor again once it is closed.
        await pilot.press("a", "1", "2", "left", "3", "escape")
        assert screen.target == start
        await pilot.press("left")
        assert screen.target is not None and start is not None and screen.target < start
        await pilot.press("a", "1", "2", "left", "3")
        assert box.value == "132"
        await pilot.press("escape", "o")  # a screen key again once the box is closed
        await until(pilot, lambda: isinstance(app.screen, OverviewScreen), "overview")
        await pilot.press("l", "a", "q")  # typed into the box, not quitting
        assert box.value == "q" and app.is_running
        await pilot.press("escape", "q")
        await until(pilot, lambda: not app.is_running, "quit")


@aio
async def test_search_over_history_takes_its_own_enter() -> None:
    """The history screen's priority keys stay with it: Enter in the search box opened
    over it jumps to the node found, not to a time travel."""
    async with app_for(FIXTURES / "segments-snapshots").run_test(size=SIZE) as pilot:
        screen = await history_of(pilot)
        app = screen.app
        await pilot.press("left", "left", "slash")  # the cursor off the latest offset
        await until(pilot, lambda: app.screen.query("#query"), "the search box")
        await pilot.press(*"broker 2", "left", "enter")
        tree = await browser_tree(pilot)
        await until(pilot, lambda: tree.cursor_node is not None
                    and tree.cursor_node.data == "/image/cluster/brokers/2", "broker 2")
        assert app.engine.header().at is None


@aio
async def test_too_small_terminal_gets_a_message() -> None:
    async with app_for(FIXTURES / "health-offline").run_test(size=(50, 12)) as pilot:
        app = pilot.app
        await until(pilot, lambda: isinstance(app.screen, TooSmallScreen)
                    and bool(app.screen.query("#msg")), "the message")
        await until(pilot, lambda: app.loaded, "the load")  # the message stays after it
        await pilot.pause()
        assert isinstance(app.screen, TooSmallScreen)
        assert "Terminal too small: 50x12" in text_of(app.screen.query_one("#msg", Static))
        await pilot.resize_terminal(100, 30)
        await until(pilot, lambda: not isinstance(app.screen, TooSmallScreen), "the layout")


@aio
async def test_damaged_directory_shows_its_warnings() -> None:
    async with app_for(FIXTURES / "bad-crc").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        warnings = app.screen.query_one("#warnings", Static)
        assert warnings.display and "CRC mismatch" in text_of(warnings)
        # Checks that pass on the damaged image are one line, never an OK badge.
        await until(pilot, lambda: app.checks is not None, "the checks")
        await pilot.pause()
        health = text_of(app.screen.query_one("#health", Static))
        assert health.count("passed in the image as read (see data): ") == 1, health
        assert "offline partitions" in health and " OK " not in health, health


@aio
async def test_a_load_that_fails_is_shown_and_exits_1() -> None:
    app = make_app(Engine.open(str(FIXTURES / "health-offline"), None), at="999999")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(pilot.app.screen, ErrorScreen), "the error")
        await pilot.press("q")
    assert app.return_code == 1 and app.fatal is not None
    assert "offset 999999 is after the end of the log" in app.fatal


@aio
async def test_secrets_stay_redacted_unless_asked() -> None:
    path = "/image/scram/SCRAM-SHA-256"
    for reveal in (False, True):
        async with app_for(FIXTURES / "security", reveal).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            user = app.engine.children(path)[0].path
            text = app.engine.text(user)
            assert ("[redacted]" in text) != reveal, text
            await app.jump(user)
            await browser_tree(pilot)
            await until(pilot, lambda a=app: "salt" in detail_text(a, "view"), "the view")
            assert ("[redacted]" in detail_text(app, "view")) != reveal


def test_textual_only_when_the_tui_starts() -> None:
    """Piped commands (stdin not a terminal) and ``import mdshell.tui`` load no textual."""
    code = textwrap.dedent(f"""
        import io, sys, contextlib
        import mdshell.tui, mdshell.tui.engine
        from mdshell.cli import main
        sys.stdin = io.StringIO("ls /image\\n")
        with contextlib.redirect_stdout(io.StringIO()):
            rc = main(["-d", {str(FIXTURES / "health-offline")!r}])
        print(rc, [m for m in sys.modules if m.split(".")[0] == "textual"])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "0 []", out.stderr


@aio
async def test_command_palette_lists_the_actions() -> None:
    async with app_for(FIXTURES / "health-offline").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("Overview (o)", "Tree (t)", "Health (h)", "History (l)", "Search (/)",
                      "Command bar (:)", "Theme", "Quit"):
            assert title in titles
        await pilot.press("ctrl+p")
        await until(pilot, lambda: type(app.screen).__name__ == "CommandPalette", "palette")
        await pilot.press(*"health", "enter")
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "health via palette")


def test_load_progress_counts_bytes_and_batches_of_the_real_load() -> None:
    """What the loading screen shows: bytes of the newest snapshot and the segments, and
    the batches the loader was handed (the snapshot's, then the log's after it)."""
    from mdshell.source.batchscan import iter_batch_infos

    engine = Engine.open(str(FIXTURES / "cluster-basic"), None)
    source = engine.session.source
    snap = source.snapshots()[-1]
    seg_bytes = sum(s.size for s in source.segments())
    engine.load()
    p = engine.progress
    assert p.total == snap.size + seg_bytes
    assert p.done == p.total and p.fraction == 1.0
    in_snapshot = len(list(iter_batch_infos(source, snapshot=snap.path)))
    after = [b for b in iter_batch_infos(source) if b.last_offset >= snap.end_offset]
    assert p.batches == in_snapshot + len(after) > 0
    assert "snapshot_stream" not in vars(source)  # the source is left as it was


@aio
async def test_loading_screen_shows_bytes_of_the_total() -> None:
    """Half-way through a real log: the screen says how much of how much, and the bar."""
    from textual.app import App
    from textual.widgets import ProgressBar

    from mdshell.session.progress import LoadProgress
    from mdshell.tui.loading import LoadingScreen

    source = Engine.open(str(FIXTURES / "segments-snapshots"), None).session.source
    progress = LoadProgress()
    hook = progress.start(source)
    stream = hook(source.log_stream(0))
    batches = iter(stream)
    for _ in range(3):
        next(batches)
    assert 0 < progress.done < progress.total
    assert "log_stream" not in vars(source)  # the source is never patched

    class Host(App[None]):
        def on_mount(self) -> None:
            self.push_screen(LoadingScreen("the-dir", progress))

    async with Host().run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(pilot.app.screen, LoadingScreen)
                    and bool(pilot.app.screen.query("#what")), "the loading screen")
        await pilot.pause(0.3)
        text = text_of(pilot.app.screen.query_one("#what", Static))
        assert "Reading the-dir" in text and " of " in text and "3 batches" in text, text
        bar = pilot.app.screen.query_one(ProgressBar)
        assert bar.total == progress.total and bar.progress == progress.done


@aio
async def test_keys_typed_after_quit_do_not_crash_the_exit() -> None:
    """q then more keys (typing into a bar that was not open yet): a clean exit, code 0."""
    app = app_for(FIXTURES / "health-offline")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.exit(return_code=0)
        await app.action_show("history")  # a key handled in the same tick as q
        await app.action_search()
        await pilot.pause()
    assert app.return_code == 0


@aio
async def test_a_wide_partition_table_scrolls_rather_than_folds_at_80x24() -> None:
    """A topic's partitions at 80x24: each partition is one line on screen (its replica list
    whole), and the view tab scrolls sideways to the table's last column."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        await pilot.press("t")
        await browser_tree(pilot)
        pane = app.screen.query_one(DetailPane)
        pane.show_path("/image/topics/byName/topic-0")
        await until(pilot, lambda: "leaderEpoch" in detail_text(app, "view"), "the table")
        await pilot.pause()
        body = app.screen.query_one("#view-body", Static)
        box = app.screen.query_one("#view-scroll", ScrollableContainer)
        assert body.size.width > box.size.width and box.max_scroll_x > 0
        lines = [body.render_line(y).text for y in range(body.size.height)]
        header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["name", "leader"])
        rows = [r for r in lines[header + 1:] if r.strip()]
        assert rows and all(r.split()[0].isdigit() for r in rows), rows
        assert all(r.count("[") == r.count("]") > 0 for r in rows), rows


@aio
async def test_history_cursor_counts_the_records_of_its_own_range() -> None:
    """With more sparkline columns than the log has offsets (107 offsets, 116 columns), the
    cursor's range is the one its offset is counted in: offset 50 holds a record, so its
    range is not empty; stepping goes through ranges that hold offsets only."""
    async with app_for(FIXTURES / "segments-snapshots").run_test(size=SIZE) as pilot:
        screen = await history_of(pilot)
        tl = screen.timeline
        assert tl.last is not None and len(screen.starts) > tl.last - (tl.first or 0) + 1
        await travel_via_goto(pilot, screen, "50", 50)

        # every offset of the fixture's batches holds one record
        assert all(r == last - base + 1 for base, last, r, _t in tl.batches)

        def records_in(i: int) -> int:  # the offsets of the range that batches hold
            end = screen.starts[i + 1] if i + 1 < len(screen.starts) else tl.last + 1
            return sum(1 for o in range(screen.starts[i], end)
                       if any(base <= o <= last for base, last, _r, _t in tl.batches))

        assert any(base <= 50 <= last for base, last, _r, _t in tl.batches)
        assert screen.starts[screen.cursor] <= 50 and records_in(screen.cursor) > 0
        assert screen.counts[screen.cursor] == records_in(screen.cursor)
        n, c = records_in(screen.cursor), screen.changes[screen.cursor]
        assert f"{plural(c, 'change')}, {plural(n - c, 'NoOp')}" in str(
            screen.query_one("#where", Static).render())
        for _ in range(len(screen.starts)):
            await pilot.press("right")
            target = screen.target
            assert target is not None and screen.starts[screen.cursor] <= target
            assert screen.counts[screen.cursor] == records_in(screen.cursor)
