"""Issue 22's defects, each driven by Pilot: keys, focus, words and colours of the TUI."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from rich.style import Style
from textual.containers import Vertical
from textual.widgets import Input, OptionList, Static

from mdshell.tui.browser import BrowserScreen
from mdshell.tui.health import HealthScreen
from mdshell.tui.history import HistoryScreen
from mdshell.tui.overview import OverviewScreen
from mdshell.tui.search import SearchScreen

from .conftest import CORPUS, FIXTURES, need_corpus
from .test_tui import (
    SIZE,
    aio,
    app_for,
    browser_tree,
    detail_text,
    health_cursor,
    ready,
    until,
)


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


def _shown_segments(app: Any, selector: str) -> list[tuple[str, Style]]:
    """The widget's lines as the terminal gets them: through the app's filters (NO_COLOR's
    greys included), each segment with its final style."""
    widget = app.screen.query_one(selector, Static)
    out = []
    for y in range(widget.size.height):
        segments = list(widget.render_line(y))
        for f in app._filters:
            segments = f.apply(segments, app.styles.background)
        out += [(s.text, s.style or Style()) for s in segments if s.text.strip()]
    return out


def _luminance(style: Style) -> float:
    color = style.color
    if color is None or color.is_default:
        return 1.0  # the terminal's own foreground
    r, g, b = color.get_truecolor()
    return (0.299 * r + 0.587 * g + 0.114 * b) / 255


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
@aio
async def test_passing_checks_are_readable(theme: str) -> None:
    """The passing checks' names are not drawn in their background's colour."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        app.theme = theme
        await pilot.pause()
        names = [(t, s) for t, s in _shown_segments(app, "#health") if "fenced brokers," in t]
        assert names, "the passing checks' line"
        for _text, style in names:
            assert style.bgcolor is None or style.color != style.bgcolor


