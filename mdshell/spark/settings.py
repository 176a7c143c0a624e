"""Where the Spark session goes and with which settings (no pyspark here: the CLI sets these
before any Spark feature is used, and nothing starts until one is)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..files import cache_dir, caching

__all__ = ["SETTINGS", "SparkSettings", "cache_dir", "configure", "log_path", "prune_logs"]

MASTER_ENV = "MDSHELL_SPARK_MASTER"
LOG_ENV = "MDSHELL_SPARK_LOG"
CDS_ENV = "MDSHELL_SPARK_CDS"  # "0": no archive of Spark's classes (see classarchive.py)
KEEP_LOGS = 10  # the most recent per-process logs kept in the cache folder
DEFAULT_MASTER = "local[*]"


@dataclass
class SparkSettings:
    master: str | None = None  # None: $MDSHELL_SPARK_MASTER, else local[*]
    conf: dict[str, str] = field(default_factory=dict)  # extra spark.* settings

    def resolved_master(self) -> str:
        return self.master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER


SETTINGS = SparkSettings()


def configure(master: str | None, properties: dict[str, str] | None) -> list[str]:
    """Take the Spark master and the ``spark.*`` keys of a properties file; returns the keys
    that are not Spark settings (for the caller to judge)."""
    SETTINGS.master = master
    others: list[str] = []
    for key, value in (properties or {}).items():
        if key.startswith("spark."):
            SETTINGS.conf[key] = value
        else:
            others.append(key)
    return others


def log_path() -> str:
    """The file the JVM writes its log lines to (never the terminal: it would corrupt a TUI):
    ``$MDSHELL_SPARK_LOG``, else one file per process in the cache directory,
    ``spark/spark-PID.log`` (two sessions at once never mix their lines; only the most recent
    few are kept); nowhere with ``MDSHELL_NO_CACHE=1``."""
    path = os.environ.get(LOG_ENV)
    if path:
        return path
    if not caching():
        return os.devnull
    return os.path.join(cache_dir(), "spark", f"spark-{os.getpid()}.log")


def prune_logs(keep: int = KEEP_LOGS) -> None:
    """Remove the per-process logs beyond the ``keep`` most recent (this one is the newest)."""
    if not caching():
        return
    folder = os.path.join(cache_dir(), "spark")
    try:
        logs = [e for e in os.scandir(folder) if e.name.startswith("spark-")
                and e.name.endswith(".log")]
        logs.sort(key=lambda e: e.stat().st_mtime, reverse=True)
        for e in logs[keep:]:
            os.remove(e.path)
    except OSError:
        pass
