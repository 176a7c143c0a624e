"""The history's bars: changes (non-NoOp records) per offset interval, drawn from zero so a
quiet log's 440 and 441 look alike; an interval of NoOps only is a faint baseline. No
textual (Textual's Sparkline scales from the smallest value to the largest)."""

from __future__ import annotations

from rich.text import Text

BLOCKS = " ▁▂▃▄▅▆▇█"


def levels(counts: list[int], height: int) -> list[int]:
    """Each count in eighths of a cell, 0 to ``height * 8``, from zero (any change shows)."""
    top = max(counts, default=0)
    if top <= 0:
        return [0] * len(counts)
    return [-(-c * height * 8 // top) for c in counts]


def bars(changes: list[int], totals: list[int], height: int,
         cursor: int | None = None) -> Text:
    """``height`` rows of bars; NoOp-only intervals as a dim ▁ on the bottom row."""
    out = Text()
    lv = levels(changes, height)
    for row in range(height - 1, -1, -1):
        for i, level in enumerate(lv):
            fill = max(0, min(8, level - row * 8))
            style = "bold" if i == cursor else ""
            if fill == 0 and row == 0 and totals[i] > 0:
                out.append("▁", style="dim")
            else:
                out.append(BLOCKS[fill], style=style)
        if row:
            out.append("\n")
    return out
