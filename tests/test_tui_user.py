"""What a k9s user hit (issue 34), and the TUI's side of issue 31 (items 8 and 9), each
driven by Pilot on fixtures, copies of them damaged by the test, or generated data."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.widgets import DataTable, Input, Static

from mdshell.tui.app import MdshellApp
from mdshell.tui.browser import BrowserScreen
from mdshell.tui.engine import Engine
from mdshell.tui.health import HealthScreen
from mdshell.tui.imagetree import ImageTree
from mdshell.tui.overview import OverviewScreen
from mdshell.tui.palette import BACKGROUNDS, MIN_CONTRAST, contrast

from .conftest import FIXTURES
from .test_tui import (
    SIZE,
    aio,
    app_for,
    browser_tree,
    detail_text,
    health_lines,
    ready,
    text_of,
    until,
)
from .test_tui_features import _cut_log, _header

TOPICS = "/image/topics/byName"


def burst(app: Any, *keys: str) -> None:
    """``keys`` (key names; one character each for letters) as a terminal sends them in one
    burst: all in the app's queue before the first is handled."""
    names = {":": "colon", "/": "slash", "-": "minus", " ": "space"}
    for key in keys:
        name = names.get(key, key)
        char = key if len(key) == 1 else None
        event = events.Key(name, char)
        event.set_sender(app)
        app._driver.send_message(event)


def typed(text: str) -> list[str]:
    return list(text)


def lines(app: Any, height: int) -> list[str]:
    return [app.screen._compositor.render_strips()[y].text for y in range(height)]


@pytest.fixture(scope="module")
def many_topics(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 topics of one partition: more than a page of the tree (300)."""
    d = tmp_path_factory.mktemp("many") / "many"
    subprocess.run([sys.executable, "-m", "mdshell.synth", "--out", str(d), "--topics", "600",
                    "--partitions-per-topic", "1", "--history-changes", "0"], check=True,
                   capture_output=True, timeout=120)
    return d / "__cluster_metadata-0"


def tree_at(app: MdshellApp) -> str | None:
    screen = app.screen
    if not isinstance(screen, BrowserScreen):
        return None
    node = screen.query_one(ImageTree).cursor_node
    return node.data if node is not None else None


# ---------------------------------------------------------------- 1. keys never lost


@aio
async def test_a_burst_reaches_its_targets_in_order() -> None:
    """`h F xyz` in one burst: the Health screen, its filter holding "xyz" (the filter
    was opened on the screen being left, the letters ran as commands); `o` then
    `h F offsets`: health filtered by "offsets", follow never turned on."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        burst(app, "h", "F", *typed("xyz"))
        await until(pilot, lambda: isinstance(app.screen, HealthScreen)
                    and app.screen.filter_text == "xyz", "health filtered by xyz")
        assert isinstance(app.screen.focused, Input) and app.screen.focused.value == "xyz"
        burst(app, "escape", "o")
        await until(pilot, lambda: isinstance(app.screen, OverviewScreen), "the overview")
        burst(app, "h", "F", *typed("offsets"))
        await until(pilot, lambda: isinstance(app.screen, HealthScreen)
                    and app.screen.filter_text == "offsets", "health filtered by offsets")
        assert isinstance(app.screen.focused, Input) and app.screen.focused.value == "offsets"
        assert app.engine.follow is None
        assert not any("follow" in n.message for n in app._notifications)


@aio
async def test_keys_typed_while_loading_wait_for_the_first_screen() -> None:
    """Keys typed before the load is done are kept, in order, not lost."""
    app = app_for(FIXTURES / "cluster-basic")
    async with app.run_test(size=SIZE) as pilot:
        burst(app, "t", "F", *typed("con"))
        await until(pilot, lambda: isinstance(app.screen.focused, Input)
                    and app.screen.focused.value == "con", "the tree filtered by con")
        assert isinstance(app.screen, BrowserScreen)


# ---------------------------------------------------------------- 2. back everywhere


@aio
async def test_back_returns_to_the_topic_after_search_and_filter(many_topics: Path) -> None:
    """`/ topic-542 ⏎`, `F 42`, `Esc`: the cursor is back on topic-542 (a topic past the
    first page of the Topics list: the cursor landed on Topics, the list back at its
    start); then Esc goes back to where the search was typed, screen by screen."""
    async with app_for(many_topics).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await until(pilot, lambda: app.search_index is not None, "the index")
        burst(app, "t")
        await browser_tree(pilot)
        burst(app, "h")
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "health")
        burst(app, "/", *typed("topic-542"), "enter")
        target = f"{TOPICS}/topic-542"
        await until(pilot, lambda: tree_at(app) == target, "the search's jump")
        burst(app, "F", *typed("42"))
        await until(pilot, lambda: isinstance(app.screen.focused, Input)
                    and app.screen.focused.value == "42", "the filter")
        burst(app, "escape")
        await until(pilot, lambda: not isinstance(app.screen.focused, Input), "filter closed")
        await pilot.pause(0.1)
        assert tree_at(app) == target
        burst(app, "escape")  # back where the search was typed: health
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "back to health")
        burst(app, "backspace")  # and where that came from: the tree, as it was
        await until(pilot, lambda: isinstance(app.screen, BrowserScreen), "back to the tree")


