"""Run ``sql`` against the shell's image: register the tables a query names, run it, render it.

Tables are built (through Arrow) only when a query names them, once per image: moving to
another offset with ``at`` gives new tables on the next query. A query error is one line —
Spark's own message, without the Java stack.

On a Spark Connect server (``session.remote()``) the session is mdshell's own client of it
(:mod:`.connectsessions`): a query is a :class:`~.connectsessions.Frame` instead of a
DataFrame, the tables are sent to the server (built here, from the image the shell shows;
once per image and server), a query's operations carry a tag instead of a job group, and
``--csv``/``--parquet`` are written here from the result (the server's files are not this
machine's).
"""

from __future__ import annotations

import atexit
import datetime as dt
import itertools
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from ..problems import CommandError
from . import tables
from .errorline import worker_exception
from .session import get_session, remote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .connectsessions import Frame, Remote

    Spark = SparkSession | Remote
    Query = DataFrame | Frame

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# name -> (the Loaded it was built from, show_secrets, the warnings of its reading, the
# session holding the view): a view stays valid while the first two hold, in that session.
_REGISTERED: dict[str, tuple[object, bool, list[str], object]] = {}
_SCRATCH: str | None = None  # where local tables are written as Parquet (removed at exit)
_FOLDERS: dict[str, str] = {}  # table name -> its current scratch folder
_STALE: list[str] = []  # scratch folders of replaced tables, removed once no view names them


def named_tables(query: str) -> list[str]:
    """The tables a query may use (a word equal to a table name; extra ones are harmless)."""
    words = {w.lower() for w in _WORD.findall(query)}
    return sorted(words & tables.TABLES.keys())


def register(spark: SparkSession, view: tables.View, names: list[str]) -> list[str]:
    """Make the named tables current; returns the warnings of their reading (kept with each
    table, so a query on a table built earlier still reports them)."""
    warnings: list[str] = []
    for name in names:
        held = _REGISTERED.get(name)
        if (held is None or held[0] is not view.loaded or held[1] != view.show_secrets
                or held[3] is not spark):
            table, found = tables.build_warned(name, view)
            frame(spark, name, table).createOrReplaceTempView(name)
            held = _REGISTERED[name] = (view.loaded, view.show_secrets, found, spark)
            _drop_stale()
        warnings += held[2]
    return list(dict.fromkeys(warnings))


def _drop_stale() -> None:
    """Remove the scratch files of a table's previous version once the view names the new
    one (a long session that moves in time would otherwise fill its scratch folder)."""
    while _STALE:
        shutil.rmtree(_STALE.pop(), ignore_errors=True)


def frame(spark: SparkSession, name: str, table: pa.Table) -> DataFrame:
    """A DataFrame of an Arrow table. On a local master it goes through a Parquet file in a
    scratch folder of this process (written by Arrow, read by Spark's vectorized reader):
    every query over a million-row table then scans columns instead of converting the Arrow
    rows again (several times faster from the second query on). A cluster's executors (and
    a Spark Connect server) cannot read the driver's files: there the table is shipped with
    ``createDataFrame``."""
    if remote() is not None or not (spark.sparkContext.master or "").startswith("local"):
        return spark.createDataFrame(table)
    import pyarrow.parquet as pq

    global _SCRATCH
    if _SCRATCH is None:
        _SCRATCH = tempfile.mkdtemp(prefix="mdshell-spark-")
        atexit.register(shutil.rmtree, _SCRATCH, True)
    folder = tempfile.mkdtemp(prefix=f"{name}-", dir=_SCRATCH)
    if name in _FOLDERS:  # removed by register once the view names the new folder
        _STALE.append(_FOLDERS[name])
    _FOLDERS[name] = folder
    pq.write_table(table, os.path.join(folder, "part-0.parquet"))
    return spark.read.parquet(folder)


