"""The Nodes screen (issue 32), driven by Pilot on generated divergent nodes, and its offset
axis drawn alone."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static

from mdshell.session import Session
from mdshell.tui.app import make_app
from mdshell.tui.engine import Engine
from mdshell.tui.nodeaxis import HELD, LOST, NONE, UNSURE, bars
from mdshell.tui.noderows import nodes_view
from mdshell.tui.nodes import NodesScreen

from .conftest import FIXTURES
from .test_nodes import lost_leader
from .test_tui import SIZE, aio, ready, text_of, until


def _cells(table: DataTable[object], row: int) -> list[str]:
    return [str(c) for c in table.get_row_at(row)]


async def _nodes_screen(pilot: object) -> NodesScreen:
    app = await ready(pilot)  # type: ignore[arg-type]
    await pilot.press("n")  # type: ignore[attr-defined]
    def compared() -> bool:
        screen = app.screen
        return isinstance(screen, NodesScreen) and (screen.view is not None
                                                    or screen.error is not None)

    await until(pilot, compared, "the nodes compared")  # type: ignore[arg-type]
    screen = app.screen
    assert isinstance(screen, NodesScreen)
    return screen


@aio
async def test_the_nodes_screen_shows_the_divergence_and_opens_a_range(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    split, ends = made["split"], made["ends"]
    engine = Engine.open_nodes(made["dirs"])  # type: ignore[arg-type]
    async with make_app(engine).run_test(size=SIZE) as pilot:
        screen = await _nodes_screen(pilot)
        assert text_of(screen.query_one("#verdict", Static)).startswith(
            "the nodes disagree on committed records: node 1 holds other records")
        assert "the quorum's log is node 2's (*)" in text_of(screen.query_one("#summary",
                                                                               Static))
        nodes = screen.query_one("#nodes", DataTable)
        assert nodes.row_count == 3
        assert _cells(nodes, 0)[:4] == ["1", "leader", f"0-{ends[1]}", "1 (led it)"]  # type: ignore
        assert _cells(nodes, 1)[:2] == ["2 *", "leader"]
        axis = text_of(screen.query_one("#axis", Static)).splitlines()
        bar = {line.split()[1]: line for line in axis if line.startswith("node ")}
        assert LOST in bar["1"] and LOST not in bar["2"] and LOST not in bar["3"]
        assert f"^{split}" in axis[-1]
        spans = screen.query_one("#spans", DataTable)
        assert _cells(spans, 0)[:3] == ["node 1", f"{split}-{ends[1]}",  # type: ignore
                                        f"truncated to {split} when node 1 rejoins"]
        assert _cells(spans, 1)[2].startswith("not committed when copied")
        spans.focus()
        spans.move_cursor(row=0)
        await pilot.press("enter")
        box = screen.query_one("#records", Static)
        await until(pilot, lambda: "AccessControlEntryRecord" in text_of(box), "the records")
        shown = text_of(box)
        assert f"offset={split} epoch=1" in shown and f"offset={ends[1]} epoch=1" in shown  # type: ignore
        assert f"offset={split - 1} " not in shown and "User:lost-1" in shown
        await pilot.press("escape")
        assert not screen.query_one("#record-box").has_class("shown")
        assert screen is pilot.app.screen  # the first Esc closes the records only


@aio
async def test_one_directory_alone_and_a_file() -> None:
    async with make_app(Engine.open(str(FIXTURES / "cluster-basic"), None)).run_test(
            size=SIZE) as pilot:
        screen = await _nodes_screen(pilot)
        assert screen.query_one("#nodes", DataTable).row_count == 1
        assert screen.query_one("#spans", DataTable).row_count == 0
        assert "Nothing to open" in text_of(screen.query_one("#hint", Static))
    seg = FIXTURES / "cluster-basic" / "__cluster_metadata-0" / "00000000000000000000.log"
    async with make_app(Engine.open(None, str(seg))).run_test(size=SIZE) as pilot:
        screen = await _nodes_screen(pilot)
        assert text_of(screen.query_one("#verdict", Static)).strip() == (
            "Nodes: it compares nodes' directories: give each node's __cluster_metadata-0 "
            "(or log dir) with its own -d")


def test_the_axis_draws_each_node_by_what_it_holds(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    split, ends = made["split"], made["ends"]
    view = nodes_view(Session.of_nodes(made["dirs"], lazy=True).node_report())  # type: ignore
    lines = [line.plain for line in bars(view, 10 + 27 * 2, {})]  # 2 columns an offset
    one, two, three, ruler = lines
    body = {k: v[10:] for k, v in (("1", one), ("2", two), ("3", three))}
    assert body["1"] == HELD * 2 * split + LOST * 2 * (ends[1] - split + 1)  # type: ignore
    committed = ends[3]  # type: ignore[index]
    assert body["2"] == HELD * 2 * (committed + 1) + UNSURE * 2 + NONE * 2  # 25: node 2 alone
    assert body["3"] == HELD * 2 * (committed + 1) + NONE * 4
    assert ruler.split() == ["^0", f"^{split}", f"^{committed}", f"^{ends[1]}"]  # type: ignore
    # A long log: shown from a little before where the logs part.
    wide = [line.plain for line in bars(view, 10 + 12, {})]
    assert wide[-1].split()[0] != "^0" and LOST in wide[0]


def test_what_cannot_be_compared_is_on_the_screen(tmp_path: Path) -> None:
    """A node whose offsets the quorum's log holds only in a snapshot: the Nodes screen says
    which offsets and why, and its verdict is a warning, not an agreement."""
    from .test_nodes import _snapshotted

    dirs, _ = _snapshotted(tmp_path, diverge=True)
    report = Session.of_nodes(dirs, lazy=True).node_report()
    view = nodes_view(report)
    [text] = report.unchecked
    assert (text, "warn") in [(t, s.lower()) for t, s in view.lines]
    assert view.verdict[0] == ("the nodes agree on every committed record read; but 1 node "
                               "could not be compared with the quorum's log")
    assert view.verdict[1].lower() == "warn"


def test_a_tail_the_quorums_snapshot_replaces_is_said_so_on_the_screen(tmp_path: Path) -> None:
    from .test_nodes import _snapshotted

    dirs, split = _snapshotted(tmp_path, diverge=True, keep_log=(3,))
    view = nodes_view(Session.of_nodes(dirs, lazy=True).node_report())
    [span] = [s for s in view.spans if s.node == "1"]
    assert (span.first, span.what) == (split, "lost when node 1 rejoins: the quorum's "
                                              "snapshot replaces its log")