@aio
async def test_a_jump_lands_in_view_and_g_G_go_to_the_ends(many_topics: Path) -> None:
    """At 80x24 a jump far down a long list puts its target mid-view (not on the last line,
    nor out of sight); g and G move the cursor to the first and the last line."""
    async with app_for(many_topics).run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        await app.jump(f"{TOPICS}/topic-450")
        tree = await browser_tree(pilot)
        await until(pilot, lambda: tree_at(app) == f"{TOPICS}/topic-450", "the jump")
        height = tree.scrollable_content_region.height

        def row() -> int:
            return tree.cursor_line - round(tree.scroll_y)

        await until(pilot, lambda: 2 <= row() <= height - 3, "the target mid-view")
        await pilot.pause(0.2)
        assert 2 <= row() <= height - 3, (row(), height)  # and it stays there
        burst(app, "G")
        await until(pilot, lambda: tree.cursor_line == tree.last_line, "the last line")
        burst(app, "g")
        await until(pilot, lambda: tree.cursor_line == 0, "the first line")


# ---------------------------------------------------------------- 3. focus and movement


@aio
async def test_tab_from_the_tree_reaches_the_table() -> None:
    """On Topics, Tab from the tree lands in its table (not the tab strip), where s and j
    work at once."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await app.jump(TOPICS)
        tree = await browser_tree(pilot)
        table = app.screen.query_one("#view-table", DataTable)
        await until(pilot, lambda: table.row_count == 4 and app.screen.focused is tree,
                    "the topics table")
        burst(app, "tab")
        await until(pilot, lambda: app.screen.focused is table, "the table focused")
        burst(app, "j")
        await until(pilot, lambda: table.cursor_row == 1, "j moved the table's cursor")


@aio
async def test_help_scrolls_at_80x24_and_says_so() -> None:
    """At 80x24 the help overlay does not fit: its border says j/k scroll it, and j does."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        burst(app, "t", "question_mark")
        await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "help")
        box = app.screen.query_one("#help")
        await until(pilot, lambda: "scroll" in str(box.border_subtitle), "the hint")
        assert box.max_scroll_y > 0
        burst(app, "j", "j")
        await until(pilot, lambda: box.scroll_y == 2, "scrolled by j")
        burst(app, "G")
        await until(pilot, lambda: box.scroll_y == box.max_scroll_y, "scrolled to the end")


# ---------------------------------------------------------------- 4. show state


