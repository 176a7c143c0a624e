"""The command history a front end lends to the ``history`` command.

A front end that keeps a history (the REPL, a script read from stdin) attaches a function that
returns its entries; ``history`` reads them. Where and how the entries are stored is the front
end's business (:mod:`mdshell.repl.history`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

_ATTR = "_mdshell_history"

Entries = Callable[[], Sequence[str]]


def attach(shell: object, entries: Entries) -> None:
    """Let the ``history`` command see a front end's entries (oldest first).

    Stored on the shell object itself so two shells (tests, a TUI next to a REPL) never share
    one history.
    """
    setattr(shell, _ATTR, entries)


def entries_of(shell: object) -> Sequence[str] | None:
    """The attached history entries, oldest first, or None when the front end keeps none."""
    entries: Entries | None = getattr(shell, _ATTR, None)
    return None if entries is None else entries()


def numbered(entries: Sequence[str], last: int | None = None) -> list[str]:
    """Kafka's ``% 5d  %s`` lines, numbered from 1 across the whole history."""
    start = 0 if last is None else max(len(entries) - max(last, 0), 0)
    return [f"{i + 1: 5d}  {text}" for i, text in enumerate(entries) if i >= start]
