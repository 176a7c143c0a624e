"""Spark's Python worker daemon for a local session, with pyspark's bytecode cached.

Spark puts pyspark's zip archive first on its Python workers' path, and Python caches no
bytecode for modules it imports from a zip: every worker forked for a query compiled
``pyspark.worker`` and the modules it imports from source again (about 0.3 s of CPU each, on
every core, at a session's first query). A local session's workers run this interpreter,
whose installed pyspark is the one that archive ships in. This daemon puts the installed copy
ahead of the archive, so its cached bytecode is used, and imports the worker module once
before forking: it starts no thread (numpy and pyarrow do, so they stay after the fork).
"""

from __future__ import annotations

import os
import sys


def installed_first(path: list[str]) -> None:
    """Put the site directory of an installed pyspark before the ``pyspark.zip`` it ships
    (``<site>/pyspark/python/lib/pyspark.zip``); a zip from elsewhere is left first."""
    for i, entry in enumerate(path):
        if os.path.basename(entry) != "pyspark.zip":
            continue
        package = os.path.dirname(os.path.dirname(os.path.dirname(entry)))
        lib = os.path.join(package, "python", "lib")
        if (os.path.basename(package) == "pyspark" and os.path.dirname(entry) == lib
                and os.path.isfile(os.path.join(package, "__init__.py"))):
            path.insert(i, os.path.dirname(package))
        return


if __name__ == "__main__":
    installed_first(sys.path)
    import pyspark.worker  # noqa: F401  (compiled once, before the forks)
    from pyspark.daemon import manager

    manager()
