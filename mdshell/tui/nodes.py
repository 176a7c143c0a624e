"""The Nodes screen: several nodes' directories of one cluster side by side (``-d`` once per
node). A row per node, their logs on one offset axis (held as the quorum's log, not
committed when copied, truncated when the node rejoins), what the comparison says, and the
ranges worth opening: Enter on one shows its records (``records --from --to`` of that
node), Esc closes them. The comparison reads every node's batch headers once, in a worker;
it does not change with time travel (the files do not)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from ..problems import SourceError
from .detail import MAX_LINES
from .footer import KeyFooter
from .nodeaxis import HELD, LOST, NONE, UNSURE, bars, legend
from .noderows import COLUMNS, NodesView, Span
from .plain import run_lines
from .screen import DataScreen
from .widgets import StatusBar, palette_of

if TYPE_CHECKING:
    from .engine import Engine

HINT = "Enter on a range shows its records; Esc closes them."


class NodesScreen(DataScreen):
    DEFAULT_CSS = """
    NodesScreen .line { height: auto; margin: 0 1; }
    NodesScreen #nodes { height: auto; max-height: 12; }
    NodesScreen #axis { height: auto; margin: 1 1 0 1; }
    NodesScreen #spans { height: 1fr; min-height: 4; }
    NodesScreen #record-box { height: 1fr; border-top: hkey $primary-darken-2;
                              display: none; }
    NodesScreen #record-box.shown { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close_records", "Close"),
    ]
    HOME_FOCUS = "#spans"

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.view: NodesView | None = None
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield Static(id="verdict", classes="line")
        yield Static(id="summary", classes="line")
        yield DataTable(id="nodes", cursor_type="row", zebra_stripes=True)
        yield Static(id="axis")
        yield Static(HINT, id="hint", classes="line")
        yield DataTable(id="spans", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="record-box"):
            yield Static(id="records")
        yield KeyFooter()

    def mounted(self) -> None:
        self.query_one("#nodes", DataTable).add_columns(*COLUMNS)
        self.query_one("#spans", DataTable).add_columns("node", "offsets", "what", "records")
        self.query_one("#verdict", Static).update(Text("comparing the nodes' logs…",
                                                       style="dim italic"))
        self.query_one("#spans", DataTable).focus()
        self._compare()

    @work(thread=True, exclusive=True, group="nodes")
    def _compare(self) -> None:
        try:
            view = self.engine.nodes()
        except SourceError as e:
            self.app.call_from_thread(self._failed, str(e))
            return
        self.app.call_from_thread(self._compared, view)

    def _failed(self, message: str) -> None:
        self.error = f"Nodes: {message}"
        self.query_one("#verdict", Static).update(Text(self.error, style="bold"))

    def _compared(self, view: NodesView) -> None:
        self.view = view
        self._fill()

    def refresh_data(self) -> None:
        if self.view is not None:
            self._fill()  # the theme changed, or the screen is back: the same comparison

    def on_resize(self) -> None:
        if self.view is not None:
            self._draw_axis(self.view)

    # ------------------------------------------------------------ drawing

    def _fill(self) -> None:
        view = self.view
        assert view is not None
        pal = palette_of(self.app)
        words, status = view.verdict
        self.query_one("#verdict", Static).update(Text(words, style=f"bold {pal.text(status)}"))
        summary = Text()
        for i, (line, st) in enumerate(view.lines):
            summary.append(("\n" if i else "") + line, style=pal.text(st) if st != "info"
                           else "")
        for node in view.nodes:
            for problem in node.problems:
                summary.append(f"\nnode {node.label}: {problem}", style=pal.warn)
        self.query_one("#summary", Static).update(summary)
        table = self.query_one("#nodes", DataTable)
        table.clear()
        for node in view.nodes:
            table.add_row(*map(Text, node.cells), key=node.label)
        self._draw_axis(view)
        spans = self.query_one("#spans", DataTable)
        keep = spans.cursor_row
        spans.clear()
        for i, s in enumerate(view.spans):
            offsets = str(s.first) if s.first == s.last else f"{s.first}-{s.last}"
            spans.add_row(Text(f"node {s.node}"), offsets,
                          Text(s.what, style=pal.text(s.status)), Text(s.kinds or "-"),
                          key=str(i))
        if not view.spans:
            self.query_one("#hint", Static).update(
                "Nothing to open: every node holds what the quorum's log holds.")
        elif 0 <= keep < len(view.spans):
            spans.move_cursor(row=keep)

    def _draw_axis(self, view: NodesView) -> None:
        pal = palette_of(self.app)
        styles = {HELD: pal.ok, UNSURE: pal.warn, LOST: f"bold {pal.fail}", NONE: "dim"}
        width = max(30, self.app.size.width - 2)
        text = Text()
        text.append_text(legend(styles))
        for line in bars(view, width, styles):
            text.append("\n")
            text.append_text(line)
        self.query_one("#axis", Static).update(text)

    # ------------------------------------------------------------ a range's records

    @on(DataTable.RowSelected, "#spans")
    def _selected(self, event: DataTable.RowSelected) -> None:
        if self.view is None or event.row_key.value is None:
            return
        span = self.view.spans[int(event.row_key.value)]
        box = self.query_one("#record-box")
        box.add_class("shown")
        self.query_one("#records", Static).loading = True
        self._records(span)

    @work(thread=True, exclusive=True, group="node-records")
    def _records(self, span: Span) -> None:
        res = self.engine.node_records(span.node, span.first, span.last)
        lines, _ = run_lines(res, lambda: False)
        self.app.call_from_thread(self._show, span, lines, list(res.errors))

    def _show(self, span: Span, lines: list[str], errors: list[str]) -> None:
        offsets = str(span.first) if span.first == span.last else f"{span.first}-{span.last}"
        t = Text(f"node {span.node}, offsets {offsets}: {span.what}\n", style="bold reverse")
        t.append("\n".join(lines[:MAX_LINES]))
        if len(lines) > MAX_LINES:
            t.append(f"\n... {len(lines) - MAX_LINES:,} more lines", style="dim")
        if errors:
            t.append("\n" + "\n".join(errors), style="bold red")
        box = self.query_one("#records", Static)
        box.update(t)
        box.loading = False

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "close_records":  # else Esc goes back, as on every screen
            return self.is_mounted and self.query_one("#record-box").has_class("shown")
        return True

    def action_close_records(self) -> None:
        self.query_one("#record-box").remove_class("shown")
        self.query_one("#spans", DataTable).focus()

    # ------------------------------------------------------------ copy, back

    def copy_text(self, value: bool) -> tuple[str, str] | None:
        """y: the range under the cursor as ``node N offsets A-B``; Y: its row."""
        if self.view is None or not self.view.spans:
            return None
        row = self.query_one("#spans", DataTable).cursor_row
        if not 0 <= row < len(self.view.spans):
            return None
        s = self.view.spans[row]
        if value:
            return "row", f"node {s.node}\t{s.first}-{s.last}\t{s.what}\t{s.kinds}"
        return "range", f"node {s.node} offsets {s.first}-{s.last}"

    def location(self) -> str | None:
        return str(self.query_one("#spans", DataTable).cursor_row)

    def restore(self, where: str | None) -> None:
        spans = self.query_one("#spans", DataTable)
        if where is not None and where.isdigit() and int(where) < spans.row_count:
            spans.move_cursor(row=int(where))
        spans.focus()
