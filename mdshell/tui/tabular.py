"""A command's typed table (:class:`~mdshell.commands.results.Table`) as the rows of the detail
pane's DataTable, the one ``sql`` fills. No textual here: the command bar's worker calls it."""

from __future__ import annotations

from typing import Any

from ..commands import results as res
from ..commands.textform import cell
from .sqlrun import MAX_ROWS, SqlTable


def command_table(value: Any) -> SqlTable | None:
    """The table a command returned (cells as its text form writes them: lists ``a,b``,
    None ``-``), at most MAX_ROWS rows; None for every other kind of result."""
    if not isinstance(value, res.Table):
        return None
    rows = [[cell(v) for v in row] for row in value.cells[:MAX_ROWS]]
    return SqlTable(list(value.columns), rows, len(value.cells))
