"""Benchmark: ``sql`` on a Spark Connect server against ``sql`` with its own local Spark.

Usage: python bench/connect.py [--dir DIR] [--runs N] [--query SQL] [--server sc://H:P]

Starts a Spark Connect server on 127.0.0.1 from the pyspark package
(``sbin/start-connect-server.sh``, ``local[2]``; stopped at the end) unless ``--server`` names
one, then alternates, ``--runs`` times each, in fresh processes as a user runs them:

- ``connect``: ``mdshell -d DIR --spark-remote URL`` running the query twice in one line
  shell (``printf 'sql Q\\nsql Q\\n' | mdshell ...``): the first answer (client imports,
  session, tables sent, query) and a later one, timed inside the process, and the whole
  process's wall and CPU time. The first run is the server's very first query, reported
  apart: Spark compiles its planner's code then.
- ``local``: ``mdshell -d DIR sql Q``, one-shot with a local Spark (``local[*]``, the class
  archive already written): the whole process's wall and CPU (driver, JVM, Python workers,
  read from ``/proc`` every 0.1 s while they run: a lower bound by a tick or so each).

CPU of a connect run is the client's (the process and its children) and the server's (its
JVM and Python workers) apart.

Figures are one JSON object a line. Bytecode is compiled first (a user's install has it).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cputime import Snapshot, tree

ROOT = Path(__file__).resolve().parent.parent
QUERY = "select leader, count(*) as n from partitions group by leader order by leader"

# Run in the measured process: the line shell's own loop, with the time of each answer.
TIMED_SHELL = """
import sys, time
start = time.perf_counter()
from mdshell.commands import Shell
from mdshell.source import open_source
from mdshell.spark.settings import SETTINGS
SETTINGS.remote = sys.argv[1]
shell = Shell(open_source(sys.argv[2]))
took = []
for _ in range(2):
    t = time.perf_counter()
    out = shell.run(["sql", sys.argv[3]])
    assert out.code == 0, out.errors
    took.append(time.perf_counter() - t)
print(time.perf_counter() - start, *took)
"""


def report(**figures: Any) -> None:
    print(json.dumps(figures), flush=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start_server(work: Path) -> tuple[subprocess.Popen[bytes], str, float]:
    import pyspark

    home = Path(pyspark.__file__).parent
    port = _free_port()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOG_DIR": str(work / "logs"),
           "SPARK_PID_DIR": str(work / "pids"), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable}
    cmd = [str(home / "sbin" / "start-connect-server.sh"), "--wait", "--master", "local[2]",
           "--conf", f"spark.connect.grpc.binding.port={port}",
           "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
           "--conf", "spark.ui.enabled=false"]
    start = time.perf_counter()
    with open(work / "server.log", "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=work,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not _listening(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_server(proc)
            raise SystemExit(f"the server did not start; see {work / 'server.log'}")
        time.sleep(0.2)
    return proc, f"sc://127.0.0.1:{port}", time.perf_counter() - start


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds (the process and every child it waited for: rusage) of a
    command, and its output."""
    before = os.times()
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system)
    return wall, cpu, out.stdout


def connect_run(url: str, directory: str, query: str, env: dict[str, str]) -> dict[str, Any]:
    server0 = tree()  # the server is this process's child
    wall, cpu, out = _timed([sys.executable, "-c", TIMED_SHELL, url, directory, query], env)
    server = _used(server0, tree())
    _, first, later = map(float, out.split())
    return dict(bench="connect", process_s=round(wall, 2), client_cpu_s=round(cpu, 2),
                server_cpu_s=round(server, 2), first_answer_s=round(first, 3),
                later_answer_s=round(later, 3))


def _used(before: Snapshot, after: Snapshot) -> float:
    return sum(max(0.0, t - before.get(pid, 0.0)) for pid, t in after.items())


def local_run(directory: str, query: str, env: dict[str, str]) -> dict[str, Any]:
    """The JVM is mdshell's child but not waited for: its CPU is read while it runs."""
    before = tree()
    seen: Snapshot = dict(before)
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            seen.update(tree())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mdshell", "-d", directory, "sql", query],
                   capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    cpu = sum(t for pid, t in seen.items() if pid not in before)  # not the idle server's
    return dict(bench="local", process_s=round(wall, 2), cpu_s=round(cpu, 2))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", default=str(ROOT / "fixtures" / "cluster-basic"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--query", default=QUERY)
    p.add_argument("--server", help="a running server's sc:// URL (else one is started)")
    ns = p.parse_args()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "SPARK_REMOTE")}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "mdshell")],
                   check=True)
    proc = None
    with tempfile.TemporaryDirectory(prefix="mdshell-connect-bench-") as work:
        try:
            url = ns.server
            if url is None:
                proc, url, took = start_server(Path(work))
                report(bench="server start", seconds=round(took, 1))
                report(**{**connect_run(url, ns.dir, ns.query, env),
                          "bench": "connect, the server's first query ever"})
            for _ in range(ns.runs):
                report(**connect_run(url, ns.dir, ns.query, env))
                report(**local_run(ns.dir, ns.query, env))
        finally:
            if proc is not None:
                stop_server(proc)


if __name__ == "__main__":
    main()
