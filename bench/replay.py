"""Benchmark: log replay and history memory (issue 19), whole process, CPU time and peak RSS.

Usage: python bench/replay.py [--out DIR] [--runs N] [--code PATH ...] [--only NAME,...]
       [--instructions] [--views] [--marks]

Directories (written once by ``mdshell.synth`` into ``--out``, default bench/out, and reused):

- ``tail``: a 100k-partition snapshot and a 42 MB log tail after it (454k records, one a
  batch: partition changes, broker changes, NoOps), the issue's command.
- ``1M-small`` / ``1M-big``: the same 1M-partition snapshot in batches of ~1,000 records
  (``--snapshot-batch-bytes 100000``) and of 8 MiB (Kafka's): memory must not depend on it.
- ``1M-log``: 1M partitions made by the log from offset 0 (no snapshot; a batch per topic,
  101 records): history marks every 1,000 records all along.
- ``mixed``: a tail as large as ``tail``'s with every kind of change (issue 33); ``snap-100k``
  its snapshot alone; ``mixed-lz4`` the same tail with every data batch compressed.
- ``kafka-1M-small`` / ``kafka-1M-big``: a 1M-partition snapshot written by Kafka's own code
  (``bench/KafkaSnapshot.java`` on Kafka 4.4.0's jars: needs Java and Maven, as the tests),
  in batches of at most 100 kB and of 8 MiB: an encoder other than mdshell's.

Each is loaded by ``python -m mdshell -d DIR cat /image/provenance`` in a fresh process (start-up
included; a one-shot command that does not travel in time keeps no images for it), or with
``--marks`` by ``... --at latest cat /image/provenance``, which keeps them as an interactive
session does (a mark every 1,000 records), ``--runs`` times, alternating between the
``--code`` checkouts given (PYTHONPATH; default this checkout), so that versions are compared
in the same minutes: the machine may be shared, and CPU time (user + system) says more than
wall time there. Then, in one process
per checkout, ``at`` to the middle of the tail after the load (the history at work).
``--instructions`` counts instead what one load executes, under valgrind: a figure that
does not move with the machine's load. ``--views`` measures, beside the load, the views whose
ratio to it is a target (``tree /image``, ``health``, ``changes`` of a partition, ``topics
--describe`` in text and JSON) and prints each one's ratio to the load of the same checkout.
Each checkout's bytecode is compiled first.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = ["--brokers", "30", "--controllers", "3", "--partitions-per-topic", "100", "--rf", "3"]
DIRS = {
    "tail": [*CLUSTER, "--topics", "1000", "--history-changes", "200000", "--noops-per-change",
             "1", "--snapshot-at", "setup", "--log-from", "snapshot", "--segment-bytes",
             "104857600"],
    "1M-small": [*CLUSTER, "--topics", "10000", "--history-changes", "2000", "--snapshot-at",
                 "setup", "--log-from", "snapshot", "--seed", "7", "--snapshot-batch-bytes",
                 "100000"],
    "1M-big": [*CLUSTER, "--topics", "10000", "--history-changes", "2000", "--snapshot-at",
               "setup", "--log-from", "snapshot", "--seed", "7"],
    "1M-log": [*CLUSTER, "--topics", "10000", "--history-changes", "2000", "--seed", "7"],
    # issue 33's second shape: a tail as large as `tail`'s with every kind of change (configs,
    # broker registrations and fencing, ACLs, quotas, SCRAM, tokens, producer ids, ELR,
    # reassignments, topics created in batches of 100 records inside metadata transactions
    # and deleted), uncompressed, a NoOp batch after each change
    "mixed": [*CLUSTER, "--topics", "1000", "--history-changes", "200000",
              "--noops-per-change", "1", "--snapshot-at", "setup", "--log-from", "snapshot",
              "--segment-bytes", "104857600", "--seed", "3", "--created-partitions", "50-150",
              "--max-records-per-batch", "100", "--mix",
              "leader-election=40,isr-shrink=20,isr-expand=20,topic-config=20,"
              "broker-config=10,producer-ids=10,broker-restart=20,create-topic=1,"
              "delete-topic=1,quota=10,acl=20,scram=10,token=10,reassign=10,elr=10"],
    # `mixed` with every data batch compressed (lz4): a tail no Kafka writes (its metadata
    # log is uncompressed) but the format allows, the compiled replay's compressed path
    "mixed-lz4": [*CLUSTER, "--topics", "1000", "--history-changes", "200000",
                  "--noops-per-change", "1", "--snapshot-at", "setup", "--log-from",
                  "snapshot", "--segment-bytes", "104857600", "--seed", "3",
                  "--created-partitions", "50-150", "--max-records-per-batch", "100",
                  "--compression", "lz4", "--mix",
                  "leader-election=40,isr-shrink=20,isr-expand=20,topic-config=20,"
                  "broker-config=10,producer-ids=10,broker-restart=20,create-topic=1,"
                  "delete-topic=1,quota=10,acl=20,scram=10,token=10,reassign=10,elr=10"],
    # the 100k-partition snapshot of `tail` and `mixed` alone: what their tails are held to
    "snap-100k": [*CLUSTER, "--topics", "1000", "--history-changes", "1", "--snapshot-at",
                  "setup", "--log-from", "snapshot"],
}
# Written by Kafka's own code (bench/KafkaSnapshot.java: RecordsSnapshotWriter with Kafka
# 4.4.0's jars, fetched by Maven as the tests fetch them), not by mdshell's writer: 1M
# partitions (10,000 topics of 100, 30 brokers) in batches of at most 100 kB and of 8 MiB
# (Kafka's own size), records at the latest production metadata.version's versions.
KAFKA_DIRS = {"kafka-1M-small": ["10000", "100", "30", "100000"],
              "kafka-1M-big": ["10000", "100", "30", str(8 * 1024 * 1024)]}

AT_CODE = """
import sys, time
from mdshell.commands import Shell
from mdshell.session import Session
session = Session.open(directory=sys.argv[1])
latest = session.latest
shell = Shell(session)
first = latest.base
last = latest.image.provenance.offset
best = 1e9
for target in ((first + last) // 2, last - 3, first + 1000):
    start = time.process_time()
    list(shell.run(["at", str(target)]).lines)
    list(shell.run(["cat", "/image/provenance"]).lines)
    best = min(best, time.process_time() - start)
    shell.run(["at", "latest"])
print(f"{best:.3f}")
"""


def generate(out: Path, name: str) -> Path:
    target = out / f"replay-{name}"
    if not (target / "__cluster_metadata-0").is_dir():
        print(f"generating {target} ...", file=sys.stderr)
        if name in KAFKA_DIRS:
            sys.path.insert(0, str(ROOT))
            from tests.kafka import jars

            subprocess.run([jars.java(), "-Xmx2g", "-cp", jars.classpath(jars.KAFKA_44),
                            str(ROOT / "bench" / "KafkaSnapshot.java"), str(target),
                            *KAFKA_DIRS[name]], check=True, stderr=subprocess.DEVNULL)
        else:
            subprocess.run([sys.executable, "-m", "mdshell.synth", "--out", str(target),
                            *DIRS[name]], check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return target


def _env(code: str) -> dict[str, str]:
    """Runs of ``code``, with its bytecode written (a shell that says not to write it would
    have every run compile mdshell again: 70 ms)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return dict(env, PYTHONPATH=code)


def compile_all(code: str) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(code) / "mdshell")],
                   check=True, stdout=subprocess.DEVNULL, env=_env(code))


