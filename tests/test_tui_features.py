"""Issue 22's features, each driven by Pilot: filter in place, copy, tables for lists,
breadcrumbs, search over partitions and ports, reload."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from textual.widgets import Input, OptionList, Static

from mdshell.tui.engine import Engine
from mdshell.tui.health import HealthScreen
from mdshell.tui.history import HistoryScreen
from mdshell.tui.imagetree import ImageTree
from mdshell.tui.search import SearchScreen

from .conftest import FIXTURES
from .test_tui import (
    SIZE,
    aio,
    app_for,
    browser_tree,
    health_lines,
    ready,
    text_of,
    until,
)


def _children(node: Any) -> list[str]:
    return [c.data.rsplit("/", 1)[1] for c in node.children]


@aio
async def test_filter_narrows_the_tree_list_in_place() -> None:
    """F on a topic: the Topics list narrows as you type, over every topic; Enter keeps the
    filter (the node says so), Esc in the bar shows all again; `/` is untouched."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await app.jump("/image/topics/byName/topic-1")
        tree = await browser_tree(pilot)
        await until(pilot, lambda: tree.cursor_node is not None
                    and tree.cursor_node.data == "/image/topics/byName/topic-1", "the jump")
        topics = tree.nodes["/image/topics/byName"]
        assert _children(topics) == ["topic-0", "topic-1", "topic-2", "topic-3"]
        await pilot.press("F")
        await until(pilot, lambda: isinstance(app.screen.focused, Input), "the filter bar")
        assert tree.region.height > SIZE[1] // 2  # the bar takes one line, not the screen
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
        await until(pilot, lambda: app.checks is not None and bool(health_lines(app)),
                    "the checks")
        total = len(health_lines(app))
        await pilot.press("F", *"broker 4")
        await until(pilot, lambda: len(health_lines(app)) < total, "fewer lines")
        screen = app.screen
        assert isinstance(screen, HealthScreen)
        shown = [screen.texts[i] for i in screen.paths if i.startswith("item:")]
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
    the table narrows its rows, its text read across cells as on screen.)"""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        path = "/image/topics/byName/topic-2/name"
        await app.jump(path)
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
        await pilot.press("F", *"112 rack-2", "enter")  # a command's table filters
        await until(pilot, lambda: table.row_count == 1, "one broker")  # type: ignore
        await until(pilot, lambda: app.screen.focused is table, "the table again")
        await pilot.press("Y")
        await until(pilot, lambda: app.clipboard.startswith("2\tunfenced\t"), "its row")


def _rows(table: Any) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


@aio
async def test_topics_and_brokers_are_sortable_tables_with_breadcrumbs() -> None:
    """The Topics node's View is a table (partitions, RF, under-replicated, offline, configs
    set) and the Brokers node's has leader and replica counts, as `topics --describe` has
    them; s sorts (S the other way); F from the pane narrows the table (not the tree); Enter
    opens the row; the pane's title is the path from its section."""
    async with app_for(FIXTURES / "health-under-replicated").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        parts = app.engine.run("topics --describe").value.rows
        await app.jump("/image/topics/byName")
        await browser_tree(pilot)
        table = app.screen.query_one("#view-table")
        await until(pilot, lambda: table.display and table.row_count > 0, "topics table")
        rows = _rows(table)
        assert [c.label.plain.rstrip() for c in table.columns.values()][:5] == [  # type: ignore
            "topic", "partitions", "RF", "under-replicated", "offline"]
        assert rows[0][:5] == ["orders", str(len(parts)), "3",
                               str(sum(p["underReplicated"] for p in parts)),
                               str(sum(p["offline"] for p in parts))]
        await app.jump("/image/cluster/brokers")
        await until(pilot, lambda: _rows(table)[:1] and _rows(table)[0][0] == "1", "brokers")
        for row in _rows(table):
            b = int(row[0])
            assert row[3] == str(sum(p["leader"] == b for p in parts))
            assert row[4] == str(sum(b in p["replicas"] for p in parts))
        table.focus()
        await pilot.press("s", "S")  # by broker id, then the other way
        await until(pilot, lambda: [r[0] for r in _rows(table)] == ["3", "2", "1"], "sorted")
        app.screen.query_one(ImageTree).focus()
        await pilot.press("tab")  # one Tab from the tree: the table (the tabs take none)
        await until(pilot, lambda: app.screen.focused is table, "the table focused")
        await pilot.press("F", *"rack-0", "enter")  # F from the pane: its table
        await until(pilot, lambda: app.screen.focused is table, "the table focused")
        assert [r[0] for r in _rows(table)] == ["2"]
        assert "/image/cluster/brokers" in app.screen.query_one(ImageTree).nodes  # untouched
        await pilot.press("enter")
        crumbs = app.screen.query_one("#crumbs", Static)
        await until(pilot, lambda: text_of(crumbs).strip() == "Brokers › 2", "broker 2")


