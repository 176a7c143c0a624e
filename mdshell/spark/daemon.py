"""Spark's Python worker daemon for a local session, with pyspark's bytecode cached.

Spark puts pyspark's zip archive first on its Python workers' path, and Python caches no
bytecode for modules it imports from a zip: every worker forked for a query compiled
``pyspark.worker`` and the modules it imports from source again (about 0.3 s of CPU each, on
every core, at a session's first query). A local session's workers run this interpreter,
whose installed pyspark is the one that archive ships in. This daemon puts the installed copy
ahead of the archive, so its cached bytecode is used, and imports the worker module once
before forking: it starts no thread (numpy and pyarrow do, so they stay after the fork).

The reader's modules (numpy, pyarrow, pandas, which pyarrow imports on its first array, and
mdshell's) are imported here too, once, instead of in each worker (about 0.45 s of CPU each).
Both numpy and pyarrow start a thread when imported (OpenBLAS's pool, jemalloc's background
purger) and a fork keeps only the forking thread; two settings make them start none, and the
modules are preloaded only when the environment does not set those otherwise.
"""

from __future__ import annotations

import os
import sys

from mdshell.spark.compat import installed_first, run_daemon_manager

__all__ = ["installed_first", "preload"]


# Settings under which numpy and pyarrow start no thread when imported.
SINGLE_THREADED = {"OPENBLAS_NUM_THREADS": "1", "JE_ARROW_MALLOC_CONF": "background_thread:false"}


def preload(environ: dict[str, str] | os._Environ[str]) -> None:
    """Import the reader's modules now, when the settings that keep numpy and pyarrow from
    starting threads can be had."""
    if any(environ.get(k, v) != v for k, v in SINGLE_THREADED.items()):
        return
    environ.update(SINGLE_THREADED)
    import numpy  # noqa: F401
    import pandas  # type: ignore[import-untyped]  # noqa: F401
    import pyarrow  # noqa: F401

    from mdshell.spark import datasource  # noqa: F401


if __name__ == "__main__":
    installed_first(sys.path)
    import pyspark.worker  # noqa: F401  (compiled once, before the forks)

    preload(os.environ)
    run_daemon_manager()
