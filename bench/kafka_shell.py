"""Benchmark: mdshell against Kafka's own shell on the same files, in the same minutes.

Usage: python bench/kafka_shell.py [--runs N] [--out DIR] [--command "ls /"] [FILE ...]

What a user would run instead of mdshell: ``kafka-metadata-shell.sh -s FILE ls /``, here
the same JVM command as that script (Kafka 4.3.1's ``kafka-shell`` with its jars, the heap
and GC options of ``kafka-run-class.sh``), against ``python -m mdshell -s FILE ls /``. Each
file is copied to a temporary directory first (Kafka's shell locks the log dir of its file
when a ``.lock`` is there). The two are run in turn, ``--runs`` times each, each run a fresh
process: the best and median wall time and CPU time (user + system of the process and its
threads), and mdshell's speed-up on each. Without files: the corpus's 954 KB log of 13k
one-record batches, its largest log, and a generated 100k-partition snapshot (``--out``,
written once by ``mdshell.synth``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.kafka import jars  # noqa: E402  (Maven fetches Kafka's jars into the cache)

CORPUS = ROOT.parent / "shared" / "corpus"
DEFAULT_FILES = [
    CORPUS / "Balaji-MohanAG__Kirana-store" / "__cluster_metadata-0" / "00000000000000000000.log",
    CORPUS / "ArpithaPrakash__Real-Time-Air-Quality-Prediction-with-Apache-Kafka"
    / "__cluster_metadata-0" / "00000000000000000000.log",
]
# kafka-run-class.sh's defaults (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS).
KAFKA_JVM = ["-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
             "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
             "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]


def snapshot_100k(out: Path) -> Path:
    d = out / "snap-100k"
    if not d.exists():
        subprocess.run([sys.executable, "-m", "mdshell.synth", "--out", str(d), "--brokers",
                        "30", "--controllers", "3", "--partitions-per-topic", "100", "--rf", "3",
                        "--topics", "1000", "--history-changes", "1", "--snapshot-at", "setup",
                        "--log-from", "snapshot"], check=True, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    return max((d / "__cluster_metadata-0").glob("*.checkpoint"))


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one run of ``cmd``, and its output."""
    start = time.perf_counter()
    before = os.times()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system
                                                          - before.children_system)
    if out.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({out.returncode}): {out.stderr.strip()[-300:]}")
    return wall, cpu, out.stdout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", default=str(ROOT / "bench" / "out"))
    p.add_argument("--command", default="ls /", help="the shell command both run")
    p.add_argument("files", nargs="*")
    ns = p.parse_args()
    files = [Path(f) for f in ns.files] or [f for f in DEFAULT_FILES if f.exists()]
    if not ns.files:
        files.append(snapshot_100k(Path(ns.out)))
    kafka = [jars.java(), *KAFKA_JVM, "-cp", jars.classpath(jars.KAFKA_4),
             "org.apache.kafka.shell.MetadataShell"]
    mdshell = [sys.executable, "-m", "mdshell"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's install has bytecode
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "mdshell")],
                   check=True, env=env)
    print("| file | tool | wall (best / median) | CPU (best / median) | mdshell faster by |")
    print("|---|---|---|---|---|")
    for f in files:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "__cluster_metadata-0" / f.name
            copy.parent.mkdir()
            shutil.copy(f, copy)
            args = ["-s", str(copy), *ns.command.split()]
            got: dict[str, list[tuple[float, float]]] = {"kafka": [], "mdshell": []}
            outs: dict[str, str] = {}
            for _ in range(ns.runs):
                for name, cmd in (("kafka", kafka), ("mdshell", mdshell)):
                    wall, cpu, out = timed([*cmd, *args], env)
                    got[name].append((wall, cpu))
                    outs[name] = out
            if not set(outs["kafka"].split()) <= set(outs["mdshell"].split()):
                print(f"note: mdshell did not list all Kafka's shell did for {f.name}",
                      file=sys.stderr)
            best = {n: (min(w for w, _ in r), min(c for _, c in r)) for n, r in got.items()}
            med = {n: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
                   for n, r in got.items()}
            size = f"{f.parent.parent.name[:28]}/{f.name} ({f.stat().st_size / 1e6:.1f} MB)"
            for n in ("kafka", "mdshell"):
                ratio = (f"wall {best['kafka'][0] / best['mdshell'][0]:.1f}x, CPU "
                         f"{best['kafka'][1] / best['mdshell'][1]:.1f}x" if n == "mdshell"
                         else "")
                print(f"| {size} | {n} | {best[n][0]:.2f} / {med[n][0]:.2f} s | "
                      f"{best[n][1]:.2f} / {med[n][1]:.2f} s | {ratio} |")


if __name__ == "__main__":
    main()
