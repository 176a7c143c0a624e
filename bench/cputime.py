"""CPU time of a process tree: a Spark query's cost is spread over the driver, the JVM and
its Python workers, and on a shared machine wall time says little; CPU time says more."""

from __future__ import annotations

import os

Snapshot = dict[int, float]


def tree() -> Snapshot:
    """CPU seconds (user + system, children waited for included) of this process and of every
    live descendant (the JVM and its Python worker daemon), per process id."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
    out: Snapshot = {}
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out[pid] = stats.get(pid, (0, 0))[1] / tick
        todo += [p for p, (ppid, _) in stats.items() if ppid == pid]
    return out


def cpu_since(before: Snapshot) -> float:
    """CPU seconds the tree used since ``before`` (a process that ended in between is not
    counted after its last snapshot: a lower bound, never negative)."""
    now = tree()
    return sum(max(0.0, t - before.get(pid, 0.0)) for pid, t in now.items())


def cpu_by_kind(before: Snapshot) -> dict[str, float]:
    """:func:`cpu_since` split between Java processes (Spark's JVM) and the others (the
    driver and the Python workers)."""
    out = {"jvm": 0.0, "python": 0.0}
    for pid, t in tree().items():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                program = f.read().split(b"\0")[0]
        except OSError:
            continue
        kind = "jvm" if os.path.basename(program) == b"java" else "python"
        out[kind] += max(0.0, t - before.get(pid, 0.0))
    return {k: round(v, 2) for k, v in out.items()}