@aio
async def test_health_hint_says_where_enter_goes_at_80_columns() -> None:
    """At 80 columns an item's "→ path" runs off the screen: the line above the checks
    says where Enter goes from the item under the cursor, whole."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        await pilot.press("h")
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "health")
        await until(pilot, lambda: health_cursor(app) is not None, "the cursor on an item")
        path = health_cursor(app)
        await until(pilot, lambda: any(f"Enter opens {path}" in _line(app, y)
                                       for y in range(24)), "the hint")


@aio
async def test_health_screen_colours_the_badge_not_the_line() -> None:
    """On the health screen only the badge is on its colour: the check's name and summary
    are not (the badge's style was the whole label's: FAIL lines white on red, OK lines
    dark on green)."""
    async with app_for(FIXTURES / "health-fenced").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("h")
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "health")
        await pilot.pause(0.2)
        tree = app.screen.query_one("#checks")
        lines = [list(tree.render_line(y)) for y in range(tree.size.height)]
        seen = 0
        for segments in lines:
            badge = next((s for s in segments if s.text.strip() in ("FAIL", "WARN", "OK")),
                         None)
            if badge is None or badge.style is None or badge.style.bgcolor is None:
                continue
            rest = [s for s in segments if ":" in s.text and s.style is not None]
            assert rest and all(s.style.bgcolor != badge.style.bgcolor for s in rest), rest
            seen += 1
        assert seen >= 3  # a FAIL, a WARN and the OKs


@aio
async def test_no_color_fail_items_not_dimmer_than_warn(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    """NO_COLOR: a FAIL item is bold and no darker than a WARN item."""
    monkeypatch.setenv("NO_COLOR", "1")
    async with app_for(FIXTURES / "health-fenced").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        shown = _shown_segments(app, "#health")
        fail = [s for t, s in shown if t.strip().startswith("broker 4")]
        warn = [s for t, s in shown if t.strip() == "broker 5"]
        assert fail and warn, shown
        assert all(s.bold for s in fail)
        assert min(map(_luminance, fail)) >= max(map(_luminance, warn))


@aio
async def test_screenshot_without_downloads_lands_here(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The palette's Screenshot with no ~/Downloads: saved in the working directory, and the
    notification says where."""
    home, here = tmp_path / "home", tmp_path / "here"
    home.mkdir()
    here.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    async with app_for(FIXTURES.resolve() / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        app.action_screenshot()
        await until(pilot, lambda: any(here.glob("*.svg")), "the screenshot file")
        saved = next(here.glob("*.svg"))
        assert "<svg" in saved.read_text()
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any(str(saved) in m for m in said), said


def _view_has(app: Any, what: str) -> bool:
    return isinstance(app.screen, BrowserScreen) and bool(app.screen.query("#view-body")) \
        and what in detail_text(app, "view")


async def _corpus_view(path: str, marker: str) -> str:
    """The View tab of ``path`` in a 3.6 corpus directory (no controller registrations)."""
    need_corpus()
    d = CORPUS / "ArpithaPrakash__Real-Time-Air-Quality-Prediction-with-Apache-Kafka"
    async with app_for(d).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await app.jump(path)
        await until(pilot, lambda: _view_has(app, marker), marker)
        return detail_text(app, "view")


@aio
async def test_topic_view_counts_partitions_and_shows_configs() -> None:
    """A 50-partition topic says "50 partitions" (not 52 entries: name and id are fields)
    and lists the configs set on it."""
    view = await _corpus_view("/image/topics/byName/__consumer_offsets", "__consumer_offsets")
    assert "50 partitions" in view and "entries" not in view
    assert "cleanup.policy" in view and "compact" in view


@aio
async def test_controllers_node_not_empty_when_the_quorum_has_a_leader() -> None:
    """Before 3.7 no controller registers: the Controllers node says so and names the
    quorum's leader the overview lists, instead of "(empty)"."""
    view = await _corpus_view("/image/cluster/controllers", "controllers")
    assert "(empty)" not in view and "1 (leader" in view


@aio
async def test_a_note_in_the_view_wraps_at_80_columns() -> None:
    """The Controllers note (no registration before 3.7) wraps in the pane at 80 columns: its
    end was cut off (the view was as wide as the note, only tables need to be)."""
    async with app_for(FIXTURES / "bad-log-gap").run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        await pilot.press("t")
        await until(pilot, lambda: _view_has(app, "no controller registration"), "the note")
        await pilot.pause(0.1)
        screen = "\n".join(_line(app, y) for y in range(24))
        assert "(see /quorum)" in screen, screen


@aio
async def test_search_index_built_in_a_worker_indexing_until_ready() -> None:
    """`/` never builds the index on the UI thread: until the worker's index is in, the box
    says "indexing…" and keeps what is typed; then the results for it show. No match says
    so instead of a blank list."""
    app = app_for(FIXTURES / "cluster-basic")
    build = app.engine.search_index
    gate = threading.Event()
    threads: list[str] = []

    def gated() -> list[tuple[str, str, str]]:
        threads.append(threading.current_thread().name)
        gate.wait(10)
        return build()

    app.engine.search_index = gated  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.loaded and app.checks is not None, "the load")
        await pilot.press("slash")
        await until(pilot, lambda: isinstance(app.screen, SearchScreen), "the search box")
        box = app.screen.query_one(Vertical)
        await until(pilot, lambda: "indexing" in str(box.border_title), "indexing…")
        await pilot.press(*"topic-2")
        gate.set()
        results = app.screen.query_one(OptionList)
        await until(pilot, lambda: results.option_count > 0 and "topic-2" in str(
            results.get_option_at_index(0).prompt), "the results")
        assert "entries" in str(box.border_title)
        assert threading.main_thread().name not in threads
        await pilot.press(*"zzqq")
        await until(pilot, lambda: results.option_count == 1 and "no match" in str(
            results.get_option_at_index(0).prompt), "no match")


