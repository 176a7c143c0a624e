"""Every use of pyspark's and Spark's internals, in one place (pyspark is pinned below the
next minor release in pyproject.toml; tests/test_compat.py fails loudly when an upgrade moves
one of them).

- The worker daemon (:mod:`.daemon`): ``pyspark.daemon.manager`` is started by our own daemon
  module (Spark's ``spark.python.daemon.module`` setting), after the installed pyspark is put
  ahead of the ``pyspark/python/lib/pyspark.zip`` Spark puts first on the workers' path.
- Arrow's JVM properties ``arrow.enable_unsafe_memory_access`` and
  ``arrow.enable_null_check_for_get``, read by Arrow's ``BoundsChecking`` and
  ``NullCheckingForGet`` classes in the jars pyspark ships: a local session's JVM turns Arrow's
  checks off (see ``session.LOCAL_JVM``).
- ``pyspark.sql.pandas.types.from_arrow_schema``: Spark's own Arrow-to-Spark type mapping.
- The planning workers of a Python data source read (``filters_pushed``): which one calls
  ``DataSource.reader()``, and the pushdown setting the one without pushdown was given.
- pyarrow's lazy pandas check (``arrow_without_pandas``): made once per process, on the
  first conversion of Python or numpy values.
- Spark's internal ``spark.sql.codegen.factoryMode`` (``INTERPRETED``): evaluate expressions
  without generating code, for a Spark Connect session's small tables.

No pyspark import at module level: the daemon imports this before it reorders the path.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

DAEMON_KEY = "spark.python.daemon.module"
# Spark compiles the code it generates for a query again in every Spark Connect session (each
# has a class loader of its own): a session's first query over a small table spent half its
# CPU in Janino. These settings evaluate the query as Spark does when generated code fails to
# compile; factoryMode is Spark's internal setting for that (ignored if it goes away).
INTERPRETED = {"spark.sql.codegen.factoryMode": "NO_CODEGEN",
               "spark.sql.codegen.wholeStage": "false"}
ARROW_UNSAFE = {"arrow.enable_unsafe_memory_access": "true",
                "arrow.enable_null_check_for_get": "false"}
ARROW_FAST_ACCESS = " ".join(f"-D{k}={v}" for k, v in ARROW_UNSAFE.items())
# Where pyspark ships the archive Spark puts on its workers' path, inside the installed package.
ZIP_IN_PACKAGE = ("python", "lib", "pyspark.zip")


def installed_first(path: list[str]) -> None:
    """Put the site directory of an installed pyspark before the ``pyspark.zip`` it ships
    (``<site>/pyspark/python/lib/pyspark.zip``); a zip from elsewhere is left first."""
    for i, entry in enumerate(path):
        if os.path.basename(entry) != ZIP_IN_PACKAGE[-1]:
            continue
        package = os.path.dirname(os.path.dirname(os.path.dirname(entry)))
        lib = os.path.join(package, *ZIP_IN_PACKAGE[:-1])
        if (os.path.basename(package) == "pyspark" and os.path.dirname(entry) == lib
                and os.path.isfile(os.path.join(package, "__init__.py"))):
            path.insert(i, os.path.dirname(package))
        return


def run_daemon_manager() -> None:
    """pyspark's worker daemon loop (forks a worker per task; never returns normally)."""
    from pyspark.daemon import manager

    manager()


def arrow_to_spark(arrow_schema: Any) -> StructType:
    """The Spark SQL schema of an Arrow schema, as Spark itself maps the types."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow_schema, prefer_timestamp_ntz=False)


# pyspark's planning workers of a Python data source read (pyspark/sql/worker/), which call
# ``DataSource.reader()`` from their ``_main``: the one that pushes filters (run only when the
# session has spark.sql.python.filterPushdown.enabled), and the one that plans without, whose
# local ``enable_pushdown`` is that setting (a reader with pushFilters fails when it is off).
PUSHDOWN_WORKER = "data_source_pushdown_filters.py"
PLAN_WORKER = "plan_data_source_read.py"
PLAN_WORKER_FLAG = "enable_pushdown"


def filters_pushed() -> bool | None:
    """Whether the Spark planning step calling ``reader()`` takes a reader with
    ``pushFilters`` (the session's ``spark.sql.python.filterPushdown.enabled``); None when
    not called from a planning worker known here (then the caller must not take filters
    unless asked)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_main":
            name = os.path.basename(frame.f_code.co_filename)
            if name == PUSHDOWN_WORKER:
                return True
            if name == PLAN_WORKER:
                flag = frame.f_locals.get(PLAN_WORKER_FLAG)
                return flag if isinstance(flag, bool) else None
        frame = frame.f_back  # type: ignore[assignment]
    return None


class _NoPandas:
    """A finder that refuses pandas (only while pyarrow makes its one check)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def arrow_without_pandas() -> None:
    """Let pyarrow convert Python and numpy values without importing pandas (a third of a
    second, more than the rest of a one-shot ``sql`` on Spark Connect imports). pyarrow asks
    once per process, on its first such conversion, whether pandas can be imported (to
    recognise pandas objects): asked now, while pandas is hidden, it says no and stops
    looking. Its pandas features (``to_pandas``) still import pandas when called. Nothing
    happens when pandas is imported already."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([0])
    finally:
        sys.meta_path.remove(finder)
