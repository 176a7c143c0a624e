"""A clean segment read at C speed where Python allows it: the one fast walk of the shell
(its load, and every log stream of a directory or of live mode) and of Spark
(``spark/fastlog.py``).

:func:`.walker.iter_batches` checks a batch at a time (a ``Batch`` object, a CRC call, the
neighbour rules), and a quiet log is hundreds of thousands of one-record batches, half of
them NoOps. Here a stretch of batches is checked whole, column by column: one Python loop
follows the batch lengths (runs of one length measured by strided byte slices), the 61-byte
headers are joined and each field is cut out as an ``array`` by strided slices, offsets,
epochs and magic are compared as whole arrays, and the CRCs are computed a batch at a time
(or by the caller's faster function: Spark's numpy one). Nothing here needs numpy.

Only a clean stretch goes this way (every batch whole, magic 2, CRC right, offsets following
on, epochs never going down, an epoch change the walker's neighbour rule accepts); for
anything else :class:`Unclean` is raised and the caller reads on with the walker, so damage
is found, said and skipped by one set of rules. Batches holding one NoOp record only (each
distinct records section framed once by the wire layer) are found, so a reader that needs
only the provenance they move can pass them over (:func:`noops`, :func:`plan`).
"""

from __future__ import annotations

import struct
import sys
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, pairwise, repeat
from operator import add, le, ne
from typing import NamedTuple

from ..wire.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    NO_OP_KEY,
    noop_section,
    parse_header,
)
from ..wire.crc import crc32c
from ..wire.framing import INT64_MAX
from ..wire.native import piece
from .walker import MAX_BATCH_LENGTH, Before, header_damage, peek

_LENGTH = struct.Struct(">i")
_CRC_FROM = 21  # a batch's CRC covers its bytes from the attributes on
_SIMPLE = 0x27  # codec bits and the control flag: a simple batch has none of them
_NOOP_SECTION = 24  # a one-NoOp batch's records section is shorter (~11 bytes)
_RUN = 256  # batches a run measure looks at, at most
_GATHER = 1 << 16  # batches whose headers or CRCs are gathered at once, at most
CHUNK = 1 << 12  # batches a reader checks at once, at most (~50 bytes a batch)
FIRST = 256  # and at first (time travel reads about 1,000 records)
_BIG = sys.byteorder == "big"
# Header fields cut out as columns: (position in the header, width, array type code).
_FIELDS = {"base": (0, 8, "q"), "length": (8, 4, "i"), "epoch": (12, 4, "i"),
           "crc": (17, 4, "I"), "attrs": (21, 2, "h"), "last_delta": (23, 4, "i"),
           "base_ts": (27, 8, "q"), "max_ts": (35, 8, "q"), "count": (57, 4, "i")}
_MAGIC_AT = 16
_cwalk = piece("_cwalk")

# Checks the CRC of every batch: (data, starts, lengths, CRCs) -> all right?
CrcCheck = Callable[[bytes, "array[int]", "array[int]", "array[int]"], bool]
# Whether offsets follow on from batch to batch, each batch spanning as many offsets as it
# holds records: (base offsets, last offset deltas, record counts) -> bool.
FollowOn = Callable[["array[int]", "array[int]", "array[int]"], bool]


class Unclean(Exception):
    """Something the fast walk does not handle: read the file the walker's way."""


