"""The overview: what opens. Health first (what is wrong, and what reading the files said),
then the warnings met while reading, counts, brokers, controllers and features."""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from .fmt import plural
from .footer import KeyFooter
from .healthrows import READING, health_title
from .palette import Palette
from .rows import CheckRow, NodeRow, Overview
from .screen import DataScreen
from .widgets import Flow, StatusBar, item_style, palette_of, state_text, status_badge

SHOWN_ITEMS = 3  # items under each failing, warning or reading check


class OverviewScreen(DataScreen):
    DEFAULT_CSS = """
    OverviewScreen VerticalScroll { padding: 0 1; }
    OverviewScreen .panel { border: round $primary-darken-1; height: auto; padding: 0 1; }
    OverviewScreen #health.fail { border: round $error; }
    OverviewScreen #health.warn { border: round $warning; }
    OverviewScreen #health.ok { border: round $success; }
    OverviewScreen #warnings { border: round $warning; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "app.show('health')",
                                                     "Health details", show=False)]
    HOME_FOCUS = "VerticalScroll"
    overview: Overview | None = None

    def compose(self) -> ComposeResult:
        yield StatusBar()
        with VerticalScroll():
            yield Static(id="health", classes="panel")
            yield Static(id="warnings", classes="panel")
            yield Static(id="counts", classes="panel")
            yield Static(id="brokers", classes="panel")
            yield Static(id="controllers", classes="panel")
            yield Static(id="features", classes="panel")
        yield KeyFooter()

    def refresh_data(self) -> None:
        ov = self.engine.overview()
        self.overview = ov
        pal = palette_of(self.app)
        self._panel("brokers", f"Brokers ({len(ov.brokers)})", _brokers(ov.brokers, pal))
        self._panel("controllers", f"Controllers ({len(ov.controllers)})",
                    _controllers(ov.controllers, pal))
        self._panel("features", "Finalized features", _features(ov, pal))
        warnings = self.query_one("#warnings", Static)
        warnings.display = bool(ov.warnings)
        if ov.warnings:
            self._panel("warnings", f"Warnings while reading ({len(ov.warnings)})",
                        Text("\n".join(ov.warnings[:20]), style=pal.warn))
        self.show_health(self.checks)

    def checks_ready(self) -> None:
        if self.overview is not None:
            self.show_health(self.checks)

    def show_health(self, checks: list[CheckRow] | None) -> None:
        ov = self.overview
        assert ov is not None
        panel = self.query_one("#health", Static)
        counts: list[Text] = []  # each kept whole when the panel wraps them (Flow)
        for n, noun in ((ov.topics, "topic"), (ov.partitions, "partition")):
            count, _, word = plural(n, noun).partition(" ")
            counts.append(Text.assemble((count, "bold"), f" {word}"))
        pal = palette_of(self.app)
        if checks is None:
            for each in ("fail", "warn", "ok"):
                panel.set_class(False, each)
            panel.border_title = "Health"
            panel.update(Text(f"checking {ov.partitions:,} partitions, "
                              f"{len(ov.brokers)} brokers...", style="dim italic"))
            counts.append(Text("offline … under-replicated …", style="dim"))
        else:
            words, status = health_title(checks)
            for each in ("fail", "warn", "ok"):
                panel.set_class(each == status, each)
            panel.border_title = f"Health: {words}" + (" · h for details" if status != "ok"
                                                        else "")
            panel.update(_health(checks, pal))
            by_name = {c.name: len(c.items) for c in checks}
            for name, label in (("offline partitions", "offline"),
                                ("under-replicated partitions", "under-replicated"),
                                ("under-min-ISR partitions", "under min ISR")):
                n = by_name.get(name, 0)
                counts.append(Text.assemble((f"{n:,}", f"bold {pal.fail if n else pal.ok}"),
                                            f" {label}"))
        self.query_one("#counts", Static).update(Flow(counts))
        self.query_one("#counts", Static).border_title = "Counts"
        # Heights change with the content: lay the column out again once this has rendered.
        self.call_after_refresh(self.query_one(VerticalScroll).refresh, layout=True)

    def _panel(self, wid: str, title: str, body: RenderableType) -> None:
        panel = self.query_one(f"#{wid}", Static)
        panel.border_title = title
        panel.update(body)


def _health(checks: list[CheckRow], pal: Palette) -> Table:
    """Failures and warnings with their first items, then what reading the files said;
    the passing checks on one line (the badge alone on its colour, the names in the
    panel's: never green on green). A grid: a line that wraps goes on under its text, not
    under the badge (at 80 columns an item's end was at the panel's left edge)."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)  # the badge, or nothing under it
    grid.add_column()
    passed = [c.name for c in checks if c.status == "ok"]
    # Passed, but on data the data check fails: one line too, not shown as OK.
    as_read = [c.name for c in checks if c.as_read]
    for c in checks:
        if c.status == "ok" or c.name in as_read:
            continue
        grid.add_row(status_badge(c.status, pal),
                     Text.assemble((f"{c.name}: ", "bold"), c.summary))
        if c.status in ("fail", "warn") or c.name == READING:
            for item in c.items[:SHOWN_ITEMS]:
                grid.add_row("", _indented(Text(item.text, style=item_style(c.status, pal))))
            if len(c.items) > SHOWN_ITEMS:
                grid.add_row("", _indented(Text(f"... {len(c.items) - SHOWN_ITEMS:,} more (h)",
                                                style="dim")))
    if passed:
        grid.add_row(status_badge("ok", pal), Text(", ".join(passed),
                                                    style=item_style("ok", pal)))
    if as_read:
        grid.add_row(status_badge("info", pal), Text.assemble(
            ("passed in the image as read (see data): ", "bold"), ", ".join(as_read)))
    return grid


def _indented(text: Text) -> Padding:
    return Padding(text, (0, 0, 0, 1))


def _table(*columns: str) -> Table:
    t = Table(box=None, pad_edge=False, expand=False, header_style="bold dim")
    for c in columns:
        t.add_column(c, overflow="fold")
    return t


def _brokers(rows: list[NodeRow], pal: Palette) -> Table | Text:
    if not rows:
        return Text("no broker is registered", style=pal.fail)
    t = _table("id", "state", "rack", "endpoints", "log dirs")
    for r in rows:
        t.add_row(str(r.id), state_text(r.state, pal), Text(r.rack or "-"),
                  Text("\n".join(r.endpoints)),
                  "-" if r.dirs is None else str(r.dirs))
    return t


def _controllers(rows: list[NodeRow], pal: Palette) -> Table | Text:
    if not rows:
        return Text("no controller registration and no known voter", style=pal.warn)
    t = _table("id", "quorum role", "endpoints", "incarnation")
    for r in rows:
        t.add_row(str(r.id), state_text(r.state, pal), Text("\n".join(r.endpoints) or "-"),
                  Text(r.incarnation or "-"))
    return t


def _features(ov: Overview, pal: Palette) -> Table | Text:
    if not ov.features:
        return Text("none finalized", style="dim")
    t = _table("feature", "finalized", "every node supports")
    for name, level, common in ov.features:
        lo, _, hi = common.partition("-")
        ok = common == "-" or (lo.isdigit() and hi.isdigit()
                               and int(lo) <= int(level.split()[0]) <= int(hi))
        t.add_row(Text(name), Text(level), Text(common, style=pal.ok if ok else pal.fail))
    return t
