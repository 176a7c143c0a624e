"""Tree + detail: the whole image as a lazily loaded tree, the selected node on the right,
and the command bar at the bottom."""

from __future__ import annotations

import json
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from . import treefilter
from .commandbar import CommandBar
from .detail import DetailPane
from .engine import SECTIONS
from .footer import KeyFooter
from .resulttable import ResultTable
from .screen import DataScreen
from .widgets import StatusBar, state_text

PAGE = 300  # children added per expansion step: a 10k-partition topic opens at once
FILTER_PAGE = 100  # the same under a filter (F): each key typed lists them again
SETTLE = 0.03  # seconds without cursor moves before the detail pane renders
MORE = "\0more:"  # the data of a "more" node: MORE + start + ":" + parent path


class ImageTree(Tree[str]):
    """Children are listed when a node is first expanded, never before."""

    DEFAULT_CSS = """
    ImageTree { width: 40%; min-width: 28; border-right: vkey $primary-darken-2; }
    """

    def __init__(self) -> None:
        super().__init__("/", data=None, id="tree")
        self.show_root = False
        self.guide_depth = 2
        self.loaded_paths: set[str] = set()
        self.nodes: dict[str, TreeNode[str]] = {}  # path -> node, for every node listed
        self.filters: dict[str, str] = {}  # path ("" the root) -> the text F narrows it to
        self.base_labels: dict[str, Text] = {}  # a filtered node's label without the filter
        self.filter_key: str | None = None  # the list F narrows, by path (treefilter)
        self.filter_from: str | None = None  # the cursor's path when F was pressed

    def fill(self) -> None:
        """The sections (Brokers, Topics...), collapsed."""
        self.clear()
        self.loaded_paths.clear()
        self.nodes.clear()
        for label, path in treefilter.sections(self, SECTIONS):
            self.nodes.setdefault(path, self.root.add(self._label(label, path, section=True),
                                                      data=path))
        self.root.expand()

    def refill(self, cursor: str | None = None) -> None:
        """The tree over a new image (time travel, live records), keeping what was open, the
        cursor (or putting it on ``cursor``) and the scroll position; paths gone from the
        image just close."""
        opened = [p for p, n in self.nodes.items() if n.is_expanded]
        if cursor is None and self.cursor_node is not None:
            cursor = self.cursor_node.data
        scroll_y = self.scroll_y
        self.fill()
        for path in opened:  # parents were added (and opened) before their children
            node = self.nodes.get(path)
            if node is not None:
                node.expand()
                self.load_children(node)
        target = self.nodes.get(cursor) if cursor is not None else None
        self.call_after_refresh(self._restore, target, scroll_y)

    def _restore(self, node: TreeNode[str] | None, scroll_y: float) -> None:
        if node is not None:
            self.cursor_line = node.line
        self.scroll_to(y=scroll_y, animate=False)
        # Keys pressed during the refill moved a cursor over the old lines: the detail pane
        # follows wherever the cursor is now.
        self._announce()

    def _label(self, name: str, path: str, section: bool = False) -> Text:
        app = self.app
        faults: set[str] = getattr(app, "fault_prefixes", set())
        t = Text()
        if path in faults:
            t.append("✗ ", style="bold red")
        t.append(name, style="bold" if section else "")
        if path.startswith("/image/cluster/brokers/"):
            states = app.engine.broker_states()  # type: ignore[attr-defined]
            try:
                state = states.get(int(name))
            except ValueError:
                state = None
            if state:
                t.append("  ")
                t.append_text(state_text(state))
        text = self.filters.get(path)
        return treefilter.suffixed(t, text) if text else t

    def load_children(self, node: TreeNode[str]) -> None:
        path = node.data
        if path is None or path.startswith(MORE) or path in self.loaded_paths:
            return
        self.loaded_paths.add(path)
        self.load_page(node, path, 0)

    def load_page(self, node: TreeNode[str], path: str, start: int) -> TreeNode[str] | None:
        """Add a page of children (and a "more" node when there are more); the more node."""
        size = FILTER_PAGE if self.filters.get(path) else PAGE
        entries, total = self.app.engine.page(  # type: ignore[attr-defined]
            path, start, size, self.filters.get(path))
        for e in entries:
            label = self._label(e.name, e.path)
            added = (node.add(label, data=e.path) if e.is_dir
                     else node.add_leaf(label, data=e.path))
            self.nodes[e.path] = added
        shown = start + len(entries)
        if shown < total:
            more = Text(f"… {total - shown:,} more (Enter shows the next {size})", style="dim")
            return node.add_leaf(more, data=f"{MORE}{shown}:{path}")
        return None

    filter_text = property(lambda self: self.filters.get(
        treefilter.key_of(self, treefilter.list_node(self)) if self.filter_key is None
        else self.filter_key, ""),
        lambda self, _text: None)

    def filter_name(self) -> str:
        return treefilter.name(self)

    def apply_filter(self, text: str) -> tuple[int, int]:
        return treefilter.apply(self, text)

    def filter_done(self) -> None:
        treefilter.done(self)

    def load_more(self, more: TreeNode[str]) -> TreeNode[str] | None:
        assert more.data is not None and more.parent is not None
        start, _, path = more.data[len(MORE):].partition(":")
        parent = more.parent
        more.remove()
        return self.load_page(parent, path, int(start))

    @on(Tree.NodeSelected)
    def _selected(self, event: Tree.NodeSelected[str]) -> None:
        if event.node.data and event.node.data.startswith(MORE):
            event.stop()
            self.load_more(event.node)

    @on(Tree.NodeExpanded)
    def _expanded(self, event: Tree.NodeExpanded[str]) -> None:
        self.load_children(event.node)
        # Keys pressed before the children arrived moved the cursor over the old lines:
        # announce the node it is on now.
        self.call_after_refresh(self._announce)

    def _announce(self) -> None:
        node = self.cursor_node
        if node is not None:
            self.post_message(Tree.NodeHighlighted(node))

    def find(self, path: str) -> TreeNode[str] | None:
        """Expand the way to ``path`` and return its node (None: not in the tree)."""
        best = None
        for node in self.root.children:
            p = node.data or ""
            if p != "/" and (path == p or path.startswith(p.rstrip("/") + "/")):
                best = node
        if best is None:
            best = next(n for n in self.root.children if n.data == "/")
        node = best
        while node.data != path:
            node.expand()
            self.load_children(node)
            nxt = self._child_towards(node, path)
            if nxt is None:
                return None
            node = nxt
        return node


    def _child_towards(self, node: TreeNode[str], path: str) -> TreeNode[str] | None:
        """The child of ``node`` on the way to ``path``, loading pages until it shows."""
        while True:
            for child in node.children:
                p = child.data or ""
                if path == p or path.startswith(p + "/"):
                    return child
            last = node.children[-1] if node.children else None
            if last is None or not (last.data or "").startswith(MORE):
                return None
            self.load_more(last)


