"""The main screens on fixture data, for SVG snapshot tests and the README's screenshots.

Paths are relative to the repository root (the caller changes to it), so the header shows the
same source on every machine.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from ..image.verdict import LIVE_STALE
from . import sqlrun
from .app import MdshellApp, make_app
from .engine import Engine
from .rows import LiveRow
from .widgets import StatusBar

SIZE = (120, 36)


@dataclass(frozen=True)
class Scene:
    name: str
    fixture: str  # under fixtures/
    keys: tuple[str, ...] = ()
    jump: str | None = None
    command: str | None = None  # run in the command bar; its table is awaited

    def app(self) -> MdshellApp:
        return make_app(Engine.open(f"fixtures/{self.fixture}", None))

    def before(self) -> Callable[[Pilot[None]], Awaitable[None]]:
        async def run(pilot: Pilot[None]) -> None:
            app = pilot.app
            assert isinstance(app, MdshellApp)
            await _until(pilot, lambda: app.loaded and app.checks is not None)
            if self.jump:
                await app.jump(self.jump)
            if self.command:
                await _run_table_command(pilot, self.command)
            await pilot.press(*self.keys)
            await pilot.pause(0.3)
            await pilot.wait_for_scheduled_animations()
        return run


SCENES = [
    Scene("overview", "health-fenced"),
    Scene("tree", "health-offline", jump="/image/topics/byName/orders"),
    Scene("health", "health-under-min-isr", keys=("h",)),
    Scene("history", "segments-snapshots", keys=("l", "left", "left", "left", "m",
                                                 "left", "left", "d")),
]
# A log cut mid-batch: the DAMAGED badge, and the health panel saying what `health` says.
DAMAGED_SCENE = Scene("damaged", "bad-truncated-tail")
# Needs a local Spark (pyspark and Java): the screenshot script and the Spark tests use it.
SQL_SCENE = Scene("sql", "cluster-basic", command=(
    'sql "select p.leader as broker, b.rack, count(*) as leads, count(distinct p.topic) as '
    'topics, min(size(p.isr)) as min_isr from partitions p join brokers b on b.id = p.leader '
    'group by p.leader, b.rack order by p.leader"'))
SQL_SECONDS = 2.5  # the query time a scene shows (a steady clock: the pixels repeat)


def live_header_app() -> App[None]:
    """The header of a live view (``-q``) in its three states, over a fixture's image: caught
    up (green), behind (yellow), following stopped (red, with the reason). The figures are
    fixed so that the pixels repeat; ``scripts/screenshots.py --live`` shows a real quorum."""
    engine = Engine.open("fixtures/cluster-basic", None)
    engine.load()
    base = replace(engine.header(), kind="quorum", source="live:127.0.0.1:9093")
    off = base.offset
    states = [
        ("caught up", LiveRow(off + 1, off + 1, off, 0.3)),
        ("behind", LiveRow(off + 1, off + 1_250, off, 0.4)),
        ("stopped", LiveRow(off + 1, off + 40, off, 12.0, error="controller 127.0.0.1:9093: "
                            "connection refused")),
    ]

    class LiveHeaders(App[None]):
        CSS = "StatusBar { dock: none; margin-bottom: 1; } .what { color: $text-muted; }"

        def compose(self) -> ComposeResult:
            for what, _row in states:
                yield Static(f"live header, {what}:", classes="what")
                yield StatusBar()

        def on_mount(self) -> None:
            for bar, (_, row) in zip(self.query(StatusBar), states, strict=True):
                badges = [LIVE_STALE] if row.error else []
                bar.show(replace(base, live=row, badges=badges))

    return LiveHeaders()


async def _run_table_command(pilot: Pilot[None], line: str) -> None:
    """Type ``line`` into the command bar, run it, wait for its table (Spark's first query
    starts a JVM: up to a minute)."""
    app = pilot.app
    await pilot.press("colon")
    await _until(pilot, lambda: isinstance(app.screen.focused, Input))
    bar = app.screen.focused
    assert isinstance(bar, Input)
    bar.value = line
    steady = itertools.count(0.0, SQL_SECONDS)
    saved, sqlrun.clock = sqlrun.clock, lambda: next(steady)
    try:
        await pilot.press("enter")
        table = app.screen.query_one("#sql-table", DataTable)
        await _until(pilot, lambda: bool(table.display) and table.row_count > 0, steps=2400)
    finally:
        sqlrun.clock = saved
    await pilot.press("escape")  # the bar closes onto the table


async def _until(pilot: Pilot[None], check: Callable[[], bool], steps: int = 400) -> None:
    for _ in range(steps):
        if check():
            return
        await pilot.pause(0.025)
    raise TimeoutError("the app did not finish loading")
