"""What the nodes' logs say together: the log the quorum would follow, what is committed,
what Kafka will truncate when a node rejoins, and whether the nodes disagree on anything
committed.

The rules are Kafka's (KRaft's Raft):

- *The quorum's log.* A voter grants its vote only to a candidate whose log is at least as
  up to date as its own: the newer last epoch, then the greater end offset. The voter whose
  log is first by that order can win any election, so its log is the one the quorum keeps.
- *Committed.* The high watermark is not on disk. A record the quorum committed is held by a
  majority of the voters (the voter set from the log); held by fewer, it was not committed
  when the copies were made. The offset up to which a majority holds the quorum's log is the
  most that can have been committed.
- *Truncation.* A node whose log parts from the quorum's at offset N (an epoch the quorum
  moved past) is truncated to N when it fetches again (``Truncated to offset N``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ...problems import SourceError
from ...wire import control as ctl
from ...wire import frames
from ...wire.batch import UNDECODABLE, iter_records
from ...wire.control import CONTROL, control_name
from ...wire.records import record_name
from ..base import ControlEntry, control_entries
from ..layout import Checkpoint
from .compare import CONTENT, SAME, Pair, compare
from .group import NodeDir, NodeGroup
from .versus import Versus, versus

_SEGMENT_LEFT = re.compile(r"^(\d{20})\.log\.(deleted|swap|cleaned)$")


@dataclass(frozen=True)
class Choice:
    """The node whose log the quorum would follow, and why."""

    node: NodeDir
    why: str


@dataclass
class Run:
    """Records of one epoch in a stretch of a log: their offsets and kinds."""

    epoch: int
    first: int
    last: int
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def count(self) -> int:
        return sum(self.kinds.values())

    def to_json(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "from": self.first, "to": self.last, "records": self.count,
                "kinds": dict(self.kinds.most_common())}


@dataclass
class Tail:
    """Offsets ``first..last`` of ``node``'s log that the quorum's log does not hold."""

    node: str
    first: int
    last: int
    runs: list[Run]
    holders: int  # voters holding the first of them as this node does
    kept: bool = False  # same epoch as the quorum's log there: Kafka will not see it
    exact: bool = True  # False: the logs part at or before ``first``
    by: str | None = None  # what showed it, when not the quorum's log itself
    snapshot: str | None = None  # the quorum's snapshot Kafka replaces the log with
    ahead: bool = False  # alike where both hold offsets, longer: not parted from it

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "truncatedTo": self.first, "from": self.first,
                "to": self.last, "heldBy": self.holders, "keptByKafka": self.kept,
                "exact": self.exact, "shownBy": self.by, "replacedBySnapshot": self.snapshot,
                "ahead": self.ahead,
                "runs": [r.to_json() for r in self.runs]}


@dataclass
class Row:
    """One node as its own files show it."""

    label: str
    node_id: int | None
    directory: str
    voter: bool | None  # None: the voter set is unknown
    role: str
    led_last_epoch: bool
    start: int | None  # the first offset it holds (its log's, or its snapshot's end)
    log_start: int | None
    end: int | None
    last_epoch: int | None
    epochs: list[tuple[int, int]]  # (epoch, first offset)
    checkpoint: str  # leader-epoch-checkpoint against the batches
    snapshot: str | None
    state: dict[str, Any] | None  # quorum-state: leader, epoch, voted
    leftovers: list[str]  # every file Kafka is deleting, swapping or cleaning
    problems: list[str]

    @property
    def truncated(self) -> list[str]:
        """The leftovers that are segments past the log's end: what a truncation removed
        (a segment below the log start is removed by retention instead)."""
        return [f for f in self.leftovers if (m := _SEGMENT_LEFT.match(f)) is not None
                and self.end is not None and int(m.group(1)) > self.end]

    @property
    def old_snapshots(self) -> list[int]:
        """End offsets of the snapshots being deleted (replaced by newer ones)."""
        return sorted(int(f[:20]) for f in self.leftovers if f.endswith(".checkpoint.deleted"))

    def to_json(self) -> dict[str, Any]:
        return {"node": self.label, "nodeId": self.node_id, "directory": self.directory,
                "voter": self.voter, "role": self.role, "ledLastEpoch": self.led_last_epoch,
                "logStart": self.log_start, "start": self.start, "end": self.end,
                "lastEpoch": self.last_epoch,
                "epochs": [{"epoch": e, "startOffset": o} for e, o in self.epochs],
                "leaderEpochCheckpoint": self.checkpoint, "snapshot": self.snapshot,
                "quorumState": self.state, "leftovers": self.leftovers,
                "truncated": self.truncated,
                "problems": self.problems}


@dataclass
class Report:
    """Everything ``nodes`` says (text in commands' renderer, JSON here)."""

    cluster_id: str | None
    voters: list[int] | None
    voters_from: str
    majority: int | None
    rows: list[Row]
    pairs: list[Pair]
    quorum: str | None  # the node whose log the quorum follows
    why: str
    committed: int | None  # the highest offset a majority holds as the quorum's log does
    committed_by: int  # how many voters hold it
    uncommitted: tuple[int, int, int] | None  # the quorum log's (first, last, holders) past it
    tails: list[Tail]
    behind: list[tuple[str, int, int]]  # (node, its end, the quorum's end)
    conflicts: list[str]
    notes: list[str]
    damaged: list[str] = field(default_factory=list)  # nodes whose log damage cut short
    unchecked: list[str] = field(default_factory=list)  # offsets nothing given can judge
    missing: list[int] = field(default_factory=list)  # voters whose directory was not given
    most: int | None = None  # the most that can have been committed
    sent_snapshot: dict[str, str] = field(default_factory=dict)  # behind node -> snapshot

    @property
    def agree(self) -> bool:
        """The nodes agree on every committed record read."""
        return not self.conflicts

    @property
    def sound(self) -> bool:
        """They agree, every log was read whole and compared (exit 0)."""
        return self.agree and not self.damaged and not self.unchecked

    @property
    def committed_words(self) -> str:
        """What is known of the committed offsets, in words ("" when nothing)."""
        if self.committed is None:
            return ""
        held = (f"held by {self.committed_by} of {len(self.voters or ())} voters, a majority")
        if not self.missing or self.most == self.committed:
            return f"up to offset {self.committed} at most: {held}"
        who = ", ".join(map(str, self.missing))
        most = ("the whole log" if self.most is None else f"offset {self.most}")
        return (f"offsets up to {self.committed} are {held}; with voter"
                f"{'s' if len(self.missing) > 1 else ''} {who} not given, up to {most} at "
                "most can have been committed")

    @property
    def caveat(self) -> str:
        """Why an agreement is not the whole answer ("" when it is)."""
        parts = []
        if self.damaged:
            parts.append("the log of node" + ("s " if len(self.damaged) > 1 else " ")
                         + ", ".join(self.damaged) + " is damaged: what it holds past the "
                         "damage is not counted")
        if self.unchecked:
            parts.append(f"{len(self.unchecked)} node{'s' if len(self.unchecked) > 1 else ''}"
                         " could not be compared with the quorum's log")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"agree": self.agree, "sound": self.sound, "damaged": self.damaged,
                "clusterId": self.cluster_id, "voters": self.voters,
                "votersFrom": self.voters_from, "majority": self.majority,
                "nodes": [r.to_json() for r in self.rows],
                "pairs": [p.to_json() for p in self.pairs],
                "quorumLog": {"node": self.quorum, "why": self.why},
                "committed": {"offset": self.committed, "heldBy": self.committed_by,
                              "atMost": self.most},
                "uncommitted": None if self.uncommitted is None else {
                    "node": self.quorum, "from": self.uncommitted[0],
                    "to": self.uncommitted[1], "heldBy": self.uncommitted[2]},
                "truncations": [t.to_json() for t in self.tails],
                "behind": [{"node": n, "end": e, "quorumEnd": q,
                            "sentSnapshot": self.sent_snapshot.get(n)}
                           for n, e, q in self.behind],
                "unchecked": self.unchecked, "conflicts": self.conflicts,
                "notes": self.notes}


