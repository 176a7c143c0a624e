"""Make a failing case small: the fewest files and batches that still give its finding.

Greedy, in the order that shrinks most: the mutated file alone in its directory (the other
files of a fixture dropped), then whole batches of it removed one at a time (the last ones
first, then the others), then its tail cut at batch boundaries. A step is kept when the
judge still finds the same (class, kind) on the smaller input.
"""

from __future__ import annotations

from collections.abc import Callable

from . import judge as judging
from .campaign import Runner
from .layout import batches
from .readers import Case

Found = Callable[[Case], bool]


def still_found(runner: Runner, target: str, tags: frozenset[str],
                key: tuple[str, str]) -> Found:
    """A test: does this case still give a finding of ``key`` (class, kind)?"""
    counter = [10_000_000]

    def found(case: Case) -> bool:
        counter[0] += 1
        case.id = counter[0]
        results, _ = runner.run([case])
        res = results.get(case.id, {})
        return any((f.cls, f.kind) == key
                   for f in judging.judge(target, tags, len(case.files[case.target]), res,
                                          None))
    return found


def minimize(case: Case, found: Found, say: Callable[[str], None] = print) -> Case:
    """The smallest variant of ``case`` that ``found`` still holds for."""
    if len(case.files) > 1:
        alone = Case(case.id, case.seed, {case.target: case.files[case.target]}, case.target,
                     case.changes, True)
        if found(alone):
            say("the mutated file alone gives it")
            case = alone
    data = case.files[case.target]
    spans = batches(data)
    # whole batches removed, the last ones first
    for pos, size in reversed(spans):
        smaller = data[:pos] + data[pos + size:]
        if smaller and found(_with(case, smaller)):
            data = smaller
            say(f"batch at byte {pos} ({size} bytes) removed: {len(data)} bytes")
    # the tail cut at batch boundaries
    for pos, _ in reversed(batches(data)):
        if pos and found(_with(case, data[:pos])):
            data = data[:pos]
            say(f"cut at byte {pos}")
    return _with(case, data)


def _with(case: Case, data: bytes) -> Case:
    files = dict(case.files)
    files[case.target] = data
    return Case(case.id, case.seed, files, case.target, case.changes, case.single)
