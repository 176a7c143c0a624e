"""Start the Spark session on first use: one per process, quiet, with the ``kraft`` source.

The worker Python is the running interpreter (workers would otherwise start whatever
``python3`` is on PATH), the JVM's output goes to a log file (never the terminal: it would
corrupt a full-screen interface), no UI port is bound, and a missing Java or pyspark is one
clear line instead of a Java stack.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from typing import TYPE_CHECKING

from ..problems import CommandError
from . import classarchive
from .compat import ARROW_FAST_ACCESS, DAEMON_KEY
from .settings import LOG_ENV, SETTINGS, SparkSettings, log_path, prune_logs

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

_SESSION: SparkSession | None = None

# PySpark 4.1+: Python data sources may take filters (the kraft source's readers do when asked).
PUSHDOWN_KEY = "spark.sql.python.filterPushdown.enabled"

DEFAULT_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": "8",
    PUSHDOWN_KEY: "true",
}
# A local session's Python workers are this interpreter: its daemon reads pyspark's cached
# bytecode (see :mod:`.daemon`). A cluster's workers keep Spark's own.
# A local session's JVM reads Arrow batches only from its own Python workers: Arrow's checks
# of bounds and reference counts on every access (a sixth of the JVM's time in a data source
# read) are turned off there. A session is short-lived, and the JIT's work is a third of the
# JVM's CPU in its first big query: smaller inlining limits cut that by 0.7 CPU-s (9%, five
# runs each way), and the next queries ran no slower.
LOCAL_JVM = f"{ARROW_FAST_ACCESS} -XX:FreqInlineSize=100 -XX:MaxInlineLevel=9"


class SparkUnavailable(CommandError):
    """Spark cannot start here: what is missing and how to install it (one line)."""


def _check_java() -> None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return
    if shutil.which("java") is None:
        raise SparkUnavailable("Spark needs Java 17 or later and none was found: install a JDK "
                               "(e.g. apt-get install openjdk-17-jre-headless) or set "
                               "JAVA_HOME")


def _check_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailable("Spark queries need pyspark, which is not installed: "
                               "pip install 'mdshell[spark]'") from None


def prepare_environment() -> None:
    """Variables every Spark process started from here must see."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def get_session(settings: SparkSettings | None = None) -> SparkSession:
    """The process's Spark session, started now if needed (6-9 s the first time)."""
    global _SESSION
    if _SESSION is not None:
        _activate(_SESSION)
        return _SESSION
    settings = settings or SETTINGS
    _check_pyspark()
    _check_java()
    prepare_environment()
    from pyspark import SparkConf, SparkContext
    from pyspark.errors import PySparkException
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    check_master(settings.resolved_master())
    archive = classarchive.plan()
    conf = _conf(SparkConf(), settings, archive.options)
    path = log_path()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if LOG_ENV not in os.environ:
        prune_logs()
    with open(path, "ab") as log:
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
            archive.started(getattr(getattr(gateway, "proc", None), "pid", None))
            sc = SparkContext(conf=conf, gateway=gateway)
        except PySparkException as e:
            raise SparkUnavailable(f"Spark did not start ({_first_line(str(e))}); see its log "
                                   f"in {path}") from None
        except Exception as e:  # a Py4J error from the JVM: bad master URL, bad setting
            raise SparkUnavailable(f"Spark did not start ({_first_line(str(e))}); see its log "
                                   f"in {path}") from None
    sc.setLogLevel("ERROR")
    _python_logs_to(path)
    spark = SparkSession(sc)
    _register(spark)
    _SESSION = spark
    return spark


def _activate(spark: SparkSession) -> None:
    """Make the session the active one of this thread's JVM side. Spark keeps the active
    session per JVM thread, and with pyspark's pinned threads a Python thread's JVM thread
    can change (a new py4j connection is a new thread: seen after the TUI's sql workers
    ran). With none active, Spark plans with its default SQL settings, where Python filter
    pushdown is off, and refuses the kraft reader that takes filters."""
    jvm = spark._jvm
    if jvm is not None:
        jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)


def _register(spark: SparkSession) -> None:
    """The ``kraft`` source, pushing filters down by default when the session allows it (a
    user's ``--config`` may turn the setting off: then a reader taking filters would fail)."""
    from .datasource import register

    register(spark)


MASTER_WAIT_S = 3.0  # per address of a spark:// master


def check_master(master: str, wait: float = MASTER_WAIT_S) -> None:
    """A standalone master (``spark://HOST:PORT[,HOST:PORT...]``) must accept a connection
    before Spark starts: Spark itself retries for a minute, then fails with a Java stack."""
    if not master.startswith("spark://"):
        return
    for address in master[len("spark://"):].split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            with socket.create_connection((host.strip("[]") or "localhost", int(port)),
                                          timeout=wait):
                return
        except (OSError, ValueError):
            continue
    raise SparkUnavailable(f"no Spark master answered at {master}: start it, or give another "
                           "--spark-master URL ($MDSHELL_SPARK_MASTER)")


def _conf(conf: SparkConf, settings: SparkSettings, archive: str | None) -> SparkConf:
    """The session's settings: ours, then the user's (which win); a local session gets its
    worker daemon and JVM options too."""
    master = settings.resolved_master()
    local = master.startswith("local")
    conf.setMaster(master).setAppName("mdshell")
    ours = {**DEFAULT_CONF, DAEMON_KEY: "mdshell.spark.daemon"} if local else DEFAULT_CONF
    for key, value in {**ours, **settings.conf}.items():
        conf.set(key, value)
    key = "spark.driver.defaultJavaOptions"  # the user's options come after, and win
    options = [archive, LOCAL_JVM if local else None, settings.conf.get(key)]
    if any(options[:2]):
        conf.set(key, " ".join(x for x in options if x))
    return conf


def _python_logs_to(path: str) -> None:
    """pyspark's own Python loggers print JSON with Java stacks to stderr: send them to the
    log file too (the query's one-line error is what the user sees)."""
    import logging

    from pyspark.logger import PySparkLogger

    handler = logging.FileHandler(path)
    for name in ("SQLQueryContextLogger", "pyspark", "py4j"):
        logger = PySparkLogger.getLogger(name) if name != "py4j" else logging.getLogger(name)
        for h in list(logger.handlers):
            logger.removeHandler(h)
        logger.addHandler(handler)
        logger.propagate = False


def running() -> bool:
    return _SESSION is not None


def stop() -> None:
    global _SESSION
    if _SESSION is not None:
        _SESSION.stop()
        _SESSION = None


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return text.strip()
