"""``ls`` column layout, as Kafka's shell does it (column-major, widths = longest + 2)."""

from __future__ import annotations


def _schema(entries: list[str], ncols: int) -> tuple[list[int], int]:
    per_col = (len(entries) + ncols - 1) // ncols
    widths = [0] * ncols
    for i, e in enumerate(entries):
        col = i // per_col
        widths[col] = max(widths[col], len(e) + 2)
    return widths, per_col


def shown(name: str) -> str:
    """``name`` as a terminal shows it: each character that is not printable (a newline, an
    escape sequence's ESC, a byte that was not UTF-8) as ``?``, as GNU ls does."""
    return name if name.isprintable() else "".join(c if c.isprintable() else "?"
                                                   for c in name)


def layout(entries: list[str], width: int | None) -> list[str]:
    """Lines showing ``entries`` in as many columns as fit in ``width`` (None: one per line,
    names as they are; a width is a terminal's: names are :func:`shown`)."""
    if not entries:
        return []
    if width is None:
        return list(entries)
    entries = [shown(e) for e in entries]
    if width // 4 <= 1:
        return entries
    widths, per_col = [len(max(entries, key=len)) + 2], len(entries)
    for ncols in range(width // 4, 1, -1):
        w, p = _schema(entries, ncols)
        if w[-1] != 0 and sum(w) <= width:
            widths, per_col = w, p
            break
    lines = []
    ncols = len(widths)
    for row in range(per_col):
        parts = []
        for col in range(ncols):
            i = row + col * per_col
            if i < len(entries):
                text = entries[i]
                if col < ncols - 1:
                    text = text.ljust(widths[col])
                parts.append(text)
        lines.append("".join(parts))
    return lines