# ---------------------------------------------------------------- the voters


def voters_of(group: NodeGroup) -> tuple[list[int] | None, str]:
    """The voter set and where it was read, as Kafka's KRaft control record state machine
    keeps it: the newest VotersRecord or LeaderChange of the most up-to-date log, else the
    VotersRecord of its newest snapshot (KIP-853: the set as of the snapshot, AddVoter and
    RemoveVoter included, when the segments before it were deleted), else a bootstrap
    snapshot's VotersRecord, else quorum-state."""
    for n in sorted(group.nodes, key=_vote_key, reverse=True):
        found = _from_controls(n.scan.controls)
        if found is not None:
            return found[0], f"node {n.label}'s log: {found[1]}"
        snap = n.scan.snapshot
        found = _from_controls(_snapshot_controls(n, snap)) if snap is not None else None
        if found is not None and snap is not None:
            return found[0], f"node {n.label}'s snapshot {snap.name}"
    for n in group.nodes:
        found = _from_controls(_bootstrap_controls(n))
        if found is not None:
            return found[0], f"node {n.label}'s bootstrap snapshot"
    for n in group.nodes:
        listed = (n.state or {}).get("currentVoters")
        if isinstance(listed, list):
            ids = [v["voterId"] for v in listed
                   if isinstance(v, dict) and isinstance(v.get("voterId"), int)]
            if ids:
                return sorted(ids), f"node {n.label}'s quorum-state"
    return None, "unknown (no voters in the logs or quorum-state)"