@aio
async def test_footer_and_header_fit_80_columns() -> None:
    """At 80x24 every screen's footer ends with "? Help" and "q Quit" (nothing cut) and shows
    F where it filters (history: its own keys, then F, before the screens), the overview's
    counts wrap between counts and its health lines under their text, and the
    header never parts a label from its value ("MV" and its version on one line); times show
    three digits of milliseconds."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        for key, screen in (("o", OverviewScreen), ("t", BrowserScreen),
                            ("h", HealthScreen), ("l", HistoryScreen)):
            await pilot.press(key)
            await until(pilot, lambda s=screen: isinstance(app.screen, s), key)
            await pilot.pause(0.2)
            footer = _line(app, 23)
            assert footer.rstrip().endswith("? Help q Quit"), (key, footer)
            assert ("F Filter" in footer) == (key != "o"), (key, footer)  # where F filters
            assert ("Go to node" in footer) == (key == "h"), (key, footer)  # health's Enter
            if key == "o":  # a count keeps its words together ("min" and "ISR" were parted)
                lines = [_line(app, y) for y in range(24)]
                assert any("0 under min ISR" in ln for ln in lines)
                # a health line wraps under its text, not under the badge
                assert any(ln.startswith(" │        smaller than their") for ln in lines), lines
            header = [_line(app, y) for y in range(3)]
            assert not any(ln.rstrip().endswith(" MV") for ln in header), header
            assert any("MV 4.0-IV3" in ln for ln in header), header
            assert any("2024-04-24T23:07:11.490Z" in ln for ln in header), header


@aio
async def test_history_footer_at_120_columns_keeps_F() -> None:
    """At 120 columns the history's own keys and F show (the screens' keys give way)."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=(120, 30)) as pilot:
        app = await ready(pilot)
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen), "history")
        await pilot.pause(0.2)
        footer = _line(app, 29)
        assert "d Diff mark→here" in footer and "F Filter" in footer, footer
        assert footer.rstrip().endswith("? Help q Quit"), footer


@aio
async def test_footer_leaves_out_keys_typed_into_a_box() -> None:
    """In the command bar and the filter bar / is typed, not a search: the footer does not
    offer it (it said "/ Search"); the filter bar takes the footer's line while open (its
    box says Enter keeps the filter, Esc clears it)."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        await pilot.press("t")
        await browser_tree(pilot)
        for opener, box in (("colon", "Cancel/close"), ("F", "Esc clears")):
            await pilot.press(opener)
            await until(pilot, lambda b=box: b in _line(app, 23), box)
            await pilot.pause(0.1)
            assert "Search" not in _line(app, 23), _line(app, 23)
            await pilot.press("escape")
            await until(pilot, lambda b=box: b not in _line(app, 23), "closed")


def _type_fast(app: Any, keys: str) -> None:
    """``keys`` as a fast typist sends them: all in the app's queue before the first is
    handled (Pilot's press waits for each; a terminal does not)."""
    from textual import events

    names = {":": "colon", "/": "slash"}
    for char in keys:
        event = events.Key(names.get(char, char), char)
        event.set_sender(app)
        app._driver.send_message(event)


@aio
async def test_keys_typed_right_after_F_colon_slash_land_in_the_box() -> None:
    """F, : and / open their box before the next key is read: "Fcon" typed at once filters
    the sections by "con" (the "o" switched to the overview, "c" the Changes tab), ":brokers"
    from the history screen lands in the command bar, "/topic" in the search box."""
    from textual.widgets import Input

    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("t")
        await browser_tree(pilot)
        _type_fast(app, "Fcon")
        await until(pilot, lambda: isinstance(app.screen.focused, Input)
                    and app.screen.focused.value == "con", "'con' in the filter bar")
        await pilot.press("escape")
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen), "history")
        _type_fast(app, ":brokers")
        await until(pilot, lambda: isinstance(app.screen.focused, Input)
                    and app.screen.focused.value == "brokers", "'brokers' in the bar")
        assert isinstance(app.screen, BrowserScreen)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen.focused, Input), "bar closed")
        _type_fast(app, "/topic")
        await until(pilot, lambda: isinstance(app.screen.focused, Input)
                    and app.screen.focused.value == "topic", "'topic' in the search box")


def _line(app: Any, y: int) -> str:
    """Row ``y`` of the screen as the terminal shows it (modal screens included)."""
    return app.screen._compositor.render_strips()[y].text


