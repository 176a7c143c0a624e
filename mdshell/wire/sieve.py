"""Pick the records of a batch that hold one of a few byte strings (``changes``).

A one-shot ``changes`` of one topic needs only the records that touch it, and such a record
holds the topic's id or name bytes in its value. So the needles are looked for with
``bytes.find`` (C speed): a batch whose records section holds none gives nothing to pick,
and of the others only the records whose value holds a needle are picked (a superset test:
a record picked by chance is applied like the others). A batch with a hit is framed whole by
the one definition (:func:`.framing.frame`), so it is refused exactly as every reader
refuses it.

The needles are looked for once per buffer (a whole file, when its batches are not
compressed), not once per batch: a 100k-partition snapshot is 4,000 batches. The two-byte
and three-byte needles (the first bytes of a record kind's values) are looked for together,
by one regular expression a first byte: ``bytes.find`` reads a short needle slowly.
"""

from __future__ import annotations

import bisect
import operator
import re
from collections.abc import Callable, Iterable, Sequence

from . import decoding, framing
from .batch import HEADER_SIZE, LOG_OVERHEAD, Batch

Framed = tuple[int, int, int, int, int, int]  # as ``framing.frame`` gives them (METADATA)
_VALUE_POS = operator.itemgetter(1)
# Called for each picked record (api key, version, buffer, value position, value end): byte
# strings that later records must be picked for too (a topic's id once its name is seen).
Learn = Callable[[int, int, bytes, int, int], Iterable[bytes]]


def frame_needles(key: int) -> list[bytes]:
    """Byte strings one of which begins every value that Kafka's serde reads as a metadata
    record of kind ``key`` (``frames.peek_frame``), in any form its header takes.

    The header is three unsigned varints, each possibly longer than it needs (Kafka never
    writes them longer, but reads them). Frame version 1 is ``01`` in its shortest form,
    else ``81`` then ``00`` or ``80`` (its bits past the first 7 are 0). The type's first
    byte holds its low 7 bits, the high bit set when more bytes follow: a type below 128
    in a longer form goes on with ``00`` or ``80``. A superset: every record a needle
    picks is framed and judged whole."""
    low = key & 0x7F
    if key >= 0x80:
        types = [bytes([low | 0x80])]
    else:
        types = [bytes([low]), bytes([low | 0x80, 0]), bytes([low | 0x80, 0x80])]
    return ([b"\x01" + t for t in types] + [b"\x81\x00" + t[:1] for t in types[:2]]
            + [b"\x81\x80\x00", b"\x81\x80\x80"])