def _from_controls(controls: list[ControlEntry]) -> tuple[list[int], str] | None:
    for c in reversed(controls):
        v = c.value
        if not isinstance(v, dict):
            continue
        if c.ctype == ctl.KRAFT_VOTERS:
            return sorted(x["voterId"] for x in v["voters"]), f"VotersRecord at offset {c.offset}"
        if c.ctype == ctl.LEADER_CHANGE and v["voters"]:
            return (sorted(x["voterId"] for x in v["voters"]),
                    f"LeaderChange at offset {c.offset}")
    return None


def _bootstrap_controls(n: NodeDir) -> list[ControlEntry]:
    out: list[ControlEntry] = []
    for cp in n.source.bootstrap():
        out += _snapshot_controls(n, cp)
    return out


def _snapshot_controls(n: NodeDir, cp: Checkpoint) -> list[ControlEntry]:
    """The control records that open snapshot ``cp`` (header, KRaftVersion, Voters): read
    up to its first batch of metadata records."""
    out: list[ControlEntry] = []
    for located in n.source.snapshot_stream(cp):
        if not located.batch.is_control:
            break
        try:
            control_entries(located.batch, cp.path, out)
        except UNDECODABLE:
            break
    return out


# ---------------------------------------------------------------- the quorum's log


def _vote_key(n: NodeDir) -> tuple[int, int]:
    scan = n.scan
    return (scan.last_epoch if scan.last_epoch is not None else -1,
            scan.end if scan.end is not None else -1)


def quorum_log(group: NodeGroup, voters: list[int] | None = None) -> Choice:
    """The node whose log Kafka's election rules favour (see the module's doc), among the
    voters given (every node when none is a known voter). Of equally up-to-date logs, the
    one whose quorum-state says it leads that epoch, else the first given."""
    if voters is None:
        voters = voters_of(group)[0]
    eligible = [n for n in group.nodes if voters is not None and n.node_id in voters]
    pool = eligible or group.nodes
    top = max(_vote_key(n) for n in pool)
    tied = [n for n in pool if _vote_key(n) == top]
    best = next((n for n in tied if _leads(n, top[0])), tied[0])
    epoch, end = top
    others = [n for n in pool if n is not best]
    if not others:
        return Choice(best, "the only " + ("voter" if eligible else "node") + " given")
    rule = "Kafka's vote: the newest last epoch, then the greatest end offset"
    if len(tied) > 1:
        same = _and([n.label for n in tied if n is not best])
        lead = f"; node {best.label} leads epoch {epoch}" if _leads(best, epoch) else \
            "; the first given"
        return Choice(best, f"last epoch {epoch} to offset {end}, as node"
                            f"{'s' if len(tied) > 2 else ''} {same}{lead} ({rule})")
    if all(_vote_key(n)[0] < epoch for n in others):
        return Choice(best, f"its last epoch, {epoch}, is the newest ({rule})")
    return Choice(best, f"last epoch {epoch} and the longest log in it, to offset {end} "
                        f"({rule})")


def choose(group: NodeGroup, label: str | None) -> NodeDir:
    """The node the other commands read: ``label`` (--node), else the quorum's log."""
    if label is not None:
        return group.choose(group.node(label), True)
    return group.choose(quorum_log(group).node, False)


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _leads(n: NodeDir, epoch: int) -> bool:
    """Its quorum-state says it leads ``epoch``."""
    return (n.node_id is not None and n.state_int("leaderId") == n.node_id
            and n.state_int("leaderEpoch") == epoch)


# ---------------------------------------------------------------- the report


