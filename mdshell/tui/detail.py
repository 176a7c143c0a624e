"""The detail pane: the selected node readably (tables, broker states coloured), Kafka's text
form, JSON, the records that touched it, and the output of the command bar."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import DataTable, ProgressBar, Static, TabbedContent, TabPane, Tabs
from textual.worker import get_current_worker

from .fmt import plural
from .listview import ListTableView, is_list
from .nodeview import count_line, crumbs, empty_note, topic_configs
from .palette import Palette
from .resulttable import FilterTable, ResultTable, TextScroll
from .tabwork import SLOW_TABS, slow_tab
from .widgets import palette_of, state_text

if TYPE_CHECKING:
    from .engine import Engine
    from .sqlrun import SqlRun, SqlTable

MAX_LINES = 5000  # beyond this a command's output is cut (with a note): refine the command
TABLE_ROWS = 200  # a directory's table shows this many children
WIDEST = 1000  # a view table wider than this folds its cells
BROKER_LISTS = ("replicas", "isr", "elr", "lastKnownElr", "addingReplicas", "removingReplicas")
COLUMNS = ("leader", "replicas", "isr", "elr", "leaderRecoveryState", "leaderEpoch", "epoch",
           "fenced", "inControlledShutdown", "rack", "listeners", "name", "id")
TABS = ("view", "text", "json", "changes", "output")
NO_OUTPUT = "no command has run yet: `:` opens the command bar, and its output shows here"


class DetailPane(Vertical):
    """Five tabs; each renders on demand (changes and JSON can be costly on big nodes).
    The Topics and Brokers table and sql's widgets are made the first time they are needed
    (each widget of the tree screen adds to its first showing)."""

    DEFAULT_CSS = """
    DetailPane { height: 1fr; width: 1fr; }
    DetailPane TextScroll { height: 1fr; }
    DetailPane Static { width: auto; }
    DetailPane #crumbs { width: 1fr; height: 1; padding: 0 1; background: $panel;
                         text-wrap: nowrap; text-overflow: ellipsis; }
    DetailPane .status, DetailPane #sql-status { width: 1fr; height: auto; display: none; }
    DetailPane #sql-progress { display: none; }
    DetailPane #sql-table { height: 1fr; display: none; }
    """

    def __init__(self, engine: Engine) -> None:
        super().__init__(id="detail")
        self.engine = engine
        self.path: str | None = None
        self._rendered: set[str] = set()
        self._tab_seq: dict[str, int] = {}  # the latest J or c asked for, per tab
        self._sql_timer: Timer | None = None
        # A command's table shown (not sql): its title, text form and errors, for ``x``.
        self._command: tuple[str, list[str], list[str]] | None = None
        self._sql_made = False  # the Output tab's widgets for sql and tables

    def compose(self) -> ComposeResult:
        yield Static(id="crumbs")
        with TabbedContent(initial="view"):
            for tab, title in zip(TABS, ("v View", "x Text", "J JSON", "c Changes",
                                                 "O Output"),
                                  strict=True):
                with TabPane(title, id=tab), TextScroll(id=f"{tab}-scroll"):
                    yield Static(Text(NO_OUTPUT, style="dim") if tab == "output" else "",
                                 id=f"{tab}-body")

    def _body(self, tab: str) -> Static:
        return self.query_one(f"#{tab}-body", Static)

    def prepare_output(self) -> None:
        """sql's status line, progress bar and result table in the Output tab, made if
        they are not yet (the command bar opening: what it runs lands there)."""
        if self._sql_made:
            return
        self._sql_made = True
        self.query_one("#output", TabPane).mount(
            Static(id="sql-status"), ProgressBar(id="sql-progress", show_eta=False),
            ResultTable(id="sql-table"))

    def _list_view(self, make: bool) -> ListTableView | None:
        """The Topics and Brokers table of the View tab (made when ``make`` and not yet)."""
        found = self.query(ListTableView)
        if found:
            return found.first()
        if not make:
            return None
        view = ListTableView(self.engine)
        self.query_one("#view", TabPane).mount(view)
        view.attach()
        return view

    @property
    def active(self) -> str:
        return self.query_one(TabbedContent).active

    @active.setter
    def active(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def on_mount(self) -> None:
        # The tab strip takes no focus: Tab from the tree lands in the tab's content (its
        # table, its text), and v x J c O switch tabs.
        self.query_one(Tabs).can_focus = False

    def show_path(self, path: str) -> None:
        self.path = path
        self.query_one("#crumbs", Static).update(crumbs(path))
        self._rendered.clear()
        if is_list(path):
            self._list_view(True)  # there from now on, as the View tab shows it
        if self.active == "output":
            self.active = "view"
        self.render_active()

    def refresh_path(self) -> None:
        """The same node in a new image (time travel, live): render again, same tab."""
        self._rendered.clear()
        self.render_active()

    def render_active(self) -> None:
        tab = self.active
        if not tab or self.path is None or tab in self._rendered or tab == "output":
            return
        self._rendered.add(tab)
        if tab == "view":
            listed = is_list(self.path)
            self.query_one("#view-scroll").display = not listed
            view = self._list_view(listed)
            if view is not None:
                view.display = listed
            if view is not None and listed:
                view.show(self.path)
                return
        body = self._body(tab)
        if tab in SLOW_TABS:
            body.update(Text("reading…", style="dim"))
            self._tab_seq[tab] = seq = self._tab_seq.get(tab, 0) + 1
            self._slow_tab(tab, self.path, seq)
            return
        shown = self._render_tab(tab, self.path)
        if tab == "view":
            self._natural_width(body, shown)
        body.update(shown)

    @work(thread=True, group="slow-tab")
    def _slow_tab(self, tab: str, path: str, seq: int) -> None:
        """J or c, made off the UI thread; given up when the cursor moved on."""
        worker = get_current_worker()
        shown = slow_tab(self.engine, tab, path,
                         lambda: worker.is_cancelled or self.path != path
                         or seq != self._tab_seq[tab])
        if shown is not None:
            self.app.call_from_thread(self._slow_tab_done, tab, seq, shown)

    def _slow_tab_done(self, tab: str, seq: int, shown: RenderableType) -> None:
        if seq == self._tab_seq[tab] and tab in self._rendered:
            self._body(tab).update(shown)

    def _natural_width(self, body: Static, shown: RenderableType) -> None:
        """A table as wide as its rows (the tab scrolls sideways), not folded into the pane:
        a Static measures a rich Table against the pane's width, and a partition's replica
        list cut over three lines is hard to read. A line of text wraps instead (a note
        as wide as its longest line ran off the pane at 80 columns)."""
        wide = natural_width(self.app.console, shown)
        body.styles.width = wide if wide > self.size.width else "auto"

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.render_active()

    def _render_tab(self, tab: str, path: str) -> RenderableType:
        eng = self.engine
        if tab == "view":
            return readable(eng, path, palette_of(self.app))
        return Text(eng.text(path))

    def _sql_mode(self, on: bool, table: bool = False, running: bool = False) -> None:
        """Output as text (off), or sql's status line with its progress (running) or its
        table; the progress timer runs only while a query does."""
        self.prepare_output()
        self.query_one("#output-scroll").display = not on
        self.query_one("#sql-status").display = on
        self.query_one("#sql-progress").display = running
        self.query_one("#sql-table").display = table
        if self._sql_timer is not None and not running:
            self._sql_timer.stop()
            self._sql_timer = None

    def show_sql_running(self, line: str, run: SqlRun) -> None:
        """A query under way: its phase, tasks done of the running stages, Esc to cancel."""
        self._command = None
        if self._sql_timer is not None:
            self._sql_timer.stop()
        self._sql_mode(True, running=True)
        self.active = "output"
        started = time.perf_counter()
        bar = self.query_one("#sql-progress", ProgressBar)
        bar.update(total=None, progress=0)

        def tick() -> None:
            done = run.progress()
            t = Text(f"{line}\n", style="bold reverse")
            t.append("cancelling..." if run.cancelled else run.phase, style="bold")
            if done is not None:
                t.append(f"  tasks {done[0]:,}/{done[1]:,}")
                bar.update(total=done[1], progress=done[0])
            t.append(f"  {time.perf_counter() - started:.1f} s", style="dim")
            t.append("  (Esc cancels)", style="dim")
            self.query_one("#sql-status", Static).update(t)

        tick()
        self._sql_timer = self.set_interval(0.5, tick)

    def show_sql_result(self, line: str, table: SqlTable | None, error: str | None,
                        cancelled: bool, seconds: float) -> None:
        t = Text(f"{line}\n", style="bold reverse")
        if cancelled:
            t.append("cancelled", style="bold yellow")
        elif error is not None:
            t.append(error, style="bold red")
        elif table is not None:
            t.append(plural(table.total, "row"), style="bold")
            if table.total > len(table.rows):
                t.append(f" (the first {len(table.rows):,} shown; --csv FILE writes them all)",
                         style="dim")
            t.append("  (a header sorts · ←→ scroll)", style="dim")
        t.append(f"  {seconds:.1f} s", style="dim")
        if table is not None and table.warnings and not cancelled:  # the reading's warnings
            t.append("\n" + "\n".join(f"warning: {w}" for w in table.warnings),
                     style="bold yellow")
        self._command = None
        self._sql_mode(True, table=table is not None and not cancelled and error is None)
        self.query_one("#sql-status", Static).update(t)
        if table is not None and error is None and not cancelled:
            self._fill(table)
        self.active = "output"

    def show_table(self, line: str, table: SqlTable, lines: list[str],
                   errors: list[str]) -> None:
        """A command whose result is a table (``topics``, ``brokers``...): the same DataTable
        as ``sql`` (headers sort), its text form a key away (``x``)."""
        self._command = (line, lines, errors)
        self._stop_running()
        t = Text(f"{line}\n", style="bold reverse")
        t.append(plural(table.total, "row"), style="bold")
        if table.total > len(table.rows):
            t.append(f" (the first {len(table.rows):,} shown)", style="dim")
        t.append("  (x: text form · a header sorts · ←→ scroll)", style="dim")
        if errors:
            t.append("\n" + "\n".join(errors), style="bold red")
        self._sql_mode(True, table=True)
        self.query_one("#sql-status", Static).update(t)
        self._fill(table)
        self.active = "output"

    def toggle_text(self) -> bool:
        """``x`` on a command's table: its text form, and back; False when not one."""
        if self._command is None or self.active != "output":
            return False
        if self.query_one("#sql-table").display:
            line, lines, errors = self._command
            self._text(f"{line}  (x: the table)", lines, errors, True)
        else:
            self._sql_mode(True, table=True)
        return True

    def focus_table(self) -> bool:
        """Focus the result table if one is on show (the command bar closing); False if not."""
        if not self._sql_made:
            return False
        dt = self.query_one("#sql-table", ResultTable)
        if self.active == "output" and dt.display:
            dt.focus()
            return True
        return False

    def _fill(self, table: SqlTable) -> None:
        dt = self.query_one("#sql-table", ResultTable)
        dt.clear(columns=True)
        dt.sorted_by = None
        dt.add_columns(*table.columns)
        dt.filter_text = ""  # a new table: F starts afresh
        dt.fill([(None, list(row)) for row in table.rows])

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        """A click on a column's header sorts by it (again: the other way); numbers as
        numbers."""
        if isinstance(event.data_table, FilterTable):
            event.data_table.sort_by(event.column_key)

    def show_running(self, line: str, still_running: Callable[[], bool]) -> None:
        """A command in its worker: a spinner and its seconds until its result comes."""
        from . import running

        self._command = None
        self._sql_mode(False)
        self._stop_running()
        self._spinner = running.start(self._body("output"), line,
                                      still_running)
        self.active = "output"

    _spinner: Timer | None = None

    def _stop_running(self) -> None:
        if self._spinner is not None:
            self._spinner.stop()
            self._spinner = None

    def show_output(self, title: str, lines: list[str], errors: list[str],
                    finished: bool = True) -> None:
        self._command = None
        self._text(title, lines, errors, finished)

    def _text(self, title: str, lines: list[str], errors: list[str], finished: bool) -> None:
        self._stop_running()
        self._sql_mode(False)
        t = Text()
        t.append(f"{title}\n", style="bold reverse")
        shown = lines[:MAX_LINES]
        t.append("\n".join(shown))
        if len(lines) > len(shown):
            t.append(f"\n... {len(lines) - len(shown):,} more lines (refine the command)",
                     style="dim")
        if not finished:
            t.append("\n(cancelled)", style="bold yellow")
        if errors:
            t.append("\n" + "\n".join(errors), style="bold red")
        self._body("output").update(t)
        self.active = "output"


