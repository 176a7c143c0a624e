"""Spark's errors in one line: what a Python worker's traceback, carried inside a Spark
error (local or over Spark Connect), says last."""

from __future__ import annotations

import re

_RAISED = re.compile(r"^\s*[\w.]+(Error|Exception)\b")


def worker_exception(text: str) -> str | None:
    """The last exception line of a Python traceback inside ``text`` (stripped); None when
    ``text`` holds no traceback, or no such line."""
    if "Traceback (most recent call last)" not in text:
        return None
    raised = [ln.strip() for ln in text.splitlines() if _RAISED.match(ln)]
    return raised[-1] if raised else None
