"""Kafka's verdicts fetched while the rest of the suite runs.

A cold oracle cache means a few hundred JVM runs of Kafka's tools. When the session holds
oracle tests, ``start`` runs this module as a separate process (niced, so the tests keep
their core) that fills the cache for the corpus and the fixtures; the oracle fixtures
``wait`` for it and then fetch whatever is still missing themselves, so a failed or killed
background run costs time, never a verdict. A separate process, not a thread: the oracle
runs mdshell in-process with stdout redirected, which a thread would share with the tests.
``MDSHELL_ORACLE_BACKGROUND=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NICE = 10
WAIT = 1800  # seconds the oracle fixtures wait at most before doing the rest themselves

_proc: subprocess.Popen[bytes] | None = None
_log: Path | None = None


def enabled() -> bool:
    return os.environ.get("MDSHELL_ORACLE_BACKGROUND", "1") != "0"


def start() -> None:
    """Start the background run (once per session)."""
    global _proc, _log
    if _proc is not None or not enabled():
        return
    fd, name = tempfile.mkstemp(prefix="mdshell-oracle-background-", suffix=".log")
    _log = Path(name)
    _proc = subprocess.Popen([sys.executable, "-m", "tests.kafka.background"], cwd=ROOT,
                             stdin=subprocess.DEVNULL, stdout=fd, stderr=subprocess.STDOUT,
                             preexec_fn=lambda: os.nice(NICE), start_new_session=True)
    os.close(fd)


def wait(timeout: float = WAIT) -> None:
    """Until the background run ends (stopped after ``timeout`` seconds)."""
    if _proc is None:
        return
    _unnice(_proc.pid)
    try:
        _proc.wait(timeout)
    except subprocess.TimeoutExpired:
        stop()


def _unnice(pid: int) -> None:
    """The tests now wait for the run: it no longer yields to them, so it gets the priority
    of the session back (itself, the tools it starts from now on, and every process of its
    group where allowed), lest other load on the machine starve it while the suite idles."""
    for which, who in ((os.PRIO_PGRP, pid), (os.PRIO_PROCESS, pid)):
        # lowering a nice value needs the privilege: without it the run stays niced
        with contextlib.suppress(OSError):
            os.setpriority(which, who, os.getpriority(os.PRIO_PROCESS, 0))


def stop() -> None:
    """End the background run and every JVM it started."""
    if _proc is None or _proc.poll() is not None:
        return
    os.killpg(_proc.pid, signal.SIGTERM)
    try:
        _proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(_proc.pid, signal.SIGKILL)
        _proc.wait()


def report() -> str | None:
    """How the background run ended, for the session's summary."""
    if _proc is None or _proc.returncode is None:
        return None
    tail = _log.read_text(errors="replace").strip().splitlines()[-3:] if _log else []
    return f"oracle background run: exit {_proc.returncode}" + (
        f" ({' | '.join(tail)})" if _proc.returncode else "")


def main() -> int:
    from tests import test_oracle, test_oracle_corpus
    from tests.kafka import tools
    from tests.oracle import need_kafka

    need_kafka()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mdshell-oracle-background-") as tmp:
        root = Path(tmp)
        for part in ("corpus", "units", "synth"):
            (root / part).mkdir()
        found = test_oracle_corpus.corpus_judged(root / "corpus")
        tools.prefetch(*test_oracle_corpus.corpus_jobs(found))
        print(f"corpus: {time.monotonic() - started:.0f} s", flush=True)
        test_oracle.make_synth(root / "synth")
        _, jobs = test_oracle.cases_and_jobs(root / "synth", root / "units")
        tools.prefetch(*jobs)
    print(f"all: {time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
