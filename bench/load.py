"""Benchmark: one-shot wall time and peak memory of mdshell on real and generated directories.

Usage: python bench/load.py [--quick] [--runs N] [--out bench/out] [--only TEXT]

Each measurement runs ``python -m mdshell ...`` in a fresh process (start-up included, as a
user sees it) ``--runs`` times and reports the best and median wall time and the peak RSS of
the process (``wait4`` rusage). Generated directories are written once by ``mdshell.synth``
into the output folder and reused. ``--quick`` skips the 1M-partition directory; ``--only``
measures only the rows whose label holds TEXT (``--only 100k``, ``--only describe``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
LARGEST = "ArpithaPrakash__Real-Time-Air-Quality-Prediction-with-Apache-Kafka"
SMALL = "13LAckHEart__kafka"
ONE_MB = "dkoh12__Systems"

# 30 brokers, RF 3, 100 partitions a topic; a snapshot after setup, then a log of changes.
GENERATED = {
    "100k": ["--topics", "1000"],
    "500k": ["--topics", "5000"],
    "1M": ["--topics", "10000"],
    # 100k partitions and a log of 12,000 changes after the snapshot: live-follow feeding.
    "100k-tail": ["--topics", "1000", "--history-changes", "12000"],
}
COMMON = ["--brokers", "30", "--controllers", "3", "--partitions-per-topic", "100", "--rf", "3",
          "--history-changes", "2000", "--snapshot-at", "setup", "--log-from", "snapshot",
          "--seed", "7"]


def run(args: list[str], runs: int) -> tuple[float, float, int, float]:
    """(best wall s, median wall s, peak RSS MiB, best CPU s) of ``python -m mdshell ARGS``.
    CPU time (user + system) is the steadier figure on a shared machine."""
    walls, cpus, peak = [], [], 0
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "mdshell", *args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - start)
        err = proc.stderr.read().decode() if proc.stderr else ""
        # health exits 1 when a check fails; everything else must succeed
        allowed = (0, 1) if "health" in args else (0,)
        if os.waitstatus_to_exitcode(status) not in allowed:
            raise SystemExit(f"mdshell {' '.join(args)} failed: {err}")
        peak = max(peak, usage.ru_maxrss // 1024)
        cpus.append(usage.ru_utime + usage.ru_stime)
    return min(walls), statistics.median(walls), peak, min(cpus)


def generate(out: Path, name: str) -> Path:
    target = out / f"gen-{name}"
    if not (target / "__cluster_metadata-0").is_dir():
        print(f"generating {name} partitions into {target} ...", file=sys.stderr)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mdshell.synth", "--out", str(target),
                        *COMMON, *GENERATED[name]], check=True)
        print(f"  took {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return target


def offsets(d: Path) -> tuple[int, int]:
    """The snapshot's last offset and the middle of the log after it."""
    sys.path.insert(0, str(ROOT))
    from mdshell.source import DirectorySource

    src = DirectorySource(str(d))
    snap = max(c.end_offset for c in src.layout.checkpoints) - 1
    last = src.offset_range()[1] or snap
    return snap, (snap + last) // 2


def some_topic(d: Path) -> str:
    """A topic of the generated directory (names depend on the generator's width)."""
    sys.path.insert(0, str(ROOT))
    from mdshell.session import load
    from mdshell.source import DirectorySource

    names = sorted(load(DirectorySource(str(d))).image.topics_by_name)
    return next(n for n in names if n.startswith("topic-"))


