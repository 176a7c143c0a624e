"""The work a key sets off, and what waits for keys: no needless redraws, restyles or
tables while the user types (bench/tui.py measures how long each key takes; these tests
pin what it does)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from rich.style import Style

from mdshell.tui import listrows
from mdshell.tui.detail import DetailPane
from mdshell.tui.imagetree import ImageTree

from .conftest import FIXTURES
from .test_tui import SIZE, aio, app_for, browser_tree, health_lines, ready, until
from .test_tui_user import TOPICS, burst, lines, tree_at


@aio
async def test_tree_label_widths_are_the_rendered_widths() -> None:
    """The tree measures its labels from their text (Textual renders each one to measure
    it, for every line listed, at every focus change): the same widths, sections, open
    and closed nodes, brokers with their state, a filtered list's label."""
    async with app_for(FIXTURES / "health-fenced").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await app.jump("/image/cluster/brokers/1")
        tree = await browser_tree(pilot)
        await app.jump(f"{TOPICS}/orders")
        await until(pilot, lambda: tree_at(app) == f"{TOPICS}/orders", "the topic")
        burst(app, "F", "o")
        await until(pilot, lambda: tree.filters.get(TOPICS) == "o", "the filter")
        nodes = list(tree.nodes.values())
        assert len(nodes) > 10 and any(n.is_expanded for n in nodes)
        assert any("[filter: o]" in str(n.label) for n in nodes)
        assert any("fenced" in str(n.label) for n in nodes)
        for node in nodes:
            rendered = ImageTree.render_label(tree, node, Style(), Style()).cell_len
            assert tree.get_label_width(node) == rendered, node.label


@aio
async def test_the_pane_stays_while_a_filter_is_typed() -> None:
    """While the tree's filter is typed, the cursor sits on the list's node (Topics) and the
    detail pane keeps the node it showed (it drew the Topics table at each key); Enter
    puts the cursor on the first name kept and the pane follows; Esc back to the topic
    finds it shown already."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        names = sorted(app.engine.loaded.image.topics_by_name)
        topic = f"{TOPICS}/{names[-1]}"
        await app.jump(topic)
        tree = await browser_tree(pilot)
        detail = app.screen.query_one(DetailPane)
        await until(pilot, lambda: detail.path == topic, "the topic shown")
        burst(app, "F", *names[0][:2])
        await until(pilot, lambda: tree.filters.get(TOPICS) == names[0][:2], "the filter")
        await pilot.pause(0.2)
        assert tree_at(app) == TOPICS
        assert detail.path == topic  # not the Topics table
        burst(app, "enter")
        first = f"{TOPICS}/{names[0]}"
        await until(pilot, lambda: tree_at(app) == first and detail.path == first,
                    "the pane on the first name kept")
        burst(app, "F", "escape")
        await until(pilot, lambda: not tree.filters and isinstance(app.screen.focused,
                                                                    ImageTree),
                    "the filter cleared")
        await until(pilot, lambda: detail.path == tree_at(app), "the pane on the cursor")


@aio
async def test_the_footer_follows_the_focus_and_a_click_on_a_key_is_that_key() -> None:
    """The footer (one widget drawing the keys as Textual's Footer drew a widget per key)
    shows the keys of what has the focus; the filter bar takes its line while it is open
    (the panes keep their size), the screen's keys show again after; a click on "? Help"
    opens the help, as the key does."""
    from mdshell.tui.footer import KeyFooter
    from mdshell.tui.helpscreen import HelpScreen

    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await app.jump(f"{TOPICS}/orders")
        await browser_tree(pilot)
        await pilot.pause(0.2)

        def footer() -> str:
            return lines(app, SIZE[1])[-1].rstrip()

        keys = footer()
        assert keys.endswith("F Filter ? Help q Quit") and keys.startswith("o Overview"), keys
        tree_height = app.screen.query_one(ImageTree).size.height
        burst(app, "F")
        await until(pilot, lambda: footer().lstrip().startswith("filter ")
                    and "Esc clears" in footer(), "the filter bar in the footer's line")
        assert app.screen.query_one(ImageTree).size.height == tree_height
        burst(app, "escape")
        await until(pilot, lambda: footer() == keys, "the screen's keys again")
        at = keys.index("? Help")
        await pilot.click(KeyFooter, offset=(at + 2, 0))
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")


@aio
async def test_a_table_made_for_the_view_tab_waits_for_keys() -> None:
    """The Topics table made by the View tab's own worker (not only the judge's) gives the
    UI thread its turn while keys are being answered: it made every table without a pause
    when it came first."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        await until(pilot, lambda: app.engine._list_cache[0] is not None, "the tables")
        engine = app.engine
        engine._list_cache = (None, {}, [])  # the image's tables to make again
        typing = threading.Event()
        typing.set()

        def keys() -> None:  # a user typing for 0.5 s
            while typing.is_set():
                app.last_key = time.monotonic()
                time.sleep(0.01)

        threading.Thread(target=keys, daemon=True).start()
        made: list[Any] = []
        worker = threading.Thread(target=lambda: made.append(engine.list_table(TOPICS)))
        worker.start()
        await pilot.pause(0.5)
        waited = not made
        typing.clear()
        worker.join(10)
        assert waited, "the table was made while keys were being answered"
        assert made and made[0] is not None and made[0].columns == listrows.TOPIC_COLUMNS