def batch_starts(data: bytes, pos: int = 0, limit: int = -1) -> array[int]:
    """Where each batch from ``pos`` on starts: the one Python loop over a file (it only
    follows batch lengths). Where two batches in a row have one length (a quiet log's
    NoOps), the run of batches of that length is measured at C speed by :func:`_run`.

    ``limit`` -1: every batch to the end, which must end the file exactly (a batch running
    past the end, or a file ending inside a header, makes it unclean). Else at most
    ``limit`` batches, up to the first that does not fit (unclean if that is the first)."""
    size = len(data)
    length_at = _LENGTH.unpack_from
    starts = array("q")
    add_start = starts.append
    most = size if limit < 0 else limit  # a batch is longer than a byte
    previous = 0
    try:
        while pos < size and len(starts) < most:
            length = length_at(data, pos + 8)[0]
            step = LOG_OVERHEAD + length
            if length < MIN_BATCH_LENGTH or pos + step > size:
                break
            if length == previous:
                end = pos + min(_run(data, pos, step), (size - pos) // step) * step
                starts.extend(range(pos, end, step))
                pos = end
                continue
            add_start(pos)
            previous = length
            pos += step
    except struct.error:
        pass  # fewer than 12 bytes left: a cut header
    if limit < 0 and pos != size:
        raise Unclean  # a batch runs past the end, its header is cut, or its length is odd
    if limit >= 0 and not starts:
        raise Unclean
    del starts[most:]
    return starts


def _run(data: bytes, pos: int, step: int) -> int:
    """How many batches from ``pos`` on, ``step`` bytes apart, have the length of the one at
    ``pos`` (at least 1, at most ``_RUN``): each byte of their length fields, taken every
    ``step`` bytes with one slice, stripped of the first one's value."""
    run = _RUN
    for i in range(pos + 8, pos + 12):
        column = data[i:i + _RUN * step:step]
        run = min(run, len(column) - len(column.lstrip(column[:1])))
    return run


@dataclass(slots=True)
class Heads:
    """The header fields of a stretch of batches, one array per field (``starts``: where
    each batch begins; ``magic``: one byte a batch; ``good`` and ``follows``: how many
    batches from the first have a right CRC, and offsets that follow on (:func:`_follow_on`),
    when the compiled scan found it (-1: not known))."""

    starts: array[int]
    base: array[int]
    length: array[int]
    epoch: array[int]
    crc: array[int]
    attrs: array[int]
    last_delta: array[int]
    base_ts: array[int]
    max_ts: array[int]
    count: array[int]
    magic: bytes
    good: int = -1
    follows: int = -1

    def __len__(self) -> int:
        return len(self.starts)


def scan(data: bytes, pos: int = 0, limit: int = -1) -> Heads:
    """:func:`heads` of :func:`batch_starts` (same arguments, same :class:`Unclean`), and
    the CRCs checked too where the compiled scan does it all in one pass."""
    if not COMPILED:
        return heads(data, batch_starts(data, pos, limit))
    assert _cwalk is not None
    got = _cwalk.scan(data, pos, limit)
    if got is None:
        raise Unclean
    cols = [array(code, raw) for code, raw in zip(_SCAN_CODES, got, strict=False)]
    return _made(cols, got[-3], got[-2], got[-1])


def _made(c: list[array[int]], magic: bytes, good: int = -1, follows: int = -1) -> Heads:
    """Heads of its columns in field order (``c[0]``: the starts)."""
    return Heads(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], magic, good,
                 follows)


# The compiled scan's columns, in Heads' order: their array type codes (C's int64, int32,
# int16 and uint32 must be these codes' sizes, as :func:`_column` also checks).
_SCAN_CODES = ("q", *(code for _, _, code in _FIELDS.values()))
_NATIVE_WIDTHS = all(array(code).itemsize == w for code, w in (("q", 8), ("i", 4), ("I", 4),
                                                               ("h", 2)))
COMPILED = _cwalk is not None and _NATIVE_WIDTHS  # :func:`scan` is the compiled one


def heads(data: bytes, starts: array[int]) -> Heads:
    """Every header at ``starts``, joined (a chunk of batches at a time, to bound the
    memory), then each field cut out by strided slices (a batch is never shorter than its
    header, so each lies inside the file)."""
    cols = {name: array(code) for name, (_, _, code) in _FIELDS.items()}
    magic = bytearray()
    for lo in range(0, len(starts), _GATHER):
        part = starts[lo:lo + _GATHER]
        joined = b"".join([data[p:p + HEADER_SIZE] for p in part])
        for name, (at, width, code) in _FIELDS.items():
            cols[name].extend(_column(joined, len(part), at, width, code))
        magic += joined[_MAGIC_AT::HEADER_SIZE]
    return _made([starts, *cols.values()], bytes(magic))


def _column(joined: bytes, n: int, at: int, width: int, code: str) -> array[int]:
    raw = bytearray(n * width)
    for j in range(width):
        raw[(j if _BIG else width - 1 - j)::width] = joined[at + j::HEADER_SIZE]
    col = array(code, raw)
    if col.itemsize != width:
        raise Unclean  # a platform whose C types differ: the walker reads it
    return col


def crcs_right(data: bytes, starts: array[int], lengths: array[int],
               crcs: array[int]) -> bool:
    """Whether every batch's CRC-32C is right (one C call a batch)."""
    for lo in range(0, len(starts), _GATHER):
        hi = lo + _GATHER
        got = array(crcs.typecode, [crc32c(data[p + _CRC_FROM:p + LOG_OVERHEAD + n])
                                    for p, n in zip(starts[lo:hi], lengths[lo:hi], strict=True)])
        if got != crcs[lo:hi]:
            return False
    return True


