"""The health screen: every check with its status, failing and warning ones open, each item
on as many lines as it needs (wrapped at the screen's width, never cut mid-word); Enter on an
item opens the node at fault in the tree (the fenced broker, the offline partition, the
stale controller), on a check opens or closes it."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from .filterbar import matches
from .footer import KeyFooter
from .healthrows import READING
from .messages import Jump
from .palette import Palette
from .rows import CheckRow
from .screen import DataScreen
from .widgets import StatusBar, item_style, palette_of, status_badge

if TYPE_CHECKING:
    from .engine import Engine

# Items listed per check; the count says how many more there are (F narrows over all of
# them). Each item is drawn and measured when the screen first shows: 408 of them (500k
# partitions) took 270 ms of the first h.
MAX_ITEMS = 50
HINT = "Enter on an item opens the node at fault in the tree; on a check, opens or closes it."
BADGE = 6  # the badges' column (" FAIL ")


class CheckList(OptionList):
    """The checks and their items; Enter (OptionList's own select, which the screen
    hears) says in the footer what it does here."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "Go to node / open"),
    ]


class HealthScreen(DataScreen):
    DEFAULT_CSS = """
    HealthScreen #checks { height: 1fr; border: none; padding: 0; }
    HealthScreen #hint { height: auto; max-height: 3; color: $text-muted; padding: 0 1; }
    """
    HOME_FOCUS = "#checks"
    filter_text = ""  # F: only the checks and items holding it

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.closed: set[str] = set()  # checks closed by Enter (others: open if failing)
        self.opened: set[str] = set()  # passing checks opened by Enter
        self.paths: dict[str, str | None] = {}  # option id -> the node an item is about
        self.texts: dict[str, str] = {}  # option id -> the line as it reads

    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield Static(HINT, id="hint")
        yield CheckList(id="checks")
        yield KeyFooter()

    def mounted(self) -> None:
        self.query_one(CheckList).focus()

    def refresh_data(self) -> None:
        self.fill(self.checks)

    def checks_ready(self) -> None:
        self.fill(self.checks)

    # ------------------------------------------------------------ filter (F)

    def filter_target(self) -> HealthScreen:
        return self

    def filter_name(self) -> str:
        return "checks"

    def apply_filter(self, text: str) -> tuple[int, int]:
        self.filter_text = text
        self._hint()
        checks = self.checks or []
        shown = narrow(checks, text)
        self.fill(checks)
        return sum(len(c.items) or 1 for c in shown), sum(len(c.items) or 1 for c in checks)

    # ------------------------------------------------------------ the list

    def is_open(self, c: CheckRow) -> bool:
        if c.name in self.closed:
            return False
        return (c.status in ("fail", "warn") or c.name == READING or c.name in self.opened
                or bool(self.filter_text))

    def fill(self, checks: list[CheckRow] | None) -> None:
        listing = self.query_one(CheckList)
        keep = listing.highlighted_option.id if listing.highlighted_option else None
        listing.clear_options()
        self.paths, self.texts = {}, {}
        if checks is None:
            listing.add_option(Option(Text("checking...", style="dim italic"), disabled=True))
            return
        pal = palette_of(self.app)
        options: list[Option] = []
        first_item: str | None = None
        for c in narrow(checks, self.filter_text):
            cid = f"check:{c.name}"
            marker = ("▼ " if self.is_open(c) else "▶ ") if c.items else "  "
            label = Text.assemble((f"{marker}{c.name}: ", "bold"), c.summary)
            options.append(Option(_row(status_badge(c.status, pal), label), id=cid))
            self.paths[cid], self.texts[cid] = None, f"{c.name}: {c.summary}"
            if not self.is_open(c):
                continue
            for j, item in enumerate(c.items[:MAX_ITEMS]):
                iid = f"item:{c.name}:{j}"
                options.append(Option(_item(item.text, item.path, c.status, pal), id=iid))
                self.paths[iid], self.texts[iid] = item.path, item.text
                if first_item is None and c.status in ("fail", "warn") and item.path:
                    first_item = iid
            if len(c.items) > MAX_ITEMS:
                options.append(Option(_row(Text(""), Text(
                    f"  ... {len(c.items) - MAX_ITEMS:,} more (run `health --all` in the "
                    "command bar)", style="dim")), disabled=True))
        listing.add_options(options)
        target = keep if keep in self.paths else first_item
        if target is not None:
            listing.highlighted = listing.get_option_index(target)
        elif listing.option_count:
            listing.highlighted = 0

    @on(OptionList.OptionHighlighted, "#checks")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._hint(self.paths.get(event.option.id or ""))

    def _hint(self, path: str | None = None) -> None:
        """Where Enter goes from the item under the cursor, whole (at 80 columns an item's
        own ``→ path`` runs off the screen), then the filter."""
        hint = f"Enter opens {path}" if path else HINT
        text = self.filter_text
        self.query_one("#hint", Static).update(
            f"{hint}  Filtered: {text!r} (F edits it)" if text else hint)

    @on(OptionList.OptionSelected, "#checks")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        oid = event.option.id or ""
        if oid.startswith("check:"):
            self._toggle(oid.removeprefix("check:"))
        elif self.paths.get(oid):
            self.post_message(Jump(self.paths[oid] or ""))

    def _toggle(self, name: str) -> None:
        check = next((c for c in self.checks or [] if c.name == name), None)
        if check is None or not check.items:
            return
        if self.is_open(check):
            self.closed.add(name)
            self.opened.discard(name)
        else:
            self.closed.discard(name)
            self.opened.add(name)
        self.fill(self.checks)

    # ------------------------------------------------------------ copy, back

    def copy_text(self, value: bool) -> tuple[str, str] | None:
        """y: the path of the node at fault; Y: the item (or check) as it reads."""
        option = self.query_one(CheckList).highlighted_option
        if option is None or option.id is None:
            return None
        if value:
            return "item", self.texts.get(option.id, "")
        path = self.paths.get(option.id)
        return None if not path else ("path", path)

    def location(self) -> str | None:
        option = self.query_one(CheckList).highlighted_option
        return option.id if option is not None else None

    def restore(self, where: str | None) -> None:
        listing = self.query_one(CheckList)
        if where is not None and where in self.paths:
            listing.highlighted = listing.get_option_index(where)
        listing.focus()


