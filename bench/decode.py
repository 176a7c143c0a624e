"""Benchmark: decoding a log tail's records with the generated Python decoders and the C ones.

Usage: python bench/decode.py [DIR] [--rounds N]

DIR (default bench/out/tail, written by bench/replay.py) is read once: every metadata record
of the log after its newest snapshot, framed by ``metadata_ranges``. Then, in this one process,
all of them are decoded by the Python decoders and by the C ones (``wire/_cdecode.c``), CPU
seconds each, alternated ``--rounds`` times; the loop's own cost is shown beside (a decoder
that does nothing). Both must give equal results (checked after the rounds).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mdshell.source.directory import DirectorySource
from mdshell.wire import codec
from mdshell.wire.batch import metadata_ranges
from mdshell.wire.records import METADATA

Job = tuple[int, int, bytes, int, int]
Decoders = dict[tuple[int, int], Callable[[bytes, int, int], Any]]


def records(path: str) -> list[Job]:
    """(key, version, buffer, body, end) of every decodable record of the tail."""
    src = DirectorySource(path)
    cp = src.snapshots()[-1]
    jobs: list[Job] = []
    for loc in src.log_stream(cp.end_offset, None, cp, pass_noops=True):
        buf, ranges = metadata_ranges(loc.batch)
        for _off, _vpos, vend, key, ver, body in ranges:
            msg = METADATA.get(key)
            if vend >= 0 and msg is not None and msg.valid.contains(ver):
                jobs.append((key, ver, buf, body, vend))
    return jobs


def run(jobs: list[Job], decoders: Decoders) -> float:
    t = time.process_time()
    for key, ver, buf, body, end in jobs:
        decoders[key, ver](buf, body, end)
    return time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default=str(Path(__file__).parent / "out" / "tail"))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    jobs = records(args.dir)
    kinds = Counter((METADATA[k].name, v) for k, v, *_ in jobs)
    print(f"{len(jobs)} records; most: "
          + ", ".join(f"{n} v{v} {c}" for (n, v), c in kinds.most_common(4)))
    py = {(k, v): codec.python_decoder_for(METADATA[k], v) for k, v, *_ in jobs}
    c = {kv: codec.decoder_for(METADATA[kv[0]], kv[1]) for kv in py}
    if any(c[kv] is py[kv] for kv in py):
        sys.exit("the C decoders are not there (not built, or MDSHELL_PURE=1)")
    nothing: Decoders = {kv: (lambda b, p, e: None) for kv in py}
    for i in range(args.rounds):
        print(f"round {i + 1}: Python {run(jobs, py):.3f} CPU-s, C {run(jobs, c):.3f} CPU-s, "
              f"loop alone {run(jobs, nothing):.3f} CPU-s")
    if any(py[k, v](b, p, e) != c[k, v](b, p, e) for k, v, b, p, e in jobs):
        sys.exit("the decoders disagree")


if __name__ == "__main__":
    main()
