#!/usr/bin/env python3
"""The mutational fuzzer of mdshell's readers (issue 31): the long run, and one case again.

    python scripts/fuzz.py --inputs 20000 --seed 7              # a long run (both modes)
    python scripts/fuzz.py --inputs 2000 --seed 7 --jobs 2      # two workers per mode
    python scripts/fuzz.py --seed 7 --case 1234 --keep /tmp/c   # case 1234 again, its files
    python scripts/fuzz.py --sanitized DIR ...                  # compiled pieces of DIR
                                                                # (scripts/fuzz_sanitized.sh)

Each input is one seed file (a fixture's data file in its log dir, or a small corpus file
alone) with one seeded mutation, sent through every reader (``-d``/``-s`` health, tree,
records, changes; the load of one file and its valid prefix; ``records``' scan; Spark's
fast reader) in a compiled worker and an ``MDSHELL_PURE=1`` worker, each case bounded in
CPU time and memory. Findings are grouped by class of issue 31 and kind, with the first
case of each; ``--json FILE`` writes every finding. Exit 1 when something was found.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fuzz import campaign as fc  # noqa: E402
from tests.fuzz.judge import CLASSES  # noqa: E402
from tests.fuzz.pool import Limits, Mode  # noqa: E402
from tests.fuzz.seeds import all_seeds  # noqa: E402


def sanitized_mode(build: str) -> Mode:
    """The compiled mode with the pieces built under ``build`` (its ``mdshell`` copy first
    on the path) and gcc's AddressSanitizer runtime preloaded into Python. Its quarantine of
    freed memory is 16 MiB, not ASan's 256: it would hold every freed decompression buffer
    and pass the memory bound a case is held to (an 8 MiB records section read a few times
    peaked at 386 MiB, against 44 MiB with 16 MiB of quarantine and 33 MiB unsanitized)."""
    import subprocess

    lib = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                         text=True, check=True).stdout.strip()
    ubsan = subprocess.run(["gcc", "-print-file-name=libubsan.so"], capture_output=True,
                           text=True, check=True).stdout.strip()
    return Mode("sanitized", {
        "PYTHONPATH": build,
        "LD_PRELOAD": f"{lib} {ubsan}",
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:allocator_may_return_null=1:"
                        "quarantine_size_mb=16:handle_segv=1:print_summary=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        "PYTHONMALLOC": "malloc",
    }, memory_cap=False)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--inputs", type=int, default=1000, help="cases to run (default 1000)")
    p.add_argument("--seed", type=int, default=1, help="master seed (default 1)")
    p.add_argument("--first", type=int, default=0, help="number of the first case")
    p.add_argument("--jobs", type=int, default=1, help="workers per mode (default 1)")
    p.add_argument("--budget", type=float, help="stop feeding cases after this many seconds")
    p.add_argument("--modes", default="compiled,pure",
                   help="compiled, pure (default both); sanitized needs --sanitized")
    p.add_argument("--sanitized", metavar="DIR",
                   help="a sanitizer build (scripts/fuzz_sanitized.sh) for the compiled mode")
    p.add_argument("--no-corpus", action="store_true", help="fixtures only")
    p.add_argument("--cpu", type=float, default=10.0, help="CPU seconds a case may take")
    p.add_argument("--rss", type=int, default=1536, help="MiB a worker may reach")
    p.add_argument("--case", type=int, help="run this one case and show every reader")
    p.add_argument("--keep", metavar="DIR", help="with --case: write the case's log dir here")
    p.add_argument("--minimize", metavar="CLASS:KIND",
                   help="with --case: shrink the case while it still gives this finding "
                        "(e.g. '7:records vs load: where reading stops'); --keep writes the "
                        "smallest")
    p.add_argument("--json", metavar="FILE", help="write every finding here")
    args = p.parse_args()

    seeds = all_seeds(corpus=not args.no_corpus)
    modes = []
    for name in args.modes.split(","):
        if name == "compiled":
            modes.append(sanitized_mode(args.sanitized) if args.sanitized else fc.COMPILED)
        elif name == "pure":
            modes.append(fc.PURE)
        else:
            p.error(f"unknown mode {name}")
    limits = Limits(cpu=args.cpu, rss=args.rss << 20)
    if args.case is not None:
        return one_case(seeds, args, modes, limits)
    report = fc.campaign(seeds, args.seed, args.inputs, modes, args.jobs, args.budget, limits,
                         args.first, progress=lambda s: print(s, file=sys.stderr))
    print_report(report, args.seed)
    if args.json:
        Path(args.json).write_text(json.dumps([
            {"case": o.planned.id, "seed": o.planned.seed.name, "mutator": o.planned.mutator,
             "what": o.planned.what, "class": f.cls, "kind": f.kind, "reader": f.reader,
             "detail": f.detail} for o, f in report.findings], indent=1))
    return 1 if report.findings else 0


def one_case(seeds: list, args: argparse.Namespace, modes: list[Mode], limits: Limits) -> int:
    planned = fc.make_case(seeds, args.seed, args.case)
    if planned is None:
        print("no mutation applies to this case's seed")
        return 0
    print(f"case {planned.id}: {planned.seed.name}: {planned.mutator}: {planned.what} "
          f"{sorted(planned.tags)}")
    case = planned.case()
    if args.minimize:
        from tests.fuzz.minimize import minimize, still_found

        cls, kind = args.minimize.split(":", 1)
        with fc.Runner(modes, 1, limits) as runner:
            test = still_found(runner, case.target, planned.tags, (cls, kind))
            if not test(case):
                print(f"case {planned.id} gives no finding {cls}:{kind}")
                return 1
            case = minimize(case, test)
        data = case.files[case.target]
        print(f"smallest: {len(case.files)} file(s), {case.target} of {len(data)} bytes")
        if len(data) <= 512:
            print(f"bytes: {data.hex()}")
    if args.keep:
        for rel, data in case.files.items():
            path = Path(args.keep, rel)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        print(f"written to {args.keep} (the mutated file: {case.target})")
    with fc.Runner(modes, 1, limits) as runner:
        results, _ = runner.run([case])
    from tests.fuzz.judge import judge
    from tests.fuzz.pool import Killed

    res = results[case.id]
    for mode, runs in res.items():
        if isinstance(runs, Killed):
            print(f"[{mode}] killed: {runs.why} in {runs.reader}\n{runs.stack[-3000:]}")
            continue
        for r in runs.values():
            print(f"[{mode}] {r.reader}: rc={r.rc} cpu={r.cpu:.3f}s peak={r.peak >> 20}MiB "
                  f"exc={r.exc} data={str(r.data)[:300]}")
            for line in r.err.splitlines()[:6]:
                print(f"      {line[:240]}")
    for f in judge(case.target, planned.tags, len(planned.data), res, None):
        print(f"FINDING class {f.cls} ({CLASSES[f.cls]}): {f.kind} [{f.reader}] {f.detail}")
    return 0


def print_report(report: fc.Report, seed: int) -> None:
    n = len(report.outcomes)
    print(f"{n} inputs in {report.seconds:.0f} s ({n / max(report.seconds, 1e-9):.1f} "
          f"inputs/s){' (cut by the budget)' if report.cut else ''}; worker restarts "
          f"{report.restarts}")
    by_mode: dict[str, float] = defaultdict(float)
    for key, cpu in report.cpu.items():
        by_mode[key.split("/")[1]] += cpu
    for mode, cpu in sorted(by_mode.items()):
        print(f"  {mode}: {cpu:.1f} CPU s in readers, {n / max(cpu, 1e-9):.1f} inputs per "
              "CPU second (all readers)")
    readers = sorted({k.split("/")[0] for k in report.cpu})
    print("  per reader (inputs per CPU second): " + ", ".join(
        f"{r} " + "/".join(f"{report.counts[f'{r}/{m}'] / max(report.cpu[f'{r}/{m}'], 1e-9):.0f}"
                           for m in sorted(by_mode) if f"{r}/{m}" in report.cpu)
        for r in readers))
    groups: dict[tuple[str, str, str], list] = defaultdict(list)
    for o, f in report.findings:
        groups[f.key()].append((o, f))
    for s, f in report.seed_findings:
        print(f"  on an unmutated seed {s}: class {f.cls} {f.kind} [{f.reader}] {f.detail}")
    if not groups:
        print("no findings")
        return
    for cls in sorted({k[0] for k in groups}, key=lambda c: (not c.isdigit(), c)):
        keys = sorted(k for k in groups if k[0] == cls)
        total = sum(len(groups[k]) for k in keys)
        print(f"\nclass {cls}: {CLASSES[cls]} ({total} findings)")
        for k in keys:
            items = groups[k]
            o, f = min(items, key=lambda x: len(x[0].planned.data))
            ids = sorted({i[0].planned.id for i in items})[:8]
            print(f"  - {k[1]} [{k[2]}] x{len(items)} (cases {ids})")
            print(f"      smallest: case {o.planned.id} ({len(o.planned.data)} bytes): "
                  f"{o.planned.seed.name}: {o.planned.mutator}: {o.planned.what}")
            print(f"      {f.reader}: {f.detail[:600]}")
            print(f"      again: python scripts/fuzz.py --seed {seed} --case {o.planned.id}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    raise SystemExit(main())
