"""The health screen: every check with its status, failing ones open; Enter on an item jumps
to the node at fault (the fenced broker, the offline partition, the stale controller)."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static, Tree

from .engine import CheckRow
from .filterbar import matches
from .footer import KeyFooter
from .screen import DataScreen
from .widgets import StatusBar, item_style, status_badge

MAX_ITEMS = 1000  # per check; the count says how many more there are
HINT = "Enter on an item opens the node at fault in the tree."


class CheckTree(Tree[str | None]):
    """The checks: Enter (Tree's own select, which the screen hears) says in the footer
    what it does here."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Go to node"),
    ]


class HealthScreen(DataScreen):
    DEFAULT_CSS = """
    HealthScreen #checks { height: 1fr; }
    HealthScreen #hint { height: 1; color: $text-muted; padding: 0 1; }
    """
    def compose(self) -> ComposeResult:
        yield StatusBar()
        yield Static(HINT, id="hint")
        tree = CheckTree("checks", id="checks")
        tree.show_root = False
        yield tree
        yield KeyFooter()

    def on_mount(self) -> None:
        self.refresh_data()
        self.query_one("#checks", Tree).focus()

    def refresh_data(self) -> None:
        super().refresh_data()
        app = self.mdapp
        self.query_one(StatusBar).refresh_header(app.engine.header())
        self.fill(app.checks)

    def checks_ready(self) -> None:
        if self.is_mounted:
            self.fill(self.mdapp.checks)

    filter_text = ""  # F: only the checks and items holding it

    def filter_target(self) -> HealthScreen:
        return self

    def filter_name(self) -> str:
        return "checks"

    def apply_filter(self, text: str) -> tuple[int, int]:
        self.filter_text = text
        self._hint()
        checks = self.mdapp.checks or []
        shown = narrow(checks, text)
        self.fill(checks)
        return sum(len(c.items) or 1 for c in shown), sum(len(c.items) or 1 for c in checks)

    def fill(self, checks: list[CheckRow] | None) -> None:
        tree: Tree[str | None] = self.query_one("#checks", Tree)
        tree.clear()
        if checks is None:
            tree.root.add_leaf(Text("checking...", style="dim italic"))
            return
        first_item = None
        for c in narrow(checks, self.filter_text):
            label = Text()  # the badge alone on its colour (its style was the whole line's)
            label.append_text(status_badge(c.status, self.app.no_color))
            label.append(f" {c.name}: ", style="bold")
            label.append(c.summary)
            node = tree.root.add(label, data=None, expand=c.status in ("fail", "warn"),
                                 allow_expand=bool(c.items))
            for item in c.items[:MAX_ITEMS]:
                text = Text(item.text, style=item_style(c.status, self.app.no_color)
                            if c.status in ("fail", "warn") else "")
                if item.path:
                    text.append(f"  → {item.path}", style="dim")
                leaf = node.add_leaf(text, data=item.path)
                if first_item is None and c.status in ("fail", "warn") and item.path:
                    first_item = leaf
            if len(c.items) > MAX_ITEMS:
                node.add_leaf(Text(f"... {len(c.items) - MAX_ITEMS:,} more (run `health --all` "
                                   "in the command bar)", style="dim"))
        tree.root.expand()
        if first_item is not None:
            tree.call_after_refresh(tree.move_cursor, first_item)

    def copy_text(self, value: bool) -> tuple[str, str] | None:
        """y: the path of the node at fault; Y: the item (or check) as it reads."""
        node = self.query_one("#checks", Tree).cursor_node
        if node is None:
            return None
        if value:
            return "item", str(node.label)
        return None if not node.data else ("path", node.data)

    @on(Tree.NodeHighlighted)
    def _highlighted(self, event: Tree.NodeHighlighted[str | None]) -> None:
        self._hint(event.node.data)

    def _hint(self, path: str | None = None) -> None:
        """Where Enter goes from the item under the cursor, whole (at 80 columns an item's
        own ``→ path`` runs off the screen), then the filter."""
        hint = f"Enter opens {path}" if path else HINT
        text = self.filter_text
        self.query_one("#hint", Static).update(
            f"{hint}  Filtered: {text!r} (F edits it)" if text else hint)

    @on(Tree.NodeSelected)
    def _selected(self, event: Tree.NodeSelected[str | None]) -> None:
        if event.node.data:
            self.mdapp.jump(event.node.data)


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
