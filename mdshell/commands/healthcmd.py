"""``health``: the checks an operator runs first when brokers are down."""

from __future__ import annotations

from ..image.model import Image
from ..problems import SourceError
from ..session import Session
from ..source.logscan import iter_log
from ..wire.kinds import RecordKind as K
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


# Broker registration records, and the field that names the broker.
_BROKER_FIELD = {K.REGISTER_BROKER: "brokerId", K.UNREGISTER_BROKER: "brokerId",
                 K.FENCE_BROKER: "id", K.UNFENCE_BROKER: "id",
                 K.BROKER_REGISTRATION_CHANGE: "brokerId"}
_FIRST_SPAN = 4096  # offsets read back from the image's end at first (then 8 times more)


def registration_times(session: Session, image: Image) -> dict[int, int]:
    """When each fenced broker's registration last changed (the batch time of its last
    RegisterBroker, Fence/Unfence or BrokerRegistrationChange record, as of the image
    shown): the log is read back from the image's offset, a stretch at a time (a stopped
    cluster's last changes are near its end), until each is found or the log's start is
    reached (a change inside the snapshot has no time of its own: left out)."""
    wanted = {b.id for b in image.brokers.values() if b.fenced}
    end = image.provenance.offset
    segments = session.source.segments()
    if not wanted or not segments or end < 0:
        return {}
    start = segments[0].base_offset
    times: dict[int, int] = {}
    span = _FIRST_SPAN
    while True:
        first = max(start, end - span + 1)
        found: dict[int, int] = {}
        try:
            for r in iter_log(session.source, first=first, last=end):
                field = None if r.control else _BROKER_FIELD.get(r.key)
                if field is not None and isinstance(r.value, dict):
                    found[r.value[field]] = r.timestamp
        except SourceError:
            return times
        times.update({i: t for i, t in found.items() if i in wanted})
        if wanted <= times.keys() or first <= start:
            return times
        span *= 8


@command("health", "Check brokers, partitions, controllers and features for trouble.",
         "health [--all]",
         details="Fenced brokers (a failure when one lost its session; a warning, with "
                 "the time of its last registration change, when it was stopped after a "
                 "controlled shutdown: a stopped cluster is told from a failing one), brokers "
                 "shutting down, partitions without a leader, "
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
    image = shell.session.loaded.image
    checks = run_checks(image, voter_ids(shell.session), verdict,
                        registration_times(shell.session, image))
    failed = any(c.status == FAIL for c in checks)
    return Result(value=r.Health(checks, None if ns.all else 20, not failed, verdict),
                  exit_code=1 if failed else 0)