@aio
async def test_topics_table_lists_configs_set() -> None:
    """Each topic's row lists the configs set on it (those that differ from the defaults)."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await app.jump("/image/topics/byName")
        await browser_tree(pilot)
        table = app.screen.query_one("#view-table")
        await until(pilot, lambda: table.row_count == 4, "topics table")
        configs = {r[0]: r[5] for r in _rows(table)}
        for name in configs:
            set_on = sorted(app.engine.children(f"/image/configs/TOPIC:{name}"),
                            key=lambda e: e.name)
            assert configs[name] == (",".join(
                f"{e.name}={app.engine.text(e.path)}" for e in set_on) or "-")
        assert "cleanup.policy=compact" in configs["topic-0"]


@aio
async def test_search_finds_partitions_and_ports() -> None:
    """`/` finds a partition as TOPIC-N (Enter opens it) and a broker by its port; a query
    with no match says so."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await until(pilot, lambda: app.search_index is not None, "the index")
        await pilot.press("slash")
        await until(pilot, lambda: isinstance(app.screen, SearchScreen), "the search box")
        results = app.screen.query_one(OptionList)

        def first() -> str:
            return str(results.get_option_at_index(0).prompt) if results.option_count else ""

        await pilot.press(*"9092")
        await until(pilot, lambda: "broker-0.kafka.internal:9092" in first(), "the port")
        assert "PLAINTEXT of broker 0" in first()
        await pilot.press(*["backspace"] * 4, *"topic-1-2")
        await until(pilot, lambda: first().startswith("topic-1-2  partition 2"), "partition")
        await pilot.press("enter")
        tree = await browser_tree(pilot)
        await until(pilot, lambda: tree.cursor_node is not None
                    and tree.cursor_node.data == "/image/topics/byName/topic-1/2", "the jump")
        await pilot.press("slash")
        await until(pilot, lambda: isinstance(app.screen, SearchScreen), "the box again")
        results = app.screen.query_one(OptionList)
        await pilot.press(*"topic-1-99")
        await until(pilot, lambda: "no match" in first(), "no such partition")


def _cut_log(tmp_path: Path, keep_from_end: int) -> tuple[Path, Path, bytes]:
    """cluster-basic copied with its log cut after a whole batch, ``keep_from_end`` batches
    short; (the directory, its log file, the bytes cut off)."""
    d = tmp_path / "cluster"
    shutil.copytree(FIXTURES / "cluster-basic", d)
    log = next((d / "__cluster_metadata-0").glob("*.log"))
    data = log.read_bytes()
    ends, pos = [], 0
    while pos + 12 <= len(data):
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
        ends.append(pos)
    cut = ends[-1 - keep_from_end]
    log.write_bytes(data[:cut])
    return d, log, data[cut:]


def _header(app: Any) -> str:
    return " ".join(_line(app, y) for y in range(3))


def _line(app: Any, y: int) -> str:
    return app.screen._compositor.render_strips()[y].text  # type: ignore[no-any-return]


