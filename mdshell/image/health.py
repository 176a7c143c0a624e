"""Health checks over an image: what an operator looks for when brokers are down.

Each check returns a :class:`Check` with a status (ok / warn / fail / info) and the items
behind it. ``min.insync.replicas`` is resolved like Kafka does from what the image holds
(topic config, then the cluster-wide broker default); a value set only in a broker's
server.properties is not in the metadata log, so the fallback is Kafka's default of 1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..wire.frames import LOST_DIR
from . import model as m
from .names import BROKER_CONFIG, METADATA_VERSION_FEATURE, TOPIC_CONFIG, metadata_version_name
from .verdict import FAIL, OK, WARN, Verdict

INFO = "info"
MIN_ISR = "min.insync.replicas"


class Item(str):
    """One finding: its line of text, and the same as fields (``data``) for JSON."""

    data: dict[str, Any]


def item(text: str, **fields: Any) -> Item:
    it = Item(text)
    it.data = fields
    return it


class Findings(Sequence[str]):
    """A check's items, each made when read from what was found (a partition and what is
    wrong with it): a cluster with a fifth of 100k partitions under-replicated has 20k items,
    of which text shows a few; JSON and the TUI read them all."""

    def __init__(self, make: Callable[..., Item]) -> None:
        self.make = make
        self.found: list[tuple[Any, ...]] = []

    def add(self, *found: Any) -> None:
        self.found.append(found)

    def __len__(self) -> int:
        return len(self.found)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self.make(*f) for f in self.found[i]]
        return self.make(*self.found[i])

    def __iter__(self) -> Iterator[str]:
        return (self.make(*f) for f in self.found)


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 broker``, ``2 brokers``."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def _are(n: int) -> str:
    return "is" if n == 1 else "are"


@dataclass
class Check:
    """One health check: its status and the items at fault."""

    name: str
    status: str
    summary: str
    items: Sequence[str] = field(default_factory=list)
    # Passed, but on an image the data check fails (see ``_unsure``): front ends group these.
    as_read: bool = False

    def details(self) -> list[dict[str, Any]]:
        """The items as objects: ``{"check": ..., <what it is about>, <fields>}``."""
        return [{"check": self.name, **(it.data if isinstance(it, Item) else {"text": it})}
                for it in self.items]


def min_isrs(img: m.Image) -> tuple[dict[str, tuple[int, str]], tuple[int, str]]:
    """The effective min.insync.replicas of every topic, and where it comes from, at once:
    the topics that set it (to a number), and what the others get (the cluster-wide broker
    default, else Kafka's)."""
    own = {name: found for (kind, name), config in img.configs.items()
           if kind == TOPIC_CONFIG and MIN_ISR in config
           and (found := _set_in(config, "topic config"))}
    return own, _cluster_min_isr(img)


def _cluster_min_isr(img: m.Image) -> tuple[int, str]:
    return (_set_in(img.configs.get((BROKER_CONFIG, "")), "cluster-wide broker default")
            or (1, "Kafka default (a server.properties value is not in the log)"))


def _set_in(config: dict[str, str] | None, where: str) -> tuple[int, str] | None:
    """min.insync.replicas as a config sets it; None: unset or not a number."""
    value = config.get(MIN_ISR) if config else None
    if value is None:
        return None
    try:
        return int(value), where
    except ValueError:
        return None


def check_brokers(img: m.Image, changed: dict[int, int] | None = None) -> list[Check]:
    """Fenced brokers, and brokers in controlled shutdown. A broker fenced after a
    controlled shutdown was stopped (a warning: when every broker was, the cluster is a
    stopped one, not a failing one); one fenced without it lost its session (a failure).
    ``changed``: the time (ms) of each broker's last registration change, when known."""
    fenced = sorted((b for b in img.brokers.values() if b.fenced), key=lambda b: b.id)
    stopped = [b for b in fenced if b.in_controlled_shutdown]
    lost = [b for b in fenced if not b.in_controlled_shutdown]
    shutting = [b for b in img.brokers.values() if b.in_controlled_shutdown and not b.fenced]
    checks = []
    total = len(img.brokers)
    if not total:
        checks.append(Check("brokers", WARN, "no broker is registered"))
    elif not fenced:
        checks.append(Check("fenced brokers", OK, f"all {total} registered brokers are unfenced"
                            if total > 1 else "the registered broker is unfenced"))
    else:
        checks.append(Check("fenced brokers", FAIL if lost else WARN,
                            _fenced_summary(len(fenced), total, stopped, lost, changed),
                            [_fenced_item(b, changed) for b in fenced]))
    if shutting:
        checks.append(Check(
            "controlled shutdown", WARN,
            f"{count(len(shutting), 'broker')} {_are(len(shutting))} in controlled shutdown",
            [item(f"broker {b.id}", broker=b.id, epoch=b.epoch)
             for b in sorted(shutting, key=lambda b: b.id)]))
    return checks


def _fenced_summary(n: int, total: int, stopped: list[m.BrokerRegistration],
                    lost: list[m.BrokerRegistration], changed: dict[int, int] | None) -> str:
    text = f"{n:,} of {count(total, 'registered broker')} {_are(n)} fenced"
    if not stopped:
        return text
    times = [t for b in stopped if changed and (t := changed.get(b.id)) is not None]
    last = f" (the last at {_when(max(times))})" if times else ""
    if not lost and n == total:
        return (f"{text}: every one was stopped after a controlled shutdown{last}: a stopped "
                "cluster, not a failing one")
    if not lost:
        return (f"{text}: {'it was' if n == 1 else 'they were'} stopped after a controlled "
                f"shutdown{last}, not lost")
    return (f"{text}: {count(len(lost), 'broker')} lost {'its' if len(lost) == 1 else 'their'} "
            f"session, {len(stopped):,} {'was' if len(stopped) == 1 else 'were'} stopped after "
            f"a controlled shutdown{last}")


def _fenced_item(b: m.BrokerRegistration, changed: dict[int, int] | None) -> Item:
    at = changed.get(b.id) if changed else None
    when = f" at {_when(at)}" if at is not None else ""
    how = ("stopped after a controlled shutdown (its last registration change" + when + ")"
           if b.in_controlled_shutdown else
           "without a controlled shutdown: it lost its session (crashed, or cut off)"
           + (f"; its last registration change{when}" if when else ""))
    return item(f"broker {b.id} (epoch {b.epoch}) is fenced, {how}", broker=b.id,
                epoch=b.epoch, controlledShutdown=b.in_controlled_shutdown,
                lastChangeMs=at)


def _when(ms: int) -> str:
    """A time as the shell prints times (UTC, to the second)."""
    from datetime import UTC, datetime

    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"




def _finding(name: str, pid: int, text: str, **fields: Any) -> Item:
    return item(f"{name}-{pid}: {text}", topic=name, partition=pid, **fields)


def _offline(name: str, pid: int, p: m.Partition) -> Item:
    hint = f", ELR {p.elr} can be elected" if p.elr else ""
    return _finding(name, pid, f"no leader (replicas {p.replicas}, isr {p.isr}{hint})",
                    replicas=p.replicas, isr=p.isr, elr=p.elr)


def _bad_leader(name: str, pid: int, p: m.Partition, state: str) -> Item:
    return _finding(name, pid, f"leader {p.leader} is {state}", leader=p.leader,
                    leaderState=state)


def _under(name: str, pid: int, p: m.Partition, target: list[int]) -> Item:
    missing = [r for r in target if r not in p.isr]
    return _finding(name, pid, f"isr {p.isr} of replicas {target} (missing {missing})",
                    isr=p.isr, replicas=target, missing=missing)


def _moving(name: str, pid: int, p: m.Partition) -> Item:
    return _finding(name, pid, f"adding {p.adding_replicas}, removing {p.removing_replicas} "
                    f"(replicas {p.replicas})", addingReplicas=p.adding_replicas,
                    removingReplicas=p.removing_replicas, replicas=p.replicas)


def _recovering(name: str, pid: int, p: m.Partition) -> Item:
    return _finding(name, pid, f"leader {p.leader} was elected uncleanly and is still "
                    "RECOVERING", leader=p.leader)


def _lost(name: str, pid: int, p: m.Partition, gone: list[int]) -> Item:
    return _finding(name, pid, f"the log dir of replica(s) {gone} is offline (LOST)",
                    replicas=gone)


def _under_min(name: str, pid: int, p: m.Partition, need: int, where: str) -> Item:
    return _finding(name, pid, f"isr {p.isr} has {len(p.isr)} < min.insync.replicas {need} "
                    f"({where})", isr=p.isr, minIsr=need, minIsrSource=where)


def _elr(name: str, pid: int, p: m.Partition) -> Item:
    return _finding(name, pid, f"elr {p.elr}, lastKnownElr {p.last_known_elr}", elr=p.elr,
                    lastKnownElr=p.last_known_elr)


# What an undecoded partition's record says by its :func:`model.record_key`: its (leader,
# ISR size) when nothing else about it is worth a finding, False when something is. Records
# repeat across a cluster, so most partitions are judged by one lookup; whether the leader is
# registered and unfenced and the ISR meets min.insync.replicas depends on the image and the
# topic, so is judged per distinct pair, per topic. Bounded like ``model.SHARED``.
_QUIET: dict[tuple[int, bytes], tuple[int, int] | bool] = {}


def _quiet(p: m.Partition) -> tuple[int, int] | bool:
    if (p.leader != m.NO_LEADER and len(p.isr) == len(p.replicas) and not p.adding_replicas
            and not p.removing_replicas and not p.leader_recovery_state and not p.elr
            and not p.last_known_elr and LOST_DIR not in p.directories):
        return (p.leader, len(p.isr))
    return False


def _remember(key: tuple[int, bytes], raw: m.LazyPartition) -> m.Partition | None:
    """The shared partition of an undecoded record, its verdict kept for the next."""
    p = m.shared_clean(key, raw)
    if p is not None:
        if len(_QUIET) >= m.SHARED_MAX:
            _QUIET.clear()
        _QUIET[key] = _quiet(p)
    return p


def check_partitions(img: m.Image) -> list[Check]:
    """Leaderless, under-replicated, under-min-ISR, badly led, moving, recovering, LOST and
    ELR partitions, a topic at a time in name order (the items' order)."""
    offline, under, under_min = Findings(_offline), Findings(_under), Findings(_under_min)
    elr, bad_leader, moving = Findings(_elr), Findings(_bad_leader), Findings(_moving)
    recovering, lost = Findings(_recovering), Findings(_lost)
    total = 0
    brokers = img.brokers
    quiet: Any = _QUIET.get  # None: a decoded partition, or a record not judged yet
    topic_min_isr, cluster_min_isr = min_isrs(img)
    # The verdicts found fine and not, by min.insync.replicas (None and False are not).
    judged: dict[int, tuple[set[Any], set[Any]]] = {}
    # Locals for the loop over what is not judged by record (decoded partitions, findings).
    registered, decoded, no_leader, lost_dir = brokers.get, m.Partition, m.NO_LEADER, LOST_DIR
    add_offline, add_bad_leader = offline.found.append, bad_leader.found.append
    add_under, add_under_min = under.found.append, under_min.found.append
    for topic in sorted(img.topics_by_name.values(), key=lambda t: t.name):
        name = topic.name
        need, where = topic_min_isr.get(name, cluster_min_isr)
        parts = topic.partitions
        pids = sorted(parts)
        values: list[Any] = list(map(parts.__getitem__, pids))  # Partition | LazyPartition
        keys = m.record_keys(values)
        verdicts = list(map(quiet, keys))
        distinct = set(verdicts)
        fine, unfit = judged.get(need) or judged.setdefault(need, (set(), set()))
        for v in distinct - fine - unfit:
            (fine if v and _led_well(brokers, v, need) else unfit).add(v)
        if distinct <= fine:
            total += len(values)
            continue  # the common case: every partition judged, nothing to say
        slow = [i for i, v in enumerate(verdicts) if v not in fine]
        total += len(values) - len(slow)
        for i in slow:
            pid, p = pids[i], values[i]
            if type(p) is not decoded:
                p = _remember(keys[i], p) or topic.shared(pid)  # type: ignore[arg-type]
                if p is None:
                    continue
            total += 1
            isr, replicas, leader = p.isr, p.replicas, p.leader
            adding, removing = p.adding_replicas, p.removing_replicas
            # What _quiet says, inline: most decoded partitions have nothing to say either,
            # and a call each costs about 1% of the tail's load.
            if (leader != no_leader and len(isr) == len(replicas) and not adding
                    and not removing and not p.leader_recovery_state and not p.elr
                    and not p.last_known_elr and lost_dir not in p.directories):
                reg = registered(leader)
                if reg is not None and not reg.fenced and len(isr) >= need:
                    continue  # nothing to say
            if leader == no_leader:
                add_offline((name, pid, p))
            else:
                reg = registered(leader)
                if reg is None or reg.fenced:
                    add_bad_leader((name, pid, p, "not registered" if reg is None else "fenced"))
            # Like Kafka's UnderReplicatedPartitions: replicas being added do not count yet.
            target = [r for r in replicas if r not in adding] if adding else replicas
            if len(isr) < len(target):
                add_under((name, pid, p, target))
            if adding or removing:
                moving.add(name, pid, p)
            if p.leader_recovery_state == 1:
                recovering.add(name, pid, p)
            if lost_dir in p.directories:
                gone = [r for r, d in zip(replicas, p.directories, strict=False)
                        if d == lost_dir]
                if gone:
                    lost.add(name, pid, p, gone)
            if len(isr) < need:
                add_under_min((name, pid, p, need, where))
            if p.elr or p.last_known_elr:
                elr.add(name, pid, p)
    out = [
        Check("offline partitions", FAIL if offline else OK,
              f"{len(offline):,} of {total:,} partitions have no leader" if offline
              else _all(total, "partition", "has a leader", "have a leader"), offline),
        Check("under-replicated partitions", WARN if under else OK,
              f"{len(under):,} of {total:,} partitions have an ISR smaller than their replicas"
              if under else "every ISR holds all replicas", under),
        Check("under-min-ISR partitions", FAIL if under_min else OK,
              f"{count(len(under_min), 'partition')} "
              f"{'has' if len(under_min) == 1 else 'have'} fewer in-sync replicas than "
              "min.insync.replicas (acks=all writes fail)" if under_min
              else "every ISR meets min.insync.replicas", under_min),
    ]
    if bad_leader:
        n = len(bad_leader)
        out.append(Check("partition leaders", FAIL, f"{count(n, 'partition')} {_are(n)} led by "
                         "a broker that is fenced or not registered", bad_leader))
    if lost:
        n = len(lost)
        out.append(Check("offline log dirs", FAIL, f"{count(n, 'partition')} "
                         f"{'has' if n == 1 else 'have'} a replica on an offline log dir", lost))
    if recovering:
        n = len(recovering)
        out.append(Check("unclean recovery", WARN, f"{count(n, 'partition')} {_are(n)} "
                         "recovering from an unclean election", recovering))
    if moving:
        n = len(moving)
        out.append(Check("reassignments", INFO, f"{count(n, 'partition')} {_are(n)} being "
                         "reassigned", moving))
    if elr:
        n = len(elr)
        out.append(Check("eligible leader replicas", INFO,
                         f"{count(n, 'partition')} carr{'ies' if n == 1 else 'y'} ELR state",
                         elr))
    return out


def _led_well(brokers: dict[int, m.BrokerRegistration], verdict: tuple[int, int],
              need: int) -> bool:
    """A quiet partition's (leader, ISR size) needs no finding: its leader is registered and
    unfenced, and its ISR meets min.insync.replicas."""
    reg = brokers.get(verdict[0])
    return reg is not None and not reg.fenced and verdict[1] >= need


def _all(total: int, noun: str, one: str, many: str) -> str:
    """``all 3 partitions have a leader``; never ``all 0`` or ``all 1``."""
    if total == 0:
        return f"there are no {noun}s"
    if total == 1:
        return f"the only {noun} {one}"
    return f"all {total:,} {noun}s {many}"


def check_controllers(img: m.Image, voters: Iterable[int] | None) -> list[Check]:
    if voters is None:
        return [Check("controller registrations", INFO,
                      "the voter set is unknown here (no quorum-state, Voters or LeaderChange "
                      "record), so registrations cannot be checked against it")]
    voter_set = set(voters)
    registered = set(img.controllers)
    stale = sorted(registered - voter_set)
    unregistered = sorted(voter_set - registered)
    items: list[str] = [
        item(f"controller {c} is registered but is not a voter (a stale registration: its "
             "supported features still count, so it can block feature upgrades; Kafka 4.4+ "
             "can unregister it, KIP-1312)", controller=c, problem="registered, not a voter")
        for c in stale]
    needs_registration = (img.metadata_version_level >= 15)  # 3.7-IV0 added registrations
    if needs_registration:
        items += [item(f"voter {v} has no controller registration", controller=v,
                       problem="voter without a registration") for v in unregistered]
    status = FAIL if stale else (WARN if needs_registration and unregistered else OK)
    summary = (f"{count(len(registered), 'controller registration')}, voters "
               f"{sorted(voter_set)}")
    return [Check("controller registrations", status, summary, items)]


def _finalized(img: m.Image) -> dict[str, int]:
    """Finalized levels; metadata.version only when the log set it (pre-3.3 logs do not)."""
    levels = dict(img.finalized_features)
    if img.metadata_version is not None:
        levels[METADATA_VERSION_FEATURE] = img.metadata_version
    return levels


def _label(feature: str, level: int) -> str:
    if feature == METADATA_VERSION_FEATURE:
        return f"{level} ({metadata_version_name(level)})"
    return str(level)


def check_features(img: m.Image) -> list[Check]:
    """Finalized levels that a registered node cannot run, and how far each can be raised."""
    nodes: list[tuple[str, int, dict[str, tuple[int, int]]]] = (
        [("broker", b.id, b.supported_features) for b in img.brokers.values()]
        + [("controller", c.id, c.supported_features) for c in img.controllers.values()])
    bad: list[str] = []
    ceilings: list[str] = []
    for feature, level in sorted(_finalized(img).items()):
        limit: tuple[int, str] | None = None
        for kind, nid, supported in nodes:
            who = f"{kind} {nid}"
            lo, hi = supported.get(feature, (0, 0))
            if not lo <= level <= hi:
                bad.append(item(f"{who} supports {feature} {lo}-{hi}, but the finalized level "
                                f"is {_label(feature, level)}", **{kind: nid},
                                feature=feature, minSupported=lo, maxSupported=hi,
                                finalized=level))
            if limit is None or hi < limit[0]:
                limit = (hi, who)
        if limit is not None and nodes:
            ceilings.append(item(f"{feature}: finalized {_label(feature, level)}, every "
                                 f"registered node supports up to {_label(feature, limit[0])} "
                                 f"(lowest: {limit[1]})", feature=feature, finalized=level,
                                 ceiling=limit[0], lowest=limit[1]))
    n = len(bad)
    out = [Check("feature support", FAIL if bad else OK,
                 f"{count(n, 'registration')} {'does' if n == 1 else 'do'} not support a "
                 "finalized feature level" if bad
                 else "every registered node supports every finalized feature level", bad)]
    if ceilings:
        out.append(Check("feature upgrade ceiling", INFO,
                         "the highest level each feature can be raised to today", ceilings))
    return out


def check_data(verdict: Verdict) -> list[Check]:
    """The image's verdict as a check of its own, in its own words: when the data is damaged
    or incomplete it fails, since every other check reads an image that may be wrong."""
    items: list[str] = [item(p.message, problem=p.code, file=p.file, offset=p.offset)
                        for p in verdict.problems]
    return [Check("data", verdict.status, verdict.words(), items)]


def run_checks(img: m.Image, voters: Iterable[int] | None,
               verdict: Verdict | None = None,
               changed: dict[int, int] | None = None) -> list[Check]:
    """Every check; the data check first when the image's verdict is given. ``changed``:
    when each broker's registration last changed (ms), for the fenced ones."""
    data = check_data(verdict) if verdict is not None else []
    checks = (check_brokers(img, changed) + check_partitions(img)
              + check_controllers(img, voters) + check_features(img))
    if verdict is not None and not verdict.sound:
        checks = [_unsure(c) for c in checks]
    return data + checks


AS_READ = ", in the image as read (see data)"


def _unsure(check: Check) -> Check:
    """A check that passed on an image the data check fails is no clean bill: records it
    would judge may be the ones lost or never read. It says so and is not shown as OK;
    what it found wrong stays as found."""
    if check.status != OK:
        return check
    return Check(check.name, INFO, check.summary + AS_READ, check.items, as_read=True)


def summary(checks: Iterable[Check]) -> tuple[str, str]:
    """The checks summed up in one line, and its status (fail, warn or ok): what every front
    end says of them (``health``'s last line, the TUI's health title)."""
    statuses = [c.status for c in checks]
    failed, warned = statuses.count(FAIL), statuses.count(WARN)
    warns = count(warned, "warning")
    if failed:
        return f"{count(failed, 'check')} failed" + (f", {warns}" if warned else ""), FAIL
    if warned:
        return f"healthy ({warns})", WARN
    return "healthy", OK