def natural_width(console: Console, shown: RenderableType) -> int:
    """The width a view asks for: its tables' whole rows, its texts' longest word (a text
    that does not wrap: its longest line)."""
    options = console.options.update_width(WIDEST)
    parts = shown.renderables if isinstance(shown, Group) else [shown]
    sizes = [Measurement.get(console, options, p) for p in parts]
    return max((m.minimum if isinstance(p, Text) and not p.no_wrap else m.maximum
                for p, m in zip(parts, sizes, strict=True)), default=0)


def text_table(header: list[str], rows: list[list[Text]], gap: int = 2) -> Text:
    """Columns as one text, each as wide as its widest cell (a cell of several lines
    makes its row that tall), never folded: a wide table scrolls sideways. Much cheaper to
    draw than a rich Table (a topic of 100 partitions is drawn at every cursor move)."""
    cells = [[Text(h, style="bold dim") for h in header], *rows]
    split = [[c.split("\n") if "\n" in c.plain else [c] for c in row] for row in cells]
    widths = [max((line.cell_len for row in split for line in row[i]), default=0)
              for i in range(len(header))]
    out = Text(no_wrap=True, overflow="ignore")
    for r, row in enumerate(split):
        for k in range(max(len(cell) for cell in row)):
            if r or k:
                out.append("\n")
            for i, cell in enumerate(row):
                line = cell[k] if k < len(cell) else Text()
                out.append_text(line)
                if i < len(row) - 1:
                    out.append(" " * (widths[i] - line.cell_len + gap))
    return out


