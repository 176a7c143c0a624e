"""``health``: the checks an operator runs first when brokers are down."""

from __future__ import annotations

from ..session import Session
from . import results as r
from .base import ArgParser, Result, command
from .shell import Shell


def voter_ids(session: Session) -> list[int] | None:
    """The voters, from whatever knows them best: the log's records, DescribeQuorum (live),
    quorum-state, the last LeaderChange."""
    q = session.quorum_info()
    if q.voters is not None:
        return [v.id for v in q.voters]
    if q.live_voters:
        return q.live_voters
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
                 "registered node does not support. The 'data' check comes first: the image's "
                 "verdict (complete, may be wrong because..., incomplete because...), which "
                 "fails when the data is damaged or incomplete and warns when the image is not "
                 "the latest (time travel, a live view that stopped following). One-shot exit "
                 "code: 1 when a check fails. "
                 "--all lists every item (default: the first 20 per check). In JSON, each "
                 "item is an object: check, status, message (the line of text), what it "
                 "points at (broker, controller, or topic and partition) and its fields; "
                 "'summary' is the last line of the text and 'verdict' the data check's "
                 "verdict as an object.",
         options=("--all",), args=("",))
def health(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("health", "health [--all]")
    p.add_argument("--all", action="store_true")
    ns = p.parse_args(args)
    from ..image.health import FAIL, run_checks

    verdict = shell.session.verdict()
    checks = run_checks(shell.session.loaded.image, voter_ids(shell.session), verdict)
    failed = any(c.status == FAIL for c in checks)
    return Result(value=r.Health(checks, None if ns.all else 20, not failed, verdict),
                  exit_code=1 if failed else 0)
