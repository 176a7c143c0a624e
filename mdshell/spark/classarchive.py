"""A class-data-sharing archive of the classes a Spark session loads, kept between runs.

Starting a local session loads some ten thousand classes out of pyspark's ~280 jars, and that
is half of its cost (about 13 s of CPU cold, 7-8 s with the archive, on this machine). Java 13+
can write the classes a JVM loaded to a *dynamic archive* when it exits
(``-XX:ArchiveClassesAtExit``) and map them at the next start (``-XX:SharedArchiveFile``).

The first session without an archive writes one, in ``spark-cds/`` of mdshell's cache directory
(``~/.cache/mdshell`` by default, see mdshell/files.py), when its
JVM exits (it runs on for 10-20 s after mdshell to do so, once; about 150 MB). The JVM writes
to a ``.part`` file named for it; a later start promotes the part to the archive once the JVM
that wrote it has gone (never while it writes). Only one JVM writes at a time. A stale or
foreign archive (another JDK build, other jars) is refused by the JVM itself, which then starts
as usual; the key below (pyspark's jars and the java binary) keeps one archive per install.
``MDSHELL_SPARK_CDS=0`` (or ``MDSHELL_NO_CACHE=1``) turns all this off.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import shutil

from .settings import CDS_ENV, cache_dir, caching


def _java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    path = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(path) if path and os.path.exists(path) else None


def _key() -> str | None:
    """One archive per pyspark install and java binary (their paths, sizes and times)."""
    try:
        import pyspark

        jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
        java = _java()
        if java is None:
            return None
        parts = [pyspark.__version__, jars, str(os.stat(jars).st_mtime_ns), java,
                 str(os.stat(java).st_mtime_ns), str(os.stat(java).st_size)]
    except (ImportError, OSError):
        return None
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, not ours
    return True


def _promote(folder: str, key: str) -> bool:
    """Turn a finished part into the archive; True while a JVM is still writing one."""
    writing = False
    for pidfile in glob.glob(os.path.join(folder, f"{key}.*.pid")):
        part = pidfile[:-len(".pid")] + ".part"
        try:
            with open(pidfile) as f:
                pid = int(f.read().strip() or 0)
        except (OSError, ValueError):
            pid = 0
        if pid and _alive(pid):
            writing = True
            continue
        try:
            if os.path.getsize(part) > 0:
                os.replace(part, os.path.join(folder, f"{key}.jsa"))
        except OSError:
            pass
        for leftover in (part, pidfile):
            with contextlib.suppress(OSError):
                os.remove(leftover)
    return writing


class Plan:
    """The JVM options for this start, and where to note the JVM's pid once it runs."""

    def __init__(self, options: str = "", pidfile: str | None = None) -> None:
        self.options, self.pidfile = options, pidfile

    def started(self, pid: int | None) -> None:
        if self.pidfile is not None and pid is not None:
            try:
                with open(self.pidfile, "w") as f:
                    f.write(str(pid))
            except OSError:
                pass


def plan() -> Plan:
    if not caching() or os.environ.get(CDS_ENV, "1").strip().lower() in (
            "0", "false", "no", "off"):
        return Plan()
    key = _key()
    if key is None:
        return Plan()
    folder = os.path.join(cache_dir(), "spark-cds")
    try:
        os.makedirs(folder, exist_ok=True)
        writing = _promote(folder, key)
    except OSError:
        return Plan()
    archive = os.path.join(folder, f"{key}.jsa")
    if os.path.exists(archive):
        return Plan(f"-XX:SharedArchiveFile={archive} -Xshare:auto")
    if writing:
        return Plan()
    token = f"{os.getpid()}-{os.urandom(4).hex()}"
    part = os.path.join(folder, f"{key}.{token}.part")
    pidfile = os.path.join(folder, f"{key}.{token}.pid")
    try:
        with open(pidfile, "w") as f:  # claimed (by this process until its JVM runs)
            f.write(str(os.getpid()))
    except OSError:
        return Plan()
    return Plan(f"-XX:ArchiveClassesAtExit={part}", pidfile)
