"""CPU time of a process tree: a Spark query's cost is spread over the driver, the JVM and
its Python workers, and on a shared machine wall time says little; CPU time says more."""

from __future__ import annotations

import os

Snapshot = dict[int, float]


def processes() -> dict[int, tuple[int, int, float]]:
    """Every live process: its parent, its process group and its CPU seconds (user + system,
    children waited for included), by process id."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[int, int, float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(name)] = (int(fields[1]), int(fields[2]),
                          sum(int(x) for x in fields[11:15]) / tick)
    return out


def group_cpu(pgid: int) -> float:
    """CPU seconds of the live processes of a process group (a server: its JVM, workers)."""
    return sum(cpu for _, group, cpu in processes().values() if group == pgid)


def tree() -> Snapshot:
    """CPU seconds (user + system, children waited for included) of this process and of every
    live descendant (the JVM and its Python worker daemon), per process id."""
    stats = {pid: (ppid, cpu) for pid, (ppid, _, cpu) in processes().items()}
    out: Snapshot = {}
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid in out:
            continue
        out[pid] = stats.get(pid, (0, 0.0))[1]
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