@aio
async def test_the_sorted_column_shows_an_arrow() -> None:
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await app.jump(TOPICS)
        await browser_tree(pilot)
        table = app.screen.query_one("#view-table", DataTable)
        await until(pilot, lambda: table.row_count == 4, "the topics table")
        table.focus()
        headers = lambda: [c.label.plain for c in table.columns.values()]  # noqa: E731
        assert not any("▲" in h or "▼" in h for h in headers())
        burst(app, "s")
        await until(pilot, lambda: headers()[0].rstrip() == "topic ▲", "ascending")
        burst(app, "S")
        await until(pilot, lambda: headers()[0].rstrip() == "topic ▼", "descending")
        burst(app, "s")  # the next column
        await until(pilot, lambda: headers()[1].rstrip() == "partitions ▲", "next column")
        assert headers()[0].rstrip() == "topic"


@aio
async def test_long_health_lines_wrap_at_80_columns() -> None:
    """A check's summary longer than the screen goes on on the next line, whole (it was
    cut mid-word at 80 columns)."""
    async with app_for(FIXTURES / "health-under-min-isr").run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        burst(app, "h")
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "health")
        await pilot.pause(0.2)
        shown = " ".join(" ".join(ln.split()) for ln in lines(app, 24))
        summary = next(c.summary for c in app.checks or [] if c.status == "fail")
        assert len(summary) > 60 and " ".join(summary.split()) in shown, (summary, shown)


# ---------------------------------------------------------------- 5. the same words


@aio
async def test_words_unfenced_copy_one_row_and_no_output_yet() -> None:
    """The overview says "unfenced" as health and brokers do; Y on a directory copies what
    its Text tab shows (Kafka's text form, not JSON); a table of one row says "1 row";
    O before any command says there is no output yet."""
    async with app_for(FIXTURES / "health-fenced").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        brokers = text_of(app.screen.query_one("#brokers", Static))
        assert "unfenced" in brokers and "active" not in brokers
        topic = f"{TOPICS}/orders"
        await app.jump(topic)
        await browser_tree(pilot)
        await until(pilot, lambda: tree_at(app) == topic, "the topic")
        burst(app, "Y")
        await until(pilot, lambda: app.clipboard == app.engine.text(topic), "the text form")
        assert not app.clipboard.lstrip().startswith("{")
        burst(app, "O")
        await until(pilot, lambda: "no command has run yet" in detail_text(app, "output"),
                    "no output yet")
        burst(app, ":", *typed("topics"), "enter")
        # (The table's status line is made when the command bar first opens.)
        await until(pilot, lambda: bool(app.screen.query("#sql-status")), "the status line")
        status = app.screen.query_one("#sql-status", Static)
        await until(pilot, lambda: "1 row" in text_of(status), "one row")
        assert "1 rows" not in text_of(status)


# ---------------------------------------------------------------- 6. readable in every theme


def _fg_bg(segment: Any, fallback: Any) -> tuple[Any, Any]:
    from textual.color import Color

    style = segment.style
    fg = Color.from_rich_color(style.color) if style.color else None
    bg = Color.from_rich_color(style.bgcolor) if style.bgcolor else fallback
    if style.reverse:
        fg, bg = bg, fg
    return fg, bg


@aio
async def test_damage_text_and_badges_are_readable_in_every_theme() -> None:
    """For every bundled theme: the warnings while reading (a CRC mismatch), the FAIL items
    and every badge are drawn at 4.5:1 at least against what they are drawn on."""
    from textual.color import Color

    async with app_for(FIXTURES / "bad-crc").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await until(pilot, lambda: app.checks is not None, "the checks")
        for theme in app.available_themes:
            app.theme = theme
            await pilot.pause(0.05)
            ground = Color.parse(app.theme_variables["background"])
            if ground.a == 0:  # an ANSI theme: the terminal's own background
                ground = Color(0, 0, 0) if app.current_theme.dark else Color(255, 255, 255)
            checked = 0
            for selector in ("#warnings", "#health", "StatusBar"):
                widget = app.screen.query_one(selector)
                for y in range(widget.size.height):
                    for seg in widget.render_line(y):
                        if not seg.text.strip() or seg.style is None or seg.style.dim:
                            continue
                        fg, bg = _fg_bg(seg, ground)
                        if fg is None or bg is None or fg.a == 0 or bg.a == 0 \
                                or fg.ansi == -1 or bg.ansi == -1:
                            continue  # the terminal's own colours: unknown here
                        if seg.text.strip() in ("FAIL", "WARN", "DAMAGED", "OK", "INFO") \
                                or "CRC" in seg.text or selector == "#warnings":
                            ratio = contrast(fg.with_alpha(1), bg.with_alpha(1))
                            assert ratio >= MIN_CONTRAST, (theme, selector, seg.text, ratio)
                            checked += 1
            assert checked >= 3, theme
        assert len(BACKGROUNDS) == 3


