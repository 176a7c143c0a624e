"""Benchmark: how fast mdshell.synth writes large directories (fixtures, benchmarks, demos).

Usage: python bench/synth.py [--runs N] [--million]

Times ``generate`` in this process (best and median of ``--runs``, CPU time too: the machine
is shared) on the scenario of ``tests/test_synth.py`` (100k partitions in one zstd snapshot);
the target is under 8 s for 100k, so that 1M stays well under a minute (``--million`` measures
that too). This used to be a timed test; speed is measured here, never asserted by tests.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from mdshell.synth import generate
    from tests.test_synth import BIG

    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--million", action="store_true")
    ns = p.parse_args()
    scenarios = [("100k partitions, zstd snapshot", BIG)]
    if ns.million:
        scenarios.append(("1M partitions, zstd snapshot",
                          dataclasses.replace(BIG, topics=1000)))
    for label, scenario in scenarios:
        walls, cpus = [], []
        for _ in range(ns.runs):
            with tempfile.TemporaryDirectory() as tmp:
                start, cpu = time.perf_counter(), time.process_time()
                generate(scenario, str(Path(tmp) / "out"))
                walls.append(time.perf_counter() - start)
                cpus.append(time.process_time() - cpu)
        print(f"{label}: wall best {min(walls):.2f} s, median {statistics.median(walls):.2f} s;"
              f" CPU best {min(cpus):.2f} s")


if __name__ == "__main__":
    main()
