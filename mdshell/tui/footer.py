"""The footer: the focused pane's and the screen's keys first, the screens next, and
``? Help`` and ``q Quit`` always at the end; what does not fit the width is left out (the
help overlay lists every key), never cut in the middle."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Resize
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

ALWAYS = ("help", "quit")  # actions shown at any width


class KeyFooter(Footer):
    def __init__(self) -> None:
        super().__init__(show_command_palette=False, compact=True)

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        shown = fit(self._shown(), self.app.size.width, self.app.get_key_display)
        for binding, enabled, tooltip in shown:
            yield FooterKey(binding.key, self.app.get_key_display(binding),
                            binding.description, binding.action, disabled=not enabled,
                            tooltip=tooltip).data_bind(compact=Footer.compact)

    def _shown(self) -> list[tuple[Binding, bool, str]]:
        seen: set[str] = set()
        out = []
        for _node, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in seen:
                seen.add(binding.action)
                out.append((binding, enabled, tooltip))
        return out

    def on_resize(self, event: Resize) -> None:
        if self._bindings_ready:
            self.call_after_refresh(self.recompose)


def fit(bindings: Iterable[tuple[Binding, bool, str]], width: int,
        display: object) -> list[tuple[Binding, bool, str]]:
    """The bindings that fit in ``width`` cells, in order, with ALWAYS's kept at the end."""
    show = display if callable(display) else str
    rows = list(bindings)
    last = [r for r in rows if r[0].action in ALWAYS]
    rest = [r for r in rows if r[0].action not in ALWAYS]

    def cells(r: tuple[Binding, bool, str]) -> int:
        return len(show(r[0])) + 1 + len(r[0].description) + 1

    room = width - sum(map(cells, last))
    kept = []
    for r in rest:
        if cells(r) > room:
            break
        kept.append(r)
        room -= cells(r)
    return kept + last
