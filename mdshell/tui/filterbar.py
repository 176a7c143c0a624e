"""``F``: filter as you type, in place (k9s's ``/``): the focused list, table or tree narrows
to the lines holding the text, case-insensitively; ``/`` stays the global jump-search.

A widget (or its screen) that can be filtered has ``apply_filter(text) -> (shown, total)``
and ``filter_name() -> str``; the bar below the screen drives it. Enter keeps the filter
(F again edits it), Esc clears it."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from textual import on
from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import Input, Static

if TYPE_CHECKING:
    from textual.app import App, ComposeResult


@runtime_checkable
class Filterable(Protocol):
    """What ``F`` can narrow: it keeps its own filter text (``filter_text``)."""

    @property
    def filter_text(self) -> str: ...

    def apply_filter(self, text: str) -> tuple[int, int]: ...

    def filter_name(self) -> str: ...


def matches(text: str, *cells: object) -> bool:
    """Whether ``text`` (already lower case) is in the line the cells make, one space
    apart, as the row reads on screen: ``topic-0042 10`` finds that partition's row."""
    return text in " ".join(str(c).lower() for c in cells)


class FilterBar(Widget):
    """One line in the footer's place while it is open (the footer would only say that Esc
    clears, which the box says): what is filtered, the text, how many lines show. The panes
    above keep their size, so opening and closing it draws only this line (a line taken
    above the footer laid every pane out and drew it again: 30 ms at 500k). (Not a
    Horizontal: screens size their Horizontal panes.)"""

    DEFAULT_CSS = """
    FilterBar { layout: horizontal; dock: bottom; height: 1;
                display: none; background: $panel; }
    FilterBar.open { display: block; }
    FilterBar #filter-what { width: auto; padding: 0 1; color: $accent; text-style: bold; }
    FilterBar Input { width: 1fr; }
    FilterBar #filter-count { width: auto; padding: 0 1; color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear", "Clear filter"),
    ]

    def __init__(self) -> None:
        super().__init__(id="filter-bar")
        self.target: Widget | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="filter-what")
        yield Input(placeholder="type to filter; Enter keeps it, Esc clears", compact=True,
                    id="filter-input")
        yield Static(id="filter-count")

    def open(self, target: Widget) -> None:
        assert isinstance(target, Filterable)
        self.target = target
        self.query_one("#filter-what", Static).update(f"filter {target.filter_name()}:")
        box = self.query_one(Input)
        box.value = target.filter_text
        self._footer(False)
        self.add_class("open")
        self.screen.set_focus(box)  # now, not queued after the keys typed next

    @on(Input.Changed, "#filter-input")
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        target = self.target
        if target is None or not isinstance(target, Filterable):
            return
        shown, total = target.apply_filter(event.value)
        self.query_one("#filter-count", Static).update(
            f"{shown:,} of {total:,}" if event.value else f"{total:,}")

    @on(Input.Submitted, "#filter-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        target = self.target
        self._close()
        getattr(target, "filter_done", lambda: None)()  # the tree: onto the first name

    def action_clear(self) -> None:
        self.query_one(Input).value = ""
        if self.target is not None and isinstance(self.target, Filterable):
            self.target.apply_filter("")
        self._close()

    def _footer(self, shown: bool) -> None:
        from .footer import KeyFooter

        for footer in self.screen.query(KeyFooter):
            footer.display = shown

    def _close(self) -> None:
        self.remove_class("open")
        self._footer(True)
        target, self.target = self.target, None
        if target is not None and target.focusable:
            target.focus()
        elif target is not None:
            self.screen.focus_next()


def filter_target(app: App[int]) -> Widget | None:
    """What ``F`` narrows: the focused widget or the nearest of its parents that can be
    filtered, else what the screen names (``screen.filter_target()``)."""
    node: object = app.screen.focused
    while node is not None:
        if isinstance(node, Filterable) and isinstance(node, Widget) \
                and not isinstance(node, FilterBar):
            return node
        node = getattr(node, "parent", None)
    chosen: Widget | None = getattr(app.screen, "filter_target", lambda: None)()
    return chosen if isinstance(chosen, Filterable) else None


async def open_filter(app: App[int]) -> None:
    """``F``: the filter bar on the current screen (mounted the first time, awaited: F is a
    priority key, keys typed right after it wait for it and land in the box)."""
    screen = app.screen
    if isinstance(screen.focused, Input):
        return  # typing in a box: F is a letter there
    target = filter_target(app)
    if target is None:
        app.notify("nothing to filter here (F filters a list, table or tree)",
                   severity="warning", timeout=3)
        return
    bars = screen.query(FilterBar)
    if bars:
        bars.first().open(target)
        return
    bar = FilterBar()
    await screen.mount(bar)
    bar.open(target)