LOAD = ("cat", "/image/provenance")
MARKED = ("--at", "latest", *LOAD)  # the load as a session makes it: images for time travel
# The views whose ratio to the load is a target (on the tail: issue 19's first row).
VIEWS = {"tree /image": ("tree", "/image"), "health": ("health",),
         "changes of a partition": ("changes", "/image/topics/byName/topic-000/7"),
         "topics --describe": ("topics", "--describe"),
         "-o json topics --describe": ("-o", "json", "topics", "--describe")}


def once(code: str, directory: Path, command: tuple[str, ...] = LOAD
         ) -> tuple[float, float, float]:
    """(CPU s, peak RSS MiB, wall s) of one command (the load) in a fresh process."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "mdshell", "-d", str(directory), *command],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(code),
                            cwd="/")  # `-m` puts the working directory first on sys.path
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    # health exits 1 when a check fails
    if os.waitstatus_to_exitcode(status) not in ((0, 1) if command[0] == "health" else (0,)):
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{code}: mdshell -d {directory} failed: {err}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, wall


def instructions(code: str, directory: Path, command: tuple[str, ...] = LOAD) -> int:
    """Instructions one command (the load) executes (valgrind's callgrind): the same on any
    day and any load average, where CPU time on a shared machine moves by a third from run
    to run."""
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           sys.executable, "-m", "mdshell", "-d", str(directory), *command],
                          capture_output=True, text=True, cwd="/", env=_env(code))
    for line in proc.stderr.splitlines():
        if "Collected :" in line:
            return int(line.split()[-1])
    raise SystemExit(f"{code}: valgrind gave no count: {proc.stderr[-300:]}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=str(ROOT / "bench" / "out"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--code", nargs="*", default=[str(ROOT)],
                   help="checkouts to compare (PYTHONPATH of each run)")
    p.add_argument("--only", default=",".join([*DIRS, *KAFKA_DIRS]),
                   help="directories to measure")
    p.add_argument("--instructions", action="store_true",
                   help="count the instructions of one load of each (valgrind; ~50x slower)")
    p.add_argument("--marks", action="store_true",
                   help="load as a session does, keeping images for time travel "
                        "(--at latest)")
    p.add_argument("--views", action="store_true",
                   help="the views against the load (CPU, or instructions with "
                        "--instructions), each directory of --only (default tail)")
    ns = p.parse_args()
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    for code in ns.code:
        compile_all(code)
    if ns.views:
        views(out, ns.code, ns.only if "--only" in sys.argv else "tail", ns.runs,
              ns.instructions)
        return
    command = MARKED if ns.marks else LOAD
    if ns.instructions:
        print("| directory | code | instructions |\n|---|---|---|")
        for name in ns.only.split(","):
            d = generate(out, name)
            for code in ns.code:
                print(f"| {name} | {code} | {instructions(code, d, command) / 1e9:.2f} G |",
                      flush=True)
        return
    print("| directory | code | CPU (best) | CPU (median) | peak RSS |\n|---|---|---|---|---|")
    for name in ns.only.split(","):
        d = generate(out, name)
        runs: dict[str, list[tuple[float, float, float]]] = {c: [] for c in ns.code}
        for _ in range(ns.runs):
            for code in ns.code:
                runs[code].append(once(code, d, command))
        for code, rs in runs.items():
            cpus = sorted(r[0] for r in rs)
            print(f"| {name} | {code} | {cpus[0]:.2f} s | {cpus[len(cpus) // 2]:.2f} s | "
                  f"{max(r[1] for r in rs):.0f} MiB |", flush=True)
        if name == "tail":
            for code in ns.code:
                res = subprocess.run([sys.executable, "-c", AT_CODE, str(d)],
                                     capture_output=True, text=True, cwd="/",
                                     env=_env(code))
                took = f"{res.stdout.strip()} s" if res.returncode == 0 else "n/a (no Session)"
                print(f"| tail: `at` after the load (CPU, best of 3 offsets) | {code} | "
                      f"{took} | | |", flush=True)


def views(out: Path, codes: list[str], only: str, runs: int, counted: bool) -> None:
    """Each view's figure and its ratio to the load of the same checkout: best CPU of
    ``runs`` (every command of every checkout in turn, so all share the same minutes), or
    instructions."""
    commands = {"the load": LOAD, **VIEWS}
    unit = "instructions" if counted else "CPU (best)"
    print(f"| directory | command | code | {unit} | ratio to the load | peak RSS |\n"
          "|---|---|---|---|---|---|")
    for name in only.split(","):
        d = generate(out, name)
        got: dict[tuple[str, str], list[float]] = {}
        peak: dict[tuple[str, str], float] = {}
        failed: dict[tuple[str, str], str] = {}  # an older checkout without the command
        for _ in range(1 if counted else runs):
            for label, command in commands.items():
                for code in codes:
                    if (label, code) in failed:
                        continue
                    try:
                        if counted:
                            got.setdefault((label, code), []).append(
                                instructions(code, d, command) / 1e9)
                        else:
                            cpu, rss, _ = once(code, d, command)
                            got.setdefault((label, code), []).append(cpu)
                            peak[(label, code)] = max(peak.get((label, code), 0), rss)
                    except SystemExit as e:
                        # mdshell's own last line, not the command that ran
                        last = str(e).strip().splitlines()[-1]
                        failed[(label, code)] = last.rpartition(" failed: ")[2]
        for label in commands:
            for code in codes:
                if (label, code) in failed:
                    print(f"| {name} | {label} | {code} | fails: {failed[(label, code)]} | | |")
                    continue
                best, load = min(got[(label, code)]), min(got[("the load", code)])
                figure = f"{best:.2f} G" if counted else f"{best:.2f} s"
                most = f"{peak[(label, code)]:.0f} MiB" if not counted else ""
                print(f"| {name} | {label} | {code} | {figure} | {best / load:.2f} | {most} |",
                      flush=True)


if __name__ == "__main__":
    main()