@aio
async def test_help_overlay_lists_the_screens_keys() -> None:
    """`?` (and F1) open the keys of the screen they were pressed on; Esc closes."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        for key, screen, own in (("l", HistoryScreen, "Diff mark→here"),
                                 ("t", BrowserScreen, "JSON tab")):
            await pilot.press(key)
            await until(pilot, lambda s=screen: isinstance(app.screen, s), key)
            for opener in ("question_mark", "f1"):
                await pilot.press(opener)
                await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", opener)
                shown = "\n".join(_line(app, y) for y in range(SIZE[1]))
                assert own in shown and "Search" in shown and "Ctrl+C" in shown
                await pilot.press("escape")
                await until(pilot, lambda s=screen: isinstance(app.screen, s), "closed")


def _key_name(shown: str) -> str:
    """A key as the help shows it ("⏎", "Enter", "esc", "Esc") by one name."""
    glyphs = {"⏎": "enter", "⌫": "backspace", "esc": "escape"}
    name = shown if len(shown) == 1 and shown.isalpha() else shown.lower()
    return glyphs.get(name, name)


@aio
async def test_help_at_80x24_shows_the_screens_own_keys_first_once() -> None:
    """At 80x24 the screen's own keys are in sight (they were under the app's, scrolled
    away), each key once (Ctrl+Q, Ctrl+P and Tab were listed twice), ? and F1 on one row."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        for key, screen, own in (("l", HistoryScreen, "Diff mark→here"),
                                 ("h", HealthScreen, "Go to node"),
                                 ("o", OverviewScreen, "health details"),
                                 ("t", BrowserScreen, "JSON tab")):
            await pilot.press(key)
            await until(pilot, lambda s=screen: isinstance(app.screen, s), key)
            await pilot.press("question_mark")
            await until(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "help")
            await pilot.pause(0.1)
            shown = "\n".join(_line(app, y) for y in range(24))
            assert own in shown, shown
            rows = app.screen.rows  # type: ignore[attr-defined]
            keys = [_key_name(k) for row_keys, _what in rows for k in row_keys.split()
                    if k != "↑↓"]  # "⏎ Health details" and "Enter health details" too
            assert len(keys) == len(set(keys)), rows
            assert ("? f1", "Help") in rows and "Focus Next" not in str(rows)
            await pilot.press("escape")
            await until(pilot, lambda s=screen: isinstance(app.screen, s), "closed")


@aio
async def test_j_k_move_and_esc_goes_back_after_a_jump() -> None:
    """j/k move the tree's cursor (J is the JSON tab); Enter on a health item jumps to the
    tree and Esc comes back to health; `t` gives the focus back to the tree."""
    async with app_for(FIXTURES / "health-fenced").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await pilot.press("t")
        tree = await browser_tree(pilot)
        await until(pilot, lambda: tree.cursor_line == 0, "the cursor home")
        await pilot.press("j", "j")
        assert tree.cursor_line == 2
        await pilot.press("k")
        assert tree.cursor_line == 1
        detail = app.screen.query_one("#detail")
        await pilot.press("J")
        await until(pilot, lambda: detail.active == "json", "the JSON tab")  # type: ignore
        detail.query_one("#json-scroll").focus()
        await pilot.press("t")
        await until(pilot, lambda: app.screen.focused is tree, "the tree focused again")
        await pilot.press("h")
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "health")
        await until(pilot, lambda: health_cursor(app) is not None, "a health item")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, BrowserScreen)
                    and tree.cursor_node is not None
                    and tree.cursor_node.data == "/image/cluster/brokers/4", "the jump")
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "back to health")