@dataclass(slots=True)
class Follows:
    """What a file's batches must follow on from: ``first``, the base offset of its first
    batch (the file's name, or the offset after a skip); ``prior``, the leader epoch of the
    batch before (None: unknown); ``floor``, the lowest epoch allowed (the highest seen
    before); ``covers``, an offset the first batch must hold (None: any); ``start``, no batch
    may end below it; ``bound``, none may reach past it (None: no bound)."""

    first: int
    prior: int | None = None
    floor: int = -1
    covers: int | None = None
    start: int = 0
    bound: int | None = None


def bounds(column: array[int]) -> tuple[int, int]:
    """``(min(column), max(column))`` of a column that is not empty, in one compiled pass
    when built (a stretch's columns are read so several times)."""
    if _cwalk is not None:
        got: tuple[int, int] | None = _cwalk.bounds(column)
        if got is not None:
            return got
    return min(column), max(column)


def ascending(column: array[int]) -> bool:
    """Whether no item of ``column`` is less than the one before."""
    if _cwalk is not None:
        got: bool | None = _cwalk.ascending(column)
        if got is not None:
            return got
    return all(map(le, column, column[1:]))


def check_frames(data: bytes, h: Heads, upto: int = -1, crc: CrcCheck = crcs_right) -> None:
    """Raise :class:`Unclean` unless every batch (the first ``upto``; -1: all) has magic 2,
    a length the walker accepts, offsets in the 64-bit range (``walker.in_range``) and a
    right CRC."""
    n = len(h) if upto < 0 else upto
    if not len(h):
        return
    if h.magic.count(2) != len(h) or bounds(h.length)[1] > MAX_BATCH_LENGTH:
        raise Unclean
    (low_base, high_base), (low_delta, high_delta) = bounds(h.base), bounds(h.last_delta)
    if (low_base < 0 or low_delta < 0 or bounds(h.count)[0] < 0
            or (high_base + high_delta > INT64_MAX  # a bound, then exactly
                and max(map(add, h.base, h.last_delta)) > INT64_MAX)):
        raise Unclean  # the walker says what is out of range
    if h.good >= 0:
        if h.good < n:
            raise Unclean  # the compiled scan found a wrong CRC among them
    elif not crc(data, h.starts[:n], h.length[:n], h.crc[:n]):
        raise Unclean


def check(data: bytes, h: Heads, follows: Follows, upto: int | None = None,
          crc: CrcCheck = crcs_right, follow_on: FollowOn | None = None) -> int:
    """Raise :class:`Unclean` unless the walker would read the batches of ``h`` as they are,
    without a word; return how many it reads before ``upto`` (the batch after, checked too,
    stops it). The rules are the walker's (:func:`.walker.iter_batches` with ``dense``) and
    the log's continuity (``laidout._Continuity``), made strict: whatever would be judged is
    left to them. ``crc`` and ``follow_on`` may be faster ways (numpy's) of checking the
    CRCs and :func:`_follow_on`."""
    try:
        return _check(data, h, follows, upto, crc, follow_on or _follow_on)
    except OverflowError:
        raise Unclean from None  # offsets at the end of the i64 range: damage, surely


def _check(data: bytes, h: Heads, follows: Follows, upto: int | None, crc: CrcCheck,
           follow_on: FollowOn) -> int:
    n = len(h)
    if not n:
        raise Unclean
    base, last_delta, epoch = h.base, h.last_delta, h.epoch
    if base[0] != follows.first:
        raise Unclean
    if not (h.follows == n if h.follows >= 0 else follow_on(base, last_delta, h.count)):
        raise Unclean  # offsets that do not follow on (a gap, an overlap, damage)
    first_end, last_end = base[0] + last_delta[0], base[-1] + last_delta[-1]
    if base[0] < 0 or last_end > INT64_MAX or bounds(h.count)[0] < 0:
        raise Unclean  # offsets outside the 64-bit range: the walker says so
    if first_end < follows.start:
        raise Unclean
    covers = follows.covers
    if covers is not None and not base[0] <= covers <= first_end:
        raise Unclean
    if follows.bound is not None and last_end > follows.bound:
        raise Unclean
    raw = epoch.tobytes()
    if epoch[0] < follows.floor or (raw != raw[:epoch.itemsize] * n
                                    and not ascending(epoch)):
        raise Unclean  # an epoch going down: the continuity check says so
    _epoch_changes(data, h, follows.prior)
    read = n if upto is None else bisect_right(base, upto)
    check_frames(data, h, min(n, read + 1), crc)
    return read