# ---------------------------------------------------------------- the first frame


def _pty(width: int, height: int) -> tuple[int, Any]:
    """A real terminal pair of ``width`` x ``height``: (the master's fd, the slave as a
    text file the splash writes to)."""
    import fcntl
    import os
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))
    return master, os.fdopen(slave, "w")


def _read(master: int) -> str:
    import os
    import select

    out = b""
    while select.select([master], [], [], 0.2)[0]:
        out += os.read(master, 65536)
    return out.decode()


def test_the_first_frame_is_the_loading_screens_words_where_it_puts_them(
        monkeypatch: Any) -> None:
    """Before Textual is imported the terminal shows the loading screen's first frame: the
    alternate screen, the words the loading screen starts with, centred as it centres them
    (row 13, column 27 of a 100x30 terminal for this label, as Textual draws them), keys
    not echoed over it; handed to Textual, the terminal's modes are as they were; never
    handed over, the alternate screen is left."""
    import termios

    from mdshell.tui import splash

    monkeypatch.delenv("NO_COLOR", raising=False)
    master, out = _pty(100, 30)
    label = "bench/out/gen-500k/__cluster_metadata-0"
    s = splash.Splash(out)
    echo_before = termios.tcgetattr(out.fileno())[3] & termios.ECHO
    assert echo_before and s.draw(label)
    drawn = _read(master)
    assert drawn.startswith(splash.ENTER)
    assert f"\x1b[13;27H{splash.COLOURS['text']}Reading {label}" in drawn
    assert "\x1b[14;27H" in drawn and "starting..." in drawn
    assert "\x1b[15;27H" in drawn and "(q quits)" in drawn
    assert not termios.tcgetattr(out.fileno())[3] & termios.ECHO
    s.handed_over()
    assert termios.tcgetattr(out.fileno())[3] & termios.ECHO
    s.undo()  # what the program does when Textual never started
    assert _read(master).endswith(splash.LEAVE)
    assert not s.drawn


def test_no_frame_on_a_small_terminal_or_not_a_terminal_and_none_in_colour_under_no_color(
        monkeypatch: Any, tmp_path: Any) -> None:
    """Below the app's 60x16 the app says the terminal is too small: no frame; nor on a
    file; under NO_COLOR the frame has no colours; a live source is being connected to."""
    from mdshell.tui import splash

    master, out = _pty(50, 10)
    assert not splash.Splash(out).draw("x") and _read(master) == ""
    with (tmp_path / "out").open("w") as f:
        assert not splash.Splash(f).draw("x")
    monkeypatch.setenv("NO_COLOR", "1")
    master, out = _pty(80, 24)
    s = splash.Splash(out)
    assert s.draw("live:localhost:9093")
    drawn = _read(master)
    assert "connecting..." in drawn and "\x1b[48;5;" not in drawn and "38;5;" not in drawn
    s.undo()