def build_report(group: NodeGroup) -> Report:
    voters, voters_from = voters_of(group)
    majority = len(voters) // 2 + 1 if voters else None
    nodes = group.nodes
    pairs = {(a.label, b.label): compare(a.label, a.scan, b.label, b.scan)
             for i, a in enumerate(nodes) for b in nodes[i + 1:]}
    choice = quorum_log(group, voters)
    ref = choice.node
    rows = [_row(n, voters) for n in nodes]
    notes = list(group.notes)
    votes = [n for n in nodes if voters is not None and n.node_id in voters]
    missing = [v for v in voters or () if all(n.node_id != v for n in nodes)]
    if missing:
        notes.append(f"voter{'s' if len(missing) > 1 else ''} "
                     f"{', '.join(map(str, missing))} not given: a majority is counted "
                     "among the directories given, and the quorum may follow a log not "
                     "given")

    def pair_of(a: NodeDir, b: NodeDir) -> Pair:
        return _pair(pairs, a, b)

    vs = {n.label: versus(n, ref, nodes, pair_of) for n in nodes if n is not ref}
    held = {n.label: (vs[n.label].pair.agree_to if n is not ref else
                      ref.scan.end if ref.scan.end is not None else -1) for n in votes}
    committed, by = _committed(held, majority, voters)
    ref_end = ref.scan.end
    most = _most(held, majority, len(missing), ref_end)
    uncommitted = None
    if most is not None and ref_end is not None and most < ref_end:
        holders = sum(1 for v in held.values() if v >= most + 1)
        uncommitted = (most + 1, ref_end, holders)
    conflicts: list[str] = []
    tails: list[Tail] = []
    behind: list[tuple[str, int, int]] = []
    unchecked: list[str] = []
    for n in nodes:
        if n is ref:
            continue
        v = vs[n.label]
        if n.scan.end is None:  # no record at all (never written, or wiped): it fetches all
            if ref_end is not None:
                behind.append((n.label, -1, ref_end))
            continue
        if v.unknown:
            unchecked.append(_unchecked(n, ref, v))
            continue
        _judge(n, ref, v, pairs, votes, majority, committed, tails, behind, conflicts)
    for p in pairs.values():
        if p.kind == CONTENT:
            conflicts.append(f"nodes {p.a} and {p.b} hold other records at offset {p.at} in "
                             f"one epoch ({p.epoch_a}): {p.why}; Raft never does this (a "
                             "damaged, restored or altered copy, or another cluster's?)")
    if committed is None and any(p.diverged for p in pairs.values()):
        conflicts.append("the logs part and what was committed cannot be told (too few "
                         "voters' directories): treated as a disagreement")
    damaged = [n.label for n in nodes if n.scan.cut is not None]
    sent = {label: snap.name for label, _, _ in behind
            if (snap := gets_snapshot(group.node(label), ref)) is not None}
    return Report(next((n.cluster_id for n in nodes if n.cluster_id), None), voters,
                  voters_from, majority, rows, list(pairs.values()), ref.label, choice.why,
                  committed, by, uncommitted, tails, behind, conflicts, notes, damaged,
                  unchecked=unchecked, sent_snapshot=sent, missing=missing, most=most)


def _pair(pairs: dict[tuple[str, str], Pair], a: NodeDir, b: NodeDir) -> Pair:
    """The comparison of ``a`` and ``b``, with ``a`` first."""
    found = pairs.get((a.label, b.label))
    if found is not None:
        return found
    p = pairs[(b.label, a.label)]
    return Pair(p.b, p.a, p.kind, p.agree_to, p.at, p.epoch_b, p.epoch_a, p.from_, p.end_b,
                p.end_a, p.why)


def _agreed(pairs: dict[tuple[str, str], Pair], n: NodeDir, ref: NodeDir) -> int:
    """The last offset ``n`` holds as ``ref``'s log does."""
    if n is ref:
        return ref.scan.end if ref.scan.end is not None else -1
    return _pair(pairs, n, ref).agree_to


def _committed(held: dict[str, int], majority: int | None,
               voters: list[int] | None) -> tuple[int | None, int]:
    """The highest offset held alike by a majority of the voters (voters not given hold
    nothing as far as can be told), and by how many."""
    if majority is None or voters is None or len(held) < majority:
        return None, 0
    ends = sorted(held.values(), reverse=True)
    offset = ends[majority - 1]
    if offset < 0:
        return None, 0
    return offset, sum(1 for e in ends if e >= offset)