def readable(eng: Engine, path: str, pal: Palette) -> RenderableType:
    """A node for a human: a field table for a leaf, a table of children for a directory."""
    title = Text(path, style="bold")
    if not eng.is_dir(path):
        data = eng.data(path)
        if isinstance(data, dict):
            return Group(title, _fields(data, eng.broker_states(), pal))
        return Group(title, Text(eng.text(path)))
    entries = eng.children(path)
    if not entries:
        return Group(title, empty_note(eng, path, pal))
    states = eng.broker_states()
    rows = []
    for e in entries[:TABLE_ROWS]:
        d = None if e.is_dir else eng.data(e.path)
        rows.append((e, d))
    # A row of the table is a record the columns describe (two of them at least): the
    # image's provenance shared only "epoch" with them and showed as "provenance 1".
    tabled = [(e, d) for e, d in rows if isinstance(d, dict) and _described(d)]
    cols = [c for c in COLUMNS if any(c in d for _e, d in tabled)]
    # A topic holds name and id next to its partitions: plain values go above the table, so
    # that the table's columns only hold what they name.
    plain = [(e, d) for e, d in rows if not (isinstance(d, dict) and _described(d))]
    parts: list[RenderableType] = [title, count_line(path, entries)]
    if plain:
        f = Table(box=None, show_header=False, pad_edge=False)
        f.add_column(style="bold dim")
        f.add_column(overflow="fold")
        for e, _d in plain:
            f.add_row(Text(e.name + ("/" if e.is_dir else "")),
                      Text("" if e.is_dir else _short(eng.text(e.path))))
        parts.append(f)
    configs = topic_configs(eng, path)  # a topic's own settings above its partitions
    if configs is not None:
        parts.append(configs)
    if tabled:
        parts.append(text_table(["name", *cols],
                                [[Text(e.name), *(_cell(c, d.get(c), states, pal) for c in cols)]
                                 for e, d in tabled]))
    more = len(entries) - TABLE_ROWS
    if more > 0:
        parts.append(Text(f"... {more:,} more (expand the tree node to see them)", style="dim"))
    return Group(*parts)