class Sieve:
    """``sieve(batch) -> (buffer, framed records)``: the records holding a needle."""

    def __init__(self, needles: Iterable[bytes], learn: Learn | None = None) -> None:
        self.needles = list(dict.fromkeys(n for n in needles if n))
        self.learn = learn
        self._buf: object = None  # the buffer the positions below are of (held: its id)
        self._found: dict[bytes, list[int]] = {}  # needle -> where it is in ``_buf``
        self._known = 0  # how many needles ``_starts`` and ``_ends`` have the places of
        self._starts: list[int] = []  # where a needle starts in ``_buf``, sorted
        self._ends: list[int] = []  # where that needle ends

    def __call__(self, batch: Batch) -> tuple[bytes, list[Framed]]:
        """The records of ``batch`` whose value holds a needle (framed, as the whole
        batch is, by the one definition: :func:`.framing.frame`). A batch that replay would
        refuse (records that do not frame or decode) raises as replay would, picked records
        or not (:func:`.decoding.verify`)."""
        buf, start, end = batch.payload()
        decoding.verify(buf, start, end, batch.count, batch.base_offset, batch.base_timestamp,
                        batch.size)
        hits = self._hits(buf, start, end)
        if not hits:
            return buf, []
        recs: list[Framed] = framing.frame(  # type: ignore[assignment]
            buf, start, end, batch.count, batch.base_offset, batch.base_timestamp,
            batch_size=batch.size)
        hits = sorted(set(hits))
        out: list[Framed] = []
        i = 0
        while i < len(hits):  # each hit's record found by bisection: most hold none
            at = hits[i]
            j = bisect.bisect_right(recs, at, key=_VALUE_POS) - 1
            rec = recs[j] if j >= 0 else None
            if rec is None or not rec[1] <= at < rec[2]:
                i += 1  # not in a value (a key, a header): nothing to pick
                continue
            out.append(rec)
            for needle in self._learned(buf, rec):
                for h in _finds(buf, needle, rec[2], end):
                    bisect.insort(hits, h)
            i = bisect.bisect_left(hits, rec[2], i)  # past the record's other hits
        return buf, out

    def _hits(self, buf: bytes, start: int, end: int) -> list[int]:
        """Where the needles are in ``buf[start:end]`` (wholly inside it): one bisection of
        every needle's places in the buffer, merged (most batches hold none)."""
        if buf is not self._buf or self._known != len(self.needles):
            self._place(buf)
        starts, ends = self._starts, self._ends
        i = bisect.bisect_left(starts, start)
        out: list[int] = []
        while i < len(starts) and starts[i] < end:
            if ends[i] <= end:
                out.append(starts[i])
            i += 1
        return out

    def batches_holding(self, buf: bytes, starts: Sequence[int], lengths: Sequence[int],
                        first: int, last: int) -> list[int]:
        """The indices ``first..last`` of the batches of ``buf`` (uncompressed; at
        ``starts``, of ``lengths`` past their first 12 bytes, in order) whose records section
        holds a needle wholly: where a clean stretch's batches need a look (the others pick
        nothing). Changes with :attr:`needles`."""
        if buf is not self._buf or self._known != len(self.needles):
            self._place(buf)
        at = self._starts
        out: list[int] = []
        lo = bisect.bisect_left(at, starts[first])
        hi = bisect.bisect_left(at, starts[last] + LOG_OVERHEAD + lengths[last])
        for j in range(lo, hi):
            pos = at[j]
            i = bisect.bisect_right(starts, pos, first, last + 1) - 1
            if i >= first and pos >= starts[i] + HEADER_SIZE and self._ends[j] <= (
                    starts[i] + LOG_OVERHEAD + lengths[i]):
                out.append(i)
        return out

    def _place(self, buf: bytes) -> None:
        """Every needle's places in ``buf`` (kept while the buffer is the same), merged."""
        if buf is not self._buf:
            self._buf = buf
            self._found = _pairs(buf, self.needles)
        found = self._found
        for needle in self.needles:
            if needle not in found:
                found[needle] = list(_finds(buf, needle, 0, len(buf)))
        places = sorted((i, i + len(n)) for n in self.needles for i in found[n])
        self._starts = [i for i, _ in places]
        self._ends = [e for _, e in places]
        self._known = len(self.needles)

    def _learned(self, buf: bytes, framed: Framed) -> list[bytes]:
        if self.learn is None or framed[3] < 0 or framed[2] < 0:
            return []
        new = [n for n in self.learn(framed[3], framed[4], buf, framed[1], framed[2])
               if n and n not in self.needles]
        self.needles.extend(new)
        return new


def _finds(buf: bytes, needle: bytes, start: int, end: int) -> Iterable[int]:
    i = buf.find(needle, start, end)
    while i >= 0:
        yield i
        i = buf.find(needle, i + 1, end)


def _pairs(buf: bytes, needles: list[bytes]) -> dict[bytes, list[int]]:
    """Where the needles of two or three bytes are in ``buf``: those of one first byte found
    by one regular expression on their first two bytes (one pass at the speed of finding
    that byte; ``bytes.find`` reads a short needle slowly, once for each), a third byte
    compared at each match. A first byte that is also one of its needles' second bytes is
    left out (a match could hide the next one): :meth:`Sieve._place` finds those by ``find``."""
    by_two: dict[bytes, list[bytes]] = {}  # first two bytes -> the needles beginning so
    for n in needles:
        if 2 <= len(n) <= 3:
            by_two.setdefault(n[:2], []).append(n)
    found: dict[bytes, list[int]] = {}
    for first in sorted({two[0] for two in by_two}):
        seconds = sorted({two[1] for two in by_two if two[0] == first})
        if first in seconds:
            continue
        group = [n for two, ns in by_two.items() if two[0] == first for n in ns]
        found.update((n, []) for n in group)
        pattern = re.escape(bytes([first])) + b"[" + b"".join(
            re.escape(bytes([c])) for c in seconds) + b"]"
        for m in re.finditer(pattern, buf):
            at = m.start()
            for n in by_two[m.group()]:
                if len(n) == 2 or buf[at + 2:at + 3] == n[2:]:
                    found[n].append(at)
    return found
