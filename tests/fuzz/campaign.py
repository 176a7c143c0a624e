"""A fuzz campaign: a seeded plan of mutated inputs, run through every reader in every mode
by persistent workers, each judged (:mod:`.judge`).

Case ``i`` of master seed ``S`` is made from its own generator (``Random(f"{S}:{i}")``): it
can be made again alone (``scripts/fuzz.py --seed S --case i --keep DIR``), whatever the
other cases are. The seeds list (fixtures, then the corpus when present) is part of the
plan: a campaign without the corpus makes other cases.
"""

from __future__ import annotations

import queue
import random
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from . import judge as judging
from .mutate import mutate
from .pool import Killed, Limits, Mode, Worker
from .readers import Case, Run
from .seeds import Seed

COMPILED = Mode("compiled")
PURE = Mode("pure", {"MDSHELL_PURE": "1"})


@dataclass
class Planned:
    id: int
    seed: Seed
    mutator: str
    what: str
    tags: frozenset[str]
    data: bytes

    def case(self) -> Case:
        files = dict(self.seed.files)
        files[self.seed.target] = self.data
        return Case(self.id, self.seed.name, files, self.seed.target, self.seed.changes,
                    self.seed.single)


def make_case(seeds: list[Seed], master: int, i: int) -> Planned | None:
    """Case ``i`` of the campaign seeded ``master``: a seed (fixtures and corpus files
    picked evenly) and one mutation of it."""
    rng = random.Random(f"{master}:{i}")
    fixtures = [s for s in seeds if s.name.startswith("fixture:")]
    corpus = [s for s in seeds if not s.name.startswith("fixture:")]
    pool = corpus if corpus and rng.random() < 0.5 else fixtures or corpus
    seed = rng.choice(pool)
    got = mutate(rng, seed.mapped)
    if got is None:
        return None
    name, m = got
    return Planned(i, seed, name, m.what, m.tags, m.data)


def plan(seeds: list[Seed], master: int, n: int, first: int = 0) -> Iterator[Planned]:
    for i in range(first, first + n):
        p = make_case(seeds, master, i)
        if p is not None:
            yield p


@dataclass
class Outcome:
    planned: Planned
    results: dict[str, dict[str, Run] | Killed]
    findings: list[judging.Finding] = field(default_factory=list)


@dataclass
class Report:
    outcomes: list[Outcome]
    seconds: float
    cpu: dict[str, float]  # CPU seconds per reader and mode, summed
    counts: dict[str, int]  # runs per reader and mode
    restarts: dict[str, int]
    cut: bool  # the time budget ended the plan early
    seed_findings: list[tuple[str, judging.Finding]] = field(default_factory=list)

    @property
    def findings(self) -> list[tuple[Outcome, judging.Finding]]:
        return [(o, f) for o in self.outcomes for f in o.findings]


