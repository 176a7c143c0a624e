"""Widgets every screen shares: the status bar, and the words and colours of states (each
coloured from the theme's palette, palette.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.measure import Measurement
from rich.text import Text
from textual.app import App
from textual.widgets import Static

from ..image.verdict import LIVE_STALE, TIME_TRAVEL
from .palette import Palette, palette

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

    from .rows import Header, LiveRow

# One meaning per state, everywhere: fail is broken, warn is attention, ok is fine.
STATE_MEANING = {
    "unfenced": ("ok", ""), "leader": ("ok", "bold"), "voter": ("ok", ""),
    "observer": ("warn", ""), "fenced": ("fail", ""), "controlled shutdown": ("warn", ""),
    "unregistered": ("fail", ""), "registered, not a voter": ("fail", ""),
}
STATUS_MARK = {"fail": " FAIL ", "warn": " WARN ", "info": " INFO ", "ok": "  OK  "}


_PALETTES: dict[tuple[str, bool, int], Palette] = {}  # by theme, NO_COLOR, its variables


def palette_of(app: App[object]) -> Palette:
    """The palette of the app's theme (NO_COLOR: weight and reverse video); made once per
    theme (every tree label asks for it)."""
    variables = app.theme_variables
    key = (app.theme, app.no_color, id(variables))
    found = _PALETTES.get(key)
    if found is None:
        found = _PALETTES[key] = palette(variables, app.current_theme.dark, app.no_color)
    return found


def item_style(status: str, pal: Palette) -> str:
    """The style of a check's items (and the passing checks' names) under its badge."""
    return pal.text(status) if status != "info" else ""


def state_text(state: str, pal: Palette) -> Text:
    base = state.split(" (")[0]
    meaning, weight = STATE_MEANING.get(
        base, ("fail", "") if "unregistered" in state else ("", ""))
    style = " ".join(s for s in (weight, pal.text(meaning)) if s)
    return Text(state, style=style)


def status_badge(status: str, pal: Palette) -> Text:
    return Text(STATUS_MARK.get(status, status), style=pal.badge(status))


def short_source(path: str, limit: int = 48) -> str:
    """The part of a source path that tells sources apart, at most ``limit`` characters: its
    end; in a tight limit a trailing ``__cluster_metadata-N`` (the same in every log dir)
    gives way to the directory above it."""
    if len(path) <= limit:
        return path
    head, _sep, name = path.rpartition("/")
    if head and name.startswith("__cluster_metadata-") and limit - len(name) - 1 < 12:
        path = head
    return "…" + path[-(limit - 1):]


def badge_text(badge: str, at: int | None, pal: Palette) -> Text:
    """A verdict badge: FAIL's colours (or, under NO_COLOR, its weight) when the image is
    not sound, WARN's when it is not the latest."""
    status = "warn" if badge in (TIME_TRAVEL, LIVE_STALE) else "fail"
    label = f"TIME TRAVEL: as of offset {at}" if badge == TIME_TRAVEL else badge
    return Text(f" {label} ", style=pal.badge(status))


HEADER_LINES = 3  # the status bar's max-height: what flows past it is cut off
SOURCE_LIMITS = (48, 32, 24)  # the source path's width, tried in turn until the header fits


def header_fields(h: Header, pal: Palette, limit: int = SOURCE_LIMITS[0],
                  where_last: bool = False) -> list[Text]:
    """The header's fields, each kept whole on a line (a label never parts from its value);
    the badges and the live (or FOLLOWING) state first: at 80 columns the rest may wrap out
    of the bar, never them. The source path is shown in at most ``limit`` characters;
    ``where_last`` puts the cluster and the source after the image's state (offset, time,
    metadata.version, redaction), which then wrap out first."""
    fields = [Text(" mdshell ", style="bold reverse")]
    fields += [badge_text(badge, h.at, pal) for badge in h.badges]
    if h.live is not None:  # a state too: kept on the bar's first lines at 80 columns
        fields.append(live_text(h.live, pal))
    where = [_field("cluster ", h.cluster_id),
             Text.assemble((f"{h.kind} ", "dim"), short_source(h.source, limit))]
    state = [Text.assemble(("offset ", "dim"), (str(h.offset), "bold"), (" epoch ", "dim"),
                           str(h.epoch)),
             Text(h.time), _field("MV ", h.metadata_version),
             Text("secrets redacted", style=pal.ok) if h.redacted
             else Text("SECRETS SHOWN", style=pal.fail_badge)]
    return fields + (state + where if where_last else where + state)


