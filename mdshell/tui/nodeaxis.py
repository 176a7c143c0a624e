"""The nodes' logs side by side on one offset axis: a bar per node, each column a stretch of
offsets, drawn by what the node holds there (as the quorum's log, not committed yet, or
records Kafka truncates when the node rejoins), then a ruler with the offsets that matter.

The axis shows the whole log when it fits; a long log is shown from a little before the
first offset where something differs (a node parts, the committed end, a node behind), so
that the divergence has room. State-free: rich text from :class:`.noderows.NodesView`."""

from __future__ import annotations

from rich.text import Text

from .noderows import NodeLine, NodesView

HELD, UNSURE, LOST, NONE = "█", "▒", "╳", "·"
LABEL = 10  # the bars' left column: "node 12 * "


def offset_range(view: NodesView, columns: int) -> tuple[int, int] | None:
    """The offsets the axis shows (None: no node holds any)."""
    starts = [n.start for n in view.nodes if n.start is not None]
    ends = [n.end for n in view.nodes if n.end is not None]
    if not starts or not ends:
        return None
    low, high = min(starts), max(ends)
    marks = [n.tail for n in view.nodes if n.tail is not None]
    if view.committed is not None and view.committed < high:
        marks.append(view.committed + 1)
    marks += [n.end + 1 for n in view.nodes if n.end is not None and n.end < high]
    if not marks or high - low + 1 <= columns:
        return low, high
    first = min(marks)
    return max(low, first - 2 * (high - first + 1)), high  # the rest in the right third


def bars(view: NodesView, width: int, styles: dict[str, str]) -> list[Text]:
    """A line per node, then the ruler; ``styles`` maps HELD, UNSURE, LOST, NONE to rich
    styles."""
    columns = max(10, width - LABEL)
    span = offset_range(view, columns)
    if span is None:
        return [Text("no node holds any offset", style="dim")]
    cells = _cells(span[0], span[1], columns)
    lines = [_bar(node, cells, view.committed, styles) for node in view.nodes]
    lines.append(_ruler(view, cells))
    return lines


def _cells(low: int, high: int, columns: int) -> list[tuple[int, int]]:
    """The offsets each column stands for: a few columns an offset when they fit (at most
    4), else a stretch of offsets a column."""
    count = high - low + 1
    if count <= columns:
        wide = max(1, min(4, columns // count))
        return [(o, o) for o in range(low, high + 1) for _ in range(wide)]
    cuts = [low + count * c // columns for c in range(columns + 1)]
    return [(cuts[c], cuts[c + 1] - 1) for c in range(columns)]


def _bar(node: NodeLine, cells: list[tuple[int, int]], committed: int | None,
         styles: dict[str, str]) -> Text:
    t = Text(f"node {node.label}{' *' if node.quorum else ''}"[:LABEL - 1].ljust(LABEL))
    for first, last in cells:
        ch = _column(node, first, last, committed)
        t.append(ch, style=styles.get(ch, ""))
    return t


def _column(node: NodeLine, first: int, last: int, committed: int | None) -> str:
    """What the node holds at offsets ``first..last``: the gravest of it."""
    if node.start is None or node.end is None or last < node.start or first > node.end:
        return NONE
    if node.tail is not None and last >= node.tail:
        return LOST
    if committed is not None and last > committed:
        return UNSURE
    return HELD


def _ruler(view: NodesView, cells: list[tuple[int, int]]) -> Text:
    """The offsets that matter under their first columns: the axis' ends, where nodes part,
    the committed end, where a node's log ends; a label that would run into another is left
    out."""
    low, high = cells[0][0], cells[-1][1]

    def column(offset: int) -> int:
        return next((c for c, (_, last) in enumerate(cells) if last >= offset), len(cells) - 1)

    marks = [low, high, *(n.tail for n in view.nodes if n.tail is not None)]
    marks += [n.end for n in view.nodes if n.end is not None and low <= n.end < high]
    if view.committed is not None and low <= view.committed < high:
        marks.append(view.committed)
    line = [" "] * (len(cells) + 12)
    taken: list[tuple[int, int]] = []
    for offset in sorted(set(marks)):
        at = column(offset)
        text = f"^{offset}"
        if any(a <= at + len(text) and at <= b + 1 for a, b in taken):
            continue
        line[at:at + len(text)] = list(text)
        taken.append((at, at + len(text) - 1))
    return Text(" " * LABEL + "".join(line).rstrip(), style="dim")


def legend(styles: dict[str, str]) -> Text:
    return Text.assemble(
        (HELD, styles.get(HELD, "")), " as the quorum's log   ",
        (UNSURE, styles.get(UNSURE, "")), " not committed when copied   ",
        (LOST, styles.get(LOST, "")), " truncated when the node rejoins   ",
        (NONE, styles.get(NONE, "")), " not held   * the quorum's log")
