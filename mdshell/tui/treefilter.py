"""``F`` on the tree: the list the cursor is in (the children of an open node, or the
node's siblings) narrows to the names holding the text, over all of them, not only the page
on show: ``orders`` under Topics finds every such topic of 5,000. The filtered node's label
says so; Esc in the bar (or an empty text) shows them all again.

The list is held by its path (``tree.filter_key``), never by its node: narrowing the
sections refills the tree, which makes every node new, the root too (``Tree.clear``), so a
node kept from the ``F`` press is a detached one after the first key."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

if TYPE_CHECKING:
    from textual.widgets.tree import TreeNode

    from .browser import ImageTree

ROOT = ""  # the sections' list: the filters' key for the tree's root


def list_node(tree: ImageTree) -> TreeNode[str]:
    """The node whose children the filter narrows."""
    node = tree.cursor_node
    if node is None:
        return tree.root
    if node.is_expanded and node.children:
        return node
    return node.parent or tree.root


def key_of(tree: ImageTree, node: TreeNode[str]) -> str:
    return ROOT if node is tree.root else (node.data or ROOT)


def chosen(tree: ImageTree) -> TreeNode[str] | None:
    """The node of the list chosen when F was pressed, as the tree holds it now."""
    key = tree.filter_key
    if key is None:
        return None
    return tree.root if key == ROOT else tree.nodes.get(key)


def name(tree: ImageTree) -> str:
    """What the bar says it filters (and the list it will narrow, chosen now)."""
    node = list_node(tree)
    tree.filter_key = key_of(tree, node)
    tree.filter_from = tree.cursor_node.data if tree.cursor_node is not None else None
    if node is tree.root:
        return "sections"
    label = str(tree.base_labels.get(key_of(tree, node), node.label))
    return label.split("  ")[0].removeprefix("✗ ")


def apply(tree: ImageTree, text: str) -> tuple[int, int]:
    """Narrow the chosen list to ``text``; (names shown, names in all)."""
    if tree.filter_key is None:
        name(tree)
    key = tree.filter_key or ROOT
    if text:
        tree.filters[key] = text
    else:
        tree.filters.pop(key, None)
    if key == ROOT:
        from .engine import SECTIONS

        tree.refill(None if text else tree.filter_from)  # all shown: back where F was
        return len(tree.root.children), len(SECTIONS)  # what the refill shows
    node = chosen(tree)
    if node is None:  # gone from the image since F (time travel, live records)
        return 0, 0
    _relabel(tree, node, key, text)
    for path in [p for p in tree.nodes if p.startswith(key.rstrip("/") + "/")]:
        del tree.nodes[path]
    tree.loaded_paths -= {p for p in tree.loaded_paths if p.startswith(key.rstrip("/") + "/")}
    tree.loaded_paths.add(key)
    node.remove_children()
    tree.load_page(node, key, 0)
    node.expand()
    # The cursor on the list's node while typing (the detail pane stays, no work per key);
    # on its first name once the filter is kept (done); back where F was once all show.
    back = None if text or tree.filter_from is None else tree.nodes.get(tree.filter_from)
    tree.call_after_refresh(tree.move_cursor, back or node)
    engine = tree.app.engine  # type: ignore[attr-defined]
    return engine.page(key, 0, 0, text)[1], engine.page(key, 0, 0)[1]


def _relabel(tree: ImageTree, node: TreeNode[str], key: str, text: str) -> None:
    base = tree.base_labels.setdefault(key, Text(node.label) if isinstance(node.label, str)
                                       else node.label.copy())
    if not text:
        node.set_label(base)
        del tree.base_labels[key]
        return
    node.set_label(suffixed(base, text))


def suffixed(label: Text, text: str) -> Text:
    """``label`` saying it is filtered (and by what)."""
    out = label.copy()
    out.append(f"  [filter: {text}]", style="bold yellow")
    return out


def sections(tree: ImageTree, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The sections the root's filter keeps."""
    text = tree.filters.get(ROOT, "").lower()
    return [(label, path) for label, path in pairs if text in label.lower()]



def done(tree: ImageTree) -> None:
    """Enter in the bar: the cursor on the first name the filter kept."""
    node = chosen(tree)
    if node is not None and node is not tree.root and node.children:
        tree.move_cursor(node.children[0])
