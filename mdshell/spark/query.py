"""Run ``sql`` against the shell's image: register the tables a query names, run it, render it.

Tables are built (through Arrow) only when a query names them, once per image: moving to
another offset with ``at`` gives new tables on the next query. A query error is one line —
Spark's own message, without the Java stack.
"""

from __future__ import annotations

import atexit
import datetime as dt
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..problems import CommandError
from . import tables
from .session import get_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# name -> (the Loaded it was built from, show_secrets): a view stays valid while both hold.
_REGISTERED: dict[str, tuple[object, bool]] = {}
_SCRATCH: str | None = None  # where local tables are written as Parquet (removed at exit)
_FOLDERS: dict[str, str] = {}  # table name -> its current scratch folder
_STALE: list[str] = []  # scratch folders of replaced tables, removed once no view names them


def named_tables(query: str) -> list[str]:
    """The tables a query may use (a word equal to a table name; extra ones are harmless)."""
    words = {w.lower() for w in _WORD.findall(query)}
    return sorted(words & tables.TABLES.keys())


def register(spark: SparkSession, view: tables.View, names: list[str]) -> None:
    for name in names:
        key = (view.loaded, view.show_secrets)
        held = _REGISTERED.get(name)
        if held is not None and held[0] is key[0] and held[1] == key[1]:
            continue
        frame(spark, name, tables.build(name, view)).createOrReplaceTempView(name)
        _REGISTERED[name] = key
        _drop_stale()


def _drop_stale() -> None:
    """Remove the scratch files of a table's previous version once the view names the new
    one (a long session that moves in time would otherwise fill its scratch folder)."""
    while _STALE:
        shutil.rmtree(_STALE.pop(), ignore_errors=True)


def frame(spark: SparkSession, name: str, table: pa.Table) -> DataFrame:
    """A DataFrame of an Arrow table. On a local master it goes through a Parquet file in a
    scratch folder of this process (written by Arrow, read by Spark's vectorized reader):
    every query over a million-row table then scans columns instead of converting the Arrow
    rows again (several times faster from the second query on). A cluster's executors cannot
    read the driver's files: there the table is shipped with ``createDataFrame``."""
    if not (spark.sparkContext.master or "").startswith("local"):
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
    if "Traceback (most recent call last)" in text:
        raised = [ln.strip() for ln in text.splitlines()
                  if re.match(r"^\s*[\w.]+(Error|Exception)\b", ln)]
        if raised:
            return raised[-1]
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return type(e).__name__


def run(view: tables.View, query: str) -> DataFrame:
    """The DataFrame of a query; CommandError (one line) when Spark refuses it."""
    spark = get_session()  # first: says what to install when pyspark is missing
    from pyspark.errors import PySparkException

    register(spark, view, named_tables(query))
    try:
        return spark.sql(query)
    except PySparkException as e:
        raise CommandError(error_line(e)) from None


def collect(df: DataFrame) -> pa.Table:
    from pyspark.errors import PySparkException

    try:
        return df.toArrow()
    except PySparkException as e:
        raise CommandError(error_line(e)) from None


def write_csv(table: pa.Table, path: str) -> None:
    import pyarrow.csv as pacsv

    flat = pa.table({name: _flat(col) for name, col in zip(table.column_names, table.columns,
                                                             strict=True)})
    try:
        pacsv.write_csv(flat, path)
    except OSError as e:
        raise CommandError(f"--csv {path}: cannot write ({e.strerror or e})") from None


def write_parquet(spark: SparkSession, df: DataFrame, path: str) -> int:
    from pyspark.errors import PySparkException

    if os.path.exists(path):
        raise CommandError(f"--parquet {path}: already exists; give a new directory")
    try:
        df.write.parquet(path)
    except PySparkException as e:
        raise CommandError(error_line(e)) from None
    return int(spark.read.parquet(path).count())  # from the files' footers


def _flat(col: pa.ChunkedArray) -> pa.ChunkedArray | list[Any]:
    """CSV has no lists or structs: such values become JSON text."""
    if pa.types.is_nested(col.type):
        return [None if v is None else json.dumps(v, default=str) for v in col.to_pylist()]
    return col


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


def text_lines(table: pa.Table) -> Iterator[str]:
    """An aligned table, then the row count."""
    names = table.column_names
    cells = [[cell(v) for v in row.values()] for row in table.to_pylist()]
    widths = [max([len(n), *(len(r[i]) for r in cells)]) for i, n in enumerate(names)]
    yield "  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)).rstrip()
    yield "  ".join("-" * w for w in widths)
    for r in cells:
        yield "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
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