class BrowserScreen(DataScreen):
    _sync_timer: Timer | None = None
    DEFAULT_CSS = """
    BrowserScreen Horizontal { height: 1fr; }
    BrowserScreen ImageTree:focus { background-tint: $primary 12%; }
    BrowserScreen DetailPane:focus-within TextScroll,
    BrowserScreen DetailPane:focus-within ResultTable { background: $primary 12%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("v", "tab('view')", "View tab", show=False),
        Binding("x", "tab('text')", "Text tab (a table's text form)", show=False),
        Binding("J", "tab('json')", "JSON tab", show=False),
        Binding("c", "tab('changes')", "Changes tab", show=False),
        Binding("O", "tab('output')", "Output tab", show=False),
        Binding("escape", "cancel", "Cancel / back", show=False,
                tooltip="cancel the command; else back to where a jump came from"),
    ]

    def compose(self) -> ComposeResult:
        yield StatusBar()
        with Horizontal():
            yield ImageTree()
            yield DetailPane()
        yield CommandBar()
        yield KeyFooter()

    def on_mount(self) -> None:
        self.refresh_data()
        self.set_focus(self.query_one(ImageTree))  # now: a bar opened by `:` takes it next

    def refresh_data(self) -> None:
        super().refresh_data()
        eng = self.mdapp.engine
        self.query_one(StatusBar).refresh_header(eng.header())
        tree = self.query_one(ImageTree)
        detail = self.query_one(DetailPane)
        if not tree.nodes:  # first time
            tree.fill()
            tree.call_after_refresh(self._cursor_home)
            return
        tree.refill()
        detail.refresh_path()

    def _cursor_home(self) -> None:
        """The cursor on the first line, unless a jump already placed it."""
        tree = self.query_one(ImageTree)
        if tree.cursor_line < 0 and self.mdapp.pending_jump is None:
            tree.cursor_line = 0

    def select_path(self, path: str) -> None:
        tree = self.query_one(ImageTree)
        node = tree.find(path)
        if node is None:
            self.notify(f"{path} does not exist in this image", severity="warning")
            return
        tree.focus()
        tree.call_after_refresh(self._cursor_to, node)
        self.query_one(DetailPane).show_path(path)

    def _cursor_to(self, node: TreeNode[str]) -> None:
        tree = self.query_one(ImageTree)
        tree.move_cursor(node)
        tree.scroll_to_node(node, animate=False)

    @on(Tree.NodeHighlighted)
    def _highlighted(self, event: Tree.NodeHighlighted[str]) -> None:
        # Follow the cursor as it is once keys settle (a held arrow key renders once, and a
        # key pressed while children were being added lands on the right node).
        if self._sync_timer is not None:
            self._sync_timer.stop()
        self._sync_timer = self.set_timer(SETTLE, self._sync_detail)

    def _sync_detail(self) -> None:
        self._sync_timer = None
        node = self.query_one(ImageTree).cursor_node
        detail = self.query_one(DetailPane)
        if node is not None and node.data and not node.data.startswith(MORE) \
                and node.data != detail.path:
            detail.show_path(node.data)

    def action_tab(self, tab: str) -> None:
        detail = self.query_one(DetailPane)
        if tab == "text" and detail.toggle_text():
            return  # a command's table: its text form (and back)
        detail.active = tab

    def open_command_bar(self) -> None:
        self.query_one(CommandBar).open()

    @on(CommandBar.Closed)
    def _bar_closed(self) -> None:
        if not self.query_one(DetailPane).focus_table():
            self.focus_next()

    @on(CommandBar.Started)
    def _started(self, event: CommandBar.Started) -> None:
        bar = self.query_one(CommandBar)
        self.query_one(DetailPane).show_running(event.line, lambda: bar.running)

    @on(CommandBar.SqlStarted)
    def _sql_started(self, event: CommandBar.SqlStarted) -> None:
        self.query_one(DetailPane).show_sql_running(event.line, event.run)

    @on(CommandBar.SqlDone)
    def _sql_done(self, event: CommandBar.SqlDone) -> None:
        self.query_one(DetailPane).show_sql_result(event.line, event.table, event.error,
                                                   event.cancelled, event.seconds)

    def action_cancel(self) -> None:
        """Esc anywhere on this screen: cancel the running command (sql included); else back
        to where a jump came from; else the focus back on the tree."""
        bar = self.query_one(CommandBar)
        if bar.running:
            bar.action_close()
        elif not self.mdapp.go_back():
            self.focus_home()

    def filter_target(self) -> Widget:
        """F with the focus in the detail pane (its tabs, its text): the table it shows, if
        one does (Topics, Brokers, a command's); else the tree."""
        detail = self.query_one(DetailPane)
        focused = self.focused
        if focused is not None and detail in focused.ancestors_with_self:
            tab = detail.active
            table = self.query_one(f"#{'sql' if tab == 'output' else tab}-table", ResultTable) \
                if tab in ("output", "view") else None
            if table is not None and table.display:
                return table
        return self.query_one(ImageTree)

    def focus_home(self) -> None:
        self.query_one(ImageTree).focus()

    def current_path(self) -> str | None:
        node = self.query_one(ImageTree).cursor_node
        return node.data if node is not None and node.data \
            and not node.data.startswith(MORE) else None

    def copy_text(self, value: bool) -> tuple[str, str] | None:
        """y: the tree node's path; Y: its value (a leaf: Kafka's text form; a directory,
        a topic say: all of it as JSON)."""
        path = self.current_path()
        if path is None or not value:
            return None if path is None else ("path", path)
        eng = self.mdapp.engine
        if eng.is_dir(path):
            return "JSON", json.dumps(eng.data(path), indent=2, ensure_ascii=False)
        return "value", eng.text(path)

    @on(CommandBar.Ran)
    def _ran(self, event: CommandBar.Ran) -> None:
        if event.line.split()[:1] == ["at"] and not event.errors:
            self.mdapp.image_changed()
        detail = self.query_one(DetailPane)
        if event.table is not None:
            detail.show_table(event.line, event.table, event.lines, event.errors)
            return
        detail.show_output(event.line, event.lines, event.errors, event.finished)
