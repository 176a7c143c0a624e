"""Where the Spark session goes and with which settings (no pyspark here: the CLI sets these
before any Spark feature is used, and nothing starts until one is)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..files import cache_dir, caching

__all__ = ["SETTINGS", "SparkSettings", "cache_dir", "configure", "log_path", "prune_logs"]

MASTER_ENV = "MDSHELL_SPARK_MASTER"
REMOTE_ENV = "SPARK_REMOTE"  # PySpark's own: a Spark Connect server, sc://HOST:PORT
LOG_ENV = "MDSHELL_SPARK_LOG"
CDS_ENV = "MDSHELL_SPARK_CDS"  # "0": no archive of Spark's classes (see classarchive.py)
KEEP_LOGS = 10  # the most recent per-process logs kept in the cache folder
DEFAULT_MASTER = "local[*]"


@dataclass
class SparkSettings:
    master: str | None = None  # None: $MDSHELL_SPARK_MASTER, else local[*]
    conf: dict[str, str] = field(default_factory=dict)  # extra spark.* settings
    remote: str | None = None  # a Spark Connect server; None: $SPARK_REMOTE unless a master

    def resolved_master(self) -> str:
        return self.master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER

    def resolved_remote(self) -> str | None:
        """The Spark Connect server queries run on: ``--spark-remote``, else
        ``$SPARK_REMOTE`` unless ``--spark-master`` names a master; None: a session of our
        own (local or on a cluster)."""
        if self.remote:
            return self.remote
        return None if self.master else os.environ.get(REMOTE_ENV) or None


SETTINGS = SparkSettings()


def remote_address(url: str) -> tuple[str, int]:
    """The host and port of a Spark Connect URL (``sc://HOST[:PORT][/;param=...]``, port
    15002 by default, as Spark's); ValueError when it is not one."""
    if not url.startswith("sc://"):
        raise ValueError(f"{url}: not a Spark Connect URL (sc://HOST:PORT)")
    where = url[len("sc://"):].split("/", 1)[0].split(";", 1)[0]
    host, colon, port = where.rpartition(":") if "]" not in where.rpartition(":")[2] else (
        where, "", "")
    if not colon:
        host, port = where, "15002"
    host = host.strip("[]")
    if not host or not port.isdigit():
        raise ValueError(f"{url}: not a Spark Connect URL (sc://HOST:PORT)")
    return host, int(port)


def configure(master: str | None, properties: dict[str, str] | None,
              remote: str | None = None) -> list[str]:
    """Take the Spark master or Spark Connect server and the ``spark.*`` keys of a
    properties file; returns the keys that are not Spark settings (for the caller to
    judge)."""
    SETTINGS.master = master
    SETTINGS.remote = remote
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
