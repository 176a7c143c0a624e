"""The image as a tree, listed lazily: a node's children are read when it opens, a page at a
time, and a jump far into a long list (topic-4242 of 5,000) lists the page around it, not
every page before it (``… N earlier`` and ``… N more`` open the neighbours).

``F`` narrows the list the cursor is in (the children of an open node, or the node's
siblings) to the names holding the text, over all of them, not only the page on show:
``orders`` under Topics finds every such topic of 5,000. The filtered node's label says so;
Esc in the bar (or an empty text) shows them all again, the cursor back where ``F`` was.
The list is held by its path (``filter_key``), never by its node: narrowing the sections
refills the tree, which makes every node new."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.text import Text
from textual import on
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from .palette import Palette
from .sections import SECTIONS
from .textual_compat import lay_out
from .widgets import palette_of, state_text

if TYPE_CHECKING:
    from .engine import Engine

PAGE = 300  # children added per step: a 10k-partition topic opens at once
FILTER_PAGE = 100  # the same under a filter (F): each key typed lists them again
MORE = "\0more:"  # a "more" node's data: MORE + start + ":" + parent path
EARLIER = "\0earlier:"  # an "earlier" node's data: EARLIER + end + ":" + parent path
ROOT = ""  # the sections' list: the filters' key for the tree's root


def is_page_node(data: str | None) -> bool:
    """Whether a node is "… more" or "… earlier" (not a path)."""
    return data is not None and (data.startswith(MORE) or data.startswith(EARLIER))


class ImageTree(Tree[str]):
    """Children are listed when a node is first expanded, never before."""

    DEFAULT_CSS = """
    ImageTree { width: 40%; min-width: 28; border-right: vkey $primary-darken-2; }
    """

    def __init__(self, engine: Engine) -> None:
        super().__init__("/", data=None, id="tree")
        self.engine = engine
        self.show_root = False
        self.guide_depth = 2
        self.loaded_paths: set[str] = set()
        self.nodes: dict[str, TreeNode[str]] = {}  # path -> node, for every node listed
        self.filters: dict[str, str] = {}  # path ("" the root) -> the text F narrows it to
        self.base_labels: dict[str, Text] = {}  # a filtered node's label without the filter
        self.filter_key: str | None = None  # the list F narrows, by path
        self.filter_from: str | None = None  # the cursor's path when F was pressed
        self.faults: set[str] = set()  # paths holding a failing or warning health item

    def get_label_width(self, node: TreeNode[str]) -> int:
        """A label's width from its text (Textual's own renders every label to measure it,
        which it does for every line listed whenever the tree's style changes: a focus
        change, with 600 topics listed, cost 20 ms)."""
        label = node.label
        width = label.cell_len if isinstance(label, Text) else cell_len(str(label))
        if node.allow_expand:
            width += cell_len(self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE)
        return width

    # ------------------------------------------------------------ listing

    def fill(self) -> None:
        """The sections (Brokers, Topics...), collapsed."""
        self.clear()
        self.loaded_paths.clear()
        self.nodes.clear()
        text = self.filters.get(ROOT, "").lower()
        for label, path in SECTIONS:
            if text in label.lower():
                self.nodes.setdefault(path, self.root.add(self._label(label, path, True),
                                                          data=path))
        self.root.expand()

    def refill(self, cursor: str | None = None) -> None:
        """The tree over a new image (time travel, live records), keeping what was open, the
        cursor (or putting it on ``cursor``) and the scroll position; paths gone from the
        image just close."""
        opened = [p for p, n in self.nodes.items() if n.is_expanded]
        if cursor is None and self.cursor_node is not None \
                and not is_page_node(self.cursor_node.data):
            cursor = self.cursor_node.data
        scroll_y = self.scroll_y
        self.fill()
        for path in opened:  # parents were added (and opened) before their children
            node = self.nodes.get(path)
            if node is not None:
                node.expand()
                self.load_children(node)
        target = self.find(cursor) if cursor else None
        lay_out(self)
        if target is not None:
            self.cursor_line = target.line
        self.scroll_to(y=scroll_y, animate=False)
        # Keys pressed during the refill moved a cursor over the old lines: the detail pane
        # follows wherever the cursor is now.
        self.call_after_refresh(self.announce)

    def relabel(self) -> None:
        """The labels again (the health checks came in: ✗ marks what they found)."""
        for path, node in self.nodes.items():
            if path in self.base_labels:
                continue  # a filtered list keeps its "[filter: ...]"
            name = path.rsplit("/", 1)[-1] if node.parent is not self.root else None
            label = next((lb for lb, p in SECTIONS if p == path), None) \
                if name is None else name
            if label is not None:
                node.set_label(self._label(label, path, name is None))

    def _label(self, name: str, path: str, section: bool = False) -> Text:
        pal = palette_of(self.app)
        t = Text()
        if path in self.faults:
            t.append("✗ ", style=pal.fail)
        t.append(name, style="bold" if section else "")
        if path.startswith("/image/cluster/brokers/"):
            try:
                state = self.engine.broker_states().get(int(name))
            except ValueError:
                state = None
            if state:
                t.append("  ")
                t.append_text(state_text(state, pal))
        text = self.filters.get(path)
        return suffixed(t, text, pal) if text else t

    def load_children(self, node: TreeNode[str]) -> None:
        path = node.data
        if path is None or is_page_node(path) or path in self.loaded_paths:
            return
        self.loaded_paths.add(path)
        self.load_page(node, path, 0)

    def page_size(self, path: str) -> int:
        return FILTER_PAGE if self.filters.get(path) else PAGE

    def load_page(self, node: TreeNode[str], path: str, start: int,
                  before: TreeNode[str] | None = None, earlier: bool = False) -> None:
        """Add the children from ``start`` (a page; before ``before`` if given), with an
        "earlier" node above them when asked and the list does not start there, and a
        "more" node below when it goes on (only when adding at the end)."""
        size = self.page_size(path)
        entries, total = self.engine.page(path, start, size, self.filters.get(path))
        if earlier and start > 0:
            node.add_leaf(Text(f"… {start:,} earlier (Enter shows the previous {size})",
                               style="dim"), data=f"{EARLIER}{start}:{path}", before=before)
        for e in entries:
            label = self._label(e.name, e.path)
            added = (node.add(label, data=e.path, before=before) if e.is_dir
                     else node.add_leaf(label, data=e.path, before=before))
            self.nodes[e.path] = added
        shown = start + len(entries)
        if before is None and shown < total:
            node.add_leaf(Text(f"… {total - shown:,} more (Enter shows the next {size})",
                               style="dim"), data=f"{MORE}{shown}:{path}")

    def load_window(self, node: TreeNode[str], path: str, around: int) -> None:
        """List the page of ``path``'s children around position ``around`` (a jump far
        into a long list), in place of what was listed."""
        for child in node.children:
            self.nodes.pop(child.data or "", None)
        self._forget_below(path)
        node.remove_children()
        self.load_page(node, path, max(0, around - self.page_size(path) // 2), earlier=True)

    def _forget_below(self, path: str) -> None:
        prefix = path.rstrip("/") + "/"
        for p in [p for p in self.nodes if p.startswith(prefix)]:
            del self.nodes[p]
        self.loaded_paths -= {p for p in self.loaded_paths if p.startswith(prefix)}

    def open_page_node(self, page: TreeNode[str]) -> TreeNode[str] | None:
        """Enter on "… more" or "… earlier": the next (previous) page in its place; the
        first node of the page shown."""
        data, parent = page.data or "", page.parent
        assert parent is not None
        kind = MORE if data.startswith(MORE) else EARLIER
        at, _, path = data[len(kind):].partition(":")
        if kind == MORE:
            page.remove()
            count = len(parent.children)
            self.load_page(parent, path, int(at))
            return parent.children[count] if len(parent.children) > count else None
        first = next((c for c in parent.children if c is not page), None)
        page.remove()
        start = max(0, int(at) - self.page_size(path))
        self.load_page(parent, path, start, before=first, earlier=True)
        return first

    @on(Tree.NodeSelected)
    def _selected(self, event: Tree.NodeSelected[str]) -> None:
        if is_page_node(event.node.data):
            event.stop()
            shown = self.open_page_node(event.node)
            if shown is not None:
                lay_out(self)
                self.move_cursor(shown)

    @on(Tree.NodeExpanded)
    def _expanded(self, event: Tree.NodeExpanded[str]) -> None:
        self.load_children(event.node)
        # Keys pressed before the children arrived moved the cursor over the old lines:
        # announce the node it is on now.
        self.call_after_refresh(self.announce)

    def announce(self) -> None:
        node = self.cursor_node
        if node is not None:
            self.post_message(Tree.NodeHighlighted(node))

    # ------------------------------------------------------------ finding a path

    def find(self, path: str) -> TreeNode[str] | None:
        """Open the way to ``path`` and return its node (None: not in the tree); a long
        list is listed around the node, not from its start."""
        if path in self.nodes and self._shown(self.nodes[path]):
            return self.nodes[path]
        best = None
        for section in self.root.children:
            p = section.data or ""
            if p != "/" and (path == p or path.startswith(p.rstrip("/") + "/")):
                best = section
        if best is None:
            best = next((n for n in self.root.children if n.data == "/"), None)
        node = best
        while node is not None and node.data != path:
            node.expand()
            self.load_children(node)
            node = self._child_towards(node, path)
        return node

    def _shown(self, node: TreeNode[str]) -> bool:
        """Whether every parent of ``node`` is open (so it has a line)."""
        parent = node.parent
        while parent is not None and parent is not self.root:
            if not parent.is_expanded:
                return False
            parent = parent.parent
        return True

    def _child_towards(self, node: TreeNode[str], path: str) -> TreeNode[str] | None:
        """The child of ``node`` on the way to ``path``, listing the page that holds it."""
        for child in node.children:
            p = child.data or ""
            if path == p or path.startswith(p + "/"):
                return child
        base = node.data or ""
        name = path[len(base.rstrip("/")) + 1:].split("/", 1)[0]
        at = self.engine.position(base, name, self.filters.get(base))
        if at is None:
            return None
        self.load_window(node, base, at)
        want = f"{base.rstrip('/')}/{name}"
        return self.nodes.get(want)

    def select(self, node: TreeNode[str]) -> None:
        """The cursor on ``node``, its line in the middle of the view once the tree is laid
        out again (a jump's target is in sight, not on the last line)."""
        lay_out(self)
        self.move_cursor(node)
        self.call_after_refresh(self._center, node)

    def _center(self, node: TreeNode[str]) -> None:
        if self.cursor_node is not node or node.line < 0:
            return  # the cursor moved on meanwhile
        middle = max(0, node.line - self.scrollable_content_region.height // 2)
        self.scroll_to(y=middle, animate=False)

    # ------------------------------------------------------------ filter (F)

    @property
    def filter_text(self) -> str:
        key = self.filter_key if self.filter_key is not None else self._key(self._list_node())
        return self.filters.get(key, "")

    def _list_node(self) -> TreeNode[str]:
        """The node whose children the filter narrows."""
        node = self.cursor_node
        if node is None:
            return self.root
        if node.is_expanded and node.children:
            return node
        return node.parent or self.root

    def _key(self, node: TreeNode[str]) -> str:
        return ROOT if node is self.root else (node.data or ROOT)

    def _chosen(self) -> TreeNode[str] | None:
        """The node of the list chosen when F was pressed, as the tree holds it now."""
        key = self.filter_key
        if key is None:
            return None
        return self.root if key == ROOT else self.nodes.get(key)

    def filter_name(self) -> str:
        """What the bar says it filters (and the list it will narrow, chosen now)."""
        node = self._list_node()
        self.filter_key = self._key(node)
        cursor = self.cursor_node
        self.filter_from = cursor.data if cursor is not None \
            and not is_page_node(cursor.data) else None
        if node is self.root:
            return "sections"
        label = str(self.base_labels.get(self._key(node), node.label))
        return label.split("  ")[0].removeprefix("✗ ")

    def apply_filter(self, text: str) -> tuple[int, int]:
        """Narrow the chosen list to ``text``; (names shown, names in all)."""
        if self.filter_key is None:
            self.filter_name()
        key = self.filter_key or ROOT
        if text:
            self.filters[key] = text
        else:
            self.filters.pop(key, None)
        if key == ROOT:
            self.refill(None if text else self.filter_from)  # all shown: back where F was
            return len(self.root.children), len(SECTIONS)
        node = self._chosen()
        if node is None:  # gone from the image since F (time travel, live records)
            return 0, 0
        self._relabel(node, key, text)
        self._forget_below(key)
        self.loaded_paths.add(key)
        # The cursor on the list's node while typing (the detail pane stays, no work per
        # key); on its first name once the filter is kept (done); back where F was once
        # all show (the page around it listed, however far down the list it is).
        back = None if text or self.filter_from is None else self.filter_from
        at = self.engine.position(key, back[len(key.rstrip("/")) + 1:].split("/")[0]) \
            if back is not None and back.startswith(key.rstrip("/") + "/") else None
        if at is not None:
            self.load_window(node, key, at)
        else:
            node.remove_children()
            self.load_page(node, key, 0)
        node.expand()
        found = self.find(back) if back is not None else None
        self.select(found or node)
        return self.engine.page(key, 0, 0, text)[1], self.engine.page(key, 0, 0)[1]

    def _relabel(self, node: TreeNode[str], key: str, text: str) -> None:
        base = self.base_labels.setdefault(key, Text(node.label) if isinstance(node.label, str)
                                           else node.label.copy())
        if not text:
            node.set_label(base)
            del self.base_labels[key]
            return
        node.set_label(suffixed(base, text, palette_of(self.app)))

    def filter_done(self) -> None:
        """Enter in the bar: the cursor on the first name the filter kept."""
        node = self._chosen()
        if node is not None and node is not self.root and node.children:
            self.select(node.children[0])


def suffixed(label: Text, text: str, pal: Palette) -> Text:
    """``label`` saying it is filtered (and by what)."""
    out = label.copy()
    out.append(f"  [filter: {text}]", style=f"bold {pal.warn}".strip())
    return out
