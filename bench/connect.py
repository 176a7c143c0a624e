"""Benchmark: ``sql`` on a Spark Connect server, one-shot and in a line shell, against ``sql``
with its own local Spark.

Usage: python bench/connect.py [--dir DIR] [--runs N] [--query SQL]
                               [--server sc://H:P [--server-group PGID]]
                               [--code DIR ...] [--skip local,shell,sent]

Starts a Spark Connect server on 127.0.0.1 from the pyspark package
(``sbin/start-connect-server.sh``, ``local[2]``; stopped at the end) unless ``--server`` names
one, runs one query on it (its very first: Spark compiles its planner's code then, reported
apart), then alternates, ``--runs`` times each, in fresh processes as a user runs them:

- ``one-shot, tables on the server``: ``mdshell -d DIR --spark-remote URL sql Q`` on an image
  whose tables an earlier process sent (its session on the server holds them).
- ``one-shot, tables sent``: the same on a fresh copy of DIR (a new image: its tables are
  built, sent to a new session, then queried).
- ``one-shot, CODE``: the first case with the mdshell of another checkout (``--code``, e.g. a
  worktree of the commit before; its compiled pieces built in place), run as
  ``python -m mdshell`` there.
- ``shell``: the line shell's own loop asking twice in one process (the first answer and a
  later one, timed inside the process), the code here.
- ``local``: ``mdshell -d DIR sql Q``, one-shot with a local Spark (``local[*]``, the class
  archive already written): the whole process's wall and CPU (driver, JVM, Python workers,
  read from ``/proc`` every 0.1 s while they run: a lower bound by a tick or so each).

A one-shot's first answer is the time from the process's start to the first byte of its
output; CPU is the client's (rusage of the process) and the server's (its JVM and Python
workers, from ``/proc``; for a server started elsewhere, give its process group) apart.
Figures are one JSON object a line; the load average is printed before each round. Bytecode
is compiled first (a user's install has it); the runs use a cache directory of their own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cputime import Snapshot, group_cpu, tree

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


def start_server(work: Path, settings: list[str] | None = None
                 ) -> tuple[subprocess.Popen[bytes], str, float]:
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
    for setting in settings or []:
        cmd += ["--conf", setting]
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


def _group_cpu(pgid: int | None) -> float:
    """CPU seconds of the server's process group (its JVM, workers); 0 without one."""
    return 0.0 if pgid is None else group_cpu(pgid)


def one_shot(cmd: list[str], env: dict[str, str], cwd: Path,
             server: int | None) -> dict[str, Any]:
    """A one-shot process: the time to the first byte of its output, to its end, its CPU
    (rusage) and the server's CPU meanwhile."""
    before = _group_cpu(server)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=cwd)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.read(1)
    answered = time.perf_counter() - start
    rest = proc.stdout.read()
    errors = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    ended = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0 or not first:
        raise SystemExit(f"{' '.join(cmd)} failed: {errors.decode()}{(first + rest).decode()}")
    return dict(first_answer_s=round(answered, 3), process_s=round(ended, 3),
                client_cpu_s=round(usage.ru_utime + usage.ru_stime, 3),
                server_cpu_s=round(_group_cpu(server) - before, 3))


def shell_run(url: str, directory: str, query: str, env: dict[str, str], script: Path,
              server: int | None) -> dict[str, Any]:
    before = _group_cpu(server)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run([sys.executable, str(script), url, directory, query],
                         capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    wall = time.perf_counter() - start
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    _, first, later = map(float, out.stdout.split())
    return dict(bench="shell", process_s=round(wall, 2),
                client_cpu_s=round(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, 2),
                server_cpu_s=round(_group_cpu(server) - before, 2),
                first_answer_s=round(first, 3), later_answer_s=round(later, 3))


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
    local_env = {k: v for k, v in env.items() if k != "MDSHELL_CACHE"}  # the class archive
    subprocess.run([sys.executable, "-m", "mdshell", "-d", directory, "sql", query],
                   capture_output=True, text=True, env=local_env, cwd=ROOT, check=True)
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
    p.add_argument("--server-group", type=int,
                   help="with --server: its process group, to read its CPU")
    p.add_argument("--server-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a setting of the server started here")
    p.add_argument("--code", action="append", default=[],
                   help="another checkout whose one-shot runs alternate with this one's")
    p.add_argument("--skip", default="", help="parts left out: local, shell, sent")
    ns = p.parse_args()
    skip = set(filter(None, ns.skip.split(",")))
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "SPARK_REMOTE", "MDSHELL_NO_CACHE")}
    for code in [ROOT, *map(Path, ns.code)]:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(code / "mdshell")],
                       check=True)
    proc = None
    with tempfile.TemporaryDirectory(prefix="mdshell-connect-bench-") as tmp:
        work = Path(tmp)
        env["MDSHELL_CACHE"] = str(work / "cache")
        script = work / "timed_shell.py"
        script.write_text(TIMED_SHELL)
        try:
            url = ns.server
            pgid = ns.server_group
            if url is None:
                proc, url, took = start_server(work, ns.server_conf)
                pgid = proc.pid
                report(bench="server start", seconds=round(took, 1))
            directory = os.path.abspath(ns.dir)
            mine = [sys.executable, "-m", "mdshell", "-d", directory, "--spark-remote", url,
                    "sql", ns.query]
            report(bench="one-shot, the server's first query ever" if proc else
                   "one-shot, first of this image", **one_shot(mine, env, ROOT, pgid))
            for run in range(ns.runs):
                report(bench="load average", value=os.getloadavg()[0])
                report(bench="one-shot, tables on the server", **one_shot(mine, env, ROOT, pgid))
                if "sent" not in skip:
                    fresh = work / f"fresh-{run}"
                    shutil.copytree(directory, fresh)
                    cmd = [*mine[:4], str(fresh), *mine[5:]]
                    report(bench="one-shot, tables sent", **one_shot(cmd, env, ROOT, pgid))
                for code in ns.code:
                    report(bench=f"one-shot, {code}",
                           **one_shot(mine, {**env, "PYTHONPATH": code}, Path(code), pgid))
                if "shell" not in skip:
                    report(**shell_run(url, directory, ns.query, env, script, pgid))
                if "local" not in skip:
                    report(**local_run(directory, ns.query, env))
        finally:
            if proc is not None:
                stop_server(proc)


if __name__ == "__main__":
    main()