def _field(label: str, value: str) -> Text:
    return Text.assemble((label, "dim"), (value, "bold"))


def header_text(h: Header, pal: Palette, width: int = 10_000) -> Text:
    """The header flowed at ``width`` in at most HEADER_LINES lines when it can be: the
    source path shortened first, then the cluster and source moved last, so that the
    offset and the redaction state ("SECRETS SHOWN") are never the part cut off."""
    text = Text()
    for where_last in (False, True):
        for limit in SOURCE_LIMITS:
            text = flow(header_fields(h, pal, limit, where_last), width)
            if len(text.split()) <= HEADER_LINES:
                return text
    return text


def flow(fields: list[Text], width: int, gap: int = 2) -> Text:
    """The fields ``gap`` spaces apart, a new line where the next would not fit in
    ``width``: a field is never parted; one wider than ``width`` is cut to it with "…" (a
    live quorum's "stopped: why" took three lines of the header, and the offset and the
    redaction state went out of the bar): each line is one line on screen."""
    t = Text()
    used = 0
    for f in fields:
        if f.cell_len > width:
            f = f.copy()
            f.truncate(width, overflow="ellipsis")
        if used and used + gap + f.cell_len > width:
            t.append("\n")
            used = 0
        elif used:
            t.append(" " * gap)
            used += gap
        t.append_text(f)
        used += f.cell_len
    return t


class Flow:
    """``flow`` at the width it is given (a panel's): the overview's counts, where "0 under
    min ISR" wrapped as "min" on one line and "ISR" on the next."""

    def __init__(self, fields: list[Text], gap: int = 3) -> None:
        self.fields, self.gap = fields, gap

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield flow(self.fields, options.max_width, self.gap)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        cells = [f.cell_len for f in self.fields]
        widest = sum(cells) + self.gap * max(len(cells) - 1, 0)
        return Measurement(max(cells, default=0), widest).clamp(max_width=options.max_width)


def live_text(row: LiveRow, pal: Palette) -> Text:
    """`● LIVE hw 1234 lag 0 · 0.3 s ago`: fine when caught up, attention behind or stopped
    (then the header's LIVE STALE badge says so too)."""
    lag = row.lag
    if row.error:
        return Text(f"● {row.word} stopped: {row.error}", style=f"bold {pal.warn}".strip())
    style = f"bold {pal.ok if lag == 0 else pal.warn}".strip()
    t = Text(f"● {row.word}", style=style)
    t.append(" hw ", style="dim")
    t.append("?" if row.high_watermark is None else str(row.high_watermark))
    t.append(" lag ", style="dim")
    t.append("?" if lag is None else f"{lag:,}", style=style)
    if row.seconds_since_fetch is not None:
        done = "read" if row.word == "FOLLOWING" else "fetched"
        t.append(f" · {done} {row.seconds_since_fetch:.1f} s ago", style="dim")
    return t


class StatusBar(Static):
    """Where am I: cluster, source, image offset/epoch/time, metadata.version, redaction."""

    DEFAULT_CSS = """
    StatusBar { dock: top; height: auto; max-height: 3; background: $panel; padding: 0 1; }
    """

    header: Header | None = None

    def show(self, h: Header) -> None:
        self.header = h
        self.redraw()

    def redraw(self) -> None:
        """Draw the header again (its width or the theme changed)."""
        if self.header is not None:
            self.update(header_text(self.header, palette_of(self.app),
                                    self.content_size.width or 10_000))

    def on_resize(self) -> None:
        self.redraw()