@aio
async def test_a_screen_first_shown_is_styled_as_a_full_restyle_styles_it() -> None:
    """A screen shown for the first time is not restyled whole when it resumes (its widgets
    were styled as they mounted; Textual restyled every one of them twice more): what it
    shows is what a full restyle gives, for every screen."""
    async with app_for(FIXTURES / "health-offline").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        for key in ("t", "h", "l", "o"):
            burst(app, key)
            await until(pilot, lambda: not app.keys.busy and app.screen.is_current, key)
            await pilot.pause(0.3)
            shown = _svg(app)
            app.screen.update_node_styles(animate=False)
            app.screen.refresh(layout=True)
            await pilot.pause(0.3)
            assert _svg(app) == shown, key


def _svg(app: Any) -> str:
    """The screen as an SVG, without the id Textual makes anew for each export."""
    import re

    return re.sub(r"terminal-\d+", "terminal", app.export_screenshot())


@aio
async def test_the_topics_table_says_what_it_holds_on_screen() -> None:
    """The Topics node's table has its status line on screen (how many topics, what Enter,
    s and F do): a rule for the pane's status lines hid it."""
    async with app_for(FIXTURES / "cluster-basic").run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        n = len(app.engine.loaded.image.topics_by_name)
        await app.jump(TOPICS)
        await browser_tree(pilot)
        await until(pilot, lambda: bool(app.screen.query("#view-table"))
                    and app.screen.query_one("#view-table").row_count == n, "the table")
        await pilot.pause(0.2)
        shown = "\n".join(lines(app, SIZE[1]))
        assert f"{n} topics" in shown and "s or a header sorts" in shown, shown


@pytest.fixture(scope="module")
def under_replicated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log whose changes shrink ISRs: some 80 under-replicated partitions."""
    out = tmp_path_factory.mktemp("urp") / "d"
    subprocess.run([sys.executable, "-m", "mdshell.synth", "--out", str(out), "--topics", "60",
                    "--partitions-per-topic", "25", "--brokers", "5", "--rf", "3",
                    "--history-changes", "1500", "--mix", "isr-shrink=1", "--seed", "3"],
                   check=True, capture_output=True, timeout=120)
    return out / "__cluster_metadata-0"


@aio
async def test_health_lists_the_first_items_of_a_check_and_F_finds_the_others(
        under_replicated: Path) -> None:
    """A check's first MAX_ITEMS items are listed, then how many more (each item is drawn
    and measured when the screen first shows: 408 of them took 270 ms at 500k); F narrows
    over all of them, so an item past the first ones is found."""
    from mdshell.tui import health
    from mdshell.tui.health import HealthScreen

    async with app_for(under_replicated).run_test(size=SIZE) as pilot:
        app = await ready(pilot)
        burst(app, "h")
        await until(pilot, lambda: isinstance(app.screen, HealthScreen), "health")
        await until(pilot, lambda: app.checks is not None and bool(health_lines(app)),
                    "the checks")
        check = next(c for c in app.checks or [] if c.name == "under-replicated partitions")
        assert len(check.items) > health.MAX_ITEMS
        shown = health_lines(app)
        listed = [ln for ln in shown if "isr [" in ln and " of replicas " in ln]
        assert len(listed) == health.MAX_ITEMS
        more = len(check.items) - health.MAX_ITEMS
        assert any(f"... {more:,} more" in ln for ln in shown), shown
        last = check.items[-1].text  # past the first ones
        assert not any(last in ln for ln in shown)
        name = last.split(":")[0]
        burst(app, "F", *name)
        await until(pilot, lambda: any(last in ln for ln in health_lines(app)),
                    "the item found by F")
