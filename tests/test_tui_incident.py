"""What an operator met trying the TUI on data it had not seen (long paths, small
terminals, ...), each driven by Pilot on fixtures or copies of them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, Static

from mdshell.tui.app import make_app
from mdshell.tui.engine import Engine
from mdshell.tui.history import HistoryScreen
from mdshell.tui.loading import ErrorScreen, TooSmallScreen

from .conftest import FIXTURES, three_brokers
from .test_tui import (
    aio,
    app_for,
    browser_tree,
    detail_text,
    history_of,
    ready,
    text_of,
    toasts,
    until,
)
from .test_tui_user import TOPICS, lines


@pytest.mark.parametrize(("size", "reveal"), [((80, 24), True), ((60, 16), False)])
@aio
async def test_the_header_keeps_offset_and_redaction_state_with_a_long_path(
        tmp_path: Path, size: tuple[int, int], reveal: bool) -> None:
    """Following (``--follow``) a directory with a long path wrapped the header past its
    three lines: the offset and "SECRETS SHOWN" were cut off at 80 columns. The path gives
    way, not the state."""
    where = tmp_path / "incident-2026-11-29-cluster-east" / "controller-node-1"
    where.parent.mkdir()
    where.symlink_to((FIXTURES / "security").resolve())  # read-only: a link, no copy
    app = make_app(Engine.open(str(where), None, reveal), follow=True)
    async with app.run_test(size=size) as pilot:
        app = await ready(pilot)
        await until(pilot, lambda: " ago" in " ".join(lines(app, 3)), "a read")
        head = " ".join(lines(app, 3))
        assert app.header is not None
        assert f"offset {app.header.offset} " in head, head
        assert ("SECRETS SHOWN" if reveal else "secrets redacted") in head, head
        if size[0] >= 80:  # what tells the sources apart stays when there is room
            assert "controller-node-1" in head, head


# ---------------------------------------------------------------- what the data holds, as is

ODD_TOPIC = "orders[red]eu"  # no legal name for Kafka's tools, yet a record can hold it


def _odd_names(directory: Path) -> Path:
    """A cluster whose names and values hold brackets (a group, a principal, a config value
    can; a record from any writer can name a topic so)."""
    b = three_brokers(directory, seed=34)
    b.create_topic(ODD_TOPIC, 2, 3, configs={"x.note": "[keep] this"})
    b.create_topic("plain", 1, 3)
    b.create_topic("aardvark", 1, 3)  # made last, first in `ls`
    b.finish()
    return directory


@aio
async def test_brackets_in_names_and_values_are_shown_as_written(tmp_path: Path) -> None:
    """A str cell in a DataTable or a rich Table is read as markup: the Topics table showed
    `orders[red]eu` as "orderseu", a topic's config `[keep] this` as " this"."""
    async with app_for(_odd_names(tmp_path / "odd")).run_test(size=(120, 40)) as pilot:
        app = await ready(pilot)
        await app.jump(TOPICS)
        await browser_tree(pilot)
        table = app.screen.query_one("#view-table", DataTable)
        await until(pilot, lambda: table.row_count == 3, "the topics table")
        await pilot.pause(0.1)
        assert any(ODD_TOPIC in line for line in lines(app, 40)), lines(app, 40)
        await app.jump(f"{TOPICS}/{ODD_TOPIC}")
        await until(pilot, lambda: "x.note" in detail_text(app, "view"), "the topic's view")
        assert "[keep] this" in detail_text(app, "view")


@aio
async def test_a_redacted_value_shows_in_its_parents_view() -> None:
    """The BROKER configs' view listed the JAAS config with an empty value: `[redacted]`
    was read as a markup tag."""
    row, _ = await _view_row(FIXTURES / "security", "/image/configs/BROKER",
                             "sasl.jaas.config")
    assert row.split()[-1] == "[redacted]", row


async def _view_row(directory: Path, path: str, name: str) -> tuple[str, int | None]:
    """The line of ``path``'s View that holds ``name`` (shown in the browser), and the
    offset the header shows."""
    async with app_for(directory).run_test(size=(120, 40)) as pilot:
        app = await ready(pilot)
        await app.jump(path)
        await browser_tree(pilot)
        await until(pilot, lambda: name in detail_text(app, "view"), "the view")
        row = next(ln for ln in detail_text(app, "view").splitlines() if name in ln)
        return row, app.engine.header().offset


@aio
async def test_brackets_typed_in_the_history_box_do_not_end_the_app() -> None:
    """`a`, `[/x]`, Enter: the toast saying it is no offset ended the app (MarkupError)."""
    async with app_for(FIXTURES / "segments-snapshots").run_test(
            size=(120, 40), notifications=True) as pilot:
        screen = await history_of(pilot)
        await pilot.press("a", *"[/x]", "enter")
        await until(pilot, lambda: "'[/x]' is not an offset" in " ".join(toasts(screen.app)),
                    "the message")
        assert screen.app.is_running and screen.query_one("#goto", Input).value == "[/x]"


