"""``sql`` in the TUI: the query runs in a worker under its own Spark job group, so its
progress (tasks done of the running stages) can be read and Esc can cancel it.

No textual here, and pyspark only once a query runs (through the ``sql`` command's modules).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..commands.base import CommandError

if TYPE_CHECKING:
    from .engine import Engine

MAX_ROWS = 10_000  # rows put in the table; beyond, the count says how many there were
# Spark cancels the group's *active* jobs only: a query's next job (after a broadcast, say)
# would start anyway, so a cancelled query is cancelled again this often until it ends.
RECANCEL_S, RECANCEL_FOR_S = 0.5, 300.0
_IDS = itertools.count(1)
# A query's start and end times are read here: scenes (screenshots, snapshots) swap in a
# steady clock so that the time shown repeats from run to run.
clock: Callable[[], float] = time.perf_counter


@dataclass
class SqlTable:
    columns: list[str]
    rows: list[list[str]]
    total: int  # rows the query returned (``rows`` holds at most MAX_ROWS)
    warnings: list[str] = field(default_factory=list)  # of the tables' reading


class Cancelled(Exception):
    """The user pressed Esc."""


def wants_table(words: list[str]) -> bool:
    """``sql QUERY`` shown as a table (not --csv/--parquet, which write files, nor --help)."""
    return (len(words) > 1 and words[0] == "sql"
            and not any(w.split("=")[0] in ("--csv", "--parquet", "--help") for w in words))


def _starting() -> str:
    """What the first phase is: Spark of our own starting, or a Connect server reached."""
    from ..commands.sparkcmds import spark_remote  # the one door to mdshell.spark

    remote = spark_remote()
    return (f"connecting to Spark Connect at {remote}" if remote
            else "starting Spark (the first query takes 10-20 s)")


class SqlRun:
    """One query: ``run`` in a worker thread; ``progress`` and ``cancel`` from the UI."""

    def __init__(self, engine: Engine, query: str, line: str = "") -> None:
        self.engine = engine
        self.query = query
        self.line = line or f"sql {query}"
        self.started = clock()
        self.group = f"mdshell-tui-sql-{next(_IDS)}"
        self.phase = _starting()
        self.cancelled = False
        self._spark: Any = None
        self._q: Any = None  # mdshell.spark.query, once a query runs
        self._lock = threading.Lock()
        self._ended = threading.Event()

    def run(self) -> SqlTable:
        try:
            return self._run()
        finally:
            self._ended.set()

    def _run(self) -> SqlTable:
        from ..commands.sparkcmds import _spark_modules  # the one door to mdshell.spark

        q = _spark_modules()
        spark = q.get_session()
        with self._lock:
            self._spark, self._q = spark, q
            if self.cancelled:
                raise Cancelled
        # Pinned threads (pyspark's default): the group belongs to this thread's jobs only.
        q.set_group(spark, self.group, f"mdshell sql: {self.query[:80]}")
        with self.engine.lock:  # the image shown now (live polls move it along)
            session = self.engine.session
            view = q.tables.View(session.source, session.loaded, self.engine.opts.show_secrets)
        self.phase = "building tables"
        try:
            df, warnings = q.run(view, self.query)
            if self.cancelled:
                raise Cancelled
            self.phase = "running"
            table, total = q.collect_limited(df, MAX_ROWS)
        except CommandError:
            if self.cancelled:
                raise Cancelled from None
            raise
        finally:
            q.clear_group(spark)  # later jobs of this thread: no group
        rows = [[q.cell(v) for v in r.values()] for r in table.to_pylist()]
        return SqlTable(list(table.column_names), rows, total, warnings)

    def seconds(self) -> float:
        return clock() - self.started

    def progress(self) -> tuple[int, int] | None:
        """(tasks done, tasks) over the query's running stages; None before they start."""
        spark = self._spark
        if spark is None:
            return None
        return self._q.group_progress(spark, self.group)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            spark = self._spark
        if spark is not None:
            threading.Thread(target=self._keep_cancelling, args=(spark,), daemon=True,
                             name=f"{self.group}-cancel").start()

    def _keep_cancelling(self, spark: Any) -> None:
        deadline = time.monotonic() + RECANCEL_FOR_S
        while time.monotonic() < deadline:
            try:
                self._q.cancel_group(spark, self.group)
            except Exception:  # Spark went away: nothing left to cancel
                return
            if self._ended.wait(RECANCEL_S):
                return

