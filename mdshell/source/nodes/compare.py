"""Where two nodes' logs part: by offset and epoch, then by the records' bytes.

Raft's log matching: two logs holding an offset in the same leader epoch hold the same
records up to it. So the first offset where the epochs differ (or one log ends) bounds the
common prefix; batch boundaries play no part (nodes may batch differently). Below that
offset the records are checked too: batches with the same offsets are compared by their
CRC (it covers every record byte), others record by record (key and value), so a
disagreement inside one epoch (which Raft says never happens: a damaged or doctored copy) is
found and said.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...problems import SourceError
from ...wire.batch import UNDECODABLE, iter_records
from .scan import LogScan

SAME, BEHIND, EPOCH, CONTENT, APART = "same", "behind", "epoch", "content", "apart"


@dataclass(frozen=True)
class Pair:
    """Two logs compared. ``kind``: SAME (one holds what the other does, up to where the
    shorter ends: ``agree_to``), EPOCH (they part at ``at``, in other epochs), CONTENT (they
    part at ``at`` inside one epoch), APART (no offset in common to compare)."""

    a: str
    b: str
    kind: str
    agree_to: int  # the last offset both hold alike (-1: none; below ``from_``: not known)
    at: int | None = None  # the first offset they hold differently
    epoch_a: int | None = None  # at ``at``
    epoch_b: int | None = None
    from_: int = 0  # the first offset both hold in their logs (compared from there)
    end_a: int | None = None
    end_b: int | None = None
    why: str = ""  # CONTENT: what differs

    @property
    def diverged(self) -> bool:
        return self.kind in (EPOCH, CONTENT)

    def to_json(self) -> dict[str, object]:
        return {"a": self.a, "b": self.b, "kind": self.kind, "agreeTo": self.agree_to,
                "divergesAt": self.at, "epochA": self.epoch_a, "epochB": self.epoch_b,
                "comparedFrom": self.from_, "endA": self.end_a, "endB": self.end_b,
                "why": self.why or None}


def compare(la: str, a: LogScan, lb: str, b: LogScan) -> Pair:
    """Logs ``a`` and ``b`` (of nodes ``la`` and ``lb``) compared over the offsets both
    hold; a node holding an offset only in a snapshot is compared by the snapshot's epoch
    where that is all there is."""
    if a.start is None or b.start is None or a.log_end is None or b.log_end is None:
        return _without_log(la, a, lb, b)
    lo, hi = max(a.start, b.start), min(a.log_end, b.log_end)
    if lo > hi:
        return Pair(la, lb, APART, -1, from_=lo, end_a=a.end, end_b=b.end)
    at = _epoch_split(a, b, lo, hi)
    upto = hi if at is None else at - 1
    differs = _content_split(a, b, lo, upto)
    if differs is not None:
        offset, why = differs
        return Pair(la, lb, CONTENT, offset - 1, offset, a.epoch_at(offset), b.epoch_at(offset),
                    lo, a.end, b.end, why)
    if at is not None:
        return Pair(la, lb, EPOCH, at - 1, at, a.epoch_at(at), b.epoch_at(at), lo, a.end, b.end)
    return Pair(la, lb, SAME, hi, from_=lo, end_a=a.end, end_b=b.end)


def _without_log(la: str, a: LogScan, lb: str, b: LogScan) -> Pair:
    """A node with a snapshot and no log batches: the same snapshot end and epoch, or the
    other log holding that offset in that epoch, is the same prefix."""
    ea, eb = a.end, b.end
    if ea is None or eb is None:
        return Pair(la, lb, APART, -1, from_=0, end_a=ea, end_b=eb)
    low, high = (a, b) if ea <= eb else (b, a)
    point = low.end
    assert point is not None
    epoch = high.epoch_at(point) if high.log_end is not None else (
        high.last_epoch if high.end == point else None)
    if epoch is None:
        return Pair(la, lb, APART, -1, from_=point, end_a=ea, end_b=eb)
    if epoch == low.last_epoch:
        return Pair(la, lb, SAME, point, from_=point, end_a=ea, end_b=eb)
    at = point  # they part at or before the snapshot's end: said as that offset
    return Pair(la, lb, EPOCH, -1, at, a.epoch_at(at) or a.last_epoch,
                b.epoch_at(at) or b.last_epoch, point, ea, eb)


def _epoch_split(a: LogScan, b: LogScan, lo: int, hi: int) -> int | None:
    """The first offset in ``lo..hi`` where the two logs' epochs differ (None: nowhere).
    Epochs change only where an epoch starts, so those offsets (and ``lo``) are enough."""
    points = sorted({lo} | {o for _, o in a.epoch_starts if lo < o <= hi}
                    | {o for _, o in b.epoch_starts if lo < o <= hi})
    for o in points:
        if a.epoch_of(o) != b.epoch_of(o):
            return o
    return None


def _content_split(a: LogScan, b: LogScan, lo: int, hi: int) -> tuple[int, str] | None:
    """The first offset in ``lo..hi`` whose record differs between the logs, and how
    (None: every record is the same)."""
    if lo > hi:
        return None
    i, j = a.index_at(lo), b.index_at(lo)
    if i is None or j is None:
        return None  # not in both logs (cannot be: lo..hi is in both)
    na, nb = len(a), len(b)
    while i < na and j < nb and a.bases[i] <= hi:
        k = _alike(a, i, b, j)
        if k:
            i, j = i + k, j + k
            continue
        if a.bases[i] == b.bases[j] and a.lasts[i] == b.lasts[j]:
            if a.crcs[i] != b.crcs[j]:
                found = _records_split(a, i, i, b, j, j, max(lo, a.bases[i]), hi)
                if found is not None:
                    return found
            i, j = i + 1, j + 1
            continue
        # Batches that do not line up: the smallest run of each ending at one offset.
        ei, ej = i, j
        while a.lasts[ei] != b.lasts[ej]:
            if a.lasts[ei] < b.lasts[ej]:
                if ei + 1 >= len(a) or a.lasts[ei] >= hi:
                    break
                ei += 1
            else:
                if ej + 1 >= len(b) or b.lasts[ej] >= hi:
                    break
                ej += 1
        found = _records_split(a, i, ei, b, j, ej, max(lo, a.bases[i], b.bases[j]), hi)
        if found is not None:
            return found
        i, j = ei + 1, ej + 1
    return None


CHUNK = 4096  # batches compared at once by their header columns


def _alike(a: LogScan, i: int, b: LogScan, j: int) -> int:
    """How many batches from ``i`` in ``a`` and ``j`` in ``b`` have the same offsets and CRC
    (the same records, whatever the epoch: that is compared apart), compared a chunk of
    columns at a time, then the last chunk halved until the first that differs."""
    done = 0
    size = CHUNK
    while size:
        x, y = i + done, j + done
        if (x + size <= len(a) and y + size <= len(b)
                and a.bases[x:x + size] == b.bases[y:y + size]
                and a.lasts[x:x + size] == b.lasts[y:y + size]
                and a.crcs[x:x + size] == b.crcs[y:y + size]):
            done += size
            if size < CHUNK:
                continue
        else:
            size //= 2
    return done


Rec = tuple[bytes | None, bytes]  # (key, value)


def _records_split(a: LogScan, i0: int, i1: int, b: LogScan, j0: int, j1: int, lo: int,
                   hi: int) -> tuple[int, str] | None:
    """The first offset in ``lo..hi`` where batches ``i0..i1`` of ``a`` and ``j0..j1`` of
    ``b`` hold other records."""
    ra, bad_a = _records(a, i0, i1, lo, hi)
    rb, bad_b = _records(b, j0, j1, lo, hi)
    for offset in sorted(set(ra) | set(rb)):
        x, y = ra.get(offset), rb.get(offset)
        if x != y:
            if x is None or y is None:
                return offset, "one log's batch does not decode there" if (
                    bad_a or bad_b) else "one log has no record at this offset"
            what = "keys" if x[0] != y[0] else "values"
            return offset, f"the records' {what} differ"
    for bad in (bad_a, bad_b):
        if bad is not None and lo <= bad <= hi:
            return bad, "a batch does not decode"
    return None


def _records(scan: LogScan, first: int, last: int, lo: int,
             hi: int) -> tuple[dict[int, Rec], int | None]:
    """Offset -> (key, value) of the records of batches ``first..last`` within
    ``lo..hi``, and the first offset of a batch that does not decode (None: all did)."""
    out: dict[int, Rec] = {}
    for k in range(first, last + 1):
        try:
            for r in iter_records(scan.batch(k)):
                if lo <= r.offset <= hi:
                    out[r.offset] = (r.key, r.value)
        except (*UNDECODABLE, SourceError):
            return out, scan.bases[k]
    return out, None