def error_line(e: BaseException) -> str:
    """Spark's message in one line: the first line of an analysis or parse error, the last
    exception line of a Python worker's traceback."""
    text = str(e).strip()
    raised = worker_exception(text)
    if raised:
        return raised
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return type(e).__name__


def run(view: tables.View, query: str) -> tuple[Query, list[str]]:
    """The DataFrame of a query (on a Spark Connect server, the query ready to run there)
    and the warnings of the tables it reads; CommandError (one line) when Spark refuses
    it."""
    spark = get_session()  # first: says what to install when pyspark is missing
    if remote() is not None:
        return _remote_frame(spark, view, query)
    from pyspark.errors import PySparkException

    warnings = register(spark, view, named_tables(query))
    try:
        return spark.sql(query), warnings
    except PySparkException as e:
        raise CommandError(error_line(e)) from None


def _remote_frame(spark: Any, view: tables.View, query: str) -> tuple[Frame, list[str]]:
    from .connectclient import ConnectError

    try:
        frame: Frame
        frame, warnings = spark.frame(view, query, named_tables(query))
        return frame, warnings
    except ConnectError as e:
        raise CommandError(error_line(e)) from None


class Cancelled(CommandError):
    """Ctrl-C during a query: its Spark jobs were cancelled and have stopped."""


T = TypeVar("T")
_GROUPS = itertools.count(1)
CANCEL_WAIT_S = 60.0  # the longest a cancel waits for the query's tasks to stop


def cancellable(work: Callable[[], T]) -> T:
    """``work`` (Spark actions) in a thread of its own under its own job group, while this
    thread waits: Ctrl-C here (pyspark's handler cancels every job, then raises
    KeyboardInterrupt) cancels the group, waits until its tasks have stopped and raises
    :class:`Cancelled`. The waiting thread is never inside a Py4J call, so its connection to
    the JVM stays in step and the next command answers at once."""
    spark = get_session()
    group = f"mdshell-sql-{os.getpid()}-{next(_GROUPS)}"
    box: dict[str, Any] = {}
    # Not Thread.is_alive: a join that KeyboardInterrupt breaks can mark a running thread
    # as stopped (CPython gh-90882).
    ended = threading.Event()

    def target() -> None:
        try:
            set_group(spark, group, "mdshell sql")
            box["value"] = work()
        except BaseException as e:  # handed to the waiting thread
            box["error"] = e
        finally:
            clear_group(spark)
            ended.set()

    threading.Thread(target=target, name=group, daemon=True).start()
    try:
        while not ended.wait(0.1):
            pass
    except KeyboardInterrupt:
        left = _cancel(spark, group, ended)
        raise Cancelled(_cancelled_line(left)) from None
    if "error" in box:
        raise box["error"]
    return box["value"]


def _cancelled_line(left: int) -> str:
    if not left:
        return "query cancelled"
    return (f"query cancelled, but {left} of its Spark tasks still run after "
            f"{CANCEL_WAIT_S:.0f} s (Spark stops a task only between batches of rows; a nested "
            "loop join may run on): later queries wait for them")


def set_group(spark: Any, group: str, description: str) -> None:
    """Mark the jobs this thread starts from now on as ``group``'s (a job group; on a Spark
    Connect server, a tag of the operations this thread runs), to cancel them together."""
    if remote() is not None:
        spark.add_tag(group)
    else:
        spark.sparkContext.setJobGroup(group, description, interruptOnCancel=True)


def clear_group(spark: Any) -> None:
    """This thread's later jobs belong to no group."""
    try:
        if remote() is not None:
            spark.clear_tags()
        else:
            spark.sparkContext.setJobGroup("", "")
    except Exception:  # Spark went away: nothing to clear
        pass


def cancel_group(spark: Any, group: str) -> None:
    """Cancel the group's running jobs (Spark cancels only the active ones)."""
    if remote() is not None:
        spark.interrupt_tag(group)
    else:
        spark.sparkContext.cancelJobGroup(group)


