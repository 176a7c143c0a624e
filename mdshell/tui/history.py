"""History and time travel: changes (non-NoOp records) per offset interval as bars from zero,
with snapshots (S) and leader changes (L) marked; step with arrows, Enter travels there (the
whole UI follows), a goes to an offset or a UTC time (as ``at`` does), m marks a point and
d shows the diff from the mark to the cursor."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Input, Static

from ..session.timeline import Timeline
from .bars import bars
from .detail import MAX_LINES
from .fmt import plural
from .footer import KeyFooter
from .messages import ImageMoved
from .plain import run_lines
from .resulttable import FilterTable
from .screen import DataScreen
from .widgets import StatusBar

if TYPE_CHECKING:
    from .engine import Engine

SPARK_ROWS = 4


def history_title(tl: Timeline, width: int) -> Text:
    """The bars' legend, shorter where the full one would not fit ``width``; a log without
    a batch says so (it said "offsets 32026–None")."""
    if tl.first is None or tl.last is None:  # a log that holds no batch (yet)
        span = short = "  no batch in the log  "
    else:
        span = f"  offsets {tl.first}–{tl.last}, {len(tl.batches):,} batches  "
        short = f"  offsets {tl.first}–{tl.last}  "  # the legend's words before the batches'
    for what, where, snap, lead in (
            ("Changes per offset interval", span, " snapshot ", " leader change"),
            ("Changes", span, " snapshot ", " leader"), ("Changes", short, " snapshot ", " leader"),
            ("Changes", short, " ", "")):
        t = Text.assemble((what, "bold"), where, ("S", "bold cyan"), snap,
                          ("L", "bold magenta"), lead, ("  ▁", "dim"), " NoOps only")
        if t.cell_len <= width:
            return t
    return t


class HistoryScreen(DataScreen):
    DEFAULT_CSS = """
    HistoryScreen #spark { height: 4; margin: 0 1; }
    HistoryScreen .line { height: 1; margin: 0 1; }
    HistoryScreen #events { height: 1fr; min-height: 5; }
    HistoryScreen #result-box { height: 1fr; border-top: hkey $primary-darken-2;
                                display: none; }
    HistoryScreen #result-box.shown { display: block; }
    HistoryScreen #goto { display: none; }
    HistoryScreen #goto.open { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "step(-1)", "◀", priority=True,
                tooltip="the sparkline's cursor one column back (older)"),
        Binding("right", "step(1)", "▶", priority=True,
                tooltip="the sparkline's cursor one column on (newer)"),
        Binding("shift+left", "step(-10)", "◀◀", show=False, priority=True,
                tooltip="ten columns back"),
        Binding("shift+right", "step(10)", "▶▶", show=False, priority=True,
                tooltip="ten columns on"),
        Binding("enter", "travel", "Travel here", priority=True),
        Binding("e", "latest", "Latest"),
        Binding("m", "mark", "Mark"),
        Binding("d", "diff", "Diff mark→here"),
        Binding("a", "goto", "At offset/time"),
        Binding("escape", "close_goto", "Close"),
    ]
    # While the goto box has the focus these screen keys step aside (check_action): the
    # priority ones would otherwise take Enter and the arrows from the box.
    TYPING_OFF: ClassVar[frozenset[str]] = frozenset({"step", "travel"})

    HOME_FOCUS = "#events"

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.cursor = 0
        self.target: int | None = None
        self.mark: int | None = None
        self._armed = False
        self.width = 60

    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield Static(id="title", classes="line")
        yield Static(id="spark")
        yield Static(id="marks", classes="line")
        yield Static(id="where", classes="line")
        yield Input(placeholder="offset, 'latest', or a UTC time like 2024-04-24T23:06",
                    id="goto", disabled=True)
        yield FilterTable(id="events", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="result-box"):
            yield Static(id="result")
        yield KeyFooter()

    def mounted(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("event", "offset", "epoch", "detail")
        table.focus()

    @property
    def timeline(self) -> Timeline:
        return self.engine.timeline()

    def refresh_data(self) -> None:
        eng = self.engine
        tl = self.timeline
        self._buckets()
        self._fill_events(tl)
        at = eng.header().at
        self._place(at if at is not None else tl.last)

    def _buckets(self) -> None:
        """The sparkline's columns, one per cell of the width the screen has now."""
        tl = self.timeline
        self.width = max(10, self.app.size.width - 4)
        self.counts, self.starts = tl.buckets(self.width)
        self.changes = tl.buckets(self.width, changes=True)[0]
        self.query_one("#title", Static).update(history_title(tl, self.width))

    def on_resize(self) -> None:
        self._fit_width()

    def on_screen_resume(self) -> None:  # DataScreen's own runs too (Textual calls both)
        self._fit_width()

    def _fit_width(self) -> None:
        """The terminal's width changed (here or while another screen was shown): the
        sparkline again at the new width, the cursor on the same offset (the old one wrapped
        over three lines at 80 columns)."""
        if not self.starts or max(10, self.app.size.width - 4) == self.width:
            return
        self._buckets()
        if self.target is None:
            self.cursor = min(self.cursor, len(self.starts) - 1)
        self._place(self.target)

    def _fill_events(self, tl: Timeline) -> None:
        table = self.query_one(FilterTable)
        self._armed = False
        rows = [(off, "s", Text("snapshot", style="cyan"), "", "image up to here")
                for off in tl.snapshots]
        rows += [(off, "l", Text("leader change", style="magenta"), str(epoch),
                  f"controller {leader} elected") for off, leader, epoch in tl.leader_changes]
        table.fill([(f"{kind}{off}", [label, str(off), epoch, detail])
                    for off, kind, label, epoch, detail in sorted(rows, key=lambda r: r[:2])])

    def _bucket_of(self, offset: int) -> int:
        return self.timeline.bucket(offset, len(self.starts))

    def _bucket_end(self, i: int) -> int | None:
        tl = self.timeline
        if not self.starts or tl.last is None:
            return None
        return self.starts[i + 1] - 1 if i + 1 < len(self.starts) else tl.last

    def _empty(self, i: int) -> bool:
        return (self._bucket_end(i) or 0) < self.starts[i]

    def _place(self, offset: int | None) -> None:
        if offset is None or not self.starts:
            self._draw()
            return
        self.cursor = self._bucket_of(offset)
        self.target = offset
        self._draw()

    def _draw(self) -> None:
        tl = self.timeline
        self.query_one("#spark", Static).update(
            bars(self.changes, self.counts, SPARK_ROWS, self.cursor))
        marks = [" "] * len(self.starts)
        for off in tl.snapshots:
            marks[self._bucket_of(off)] = "S"
        for off, _l, _e in tl.leader_changes:
            i = self._bucket_of(off)
            marks[i] = "*" if marks[i] == "S" else "L"
        line = Text()
        for i, ch in enumerate(marks):
            style = {"S": "bold cyan", "L": "bold magenta", "*": "bold yellow"}.get(ch, "")
            if i == self.cursor:
                line.append(ch if ch != " " else "▲", style="bold reverse")
            else:
                line.append(ch, style=style)
        self.query_one("#marks", Static).update(line)
        where = Text()
        if self.target is not None:
            where.append("offset ", style="dim")
            where.append(str(self.target), style="bold")
            where.append(f" {self.engine.time_at(self.target)}")
            if self.counts:
                n, c = self.counts[self.cursor], self.changes[self.cursor]
                where.append(f"  {plural(c, 'change')}, {plural(n - c, 'NoOp')}",
                             style="dim")
        if self.mark is not None:
            where.append("  mark ", style="dim")
            where.append(str(self.mark), style="bold yellow")
        self.query_one("#where", Static).update(where)

    def action_step(self, step: int) -> None:
        """Move the cursor by ``step`` ranges, past those that hold no offset (when the
        sparkline has more columns than the log has offsets)."""
        if not self.starts:
            return
        last = len(self.starts) - 1
        i = max(0, min(last, self.cursor + step))
        way = 1 if step > 0 else -1
        for d in (way, -way):  # on, then back from an end that holds no offset
            while self._empty(i) and 0 <= i + d <= last:
                i += d
        self.cursor = i
        self.target = self._bucket_end(i)
        self._draw()

    @on(DataTable.RowHighlighted)
    def _event(self, event: DataTable.RowHighlighted) -> None:
        if not self._armed:
            return
        key = event.row_key.value or ""
        if key[1:].isdigit():
            self._place(int(key[1:]))

    def on_key(self) -> None:
        self._armed = True  # table moves from now on are the user's

    def action_mark(self) -> None:
        self.mark = self.target
        self._draw()

    def filter_target(self) -> FilterTable:
        return self.query_one(FilterTable)

    def location(self) -> str | None:
        return None if self.target is None else str(self.target)

    def restore(self, where: str | None) -> None:
        if where is not None and where.isdigit():
            self._place(int(where))
        self.query_one(FilterTable).focus()

    def copy_text(self, _value: bool) -> tuple[str, str] | None:
        """y (and Y off the events table): the offset under the cursor."""
        return None if self.target is None else ("offset", str(self.target))

    def action_latest(self) -> None:
        self._travel(None)

    def action_travel(self) -> None:
        if self.target is not None:
            self._travel(None if self.target == self.timeline.last else self.target)

    def action_diff(self) -> None:
        if self.mark is None or self.target is None:
            self.notify("mark a point with m, move, then press d", severity="warning")
            return
        self._diff(self.mark, self.target)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        typing = self._typing()
        if action in self.TYPING_OFF:
            return not typing
        if action == "close_goto":
            return typing
        return True

    def _typing(self) -> bool:
        return self.is_mounted and isinstance(self.focused, Input)  # goto or filter box

    def action_goto(self) -> None:
        box = self.query_one("#goto", Input)
        box.disabled = False
        box.add_class("open")
        box.focus()

    def action_close_goto(self) -> None:
        box = self.query_one("#goto", Input)
        box.remove_class("open")
        box.value = ""
        box.disabled = True
        self.query_one(DataTable).focus()

    @on(Input.Submitted, "#goto")
    def _goto(self, event: Input.Submitted) -> None:
        try:
            offset = self.engine.offset_for(event.value)
        except ValueError as e:
            self.notify(str(e), severity="error")  # the box stays open, the text kept
            return
        self.action_close_goto()
        self._travel(offset)

    def _show(self, title: str, lines: list[str], errors: list[str]) -> None:
        t = Text(title + "\n", style="bold reverse")
        t.append("\n".join(lines[:MAX_LINES]))
        if len(lines) > MAX_LINES:
            t.append(f"\n... {len(lines) - MAX_LINES:,} more lines", style="dim")
        if errors:
            t.append("\n" + "\n".join(errors), style="bold red")
        box = self.query_one("#result", Static)
        box.update(t)
        box.loading = False

    def _busy(self) -> None:
        """The result area shows (it takes no rows until a travel or a diff)."""
        self.query_one("#result-box").add_class("shown")
        self.query_one("#result", Static).loading = True

    @work(thread=True, exclusive=True, group="history")
    def _travel(self, offset: int | None) -> None:
        self.app.call_from_thread(self._busy)
        res = self.engine.at(offset)
        lines, _ = run_lines(res, lambda: False)
        self.app.call_from_thread(self._travelled, lines, list(res.errors))

    def _travelled(self, lines: list[str], errors: list[str]) -> None:
        if not errors:
            self.post_message(ImageMoved())
        self._show("at", lines, errors)

    @work(thread=True, exclusive=True, group="history")
    def _diff(self, a: int, b: int) -> None:
        self.app.call_from_thread(self._busy)
        last = self.timeline.last
        res = self.engine.diff(None if a == last else a, None if b == last else b)
        lines, _ = run_lines(res, lambda: False)
        self.app.call_from_thread(self._show, f"diff {a} → {b}", lines, list(res.errors))
