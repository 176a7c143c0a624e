"""Tree + detail: the whole image as a lazily listed tree (imagetree.py), the selected node on
the right (detail.py), and the command bar at the bottom (commandbar.py)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.events import DescendantFocus
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Input, Tree

from .commandbar import CommandBar
from .detail import DetailPane
from .footer import KeyFooter
from .healthrows import fault_prefixes
from .imagetree import ImageTree, is_page_node
from .messages import GoBack, ImageMoved
from .resulttable import ResultTable
from .screen import DataScreen
from .widgets import StatusBar

SETTLE = 0.015  # seconds without cursor moves before the detail pane renders


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
                tooltip="cancel the command; else back to where you were"),
    ]
    HOME_FOCUS = "#tree"

    def compose(self) -> ComposeResult:
        yield StatusBar()
        with Horizontal():
            yield ImageTree(self.engine)
            yield DetailPane(self.engine)
        yield CommandBar(self.engine)
        yield KeyFooter()

    @property
    def image_tree(self) -> ImageTree:
        return self.query_one(ImageTree)

    @property
    def detail(self) -> DetailPane:
        return self.query_one(DetailPane)

    def mounted(self) -> None:
        tree = self.image_tree
        tree.faults = fault_prefixes(self.checks)
        tree.fill()
        self.set_focus(tree)  # now: a bar opened by `:` takes it next
        self.call_after_refresh(self._cursor_home)
        self._filled = True

    _filled = False
    _placed = False  # a jump or a restore placed the cursor

    def refresh_data(self) -> None:
        if self._filled and self.image_tree.cursor_line >= 0:
            self.image_tree.refill()
            self.detail.refresh_path()

    def checks_ready(self) -> None:
        self.image_tree.faults = fault_prefixes(self.checks)
        self.image_tree.relabel()

    def _cursor_home(self) -> None:
        """The cursor on the first line, unless a jump already placed it."""
        if not self._placed and self.image_tree.cursor_line < 0:
            self.image_tree.cursor_line = 0

    # ------------------------------------------------------------ where the user is

    def location(self) -> str | None:
        node = self.image_tree.cursor_node
        return node.data if node is not None and node.data \
            and not is_page_node(node.data) else None

    current_path = location

    def restore(self, where: str | None) -> None:
        if where is None:
            self.focus_home()
            return
        self.select_path(where)

    def select_path(self, path: str) -> None:
        """Open the way to ``path``, put the cursor on it (in view) and show it."""
        self._placed = True
        tree = self.image_tree
        node = tree.find(path)
        if node is None:
            self.notify(f"{path} does not exist in this image", severity="warning")
            return
        tree.focus()
        tree.select(node)
        self.detail.show_path(path)

    @on(Tree.NodeHighlighted, "#tree")
    def _highlighted(self) -> None:
        # Follow the cursor as it is once keys settle (a held arrow key renders once, and a
        # key pressed while children were being added lands on the right node).
        if self._sync_timer is not None:
            self._sync_timer.stop()
        self._sync_timer = self.set_timer(SETTLE, self._sync_detail)

    def _sync_detail(self) -> None:
        self._sync_timer = None
        if self._filtering():
            # While a filter of the tree is typed the cursor sits on the list's node: the
            # pane keeps what it showed (no Topics table drawn at each key typed), and
            # follows the cursor once the bar closes (the tree focused again).
            return
        path = self.location()
        if path is not None and path != self.detail.path:
            self.detail.show_path(path)

    def _filtering(self) -> bool:
        """Whether the focus is in the filter bar, narrowing the tree."""
        focused = self.focused
        return isinstance(focused, Input) and focused.id == "filter-input" \
            and focused.parent is not None \
            and getattr(focused.parent, "target", None) is self.image_tree

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        """The tree focused again (a filter bar closed): the pane follows its cursor."""
        if event.widget is self.image_tree and self._sync_timer is None:
            self._sync_timer = self.set_timer(SETTLE, self._sync_detail)

    # ------------------------------------------------------------ keys

    def action_tab(self, tab: str) -> None:
        detail = self.detail
        if tab == "text" and detail.toggle_text():
            return  # a command's table: its text form (and back)
        detail.active = tab

    def action_cancel(self) -> None:
        """Esc: cancel the running command (sql included); else back where the user was
        (the app focuses the tree when there is nowhere to go back to)."""
        bar = self.query_one(CommandBar)
        if bar.running:
            bar.action_close()
        else:
            self.post_message(GoBack())

    def open_command_bar(self) -> None:
        self.detail.prepare_output()
        self.query_one(CommandBar).open()

    def filter_target(self) -> Widget:
        """F with the focus in the detail pane: the table it shows, if one does (Topics,
        Brokers, a command's); else the tree."""
        detail = self.detail
        focused = self.focused
        if focused is not None and detail in focused.ancestors_with_self:
            tab = detail.active
            found = self.query(f"#{'sql' if tab == 'output' else tab}-table") \
                if tab in ("output", "view") else None
            table = found.first(ResultTable) if found else None  # made when first shown
            if table is not None and table.display and table.parent is not None \
                    and table.parent.display:
                return table
        return self.image_tree

    def copy_text(self, value: bool) -> tuple[str, str] | None:
        """y: the tree node's path; Y: what its Text tab (x) shows, Kafka's text form (a
        leaf's value; a directory's children, as ``ls`` lists them)."""
        path = self.location()
        if path is None:
            return None
        return ("value", self.engine.text(path)) if value else ("path", path)

    # ------------------------------------------------------------ the command bar

    @on(CommandBar.Closed)
    def _bar_closed(self) -> None:
        if not self.detail.focus_table():
            self.focus_next()

    @on(CommandBar.Started)
    def _started(self, event: CommandBar.Started) -> None:
        bar = self.query_one(CommandBar)
        self.detail.show_running(event.line, lambda: bar.running)

    @on(CommandBar.SqlStarted)
    def _sql_started(self, event: CommandBar.SqlStarted) -> None:
        self.detail.show_sql_running(event.line, event.run)

    @on(CommandBar.SqlDone)
    def _sql_done(self, event: CommandBar.SqlDone) -> None:
        self.detail.show_sql_result(event.line, event.table, event.error, event.cancelled,
                                    event.seconds)

    @on(CommandBar.Ran)
    def _ran(self, event: CommandBar.Ran) -> None:
        if event.line.split()[:1] == ["at"] and not event.errors:
            self.post_message(ImageMoved())
        if event.table is not None:
            self.detail.show_table(event.line, event.table, event.lines, event.errors)
            return
        self.detail.show_output(event.line, event.lines, event.errors, event.finished)