def group_progress(spark: Any, group: str) -> tuple[int, int] | None:
    """(tasks done, tasks) over the group's running stages; None before they start, and on
    a Spark Connect server, whose client is told no progress."""
    if remote() is not None:
        return None
    tracker = spark.sparkContext.statusTracker()
    done = total = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for sid in info.stageIds if info is not None else ():
            stage = tracker.getStageInfo(sid)
            if stage is not None:
                done += stage.numCompletedTasks
                total += stage.numTasks
    return (done, total) if total else None


def _cancel(spark: Any, group: str, ended: threading.Event) -> int:
    """Cancel the group until its thread has ended and none of its tasks runs (Spark
    cancels only the active jobs, and a task stops a little after its job fails); returns
    the tasks still running when the wait ends."""
    deadline = time.monotonic() + CANCEL_WAIT_S
    left = 0
    while time.monotonic() < deadline:
        try:
            cancel_group(spark, group)
            left = _running_tasks(spark, group)
            if ended.is_set() and not left:
                return 0
            ended.wait(0.2)
        except KeyboardInterrupt:  # another Ctrl-C: the cancel is already under way
            continue
        except Exception:  # Spark went away: nothing left to cancel
            return 0
    return left


def _running_tasks(spark: Any, group: str) -> int:
    if remote() is not None:  # the interrupted operations have ended when the thread has
        return 0
    tracker = spark.sparkContext.statusTracker()
    n = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for sid in info.stageIds if info is not None else ():
            stage = tracker.getStageInfo(sid)
            n += stage.numActiveTasks if stage is not None else 0
    return n


def collect(df: Query) -> pa.Table:
    if remote() is not None:
        frame: Frame = df  # type: ignore[assignment]
        return frame.collect()
    from pyspark.errors import PySparkException

    try:
        return df.toArrow()  # type: ignore[union-attr]
    except PySparkException as e:
        raise CommandError(error_line(e)) from None


SHOWN_ROWS = 10_000  # rows a result shows (collected to the driver); files hold them all


def collect_limited(df: Query, limit: int = SHOWN_ROWS) -> tuple[pa.Table, int]:
    """At most ``limit`` rows, and how many the query gives (counted only when there are
    more): a million-row result never reaches the driver whole."""
    if remote() is not None:
        frame: Frame = df  # type: ignore[assignment]
        table = frame.collect(limit + 1)
        if table.num_rows <= limit:
            return table, table.num_rows
        return table.slice(0, limit), frame.count()
    table = collect(df.limit(limit + 1))  # type: ignore[union-attr]
    if table.num_rows <= limit:
        return table, table.num_rows
    from pyspark.errors import PySparkException

    try:
        total = int(df.count())
    except PySparkException as e:
        raise CommandError(error_line(e)) from None
    return table.slice(0, limit), total


def write_csv(df: Query, path: str) -> int:
    """The result as one CSV file, written by Spark's own writer (in parallel, never whole on
    the driver) into a folder beside ``path``, then joined under one header line. Lists and
    structs become JSON text. Returns the rows written."""
    where = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(where):
        raise CommandError(f"--csv {path}: cannot write (no folder {where})")
    if remote() is not None:
        frame: Frame = df  # type: ignore[assignment]
        return _csv_here(frame, path)
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    data: DataFrame = df  # type: ignore[assignment]
    nested = (ArrayType, MapType, StructType)
    flat = data.select([F.to_json(F.col(f"`{f.name}`")).alias(f.name)
                        if isinstance(f.dataType, nested) else F.col(f"`{f.name}`")
                        for f in data.schema.fields])
    parts = tempfile.mkdtemp(prefix=".mdshell-csv-", dir=where)
    try:
        try:
            flat.write.mode("overwrite").option("header", "false").csv(parts)
        except PySparkException as e:
            raise CommandError(error_line(e)) from None
        return _join_parts(parts, path, flat.columns)
    except OSError as e:
        raise CommandError(f"--csv {path}: cannot write ({e.strerror or e})") from None
    finally:
        shutil.rmtree(parts, ignore_errors=True)