@aio
async def test_no_color_damaged_badge_is_as_strong_as_fail(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """NO_COLOR: the header's DAMAGED badge is bold and reversed, as a FAIL badge is (it was
    a grey on grey, weaker than FAIL)."""
    monkeypatch.setenv("NO_COLOR", "1")
    async with app_for(FIXTURES / "bad-truncated-tail").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await until(pilot, lambda: app.checks is not None, "the checks")
        await pilot.pause(0.1)

        def style_of(selector: str, word: str) -> Any:
            widget = app.screen.query_one(selector)
            for y in range(widget.size.height):
                for seg in widget.render_line(y):
                    if seg.text.strip() == word:
                        return seg.style
            raise AssertionError(f"{word} not in {selector}")

        damaged, fail = style_of("StatusBar", "DAMAGED"), style_of("#health", "FAIL")
        assert damaged.bold and damaged.reverse and fail.bold and fail.reverse


# ---------------------------------------------------------------- 7. quiet warnings shown


def _copy(tmp_path: Path, fixture: str) -> Path:
    d = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, d)
    return d / "__cluster_metadata-0"


@pytest.mark.parametrize("what", ["halved checkpoint", "garbage quorum-state"])
@aio
async def test_what_the_loader_said_shows_first_and_in_health(what: str,
                                                              tmp_path: Path) -> None:
    """A halved newest checkpoint (the image is right, from the log) or a quorum-state that
    does not parse: said in the overview's first screen at 80x24, and in health as INFO
    with its file."""
    if what == "halved checkpoint":
        md = _copy(tmp_path, "segments-snapshots")
        newest = sorted(md.glob("*.checkpoint"))[-1]
        data = newest.read_bytes()
        newest.write_bytes(data[:len(data) // 2])
        said, file = "is not usable", newest
    else:
        md = _copy(tmp_path, "cluster-basic")
        (md / "quorum-state").write_bytes(b"\x00not json{")
        said, file = "quorum-state: cannot read it", md / "quorum-state"
    async with app_for(md).run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        await until(pilot, lambda: app.checks is not None, "the checks")
        await pilot.pause(0.2)
        first = " ".join(lines(app, 24))
        assert said in first, first
        burst(app, "h")
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "health")
        screen = app.screen
        assert isinstance(screen, HealthScreen)
        reading = next(c for c in app.checks or [] if c.name == "reading")
        assert reading.status == "info"
        assert any(said in i.text and str(file) in i.text for i in reading.items)
        await until(pilot, lambda: any("INFO" in ln and "reading" in ln
                                       for ln in health_lines(app)), "the INFO row")
        assert any(str(file) in t for t in screen.texts.values())


# ---------------------------------------------------------------- issue 31 item 8


@aio
async def test_a_partition_that_does_not_decode_reaches_the_verdict_from_the_tables() -> None:
    """A partition record that does not decode, met while the Topics table is made (in the
    background): its topic's row says so, and the note reaches the verdict (the header's
    DAMAGED, health's data check); it was lost in a forked child."""
    app = app_for(FIXTURES / "cluster-basic")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: app.engine._list_cache[0] is not None, "the tables")
        img = app.engine.loaded.image
        topic = next(t for t in img.topics_by_name.values()
                     if any(isinstance(p, tuple) for p in t.partitions.values()))
        pid, lazy = next((k, p) for k, p in topic.partitions.items() if isinstance(p, tuple))
        buf, body, end, version = lazy  # type: ignore[misc]
        topic.partitions[pid] = (buf, body, end - 3, version)  # the record's end cut off
        app.engine._list_cache = (None, {}, [])  # as for a new image
        assert "DAMAGED" not in _header(app)
        app.background.judge(app.generation)
        await until(pilot, lambda: "DAMAGED" in _header(app), "the verdict")
        table = app.engine.list_table(TOPICS)
        assert table is not None
        row = table.rows[table.keys.index(f"{TOPICS}/{topic.name}")]
        assert "1 does not decode" in row[1]
        await until(pilot, lambda: any(c.name == "data" and c.status == "fail"
                                       for c in app.checks or []), "health's data check")