def _follow_on(base: array[int], last_delta: array[int], count: array[int]) -> bool:
    """Whether each batch starts at the offset after the last of the one before, none ends
    before it starts, and each holds as many records as offsets (``walker.counted``). Where
    most batches hold one offset (a quiet log), the stretches between those that hold more
    are compared with ranges; else each end is computed."""
    n = len(base)
    jumps = list(compress(range(n), last_delta))  # batches of more than one offset
    if jumps and min(map(last_delta.__getitem__, jumps)) < 0:
        return False
    if count.count(1) != n - len(jumps) or any(count[j] != last_delta[j] + 1 for j in jumps):
        return False  # a batch of one offset holds one record, the others one an offset
    if len(jumps) > n // 16:
        ends = array("q", map(add, base, last_delta))
        return base[1:] == array("q", map(add, ends[:-1], repeat(1)))
    start, at = base[0], 0
    for j in [*jumps, n - 1]:
        if base[at:j + 1] != array("q", range(start, start + j + 1 - at)):
            return False
        start, at = base[j] + last_delta[j] + 1, j + 1
    return True


def _epoch_changes(data: bytes, h: Heads, prior: int | None) -> None:
    """Each place the leader epoch changes, judged by the walker's neighbour rule (an epoch
    unlike both neighbours, or changing on a file's last batch other than by the new
    leader's control batch, is damage)."""
    epoch = h.epoch
    n = len(h)
    before = prior
    i = 0
    while i < n:
        e = epoch[i]
        if before is not None and e != before:
            # the next batch, or what the walker finds after the last one
            after = ((h.base[i + 1], epoch[i + 1]) if i + 1 < n
                     else peek(data, h.starts[i] + LOG_OVERHEAD + h.length[i]))
            b = parse_header(data, h.starts[i])
            if header_damage(Before(h.base[i] - 1, before, i > 0), b, after) is not None:
                raise Unclean
        before = e
        # the next change: epochs never go down here, so past every batch of this epoch
        i = bisect_right(epoch, e, i)


def noops(data: bytes, h: Heads, n: int) -> list[int]:
    """Which of the first ``n`` batches hold one NoOpRecord and nothing else (their
    indices, in no order). Replay only moves the provenance on for them. The compiled
    ``noop_batches`` looks at each batch short enough (a few nanoseconds a batch: a third
    to two thirds of a busy log are NoOps); :func:`noops_python` is its reference."""
    if COMPILED:
        assert _cwalk is not None
        got: list[int] | None = _cwalk.noop_batches(data, h.starts, h.length, h.attrs,
                                                     h.count, h.last_delta, n, NO_OP_KEY)
        if got is not None:
            return got
    return noops_python(data, h, n)


def noops_python(data: bytes, h: Heads, n: int) -> list[int]:
    """:func:`noops` in Python: only batches short enough are looked at, and each distinct
    records section is framed once by the wire layer's loop. A run of batches of one length
    (a quiet log) whose attributes, count and records section are the same byte for byte
    (strided slices) is judged by its first."""
    length, limit = h.length, _NOOP_SECTION + MIN_BATCH_LENGTH
    cuts = [0, *compress(range(1, n), map(ne, length[1:n], length[:n - 1])), n]
    out: list[int] = []
    if len(cuts) > n // 8:
        _noops_one_by_one(data, h, range(n), out)
        return out
    single: list[int] = []
    for a, b in pairwise(cuts):
        if length[a] > limit:
            continue
        if b - a > 2 and _is_noop(data, h, a) and _same(data, h.starts[a],
                                                         LOG_OVERHEAD + length[a], b - a):
            out.extend(range(a, b))
        else:
            single.extend(range(a, b))
    _noops_one_by_one(data, h, single, out)
    return out


def _same(data: bytes, pos: int, step: int, k: int) -> bool:
    """Whether the ``k`` batches from ``pos`` on, ``step`` bytes each, have the same
    attributes, last offset delta, count and records (one strided slice a byte)."""
    end = pos + k * step
    for j in (*range(_ATTRS, _ATTRS + 6), *range(_COUNT, step)):
        column = data[pos + j:end:step]
        if column != column[:1] * k:
            return False
    return True


_ATTRS, _COUNT = 21, 57  # where the attributes and the record count lie in a header