@aio
async def test_history_of_a_log_without_batches_says_so() -> None:
    """An empty segment (Kafka rolled it, nothing written yet): the legend said
    "offsets 0–None"."""
    async with app_for(FIXTURES / "bad-empty-log").run_test(size=(120, 40)) as pilot:
        app = await ready(pilot)
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen), "history")
        await pilot.pause(0.1)
        title = text_of(app.screen.query_one("#title", Static))
        assert "None" not in title and "no batch in the log" in title, title


@aio
async def test_history_holds_only_offsets_an_image_can_be_rebuilt_at(tmp_path: Path) -> None:
    """A log kept from offset 37 with its first snapshot at 67 (the segment before 37 and
    its snapshot deleted): the first column counted offsets 37-66 as 67's, and the events
    listed leader changes there, which Enter could not travel to."""
    copy = tmp_path / "kept-from-37"
    shutil.copytree(FIXTURES / "segments-snapshots", copy)
    md = copy / "__cluster_metadata-0"
    for name in ("00000000000000000000.log", "00000000000000000000-0000000000.checkpoint"):
        (md / name).unlink()
    async with app_for(copy).run_test(size=(120, 40)) as pilot:
        screen = await history_of(pilot)
        first, last = screen.app.engine.session.offset_range()  # type: ignore[attr-defined]
        assert first is not None and last is not None and first > 37
        await pilot.pause(0.1)
        assert sum(screen.counts) <= last - first + 1, (screen.counts, first, last)
        table = screen.query_one("#events", DataTable)
        offsets = [int(str(table.get_row_at(i)[1])) for i in range(table.row_count)]
        assert offsets and min(offsets) >= first, (offsets, first)


def test_the_history_legend_keeps_its_marks_apart_when_short() -> None:
    """At 60 columns the legend's marks read "SL" (one word); each mark stays a word."""
    from mdshell.session.timeline import Timeline
    from mdshell.tui.history import history_title

    tl = Timeline(78269, 83726, [(78269, 83726, 5458, 0)], [78269], [(79481, 1, 36)])
    for width in (120, 80, 60):
        words = history_title(tl, width).plain.split()
        assert "S" in words and "L" in words, (width, words)


@aio
async def test_after_a_failed_load_only_quit_and_help_act() -> None:
    """`--at` outside the log: on the error screen `/` opened a search that said
    "indexing…" for ever (no image will come), and the help was titled "_default"."""
    app = make_app(Engine.open(str(FIXTURES / "health-offline"), None), at="999999")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ErrorScreen), "the error")
        for key in ("slash", "colon", "F", "t", "r", "f"):
            await pilot.press(key)
            await pilot.pause(0.05)
            assert isinstance(app.screen, ErrorScreen), (key, app.screen)
        await pilot.press("question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "the help")
        assert "_default" not in str(app.screen.query_one("#help").border_title)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, ErrorScreen), "the error again")
        await pilot.press("q")
    assert app.return_code == 1


@pytest.mark.parametrize("width", [80, 100, 120])
@aio
async def test_a_live_view_that_stopped_keeps_the_offset_in_the_header(width: int) -> None:
    """Controllers that stop answering: the reason (as the follower words it) is wider
    than the screen and took every line of the header: offset and redaction went."""
    from dataclasses import replace

    from textual.app import App, ComposeResult

    from mdshell.image.verdict import LIVE_STALE
    from mdshell.tui.rows import LiveRow
    from mdshell.tui.widgets import StatusBar

    engine = Engine.open(str(FIXTURES / "cluster-basic"), None)
    engine.load()
    base = engine.header()
    why = ("stale since 04:09:29: 127.0.0.1:30900: ApiVersions: no answer within 2 s (a "
           "frozen or overloaded controller, or not Kafka); asking the other controllers "
           "who leads")
    header = replace(base, kind="quorum", source="live:127.0.0.1:30900,127.0.0.1:16840",
                     live=LiveRow(base.offset + 1, base.offset + 9, base.offset, 12.0,
                                  error=why), badges=[LIVE_STALE])

    class Bar(App[None]):
        def compose(self) -> ComposeResult:
            yield StatusBar()

        def on_mount(self) -> None:
            self.query_one(StatusBar).show(header)

    async with Bar().run_test(size=(width, 10)) as pilot:
        await pilot.pause(0.1)
        head = " ".join(lines(pilot.app, 3))
        assert "LIVE STALE" in head and "stopped: stale since" in head, head
        assert f"offset {base.offset} " in head and "secrets redacted" in head, head