# ---------------------------------------------------------------- issue 31 item 9


def _cut_mid_batch(tmp_path: Path) -> tuple[Path, Path, bytes]:
    """cluster-basic with its log cut inside its last batch; (dir, log, the rest)."""
    d, log, tail = _cut_log(tmp_path, 1)
    half = len(tail) // 2
    with log.open("ab") as f:
        f.write(tail[:half])
    return d, log, tail[half:]


@aio
async def test_r_judges_again_a_completed_batch_and_garbage(tmp_path: Path) -> None:
    """A log cut inside its last batch: DAMAGED; Kafka completes the batch, r: the verdict
    is sound again. Garbage appended then, r: DAMAGED again, and said."""
    d, log, rest = _cut_mid_batch(tmp_path)
    async with app_for(d).run_test(size=SIZE, notifications=True) as pilot:
        app = await ready(pilot)
        start = app.engine.header()
        assert start.badges and "DAMAGED" in _header(app)
        with log.open("ab") as f:
            f.write(rest)
        burst(app, "r")
        await until(pilot, lambda: "DAMAGED" not in _header(app), "the verdict cleared")
        await until(pilot, lambda: app.checks is not None and any(
            c.name == "data" and c.status == "ok" for c in app.checks), "health's data ok")
        with log.open("ab") as f:
            f.write(b"\x13" * 200)
        burst(app, "r")
        await until(pilot, lambda: "DAMAGED" in _header(app), "garbage is damage")
        await until(pilot, lambda: any("verdict" in n.message for n in app._notifications),
                    "said")


@aio
async def test_follow_notices_a_log_rewritten_before_the_point_read(tmp_path: Path) -> None:
    """Following: a file whose bytes change before the point already read is noticed,
    loaded afresh, and said; appended garbage turns the header DAMAGED without a key."""
    d, log, _rest = _cut_log(tmp_path, 2)
    async with app_for(d).run_test(size=SIZE, notifications=True) as pilot:
        app = await ready(pilot)
        burst(app, "f")
        await until(pilot, lambda: "● FOLLOWING" in _header(app), "following")
        with log.open("ab") as f:
            f.write(b"\xff" * 300)
        await until(pilot, lambda: "DAMAGED" in _header(app), "damage seen while following",
                    steps=200)
        burst(app, "f")  # stop; then the file shrinks (the garbage taken away)
        await until(pilot, lambda: "FOLLOWING" not in _header(app), "stopped")
        log.write_bytes(log.read_bytes()[:-300])
        burst(app, "r")
        await until(pilot, lambda: any("loaded afresh" in n.message
                                       for n in app._notifications), "the reload said")
        await until(pilot, lambda: "DAMAGED" not in _header(app), "sound again")


def test_the_engine_reads_through_the_session_only() -> None:
    """Engine.open gives a session whose source is opened, not read."""
    engine = Engine.open(str(FIXTURES / "cluster-basic"), None)
    assert not engine.session.is_loaded
    engine.load()
    assert engine.session.is_loaded and engine.header().offset > 0
