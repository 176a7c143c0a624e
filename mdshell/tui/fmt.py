"""Words and times as the TUI shows them: one millisecond format everywhere (Kafka's own text
form, which drops trailing zeros, stays in the commands' output). No textual."""

from __future__ import annotations

from datetime import UTC, datetime


def ui_time(ms: int) -> str:
    """``2024-04-24T23:07:11.490Z``: always three digits of milliseconds ('-' when unknown);
    the form ``g`` and ``at`` accept back."""
    if ms < 0:
        return "-"
    try:
        t = datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, ValueError, OSError):
        return f"{ms} ms"
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``1 partition``, ``50 partitions``, ``2 entries`` (thousands separated)."""
    return f"{n:,} {noun if n == 1 else many or noun + 's'}"