@aio
async def test_r_rereads_the_directory_and_f_follows_it(tmp_path: Path) -> None:
    """r reads what was appended to the directory since (the header's offset moves, one
    line says how far); f follows appends with the header saying FOLLOWING, f stops."""
    d, log, rest = _cut_log(tmp_path, 6)
    full = Engine.open(str(FIXTURES / "cluster-basic"), None)
    full.load()
    end = full.header().offset
    async with app_for(d).run_test(size=(80, 24)) as pilot:  # FOLLOWING fits at 80 too
        app = await ready(pilot)
        start = app.engine.header().offset
        assert start < end
        await pilot.press("r")
        await until(pilot, lambda: any("nothing new" in n.message
                                       for n in app._notifications), "nothing new")
        half = rest[:len(rest) // 2]  # some batches, then one Kafka is still writing
        with log.open("ab") as f:
            f.write(half)
        await pilot.press("r")
        await until(pilot, lambda: any("new offsets" in n.message
                                       for n in app._notifications), "the appends read")
        await until(pilot, lambda: start < app.engine.header().offset < end, "moved")
        assert "DAMAGED" not in _header(app)  # the batch half written is read next time
        await pilot.press("f")
        await until(pilot, lambda: "● FOLLOWING" in _header(app), "following")
        with log.open("ab") as f:
            f.write(rest[len(half):])
        await until(pilot, lambda: f"offset {end} " in _header(app), "the appends followed")
        assert app.engine.header().offset == end
        await pilot.press("f")
        await until(pilot, lambda: "FOLLOWING" not in _header(app), "stopped")


@aio
async def test_follow_option_starts_the_tui_following(tmp_path: Path) -> None:
    """--follow (make_app's follow): following from the start, as if f was pressed once
    loaded; what Kafka appends next shows without a key; f stops it as usual."""
    from mdshell.tui.app import make_app

    d, log, rest = _cut_log(tmp_path, 4)
    async with make_app(Engine.open(str(d), None), follow=True).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await until(pilot, lambda: "● FOLLOWING" in _header(app), "following at the start")
        start = app.engine.header().offset
        with log.open("ab") as f:
            f.write(rest)
        await until(pilot, lambda: app.engine.header().offset > start, "the appends followed")
        await pilot.press("f")
        await until(pilot, lambda: "FOLLOWING" not in _header(app), "stopped")


@aio
async def test_a_screen_shown_again_says_following_stopped() -> None:
    """f on the overview, f again on the tree: back on the overview the header no longer
    says FOLLOWING (each screen has its header; the overview's kept the old state)."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("f")
        await until(pilot, lambda: "● FOLLOWING" in _header(app), "following")
        await pilot.press("t")
        await browser_tree(pilot)
        await pilot.press("f")
        await until(pilot, lambda: "FOLLOWING" not in _header(app), "stopped")
        await pilot.press("o")
        await until(pilot, lambda: type(app.screen).__name__ == "OverviewScreen", "overview")
        await pilot.pause(0.1)
        assert "FOLLOWING" not in _header(app), _header(app)


@aio
async def test_history_redraws_its_sparkline_when_the_terminal_narrows() -> None:
    """History at 120 columns, the terminal then 80 wide (on the history screen, or while
    another screen is shown): the sparkline has a column per cell of the new width, its
    rows one line each (they wrapped over three lines), the cursor on the same offset."""
    from mdshell.tui.history import SPARK_ROWS

    async with app_for(FIXTURES / "segments-snapshots").run_test(size=(120, 30)) as pilot:
        app = await ready(pilot)
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen), "history")
        history = app.screen
        target = history.target  # type: ignore[attr-defined]
        for width, away in ((80, False), (100, True)):
            if away:
                await pilot.press("o")
            await pilot.resize_terminal(width, 24)
            await pilot.press("l")
            await until(pilot, lambda w=width: app.screen is history
                        and len(history.counts) == w - 4, "the new width")  # type: ignore
            await pilot.pause(0.1)
            assert history.query_one("#spark").size.height == SPARK_ROWS
            assert history.target == target  # type: ignore[attr-defined]


def test_every_app_key_is_in_the_key_tables() -> None:
    """Each key of the app (keymap.py) is in the README's key table and in docs/tui.md's."""
    from textual.binding import Binding

    from mdshell.tui.keymap import APP_KEYS, screen_keys

    from .conftest import ROOT

    shown = {"slash": "/", "colon": ":", "question_mark": "?", "f1": "F1",
             "escape,backspace": "Esc"}
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Keys in the full-screen interface"):]
    tables = [table[:table.index("\n## ")], (ROOT / "docs" / "tui.md").read_text()]
    for b in [*screen_keys(), *APP_KEYS]:
        assert isinstance(b, Binding)
        key = f"`{shown.get(b.key, b.key)}`"
        for text in tables:
            rows = [ln for ln in text.splitlines() if ln.startswith("| `")]
            assert any(key in ln.split(" | ")[0] for ln in rows), (key, b.description)


@aio
async def test_a_big_topics_table_holds_500_rows_but_sorts_and_filters_all(
        tmp_path: Path) -> None:
    """600 topics: the table holds the first 500 (and says so); s the other way and F act
    on all 600 (the last topic comes first; a name past the 500th is found)."""
    d = tmp_path / "many"
    subprocess.run([sys.executable, "-m", "mdshell.synth", "--out", str(d), "--topics", "600",
                    "--partitions-per-topic", "1", "--history-changes", "0"], check=True,
                   capture_output=True)
    async with app_for(d / "__cluster_metadata-0").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await app.jump("/image/topics/byName")
        await browser_tree(pilot)
        table = app.screen.query_one("#view-table")
        await until(pilot, lambda: table.row_count == 500, "the first 500 rows")  # type: ignore
        assert "the first 500 shown" in text_of(app.screen.query_one("#view-status", Static))
        table.focus()
        await pilot.press("s", "S")  # by topic, then the other way: over all 600
        await until(pilot, lambda: _rows(table)[0][0] == "topic-599", "sorted over all")
        await pilot.press("F", *"topic-55")
        await until(pilot, lambda: table.row_count == 10, "topic-550..559")  # type: ignore
        assert _rows(table)[0][0] == "topic-559"  # still sorted the other way


def _sections(tree: Any) -> list[str]:
    return [str(c.label).split("  ")[0] for c in tree.root.children]


@aio
async def test_filter_keeps_narrowing_the_list_chosen_when_F_was_pressed() -> None:
    """Each key typed narrows the same list, and the bar counts what is shown: on the
    sections (cursor on the collapsed Topics) "con" leaves Controllers and Configs, not
    what "c" left; inside an open node, after the cursor moved and the tree was refilled
    (a followed append) while typing, the same."""
    from mdshell.tui.engine import SECTIONS
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("t")
        tree = await browser_tree(pilot)
        await until(pilot, lambda: tree.cursor_node is not None, "the cursor")
        await pilot.press("j", "j", "j")  # Controllers, Brokers, Features, Topics
        await until(pilot, lambda: tree.cursor_node is not None
                    and tree.cursor_node.data == "/image/topics/byName", "on Topics")
        await pilot.press("F", *"con")
        count = app.screen.query_one("#filter-count", Static)
        await until(pilot, lambda: _sections(tree) == ["Controllers", "Configs"],
                    "the sections holding 'con'")
        assert text_of(count).strip() == f"2 of {len(SECTIONS)}"
        await pilot.press("backspace")  # "co": wider again, still the sections
        want = [label for label, _p in SECTIONS if "co" in label.lower()]
        await until(pilot, lambda: _sections(tree) == want, "the sections holding 'co'")
        assert text_of(count).strip() == f"{len(want)} of {len(SECTIONS)}"
        await pilot.press("escape")
        await until(pilot, lambda: len(_sections(tree)) == len(SECTIONS), "all sections")
        await until(pilot, lambda: tree.cursor_node is not None  # back where F was pressed
                    and tree.cursor_node.data == "/image/topics/byName", "back on Topics")
        await app.jump("/image/topics/byName/topic-0")
        await until(pilot, lambda: tree.cursor_node is not None
                    and tree.cursor_node.data == "/image/topics/byName/topic-0", "the jump")
        await pilot.press("j", "j")  # the cursor moves inside the open Topics
        await pilot.press("F", *"ic")
        await until(pilot, lambda: "[filter: ic]" in str(
            tree.nodes["/image/topics/byName"].label), "Topics filtered")
        app.image_changed(live=True)  # what a followed append does: the tree is refilled
        await pilot.press(*"-3")
        await until(pilot, lambda: _children(tree.nodes["/image/topics/byName"])
                    == ["topic-3"], "topic-3 alone")
        topics = tree.nodes["/image/topics/byName"]
        assert text_of(count).strip() == "1 of 4"
        assert len(_sections(tree)) == len(SECTIONS)  # the sections untouched
        await pilot.press("backspace", "backspace", "backspace", "escape")
        await until(pilot, lambda: len(topics.children) == 4, "every topic back")
        await until(pilot, lambda: tree.cursor_node is not None
                    and tree.cursor_node.data == "/image/topics/byName/topic-2", "on topic-2")


def test_the_sql_screen_says_what_its_first_wait_is(monkeypatch: Any) -> None:
    """The first phase of a TUI query names what it waits for: Spark of mdshell's own
    starting (10-20 s), or the Spark Connect server it connects to (it said 'starting
    Spark' for both)."""
    from mdshell.spark.settings import SETTINGS
    from mdshell.tui.sqlrun import SqlRun

    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    monkeypatch.setattr(SETTINGS, "master", None)
    monkeypatch.setattr(SETTINGS, "remote", None)
    assert SqlRun(None, "select 1").phase.startswith("starting Spark")  # type: ignore[arg-type]
    monkeypatch.setattr(SETTINGS, "remote", "sc://127.0.0.1:15002")
    assert SqlRun(None, "select 1").phase == \
        "connecting to Spark Connect at sc://127.0.0.1:15002"  # type: ignore[arg-type]
