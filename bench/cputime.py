"""CPU time of a process tree: a Spark query's cost is spread over the driver, the JVM and
its Python workers, and on a shared machine wall time says little; CPU time says more."""

from __future__ import annotations

import os


def tree_cpu(root: int | None = None) -> float:
    """CPU seconds (user + system, children waited for included) of ``root`` (default: this
    process) and every live descendant: the JVM and its Python worker daemon."""
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
    total, todo, seen = 0, [root or os.getpid()], set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += stats.get(pid, (0, 0))[1]
        todo += [p for p, (ppid, _) in stats.items() if ppid == pid]
    return total / tick