def _described(data: dict[str, Any]) -> bool:
    """Whether the table's COLUMNS say what ``data`` is (two of its keys at least)."""
    return sum(c in data for c in COLUMNS) >= 2


def _fields(data: dict[str, Any], states: dict[int, str], pal: Palette) -> Table:
    t = Table(box=None, show_header=False, pad_edge=False)
    t.add_column(style="bold dim")
    t.add_column(overflow="fold")
    for k, v in data.items():
        t.add_row(Text(k), _cell(k, v, states, pal))
    return t


def _cell(key: str, value: Any, states: dict[int, str], pal: Palette) -> Text:
    if key == "leader" and isinstance(value, int):
        if value < 0:
            return Text("none (OFFLINE)", style=pal.fail_badge)
        return _broker(value, states, pal)
    if key in BROKER_LISTS and isinstance(value, list):
        t = Text("[")
        for i, b in enumerate(value):
            if i:
                t.append(", ")
            t.append_text(_broker(b, states, pal) if isinstance(b, int) else Text(str(b)))
        t.append("]")
        return t
    if key == "fenced" and value is True:
        return Text("true (FENCED)", style=pal.fail)
    if key == "listeners" and isinstance(value, list):
        return Text("\n".join(_endpoint(x) for x in value))
    if key == "supportedFeatures" and isinstance(value, dict):
        return Text(_features(value))
    return Text(_short(value))


def _broker(b: int, states: dict[int, str], pal: Palette) -> Text:
    state = states.get(b, "unregistered")
    t = state_text(state, pal)
    t.plain = str(b) if state == "unfenced" else f"{b} ({state})"
    return t


def _endpoint(x: Any) -> str:
    if isinstance(x, dict) and {"listenerName", "host", "port"} <= set(x):
        return (f"{x['listenerName']}://{x['host']}:{x['port']} "
                f"({x.get('securityProtocol', '?')})")
    return _short(x)


def _features(x: dict[str, Any]) -> str:
    return "\n".join(f"{name} {r.get('minSupportedVersion')}-{r.get('maxSupportedVersion')}"
                     if isinstance(r, dict) else f"{name} {r}" for name, r in x.items())


def _short(v: Any, limit: int = 120) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return s if len(s) <= limit else s[:limit - 1] + "…"
