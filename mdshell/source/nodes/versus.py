"""One node's log against the quorum's log, where the quorum's log is only partly on disk.

Kafka deletes the segments a snapshot covers, so the node whose log the quorum follows may
hold its older offsets only in a snapshot. A node whose log ends below where that log
starts then shares no offset with it, and one that parted from it earlier seems to part
where the comparison starts. Raft's log matching still tells, from what else was given:

- a *witness*: another node whose log holds offsets of the quorum's log in the same epochs
  (compared alike) holds the quorum's log below them too, so the node is compared with it;
- a *snapshot*: ``<end>-<epoch>.checkpoint`` of the quorum's log says that log holds offset
  end - 1 in that epoch: a node holding that offset in the same epoch holds the quorum's
  log up to there, in another epoch it parted at or before it.

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
    at_snapshot = _at_snapshot(n, ref, found.pair)
    if at_snapshot is not None:
        return at_snapshot
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


def _points(ref: NodeDir) -> list[tuple[int, int]]:
    """(offset, epoch) entries the quorum's log is known to hold without its segments: the
    last offset of each of its snapshots, and the first of its log."""
    out = [(cp.end_offset - 1, cp.epoch) for cp in ref.source.snapshots()]
    scan = ref.scan
    if scan.start is not None:
        out.append((scan.start, scan.epochs[0]))
    return sorted(out)


def _at_snapshot(n: NodeDir, ref: NodeDir, p: Pair) -> Versus | None:
    """What the quorum log's snapshots say of ``n``'s log below where ``p`` compared it
    (None: no snapshot end falls inside it). The newest snapshot end inside the log: in
    another epoch there, the logs part at or before it; in the same, they agree up to it,
    and on to the log's end when the next point of the quorum's log is in that epoch too
    (epochs never go down along a log, so every offset between is in it)."""
    scan, low = n.scan, p.from_ if p.kind != APART else None
    points = _points(ref)
    inside = [(o, e) for o, e in points if scan.index_at(o) is not None
              and (low is None or o < low)]
    if not inside:
        return None
    last, epoch = inside[-1]
    by = f"node {ref.label}'s " + next(
        (f"snapshot {cp.name}" for cp in ref.source.snapshots() if cp.end_offset - 1 == last),
        f"log from offset {last}")
    mine = scan.epoch_at(last)
    if mine != epoch:
        return Versus(Pair(n.label, ref.label, EPOCH, -1, last, mine, epoch, last,
                           scan.end, ref.scan.end), by, exact=False)
    if p.kind != APART:  # alike up to ``last``; they part after it, at or before p.at
        return Versus(replace(p, agree_to=max(p.agree_to, last)), by, exact=False)
    end = scan.log_end
    after = next((e for o, e in points if o > last), None)
    upto = end if end is not None and after == epoch == scan.epoch_at(end) else last
    kind = SAME if upto == scan.end else APART
    return Versus(Pair(n.label, ref.label, kind, upto, from_=last, end_a=scan.end,
                       end_b=ref.scan.end), by)