def feed_times(d: Path, records: int, runs: int) -> tuple[float, float, int]:
    """(best s, median s, records) of feeding the last ``records`` records of the log to a
    session loaded up to just before them (what live follow does), in this process."""
    sys.path.insert(0, str(ROOT))
    from mdshell.session import Session, load
    from mdshell.source import DirectorySource

    src = DirectorySource(str(d))
    snap = max(c.end_offset for c in src.layout.checkpoints)
    batches = [loc.batch for loc in src.log_stream(snap)]
    rest, n = [], 0
    while batches and n < records:
        rest.insert(0, batches.pop())
        n += rest[0].count
    cut = rest[0].base_offset - 1
    times = []
    for _ in range(runs):
        session = Session(src, load(src, upto=cut))
        start = time.perf_counter()
        session.feed(rest)
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), n


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", default=str(ROOT / "bench" / "out"))
    p.add_argument("--only", default="")
    ns = p.parse_args()
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, float, float, int, float]] = []

    def measure(label: str, args: list[str], runs: int = ns.runs) -> None:
        if ns.only not in label:
            return
        best, median, peak, cpu = run(args, runs)
        rows.append((label, best, median, peak, cpu))
        print(f"{label:48s} best {best:6.2f} s  median {median:6.2f} s  cpu {cpu:6.2f} s  "
              f"peak {peak:5d} MiB", file=sys.stderr)

    if CORPUS.is_dir():
        small, largest = CORPUS / SMALL, CORPUS / LARGEST
        measure(f"corpus small ({size_mb(small):.1f} MB): ls /", ["-d", str(small), "ls", "/"])
        one_mb = CORPUS / ONE_MB
        measure(f"corpus {ONE_MB} ({size_mb(one_mb):.1f} MB): ls /", ["-d", str(one_mb), "ls", "/"])
        measure(f"corpus largest ({size_mb(largest):.1f} MB): cat provenance",
                ["-d", str(largest), "cat", "/image/provenance"])
        measure("corpus largest: tree /image", ["-d", str(largest), "tree", "/image"])
        measure("corpus largest: health", ["-d", str(largest), "health"])
    names = ["100k"] if ns.quick else ["100k", "1M"]
    for name in names:
        d = generate(out, name)
        mb = size_mb(d)
        runs = ns.runs if name == "100k" else max(2, ns.runs // 2)
        part = f"/image/topics/byName/{some_topic(d)}/7"
        measure(f"{name} partitions ({mb:.0f} MB): cat provenance",
                ["-d", str(d), "cat", "/image/provenance"], runs)
        measure(f"{name}: ls /image/topics/byName", ["-d", str(d), "ls",
                                                     "/image/topics/byName"], runs)
        measure(f"{name}: cat one partition", ["-d", str(d), "cat",
                                               part], runs)
        if name == "100k":
            snap_end, middle = offsets(d)
            measure(f"{name}: tree /image (all partitions)", ["-d", str(d), "tree", "/image"],
                    runs)
            measure(f"{name}: tree -o json /image (all partitions)",
                    ["-d", str(d), "-o", "json", "tree", "/image"], runs)
            measure(f"{name}: topics --describe (every partition)",
                    ["-d", str(d), "topics", "--describe"], runs)
            measure(f"{name}: topics --describe -o json (every partition)",
                    ["-d", str(d), "-o", "json", "topics", "--describe"], runs)
            measure(f"{name}: find -o json /image", ["-d", str(d), "-o", "json", "find",
                                                      "/image"], runs)
            measure(f"{name}: at {middle} (middle of the log tail)",
                    ["-d", str(d), "at", str(middle)], runs)
            measure(f"{name}: diff {snap_end} latest (snapshot end to end)",
                    ["-d", str(d), "diff", str(snap_end), "latest"], runs)
            measure(f"{name}: changes of one partition",
                    ["-d", str(d), "changes", part], runs)
            measure(f"{name}: health", ["-d", str(d), "health"], runs)
            label = "100k: feed 10,000 new records to the loaded image (in process)"
            if ns.only in label:
                tail = generate(out, "100k-tail")
                best, median, n = feed_times(tail, 10_000, runs)
                label = f"100k: feed {n:,} new records to the loaded image (in process)"
                rows.append((label, best, median, 0, best))
                print(f"{label:48s} best {best:6.2f} s  median {median:6.2f} s",
                      file=sys.stderr)
    lines = ["| measurement | wall (best) | wall (median) | CPU (best) | peak RSS |",
             "|---|---|---|---|---|"]
    lines += [f"| {label} | {best:.2f} s | {median:.2f} s | {cpu:.2f} s | "
              f"{f'{peak} MiB' if peak else '-'} |" for label, best, median, peak, cpu in rows]
    report = "\n".join(lines) + "\n"
    (out / "results.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