def _most(held: dict[str, int], majority: int | None, missing: int,
          ref_end: int | None) -> int | None:
    """The most that can have been committed: the highest offset a majority may hold as the
    quorum's log does, counting the voters not given as holding all of it."""
    if majority is None:
        return None
    need = majority - missing
    if need <= 0:
        return ref_end
    ends = sorted(held.values(), reverse=True)
    return ends[need - 1] if len(ends) >= need and ends[need - 1] >= 0 else None


def _judge(n: NodeDir, ref: NodeDir, v: Versus, pairs: dict[tuple[str, str], Pair],
           votes: list[NodeDir], majority: int | None, committed: int | None,
           tails: list[Tail], behind: list[tuple[str, int, int]], conflicts: list[str]) -> None:
    """What happens to ``n``'s log when it follows ``ref``'s, and whether it contradicts
    what is committed."""
    pair = v.pair
    end, ref_end = n.scan.end, ref.scan.end
    if end is None or ref_end is None:
        return
    first = pair.at if pair.diverged else (ref_end + 1 if end > ref_end else None)
    if first is None:
        if pair.kind == SAME and end < ref_end:
            behind.append((n.label, end, ref_end))
        return
    holders = sum(1 for v in votes if _agreed(pairs, v, n) >= first)
    snap = gets_snapshot(n, ref)
    tail = Tail(n.label, first, end, _runs(n, first, end), holders, pair.kind == CONTENT,
                v.exact, v.by, snap.name if snap is not None else None,
                ahead=not pair.diverged)
    tails.append(tail)
    if committed is not None and first <= committed:
        conflicts.append(f"node {n.label} holds other records than the committed log at "
                         f"offsets {first}-{min(end, committed)}"
                         + ("" if v.exact else " (maybe more: they part at or before it)")
                         + (f" (shown by {v.by})" if v.by else ""))
    elif majority is not None and holders >= majority:
        conflicts.append(f"node {n.label}'s offsets from {first} are held by {holders} voters "
                         "(a majority) but not by the quorum's log")


def gets_snapshot(n: NodeDir, ref: NodeDir) -> Checkpoint | None:
    """The snapshot of the quorum's log (``ref``'s) that Kafka's leader sends ``n`` instead
    of records when it fetches from its log end (``ReplicatedLog.validateOffsetAndEpoch``:
    the fetch offset below the log start, at it in another epoch than the oldest snapshot's,
    or a last epoch older than that snapshot's); None: it fetches records."""
    snaps = ref.source.snapshots()
    if not snaps:
        return None
    start = ref.scan.start if ref.scan.start is not None else snaps[-1].end_offset
    end, epoch = n.scan.end, n.scan.last_epoch
    offset, epoch = (end + 1 if end is not None else 0), (epoch if epoch is not None else 0)
    oldest = snaps[0]
    if offset < start or (offset == start and epoch != oldest.epoch) or epoch < oldest.epoch:
        return snaps[-1]
    return None


def _unchecked(n: NodeDir, ref: NodeDir, v: Versus) -> str:
    """Node ``n``'s offsets that nothing given can compare with the quorum's log, said."""
    scan, p = n.scan, v.pair
    start = scan.start if scan.start is not None else (
        scan.snapshot.end_offset - 1 if scan.snapshot is not None else 0)
    first = p.agree_to + 1 if p.agree_to >= 0 else start
    held = (f"node {n.label} holds the quorum's log up to offset {p.agree_to} ({v.by}); "
            if p.agree_to >= 0 and v.by else "")
    where = (f"node {ref.label}'s log starts at offset {ref.scan.start}" if ref.scan.start
             is not None else f"node {ref.label} holds no log past its snapshot")
    snap = gets_snapshot(n, ref)
    kafka = (f"; Kafka replaces its log with node {ref.label}'s snapshot {snap.name} when it "
             "rejoins" if snap is not None else "")
    return (f"{held}node {n.label}'s offsets {first}-{scan.end} (last epoch "
            f"{scan.last_epoch}) cannot be compared with the quorum's log: {where} and no "
            f"other node given holds them in its log{kafka}; whether they are the committed "
            "records cannot be told")


