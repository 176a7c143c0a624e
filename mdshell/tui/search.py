"""``/``: fuzzy search, as you type, over topics, topic ids, partitions (``orders-3``),
brokers, controllers, their host:port, and configs; Enter jumps to the node in the tree. No
match says so (not a blank list)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from .messages import Jump

if TYPE_CHECKING:
    from .engine import Engine

LIMIT = 100


def fuzzy_score(query: str, text: str) -> int | None:
    """Higher is better; None when the query's letters do not appear in order in ``text``.

    A substring beats a scattered match, and an earlier, more compact match beats a later one.
    """
    q, t = query.lower(), text.lower()
    if not q:
        return 0
    at = t.find(q)
    if at >= 0:
        return 10_000 - at * 10 - len(t)
    pos, first, gaps = -1, -1, 0
    for ch in q:
        nxt = t.find(ch, pos + 1)
        if nxt < 0:
            return None
        if first < 0:
            first = nxt
        elif nxt > pos + 1:
            gaps += nxt - pos - 1
        pos = nxt
    return 5_000 - gaps * 20 - first - len(t)


Entry = tuple[str, str, str]  # (what, kind, path)


def search(index: list[Entry], query: str, limit: int = LIMIT) -> list[Entry]:
    return matches(index, query)[1][:limit]


def matches(index: list[Entry], query: str) -> tuple[list[Entry], list[Entry]]:
    """Every entry that matches ``query`` (in index order: a longer query searches only
    these) and the same, best first."""
    scored = []
    hits: list[Entry] = []
    for entry in index:
        s = fuzzy_score(query, entry[0])
        if s is not None:
            scored.append((s, len(hits)))
            hits.append(entry)
    scored.sort(key=lambda x: -x[0])
    return hits, [hits[i] for _s, i in scored]


PARTITION = re.compile(r"^(.+?)[-:/ ](\d+)$")
PARTITION_TOPICS = 20  # topics whose partition N a query names, at most


def partition_hits(index: list[Entry], query: str,
                   exists: Callable[[str], bool]) -> tuple[list[Entry], list[Entry]]:
    """``orders-3`` (or ``orders 3``, ``orders:3``): partition 3 of the topics named
    ``orders`` (first), then of those whose name holds it; only partitions that exist."""
    m = PARTITION.match(query.strip())
    if m is None:
        return [], []
    name, pid = m.group(1).lower(), m.group(2)
    exact: list[Entry] = []
    near: list[Entry] = []
    for what, kind, path in index:
        if kind != "topic" or name not in what.lower():
            continue
        found = exact if what.lower() == name else near
        if len(near) < PARTITION_TOPICS or found is exact:
            found.append((f"{what}-{pid}", f"partition {pid} of {what}", f"{path}/{pid}"))
    return ([e for e in exact if exists(e[2])],
            [e for e in near[:PARTITION_TOPICS] if exists(e[2])])


class SearchScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    SearchScreen { align: center top; }
    SearchScreen Vertical { width: 90%; max-width: 110; height: 80%; margin-top: 2;
                            border: thick $accent; background: $surface; }
    SearchScreen OptionList { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close"),
        Binding("down", "move(1)", "Next", show=False),
        Binding("up", "move(-1)", "Previous", show=False),
    ]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Input(placeholder="search topics, ids, partitions (orders-3), brokers, "
                        "controllers, host:port, configs",
                        id="query")
            yield OptionList(id="results")

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine
        self.index: list[Entry] | None = None
        self.found: list[Entry] = []
        self._last: tuple[str, list[Entry]] = ("", [])  # the last query and all it matched
        self._enter_waits = False  # Enter typed before the index was in

    def on_mount(self) -> None:
        # The index is built in a worker once the image is loaded (the app's
        # ``search_index``); until it is in, the box takes keys and says "indexing…".
        self.watch(self.app, "search_index", self._index_in, init=True)

    def _index_in(self, index: list[Entry] | None) -> None:
        if index is None:
            self.query_one(Vertical).border_title = "Search (indexing…)"
            self._say("indexing…")
            return
        self.index = index
        self._last = ("", index)
        self.query_one(Vertical).border_title = f"Search ({len(index):,} entries)"
        self._show(self.query_one(Input).value)
        if self._enter_waits:
            self._enter_waits = False
            self._submitted()

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        if self.index is not None:
            self._show(event.value)

    def _show(self, query: str) -> None:
        assert self.index is not None
        last_query, last_hits = self._last
        pool = last_hits if query.startswith(last_query) else self.index
        hits, ranked = matches(pool, query)
        self._last = (query, hits)
        engine = self.engine
        exact, near = partition_hits(self.index, query, lambda p: engine.node(p) is not None)
        self.found = (exact + ranked + near)[:LIMIT]
        if not self.found:
            self._say(f"no match for {query!r}")
            return
        results = self.query_one(OptionList)
        results.clear_options()
        results.add_options([Option(_row(what, kind), id=str(i))
                             for i, (what, kind, _p) in enumerate(self.found)])
        results.highlighted = 0

    def _say(self, words: str) -> None:
        """One line in place of the results (no match, indexing)."""
        self.found = []
        results = self.query_one(OptionList)
        results.clear_options()
        results.add_option(Option(Text(words, style="dim italic"), disabled=True))

    def action_move(self, step: int) -> None:
        results = self.query_one(OptionList)
        if results.option_count:
            cur = results.highlighted or 0
            results.highlighted = max(0, min(results.option_count - 1, cur + step))

    @on(Input.Submitted)
    def _submitted(self) -> None:
        if self.index is None:
            self._enter_waits = True  # goes where the query leads once the index is in
            return
        results = self.query_one(OptionList)
        if results.highlighted is not None:
            self._go(results.highlighted)

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self._go(event.option_index)

    def _go(self, i: int) -> None:
        if 0 <= i < len(self.found):
            path = self.found[i][2]
            self.dismiss()
            self.app.post_message(Jump(path))  # to the app: this screen is leaving


def _row(what: str, kind: str) -> Text:
    t = Text(what, style="bold")
    t.append(f"  {kind}", style="dim")
    return t
