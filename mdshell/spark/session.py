"""Start the Spark session on first use: one per process, quiet, with the ``kraft`` source;
or, with ``--spark-remote``/``$SPARK_REMOTE``, be a client of a Spark Connect server (no JVM
here, no pyspark either: :mod:`.connectsessions`).

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
from typing import TYPE_CHECKING, Any

from ..problems import CommandError
from . import classarchive
from .compat import ARROW_FAST_ACCESS, DAEMON_KEY
from .settings import LOG_ENV, SETTINGS, SparkSettings, log_path, prune_logs, remote_address

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    from .connectsessions import Remote

_SESSION: SparkSession | Remote | None = None
_REMOTE: str | None = None  # the Spark Connect server _SESSION is a client of

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
# Of these, the ones a session of a Spark Connect server takes (the others are the server's).
CONNECT_CONF = ("spark.sql.execution.arrow.pyspark.enabled", "spark.sql.session.timeZone",
                "spark.sql.shuffle.partitions", PUSHDOWN_KEY)
CONNECT_WAIT_S = 3.0  # for the server's port to accept a connection
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


# What mdshell's Spark Connect client imports besides pyarrow: (module, the package that
# brings it).
CONNECT_CLIENT = (("grpc", "grpcio"),)


def _check_connect_client() -> None:
    missing = [package for module, package in CONNECT_CLIENT if not _importable(module)]
    if missing:
        raise SparkUnavailable(f"Spark Connect needs {', '.join(missing)}, not installed: "
                               "pip install 'mdshell[spark]'")


def _importable(module: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


def prepare_environment() -> None:
    """Variables every Spark process started from here must see."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def get_session(settings: SparkSettings | None = None) -> Any:
    """The process's Spark session, started now if needed (6-9 s the first time); on a
    Spark Connect server, mdshell's client of it (a :class:`.connectsessions.Remote`)."""
    global _SESSION
    if _SESSION is not None:
        _activate(_SESSION)
        return _SESSION
    settings = settings or SETTINGS
    remote = settings.resolved_remote()
    if remote:
        _SESSION = _connect(remote, settings)
        return _SESSION
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
    path = _log_file()
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


def _connect(url: str, settings: SparkSettings) -> Remote:
    """mdshell's client of the Spark Connect server at ``url``: its sessions get our SQL
    settings, then the user's ``spark.sql.*`` ones (the server's own settings are its
    own). The server must accept a connection within seconds."""
    global _REMOTE
    _check_connect_client()
    try:
        host, port = remote_address(url)
        from .connectclient import ConnectURL

        ConnectURL.parse(url).session_id  # noqa: B018  (checked now: one line if bad)
    except ValueError as e:
        raise SparkUnavailable(f"--spark-remote / $SPARK_REMOTE: {e}") from None
    try:
        socket.create_connection((host, port), timeout=CONNECT_WAIT_S).close()
    except OSError:
        raise SparkUnavailable(f"no Spark Connect server answered at {url}: start one "
                               "(pyspark's sbin/start-connect-server.sh, docs/spark.md), or "
                               "unset SPARK_REMOTE / give another --spark-remote") from None
    from .connectsessions import Remote

    conf = {k: DEFAULT_CONF[k] for k in CONNECT_CONF}
    users = {k: v for k, v in settings.conf.items() if k.startswith("spark.sql.")}
    client = Remote(url, {**conf, **users}, frozenset(users))
    _REMOTE = url
    return client


def remote() -> str | None:
    """The Spark Connect server the session is a client of (None: a session of our own)."""
    return _REMOTE if _SESSION is not None else None


def _log_file() -> str:
    """This process's Spark log file (its folder made, older logs pruned)."""
    path = log_path()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if LOG_ENV not in os.environ:
        prune_logs()
    return path


def _activate(spark: Any) -> None:
    """Make the session the active one of this thread's JVM side. Spark keeps the active
    session per JVM thread, and with pyspark's pinned threads a Python thread's JVM thread
    can change (a new py4j connection is a new thread: seen after the TUI's sql workers
    ran). With none active, Spark plans with its default SQL settings, where Python filter
    pushdown is off, and refuses the kraft reader that takes filters. A Spark Connect
    client has no JVM here."""
    if _REMOTE is not None:
        return
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
    """Stop the session (a Spark Connect client releases only its process's own session:
    :meth:`.connectsessions.Remote.stop`)."""
    global _SESSION, _REMOTE
    if _SESSION is not None:
        _SESSION.stop()
        _SESSION = _REMOTE = None


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return text.strip()
