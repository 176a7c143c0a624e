"""The printer of command results: :func:`emit` prints a result the way every line-oriented
front end does (output on ``out``, warnings and errors on ``err``). The one-shot mode, the
REPL and the TUI all go through here; front-end state (the output format, the terminal width)
is given by the caller. The forms themselves are in :mod:`.textform` and :mod:`.jsonform`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterable
from itertools import islice
from typing import TYPE_CHECKING, TextIO

from ..tree.printer import tree_chunks
from . import results as r
from .jsonform import json_chunks, json_text, json_value
from .textform import text_lines

if TYPE_CHECKING:
    from .base import Result

Notes = Callable[[], Iterable[str]]
RUN = 4096  # lines of a streamed table written at a time


def emit(result: Result, out: TextIO, err: TextIO | None = None, *, output: str = "text",
         width: int | None = None, notes: Notes | None = None,
         show_errors: bool = True, said: Collection[str] = (),
         warnings_fail: bool = False) -> int:
    """Print a result (text or JSON) on ``out``, then its warnings, the ``notes`` found while
    rendering (records decoded on first use) and, with ``show_errors``, its errors on
    ``err`` (each line ``mdshell: ...``, the one style of every error line); return its
    exit code. Warnings in ``said`` (printed at load) are not repeated; with
    ``warnings_fail`` (``--strict``: they make the exit status 1) the command's own
    warnings are said as errors. In JSON, a table empty for a reason the text gives in its
    place (``controllers`` before metadata.version 3.7) says it on ``err`` as
    ``mdshell: note: ...``. Errors are read after the output: a lazy command adds them as it
    goes."""
    if output == "json":
        chunks = json_chunks(result.value)
        if chunks is not None:
            for chunk in chunks:
                out.write(chunk)
            out.write("\n")
        elif (data := json_value(result.value)) is not None:
            out.write(json_text(data))
            out.write("\n")
        if isinstance(result.value, r.Table) and not result.value.cells and result.value.note:
            # What the text says instead of an empty table: JSON's [] needs it as much.
            print(f"mdshell: note: {result.value.note}", file=err or sys.stderr)
    elif isinstance(result.value, r.Tree):  # 400k lines for 100k partitions: write runs
        for root in result.value.roots:
            for lines in tree_chunks(root.node, result.value.opts):
                out.write("\n".join(lines))
                out.write("\n")
    elif isinstance(result.value, r.Table) and isinstance(result.value.rows, r.RowStream):
        rows = text_lines(result.value, width)  # a row per partition: write runs of them
        while run := list(islice(rows, RUN)):
            out.write("\n".join(run))
            out.write("\n")
    else:
        for line in text_lines(result.value, width):
            out.write(line)
            out.write("\n")
    out.flush()
    err = err or sys.stderr
    # A load and a command reading the same file find the same problem: say it once.
    failing = set(result.warnings) if warnings_fail else set()
    for w in dict.fromkeys([*result.warnings, *(notes() if notes else ())]):
        if w in said:
            continue
        print(f"mdshell: {w}" if w in failing else f"mdshell: warning: {w}", file=err)
    if show_errors:
        for e in result.errors:
            print(f"mdshell: {e}", file=err)
    return result.code