@aio
async def test_a_long_command_shows_it_runs_and_esc_cancels() -> None:
    """A command still running: a spinner and its seconds in the Output tab (not the previous
    output); Esc cancels it and says so."""
    app = app_for(FIXTURES / "cluster-basic")
    run = app.engine.run
    gate = threading.Event()

    def slow(line: str) -> Any:
        if line.startswith("topics"):
            gate.wait(10)
        return run(line)

    app.engine.run = slow  # type: ignore[method-assign]
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot)
            await pilot.press("colon")
            await browser_tree(pilot)
            await until(pilot, lambda: isinstance(app.screen.focused, Input), "the bar")
            await pilot.press(*"pwd", "enter")
            await until(pilot, lambda: "pwd" in detail_text(app, "output"), "pwd's output")
            await pilot.press(*"topics --describe", "enter")
            await until(pilot, lambda: "running" in detail_text(app, "output"), "the spinner")
            first = detail_text(app, "output")
            await pilot.pause(0.3)
            assert " s" in first and detail_text(app, "output") != first  # it ticks
            await pilot.press("escape")
            await until(pilot, lambda: "cancelling" in detail_text(app, "output"), "cancel")
            gate.set()
            await until(pilot, lambda: "(cancelled)" in detail_text(app, "output"), "the end")
    finally:
        gate.set()


def test_bars_are_drawn_from_zero() -> None:
    """A quiet log's 440 and 441 records per column look alike (near full, not full and
    empty); an interval of NoOps only is a baseline, not a gap."""
    from mdshell.tui.bars import bars

    rows = bars([440, 441, 0], [440, 441, 5], 4).plain.splitlines()
    assert [r[0] for r in rows] == [r[1] for r in rows] == ["█"] * 4
    assert [r[2] for r in rows] == [" ", " ", " ", "▁"]


def test_history_legend_keeps_its_words_at_80_columns() -> None:
    """A 500k log's offsets (six digits) at 80 columns: the legend leaves out the batches
    before it leaves out "snapshot" and "leader" (it read "SL")."""
    from mdshell.session.timeline import Timeline
    from mdshell.tui.history import history_title

    tl = Timeline(505068, 509582, [(0, 0, 1, 0)] * 4219, [505068], [(505492, 1001, 2)])
    legend = history_title(tl, 76).plain
    assert "S snapshot L leader" in legend and "offsets 505068–509582" in legend, legend
    assert len(legend) <= 76


@aio
async def test_history_plots_changes_not_noops() -> None:
    """The history counts changes (records other than NoOp) per interval: their sum is the
    log's records minus its NoOpRecords, as `records` lists them."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, HistoryScreen), "history")
        await pilot.pause(0.2)
        screen = app.screen
        listed = list(app.engine.run("records").lines)
        noops = sum(" NoOpRecord(" in ln for ln in listed)
        assert noops > 0
        assert sum(screen.changes) == len(listed) - noops  # type: ignore[attr-defined]
        assert sum(screen.counts) == len(listed)  # type: ignore[attr-defined]
        legend = _line(app, 3)
        assert "NoOps only" in legend and "S snapshot" in legend


@aio
async def test_counts_say_topic_in_the_singular() -> None:
    """One topic is "1 topic", with a space; many are plural."""
    async with app_for(FIXTURES / "health-fenced").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        counts = "".join(t for t, _s in _shown_segments(app, "#counts"))
        assert "1 topic " in counts and "3 partitions" in counts, counts


@aio
async def test_the_focused_pane_shows() -> None:
    """Tab moves the focus between the tree and the detail pane, and the focused one is
    tinted: a tree row's and a detail row's background change with the focus."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        await pilot.press("t")
        tree = await browser_tree(pilot)
        await until(pilot, lambda: app.screen.focused is tree, "the tree focused")
        await pilot.pause(0.2)

        def backgrounds() -> tuple[object, object]:
            strip = list(app.screen._compositor.render_strips()[10])
            return strip[0].style.bgcolor, strip[-1].style.bgcolor  # type: ignore[union-attr]

        tree_focused = backgrounds()
        await pilot.press("tab")  # one Tab: the tab strip takes no focus
        await until(pilot, lambda: app.screen.focused is not None
                    and app.screen.focused.id == "view-scroll", "the detail focused")
        await pilot.pause(0.2)
        detail_focused = backgrounds()
        assert tree_focused[0] != detail_focused[0]
        assert tree_focused[1] != detail_focused[1]
