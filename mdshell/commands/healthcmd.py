"""``health``: the checks an operator runs first when brokers are down."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from .base import ArgParser, Result, command
from .shell import Shell

if TYPE_CHECKING:
    from ..image.health import Check

MARK = {"ok": "OK  ", "warn": "WARN", "fail": "FAIL", "info": "INFO"}


def voter_ids(shell: Shell) -> list[int] | None:
    q = shell.session.quorum_info()
    if q.voters is not None:
        return [v.id for v in q.voters]
    if q.quorum_state_voters:
        return q.quorum_state_voters
    if q.last_leader_change is not None:
        return q.last_leader_change.voters
    return None


@command("health", "Check brokers, partitions, controllers and features for trouble.",
         "health [--all]",
         details="Fenced or shutting-down brokers, partitions without a leader, "
                 "under-replicated and under-min-ISR partitions, ELR state, controller "
                 "registrations that are not voters, and finalized feature levels that a "
                 "registered node does not support; damaged or incomplete data fails a 'data' "
                 "check (the image may be wrong). One-shot exit code: 1 when a check fails. "
                 "--all lists every item (default: the first 20 per check). In JSON, each "
                 "check's items are lines of text and its details the same items as "
                 "objects (check, broker/controller or topic and partition, fields).",
         options=("--all",))
def health(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("health", "health [--all]")
    p.add_argument("--all", action="store_true")
    ns = p.parse_args(args)
    from ..image.health import FAIL, run_checks

    checks = run_checks(shell.loaded.image, voter_ids(shell), shell.loaded.problems)
    failed = any(c.status == FAIL for c in checks)
    data = {"ok": not failed, "checks": [
        {"name": c.name, "status": c.status, "summary": c.summary, "items": c.items,
         "details": c.details()}
        for c in checks]}
    return Result(_lines(checks, None if ns.all else 20), data, exit_code=1 if failed else 0)


def _lines(checks: list[Check], limit: int | None) -> Iterator[str]:
    from ..image.health import FAIL, WARN

    for c in checks:
        yield f"{MARK.get(c.status, c.status)}  {c.name}: {c.summary}"
        shown = c.items if limit is None else c.items[:limit]
        for item in shown:
            yield f"        {item}"
        if len(shown) < len(c.items):
            yield f"        ... {len(c.items) - len(shown)} more (health --all)"
    failed = sum(1 for c in checks if c.status == FAIL)
    warned = sum(1 for c in checks if c.status == WARN)
    warns = f"{warned} warning{'s' if warned != 1 else ''}"
    if failed:
        fails = f"{failed} check{'s' if failed != 1 else ''} failed"
        yield fails + (f", {warns}" if warned else "")
    else:
        yield "healthy" + (f" ({warns})" if warned else "")
