"""The footer: the focused pane's and the screen's keys first, the screens next, and
``? Help`` and ``q Quit`` always at the end; what does not fit the width is left out (the
help overlay lists every key), never cut in the middle.

When not all fit (80 columns, the history screen at 120), the keys are chosen by rank: the
pane's and the screen's own first, then ``F`` where it filters something, then the rest,
each one that still fits (a long one left out does not hide the shorter ones after it);
the chosen keep their order."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.events import Click, Resize
from textual.keys import key_to_character
from textual.strip import Strip
from textual.widget import Widget

ALWAYS = ("help", "quit")  # actions shown at any width
NEXT = ("filter",)  # the app's keys ranked right after the pane's own (where they show)


class KeyFooter(Widget):
    """The keys as one line of text in one widget, drawn as Textual's compact Footer draws
    its key widgets (one widget per key, each mounted and styled, made again at every
    bindings update: a fifth of the tree screen's first showing); a click on a key is
    that key."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {"footer-key--key", "footer-key--description",
                                             "footer-key--item"}
    # Textual's Footer and FooterKey rules, as they apply to a compact footer.
    DEFAULT_CSS = """
    KeyFooter {
        dock: bottom; height: 1; text-wrap: nowrap;
        color: $footer-foreground; background: $footer-background;
        .footer-key--item { background: $footer-item-background; }
        .footer-key--key {
            color: $footer-key-foreground; background: $footer-key-background;
            text-style: bold;
        }
        .footer-key--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self._shown: tuple[tuple[str, str, str, bool, str], ...] = ()  # what is drawn
        self._spans: list[tuple[int, int, str, bool]] = []  # (from, to, key, enabled)

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._update()

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: object) -> None:
        if self.is_attached and screen is self.screen and self.app.app_focus:
            self.call_after_refresh(self._update)

    def on_resize(self, event: Resize) -> None:
        self.call_after_refresh(self._update)

    def _update(self) -> None:
        """Draw again only when the keys shown change (Textual asks after every focus
        change and bindings update)."""
        if not self.is_attached:
            return
        display = self.app.get_key_display
        shown = tuple((b.key, b.description, b.action, enabled, display(b))
                      for b, enabled, _tooltip in self._keys())
        if shown != self._shown:
            self._shown = shown
            self.refresh()

    def _keys(self) -> list[tuple[Binding, bool, str]]:
        rows, own = self._rows()
        return fit(rows, self.app.size.width, self.app.get_key_display, own)

    def render_line(self, y: int) -> Strip:
        """The keys as Footer draws them: each key's label on its item background, a
        cell of the footer's background after each (Footer's margin), the rest blank."""
        base = self.rich_style
        gap = Style(bgcolor=base.bgcolor)
        width = self.size.width
        if y:
            return Strip.blank(width, gap)
        key_style = self.get_component_rich_style("footer-key--key")
        description_style = self.get_component_rich_style("footer-key--description")
        item = base + self.get_component_rich_style("footer-key--item")
        console = self.app.console
        segments: list[Segment] = []
        self._spans = []
        at = 0
        for key, description, _action, enabled, display in self._shown:
            label = Text.assemble((display, key_style),
                                  (f" {description}" if description else "",
                                   description_style))
            label.stylize_before(item + Style(dim=True) if not enabled else item)
            segments += label.render(console, end="")
            self._spans.append((at, at + label.cell_len, key, enabled))
            at += label.cell_len + 1
            segments.append(Segment(" ", gap))
        return Strip(segments).adjust_cell_length(width, gap).crop(0, width)

    def on_click(self, event: Click) -> None:
        for start, end, key, enabled in self._spans:
            if start <= event.x < end:
                if enabled:
                    self.app.simulate_key(key)
                else:
                    self.app.bell()
                return

    def _rows(self) -> tuple[list[tuple[Binding, bool, str]], set[str]]:
        """The keys to show, and the actions among them that are the screen's or a pane's
        (not the app's)."""
        seen: set[str] = set()
        out, own = [], set()
        for node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in seen and not self._typed(binding):
                seen.add(binding.action)
                out.append((binding, enabled, tooltip))
                if node is not self.app:
                    own.add(binding.action)
        return out, own

    def _typed(self, binding: Binding) -> bool:
        """Whether the key goes into the focused box as a character. Textual leaves out such
        keys itself, but knows no character for ``slash``: "/ Search" showed under the
        command bar, where / is typed."""
        focused = self.screen.focused
        if focused is None or binding.priority:
            return False
        shown = self.app.get_key_display(binding)
        char = key_to_character(binding.key) or (shown if len(shown) == 1 else None)
        return focused.check_consume_key(binding.key, char)


def fit(bindings: Iterable[tuple[Binding, bool, str]], width: int, display: object,
        own: Collection[str] = ()) -> list[tuple[Binding, bool, str]]:
    """The bindings that fit in ``width`` cells, in order, with ALWAYS's kept at the end;
    when not all fit, those of ``own`` (the actions of the screen and its panes) and NEXT's
    are chosen first."""
    show = display if callable(display) else str
    rows = list(bindings)
    last = [r for r in rows if r[0].action in ALWAYS]
    rest = [r for r in rows if r[0].action not in ALWAYS]

    def cells(r: tuple[Binding, bool, str]) -> int:
        return len(show(r[0])) + 1 + len(r[0].description) + 1

    def rank(i: int) -> tuple[int, int]:
        action = rest[i][0].action
        return (0 if action in own else 1 if action in NEXT else 2), i

    room = width - sum(map(cells, last))
    kept = set()
    for i in sorted(range(len(rest)), key=rank):
        if cells(rest[i]) <= room:
            kept.add(i)
            room -= cells(rest[i])
    return [r for i, r in enumerate(rest) if i in kept] + last