def _row(badge: Text, text: Text, mark: Text | None = None) -> Table:
    """A line of the list: the badge column, an item's mark, then the text, which wraps
    under itself (a long line goes on under its words, never under the badge or the mark,
    nor cut mid-word)."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=BADGE, no_wrap=True)
    if mark is not None:
        grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    grid.add_row(badge, *([mark] if mark is not None else []), text)
    return grid


def _item(text: str, path: str | None, status: str, pal: Palette) -> Table:
    """An item: a mark in its check's colour (the words stay readable on the cursor's
    bar), bold under NO_COLOR when failing."""
    sign = "✗" if status == "fail" else "!" if status == "warn" else "·"
    mark = Text(f"  {sign}", style=item_style(status, pal) or ("bold" if status == "fail"
                                                                 else ""))
    t = Text(text, style="bold" if status == "fail" and pal.mono else "")
    if path:
        t.append(f"  → {path}", style="dim")
    return _row(Text(""), t, mark)


def narrow(checks: list[CheckRow], text: str) -> list[CheckRow]:
    """The checks whose name holds ``text`` (all their items), or with items that do."""
    low = text.lower()
    if not low:
        return checks
    out = []
    for c in checks:
        if matches(low, c.name, c.summary):
            out.append(c)
            continue
        items = [i for i in c.items if matches(low, i.text, i.path or "")]
        if items:
            out.append(replace(c, items=items))
    return out