def _csv_here(df: Frame, path: str) -> int:
    """A Spark Connect server's result written here as CSV (its own writer would write on the
    server's disks), each line as Spark's writer makes it, under the header line a local
    Spark's file has: collected through Arrow, so it must fit in memory."""
    import csv
    import io

    names, lines = df.csv_lines()
    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow(names)
    try:
        with open(path, "w", encoding="utf-8", newline="") as out:
            out.write(header.getvalue())
            for chunk in lines.column(0).chunks:
                out.writelines(f"{line}\n" for line in chunk.to_pylist())
    except OSError as e:
        raise CommandError(f"--csv {path}: cannot write ({e.strerror or e})") from None
    return lines.num_rows


def _join_parts(parts: str, path: str, columns: list[str]) -> int:
    import csv
    import io

    header = io.StringIO()
    csv.writer(header, lineterminator="\n").writerow(columns)
    rows = 0
    with open(path, "wb") as out:
        out.write(header.getvalue().encode())
        for name in sorted(os.listdir(parts)):
            if name.startswith("part-"):
                part = os.path.join(parts, name)
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
                with open(part, newline="", encoding="utf-8") as f:  # a value may hold a newline
                    rows += sum(1 for _ in csv.reader(f))
    return rows


def write_parquet(spark: Spark, df: Query, path: str) -> int:
    if os.path.exists(path):
        raise CommandError(f"--parquet {path}: already exists; give a new directory")
    if remote() is not None:  # the server's writer would write on the server's disks
        import pyarrow.parquet as pq

        table = collect(df)
        try:
            os.makedirs(path)
            pq.write_table(table, os.path.join(path, "part-0.parquet"))
        except OSError as e:
            raise CommandError(f"--parquet {path}: cannot write ({e.strerror or e})") from None
        return table.num_rows
    from pyspark.errors import PySparkException

    try:
        df.write.parquet(path)  # type: ignore[union-attr]
    except PySparkException as e:
        raise CommandError(error_line(e)) from None
    return int(spark.read.parquet(path).count())  # type: ignore[union-attr]


# ------------------------------------------------------------------ rendering


def json_value(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return v.isoformat().replace("+00:00", "Z")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, list):
        return [json_value(x) for x in v]
    if isinstance(v, dict):
        return {k: json_value(x) for k, x in v.items()}
    return v


def rows(table: pa.Table) -> list[dict[str, Any]]:
    return [{k: json_value(v) for k, v in row.items()} for row in table.to_pylist()]


def cell(v: Any) -> str:
    """One value as the text table (and the TUI's DataTable) shows it."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list | dict):
        return json.dumps(json_value(v), ensure_ascii=False)
    return str(json_value(v))


def text_lines(table: pa.Table, total: int | None = None) -> Iterator[str]:
    """An aligned table, then the row count (``total``: the query's, when more than the
    rows shown)."""
    names = table.column_names
    cells = [[cell(v) for v in row.values()] for row in table.to_pylist()]
    widths = [max([len(n), *(len(r[i]) for r in cells)]) for i, n in enumerate(names)]
    yield "  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)).rstrip()
    yield "  ".join("-" * w for w in widths)
    for r in cells:
        yield "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
    if total is not None and total > len(cells):
        yield (f"({total} rows; the first {len(cells)} shown: --csv FILE or --parquet DIR "
               "writes them all)")
        return
    yield f"({len(cells)} row{'s' if len(cells) != 1 else ''})"


def describe_tables() -> dict[str, dict[str, Any]]:
    """Every table with its columns and Spark SQL types (no session needed)."""
    from .compat import arrow_to_spark

    out: dict[str, dict[str, Any]] = {}
    for name, (schema, _, what) in tables.TABLES.items():
        struct = arrow_to_spark(schema)
        out[name] = {"description": what,
                     "columns": [{"name": f.name, "type": f.dataType.simpleString()}
                                 for f in struct.fields]}
    return out