class Runner:
    """Workers for each mode (``jobs`` each), fed from one queue per mode."""

    def __init__(self, modes: list[Mode], jobs: int = 1, limits: Limits | None = None,
                 ) -> None:
        self.modes = modes
        self.limits = limits or Limits()
        self.scratch = tempfile.mkdtemp(prefix="mdshell-fuzz-")
        self.queues: dict[str, queue.Queue[Case | None]] = {m.name: queue.Queue(8)
                                                            for m in modes}
        self.done: queue.Queue[tuple[str, int, dict[str, Run] | Killed]] = queue.Queue()
        self.workers = [Worker(m, self.limits, self.scratch) for m in modes
                        for _ in range(jobs)]
        self.threads = [threading.Thread(target=self._serve, args=(w,), daemon=True)
                        for w in self.workers]

    def __enter__(self) -> Runner:
        for w in self.workers:
            w.start()
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for m in self.modes:
            for _ in range(sum(1 for w in self.workers if w.mode is m)):
                self.queues[m.name].put(None)
        for t in self.threads:
            t.join(timeout=30)
        for w in self.workers:
            w.close()
        import shutil

        shutil.rmtree(self.scratch, ignore_errors=True)

    def _serve(self, w: Worker) -> None:
        q = self.queues[w.mode.name]
        while True:
            case = q.get()
            if case is None:
                return
            try:
                res = w.run(case)
                runs: dict[str, Run] | Killed = (res if isinstance(res, Killed)
                                                 else {r.reader: r for r in res["runs"]})
            except Exception as e:  # the harness itself: say so, do not hang the campaign
                runs = Killed(f"harness error {type(e).__name__}: {e}", "?", "")
            self.done.put((w.mode.name, case.id, runs))

    def run(self, cases: Iterable[Case], budget: float | None = None,
            on_result: Callable[[int, dict[str, dict[str, Run] | Killed]], None] | None = None,
            ) -> tuple[dict[int, dict[str, dict[str, Run] | Killed]], bool]:
        """Every case through every mode: ``{case id: {mode: runs or Killed}}``, and
        whether ``budget`` seconds ended the feeding early."""
        t0 = time.monotonic()
        results: dict[int, dict[str, dict[str, Run] | Killed]] = {}
        pending = 0
        cut = False
        it = iter(cases)
        exhausted = False
        while not exhausted or pending:
            # feed while every queue has room
            while not exhausted and all(not q.full() for q in self.queues.values()):
                if budget is not None and time.monotonic() - t0 > budget:
                    exhausted = cut = True
                    break
                case = next(it, None)
                if case is None:
                    exhausted = True
                    break
                for q in self.queues.values():
                    q.put(case)
                pending += len(self.modes)
            try:
                mode, cid, runs = self.done.get(timeout=0.5)
            except queue.Empty:
                continue
            pending -= 1
            results.setdefault(cid, {})[mode] = runs
            if len(results[cid]) == len(self.modes) and on_result:
                on_result(cid, results[cid])
        return results, cut


def campaign(seeds: list[Seed], master: int, n: int, modes: list[Mode] | None = None,
             jobs: int = 1, budget: float | None = None, limits: Limits | None = None,
             first: int = 0, progress: Callable[[str], None] | None = None) -> Report:
    """Run ``n`` cases of master seed ``master`` and judge them."""
    modes = modes or [COMPILED, PURE]
    planned = {p.id: p for p in plan(seeds, master, n, first)}
    t0 = time.monotonic()
    done = [0]

    def tick(cid: int, _: object) -> None:
        done[0] += 1
        if progress and done[0] % 100 == 0:
            progress(f"{done[0]} cases, {time.monotonic() - t0:.0f} s")

    with Runner(modes, jobs, limits) as runner:
        results, cut = runner.run((p.case() for p in planned.values()), budget, tick)
        # the unmutated seeds, for the cases whose verdict is judged against them
        wanted = {planned[cid].seed.name: planned[cid].seed for cid in results
                  if "detectable" in planned[cid].tags}
        base_cases = [Case(-1 - i, s.name, s.files, s.target, s.changes, s.single)
                      for i, s in enumerate(wanted.values())]
        base_results, _ = runner.run(base_cases)
        restarts = {w.mode.name: w.started - 1 for w in runner.workers}
    baselines: dict[str, dict[str, dict[str, Run]]] = {}
    seed_findings = []
    for c in base_cases:
        res = base_results.get(c.id, {})
        baselines[c.seed] = {m: r for m, r in res.items() if not isinstance(r, Killed)}
        for f in judging.judge(c.target, frozenset(), len(c.files[c.target]), res, None):
            seed_findings.append((c.seed, f))
    outcomes = []
    cpu: dict[str, float] = {}
    counts: dict[str, int] = {}
    for cid, res in sorted(results.items()):
        p = planned[cid]
        o = Outcome(p, res)
        o.findings = judging.judge(p.seed.target, p.tags, len(p.data), res,
                                   baselines.get(p.seed.name))
        outcomes.append(o)
        for mode, runs in res.items():
            if isinstance(runs, Killed):
                continue
            for r in runs.values():
                key = f"{r.reader}/{mode}"
                cpu[key] = cpu.get(key, 0.0) + r.cpu
                counts[key] = counts.get(key, 0) + 1
    return Report(outcomes, time.monotonic() - t0, cpu, counts, restarts, cut, seed_findings)
