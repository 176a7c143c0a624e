"""The footer: the focused pane's and the screen's keys first, the screens next, and
``? Help`` and ``q Quit`` always at the end; what does not fit the width is left out (the
help overlay lists every key), never cut in the middle.

When not all fit (80 columns, the history screen at 120), the keys are chosen by rank: the
pane's and the screen's own first, then ``F`` where it filters something, then the rest,
each one that still fits (a long one left out does not hide the shorter ones after it);
the chosen keep their order."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Resize
from textual.keys import key_to_character
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

ALWAYS = ("help", "quit")  # actions shown at any width
NEXT = ("filter",)  # the app's keys ranked right after the pane's own (where they show)


class KeyFooter(Footer):
    def __init__(self) -> None:
        super().__init__(show_command_palette=False, compact=True)

    _composed: tuple[tuple[str, str, str, bool, str], ...] | None = None  # what shows

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        shown = self._keys()
        self._composed = _signature(shown)
        for binding, enabled, tooltip in shown:
            # Always compact, as FooterKey is by default, its class given at once (its
            # watcher adding it after the mount restyled each key again).
            yield FooterKey(binding.key, self.app.get_key_display(binding),
                            binding.description, binding.action, disabled=not enabled,
                            tooltip=tooltip, classes="-compact")

    async def recompose(self) -> None:
        """Only when the keys shown change: Textual asks after every focus change and
        bindings update (six times while the tree screen is first shown), and each time
        every key widget was removed, made and styled again (60 ms of a 200 ms key)."""
        if self._bindings_ready and self.is_attached and self._composed is not None \
                and _signature(self._keys()) == self._composed:
            return
        await super().recompose()

    def _keys(self) -> list[tuple[Binding, bool, str]]:
        rows, own = self._shown()
        return fit(rows, self.app.size.width, self.app.get_key_display, own)

    def _shown(self) -> tuple[list[tuple[Binding, bool, str]], set[str]]:
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

    def on_resize(self, event: Resize) -> None:
        if self._bindings_ready:
            self.call_after_refresh(self.recompose)


def _signature(shown: Iterable[tuple[Binding, bool, str]]
               ) -> tuple[tuple[str, str, str, bool, str], ...]:
    return tuple((b.key, b.description, b.action, enabled, tooltip)
                 for b, enabled, tooltip in shown)


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