@aio
async def test_the_too_small_message_is_whole_on_a_narrow_terminal() -> None:
    """At 40x10 the message's second line was cut at the right edge ("(q quits)." lost):
    it wraps instead."""
    async with app_for(FIXTURES / "health-offline").run_test(size=(40, 10)) as pilot:
        app = pilot.app
        await until(pilot, lambda: isinstance(app.screen, TooSmallScreen)
                    and bool(app.screen.query("#msg")), "the message")
        def shown() -> str:
            try:
                strips = app.screen._compositor.render_strips()
            except RuntimeError:  # the load's worker changed the screen meanwhile: again
                return ""
            return " ".join(" ".join(s.text for s in strips).split())

        await until(pilot, lambda: "Terminal too small: 40x10." in shown(), "drawn")
        assert "(q quits)." in shown(), shown()
        await until(pilot, lambda: app.loaded, "the load")  # not ended mid-load


@aio
async def test_the_crumbs_of_a_long_name_show_where_the_node_is(tmp_path: Path) -> None:
    """A topic named with Kafka's longest name (249 characters): the crumbs above the
    detail read "Topics ›" (the name wrapped out of the one-row line), its partition's too."""
    b = three_brokers(tmp_path / "long", seed=35)
    name = "orders." + "x" * 230 + ".eu-west-1"
    b.create_topic(name, 2, 3)
    b.finish()
    async with app_for(tmp_path / "long").run_test(size=(100, 30)) as pilot:
        app = await ready(pilot)
        await app.jump(f"{TOPICS}/{name}/1")
        await browser_tree(pilot)
        crumbs = app.screen.query_one("#crumbs", Static)
        await until(pilot, lambda: "Topics" in " ".join(lines(app, 5)), "the crumbs")
        await pilot.pause(0.1)
        row = next(ln for ln in lines(app, 5) if "Topics ›" in ln)
        assert "orders." in row and ".eu-west-1 › 1" in row, row
        assert crumbs.size.height == 1


@aio
async def test_text_tab_and_Y_list_a_directory_as_ls_does(tmp_path: Path) -> None:
    """docs/tui.md: `Y` copies "a directory's children as `ls` lists them"; the Text tab
    and `Y` gave them in the order the records made them (`aardvark` last)."""
    async with app_for(_odd_names(tmp_path / "odd")).run_test(size=(120, 40)) as pilot:
        app = await ready(pilot)
        ls = "\n".join(app.engine.sh.run(["ls", TOPICS]).lines).strip()
        assert ls.splitlines() == sorted(ls.splitlines())
        await app.jump(TOPICS)
        tree = await browser_tree(pilot)
        tree.focus()
        await pilot.press("x")
        await until(pilot, lambda: "plain" in detail_text(app, "text"), "the text tab")
        assert detail_text(app, "text").strip() == ls
        await pilot.press("Y")
        await until(pilot, lambda: bool(app.clipboard), "the copy")
        assert app.clipboard.strip() == ls


@pytest.mark.parametrize("key", ["q", "ctrl+q"])
@aio
async def test_q_quits_from_the_too_small_message(key: str) -> None:
    """The message says "(q quits)": q did nothing there (the app's keys do not reach a
    modal screen), and the operator had to enlarge the window to leave."""
    app = app_for(FIXTURES / "health-offline")
    async with app.run_test(size=(40, 10)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, TooSmallScreen) and app.loaded,
                    "the message, loaded")
        await pilot.press(key)
        await until(pilot, lambda: not app.is_running, "the exit")
    assert app.return_code == 0


@aio
async def test_json_and_changes_of_a_big_directory_are_cut_and_made_aside(
        tmp_path: Path) -> None:
    """J and c on Topics built the JSON of every partition, and listed every record, on
    the UI thread (500k partitions: minutes of a frozen screen): both are made in a worker
    and cut at TAB_LINES with a note."""
    from mdshell.synth import Scenario
    from mdshell.synth import generate as synth
    from mdshell.tui.tabwork import TAB_LINES

    synth(Scenario(brokers=3, controllers=1, topics=300, partitions_per_topic=8, rf=3,
                   history_changes=50, seed=36), str(tmp_path / "many"))
    async with app_for(tmp_path / "many").run_test(size=(120, 40)) as pilot:
        app = await ready(pilot)
        await app.jump(TOPICS)
        tree = await browser_tree(pilot)
        tree.focus()
        for key, tab, note in (("J", "json", "the JSON goes on"),
                               ("c", "changes", "more records touched it")):
            await pilot.press(key)
            await until(pilot, lambda n=note, t=tab: n in detail_text(app, t), f"cut {tab}")
            shown = detail_text(app, tab).rstrip("\n").splitlines()
            assert len(shown) <= TAB_LINES + 2, len(shown)
        await pilot.press("v", "j")  # the tree answers: the cursor moves on
        await until(pilot, lambda: tree.cursor_node is not None
                    and tree.cursor_node.data != TOPICS, "the next node")


@aio
async def test_the_image_view_shows_its_provenance_whole() -> None:
    """The View of /image put `provenance` in a table of one column, "epoch": it read
    "provenance 1" (offset and time hidden); it is a field with its text form."""
    row, offset = await _view_row(FIXTURES / "cluster-basic", "/image", "provenance")
    assert f"offset {offset}" in row, row