def _runs(n: NodeDir, first: int, last: int) -> list[Run]:
    """The records of ``n``'s log at ``first..last``, by epoch, counted by kind."""
    scan = n.scan
    i = scan.index_at(first)
    runs: list[Run] = []
    if i is None:
        return runs
    for k in range(i, len(scan)):
        if scan.bases[k] > last:
            break
        epoch = scan.epochs[k]
        if not runs or runs[-1].epoch != epoch:
            runs.append(Run(epoch, max(first, scan.bases[k]), 0))
        run = runs[-1]
        run.last = min(last, scan.lasts[k])
        try:
            for r in iter_records(scan.batch(k)):
                if first <= r.offset <= last:
                    run.kinds[_kind(bool(scan.control[k]), r.key, r.buf, r.value_pos,
                                    r.value_end)] += 1
        except (*UNDECODABLE, SourceError):
            run.kinds["records that do not decode"] += 1
    return runs


def _kind(control: bool, key: bytes | None, buf: bytes, pos: int, end: int) -> str:
    if control:
        ctype = frames.control_type(key)
        msg = CONTROL.get(ctype)
        return msg.name if msg else control_name(ctype)
    if end < 0:
        return "records without a value"
    try:
        api_key, _, _ = frames.peek_frame(buf, pos)
    except UNDECODABLE:
        return "records that do not decode"
    return record_name(api_key)


# ---------------------------------------------------------------- one node's row


def _row(n: NodeDir, voters: list[int] | None) -> Row:
    scan = n.scan
    voter = None if voters is None or n.node_id is None else n.node_id in voters
    led = n.node_id is not None and led_by(scan.controls, scan.last_epoch) == n.node_id
    start = scan.start
    if start is None and scan.snapshot is not None:
        start = scan.snapshot.end_offset - 1  # only a snapshot: the image as of its end
    state = None
    if n.state is not None:
        state = {"leader": n.state_int("leaderId"), "epoch": n.state_int("leaderEpoch"),
                 "voted": n.state_int("votedId")}
    return Row(n.label, n.node_id, n.directory, voter, _role(n, voter), led, start, scan.start,
               scan.end, scan.last_epoch, list(scan.epoch_starts), _checkpoint(n),
               scan.snapshot.name if scan.snapshot else None, state, n.leftovers,
               scan.problems + n.notes)


def led_by(controls: list[ControlEntry], epoch: int | None) -> int | None:
    """Who led ``epoch`` by its LeaderChange record (None: no such record read)."""
    for c in reversed(controls):
        if c.ctype == ctl.LEADER_CHANGE and c.epoch == epoch and isinstance(c.value, dict):
            return int(c.value["leaderId"])
    return None


def _role(n: NodeDir, voter: bool | None) -> str:
    """The node's role as its quorum-state shows it."""
    if voter is False:
        return "observer"
    if n.state is None:
        return "-"
    leader, voted = n.state_int("leaderId"), n.state_int("votedId")
    if leader is None:
        return "?"  # quorum-state without a readable leaderId (Kafka always writes one)
    if leader is not None and leader >= 0:
        return "leader" if leader == n.node_id else f"follower of {leader}"
    if voted is not None and voted >= 0:
        return "candidate" if voted == n.node_id else f"voted for {voted}"
    return "unattached"


def _checkpoint(n: NodeDir) -> str:
    """``leader-epoch-checkpoint`` against the epochs of the batches: "agrees", "absent", or
    the first difference. Kafka keeps it from its log start offset, which a snapshot moves
    past the first batch still on disk (the segment is deleted later): the batches are
    compared from the checkpoint's first entry, and an entry below the first batch counts
    as moved up to it, as Kafka moves it."""
    if n.checkpoint is None:
        return "absent"
    scan = n.scan
    if scan.start is None or not n.checkpoint:
        return "no log to check it against" if scan.start is None else "empty"
    start = max(scan.start, n.checkpoint[0][1])
    kept: list[tuple[int, int]] = []
    for epoch, offset in n.checkpoint:
        if offset <= start:
            kept = [(epoch, start)]
        else:
            kept.append((epoch, offset))
    first = scan.epoch_of(start)
    batches = ([(first, start)] if first is not None else []) + [
        (e, o) for e, o in scan.epoch_starts if o > start]
    for i in range(max(len(kept), len(batches))):
        says = kept[i] if i < len(kept) else None
        seen = batches[i] if i < len(batches) else None
        if says != seen:
            return f"says {_entry(says)}, the batches {_entry(seen)}"
    return "agrees"


def _entry(e: tuple[int, int] | None) -> str:
    return "nothing more" if e is None else f"epoch {e[0]} from offset {e[1]}"