def _noops_one_by_one(data: bytes, h: Heads, which: Iterable[int], out: list[int]) -> int:
    """Add to ``out`` those of batches ``which`` that are one-NoOp batches; how many."""
    starts, length, attrs, count, last_delta = h.starts, h.length, h.attrs, h.count, h.last_delta
    limit = _NOOP_SECTION + MIN_BATCH_LENGTH
    candidates = [i for i in which if length[i] <= limit and not attrs[i] & _SIMPLE
                  and count[i] == 1 and not last_delta[i]]
    sections = [data[starts[i] + HEADER_SIZE:starts[i] + LOG_OVERHEAD + length[i]]
                for i in candidates]
    noop = {section: noop_section(section) for section in set(sections)}
    before = len(out)
    out.extend(compress(candidates, map(noop.__getitem__, sections)))
    return len(out) - before


def _is_noop(data: bytes, h: Heads, i: int) -> bool:
    return _noops_one_by_one(data, h, (i,), []) == 1


def plan(n: int, noop: Sequence[int]) -> Sequence[int]:
    """The batches to hand out of the first ``n``, in order: each that is not a one-NoOp
    batch (``noop``: the indices of those, in any order), and the last one. Compiled
    (``_cwalk.kept``: a third of a busy log's batches are NoOps), :func:`plan_python` is
    its reference."""
    if not noop:
        return range(n)
    if _cwalk is not None and type(noop) is list:
        return array("q", _cwalk.kept(n, noop))
    return plan_python(n, noop)


def noop_plan(data: bytes, h: Heads, n: int) -> Sequence[int]:
    """``plan(n, noops(data, h, n))`` at once: the first ``n`` batches but the one-NoOp
    ones (the last always in). Compiled, the plan is made as they are found, with no list
    of them in between (a busy log's stretch holds thousands)."""
    if COMPILED and n:
        assert _cwalk is not None
        got: bytes | None = _cwalk.noop_batches(data, h.starts, h.length, h.attrs, h.count,
                                                h.last_delta, n, NO_OP_KEY, True)
        if got is not None:
            return array("q", got)
    return plan(n, noops(data, h, n))


def plan_python(n: int, noop: Sequence[int]) -> Sequence[int]:
    """:func:`plan` in Python."""
    if not noop:
        return range(n)
    keep = bytearray(b"\1") * n
    deque(map(keep.__setitem__, noop, repeat(0)), 0)
    keep[n - 1] = 1
    return list(compress(range(n), keep))


def quiet(h: Heads, i: int, before: int) -> Quiet | None:
    """The one-NoOp batches passed over between batch ``before`` and batch ``i`` handed
    out (None: none)."""
    if i - before < 2:
        return None
    j = i - 1
    return (i - before - 1, h.base[j], h.epoch[j], h.max_ts[j])


# A run of one-NoOp batches passed over: (how many, then the last one's offset, leader epoch
# and max timestamp: what replay would have set the provenance to).
Quiet = tuple[int, int, int, int]


class Summary(NamedTuple):
    """A clean log segment as its batch headers describe it: how many batches and records,
    the first batch's base offset and timestamp, the last batch's last offset and max
    timestamp. (A named tuple: a dataclass's generated methods cost every command's
    start.)"""

    batches: int
    records: int
    first_offset: int
    first_timestamp: int
    last_offset: int
    last_timestamp: int


SUMMARY_CHUNK = 1 << 16  # batches whose headers a summary holds at once (~3.5 MB)


def summary(data: bytes, first: int) -> Summary | None:
    """What the walker (:func:`.walker.iter_batches` with ``dense`` and ``first``: a log
    segment whose name says ``first``) reads in ``data``, when it reads every batch to the
    end of the file without a word; None for anything else (no batch, damage, a gap, an
    epoch the neighbour rule judges, a file not ending on a batch), which the caller walks
    batch by batch. The headers are checked a chunk at a time as the load checks them
    (:func:`scan`, :func:`check`), so the memory is bounded whatever the file's size."""
    size, pos = len(data), 0
    expected, prior = first, None
    batches = records = 0
    first_ts = last_ts = 0
    try:
        while pos < size:
            h = scan(data, pos, SUMMARY_CHUNK)
            check(data, h, Follows(expected, prior, -1 if prior is None else prior))
            if not batches:
                first_ts = h.base_ts[0]
            batches += len(h)
            records += sum(h.count)
            expected, prior = h.base[-1] + h.last_delta[-1] + 1, h.epoch[-1]
            last_ts = h.max_ts[-1]
            pos = h.starts[-1] + LOG_OVERHEAD + h.length[-1]
    except Unclean:
        return None
    if not batches:
        return None
    return Summary(batches, records, first, first_ts, expected - 1, last_ts)
