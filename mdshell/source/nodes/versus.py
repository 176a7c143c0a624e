"""One node's log against the quorum's log, where the quorum's log is only partly on disk.

Kafka deletes the segments a snapshot covers, so the node whose log the quorum follows may
hold its older offsets only in a snapshot. A node whose log ends below where that log
starts then shares no offset with it, and one that parted from it earlier seems to part
where the comparison starts. Raft's log matching still tells, from what else was given:

- a *witness*: another node whose log holds offsets of the quorum's log in the same epochs
  (compared alike) holds the quorum's log below them too, so the node is compared with it;
- its *epochs*: ``<end>-<epoch>.checkpoint`` of the quorum's log says that log holds offset
  end - 1 in that epoch, and its segments where their epochs start and end. One leader
  writes an epoch, only appending: a node holding an offset in an epoch the quorum's log
  holds at that offset or later holds the quorum's log up to it; a point of the quorum's
  log inside the node's log in another epoch shows they part at or before it.

What none of them tells is said as such (:attr:`Versus.unknown`), never taken as agreement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from .compare import APART, EPOCH, SAME, Pair
from .group import NodeDir

PairOf = Callable[[NodeDir, NodeDir], Pair]  # two nodes' logs compared, the first as ``a``


@dataclass(frozen=True)
class Versus:
    """A node (``pair.a``) against the quorum's log (``pair.b``). ``by``: what showed it
    when not the quorum's log itself; ``exact`` False: they part at or before ``pair.at``
    (a snapshot's end or the first offset compared is all that shows it)."""

    pair: Pair
    by: str | None = None
    exact: bool = True

    @property
    def unknown(self) -> bool:
        """Nothing given shows whether the node's last offsets are the quorum's."""
        return self.pair.kind == APART


def versus(n: NodeDir, ref: NodeDir, nodes: list[NodeDir], pair_of: PairOf) -> Versus:
    """Node ``n`` against the log of ``ref`` (the quorum's), with the other ``nodes`` and
    the snapshots of the quorum's log as witnesses where the two logs alone cannot tell."""
    found = Versus(pair_of(n, ref))
    if not _open(found.pair, n):
        return found
    witnesses = [(m, pair_of(m, ref)) for m in nodes if m is not n and m is not ref]
    for m, w in witnesses:
        if w.kind != SAME or w.agree_to < w.from_:
            continue  # m holds nothing known to be the quorum's log
        q = pair_of(n, m)
        if q.kind == APART or (q.diverged and q.at is not None and q.at > w.agree_to):
            continue
        if q.kind == SAME:
            q = replace(q, agree_to=min(q.agree_to, w.agree_to))
        if found.pair.kind == APART or q.from_ < found.pair.from_:
            found = Versus(_as_quorum(q, ref), f"node {m.label}'s log")
    if not _open(found.pair, n):
        return found
    by_epochs = _by_epochs(n, ref, found)
    if by_epochs is not None:
        return by_epochs
    if found.pair.diverged:  # parted at the first offset compared: maybe before it
        return replace(found, exact=False)
    return found


def _open(p: Pair, n: NodeDir) -> bool:
    """The comparison leaves the node's log partly unjudged: no offset in common, or the
    logs part at the first offset compared while the node holds offsets before it."""
    start = n.scan.start
    return p.kind == APART or (p.diverged and p.at == p.from_ and start is not None
                               and start < p.from_)


def _as_quorum(q: Pair, ref: NodeDir) -> Pair:
    """A comparison with a witness, said as one with the quorum's log (``ref``'s)."""
    return replace(q, b=ref.label, end_b=ref.scan.end)


def _points(ref: NodeDir) -> list[tuple[int, int, str]]:
    """(offset, epoch, what says so) of entries the quorum's log (``ref``'s) is known to
    hold: the last offset of each of its snapshots, the first and last of each epoch in its
    log."""
    out = [(cp.end_offset - 1, cp.epoch, f"node {ref.label}'s snapshot {cp.name}")
           for cp in ref.source.snapshots()]
    scan = ref.scan
    starts = scan.epoch_starts
    for i, (epoch, first) in enumerate(starts):
        last = starts[i + 1][1] - 1 if i + 1 < len(starts) else scan.log_end
        out += [(o, epoch, f"node {ref.label}'s log") for o in (first, last)
                if o is not None]
    return sorted(out)


def _runs(n: NodeDir) -> list[tuple[int, int, int]]:
    """(epoch, first, last offset) of each epoch in ``n``'s log, after the last offset of
    its newest snapshot when its log does not hold that offset (a snapshot is an entry too:
    its last offset in its epoch)."""
    scan = n.scan
    starts, end = scan.epoch_starts, scan.log_end
    out = []
    snap = scan.snapshot
    if snap is not None and scan.index_at(snap.end_offset - 1) is None:
        out.append((snap.epoch, snap.end_offset - 1, snap.end_offset - 1))
    if end is not None:
        out += [(e, first, starts[i + 1][1] - 1 if i + 1 < len(starts) else end)
                for i, (e, first) in enumerate(starts)]
    return out


def _by_epochs(n: NodeDir, ref: NodeDir, found: Versus) -> Versus | None:
    """What the epochs the quorum's log is known to hold (:func:`_points`) say of ``n``'s
    log (None: nothing). One leader writes an epoch, and only appends to it: a log holding
    an entry of epoch e at offset P holds every entry that leader wrote below P, so ``n``
    agrees with the quorum's log up to its last offset in epoch e at or below P. A point
    inside ``n``'s log past that, in another epoch there, shows they part at or before it
    (exactly there when it is the next offset)."""
    scan, p = n.scan, found.pair
    points = _points(ref)
    top: dict[int, int] = {}
    for o, e, _ in points:
        top[e] = max(top.get(e, -1), o)
    agree = p.agree_to if p.kind != APART and p.agree_to >= p.from_ else -1
    for e, first, last in _runs(n):
        if top.get(e, -1) >= first:
            agree = max(agree, min(last, top[e]))
    differs = [(o, e, by) for o, e, by in points
               if o > agree and scan.index_at(o) is not None and scan.epoch_at(o) != e]
    if p.diverged and p.at is not None:
        differs.append((p.at, p.epoch_b if p.epoch_b is not None else -1,
                        found.by or f"node {ref.label}'s log"))
    if differs:
        at, epoch, by = min(differs)
        return Versus(Pair(n.label, ref.label, EPOCH, agree, at, scan.epoch_at(at), epoch,
                           at, scan.end, ref.scan.end), by, exact=at == agree + 1)
    if agree < 0:
        return None
    kind = SAME if agree == scan.end else APART
    return Versus(Pair(n.label, ref.label, kind, agree, from_=agree, end_a=scan.end,
                       end_b=ref.scan.end), f"node {ref.label}'s epochs")
