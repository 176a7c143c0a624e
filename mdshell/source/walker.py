"""The one walker over the record batches of a file, with the one set of damage rules.

Files are opened read-only and never locked: a directory in use by a running Kafka is read as
it is. A truncated tail, an impossible length, a wrong magic or a CRC mismatch ends the file
with a :class:`Problem`; what came before is still used. Loading, ``records``, ``changes`` and
``/log`` all walk files through :func:`iter_batches` (``skip_to`` only fast-forwards it).

The CRC of a batch covers its bytes from ``attributes`` on: ``baseOffset``, ``batchLength``,
``partitionLeaderEpoch`` and ``magic`` are not covered. A damaged one of those is told from the
neighbours (:func:`header_damage`, also used by ``records --batches``) or from the CRC itself
(:func:`true_end`): the batch is skipped with one :class:`Problem` (code ``header``) and the
rest of the file is read, instead of stopping, or of taking a wrong offset for the truth.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..problems import Problem, SourceError
from ..wire.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    UNDECODABLE,
    Batch,
    parse_header,
    read_controls,
)
from ..wire.crc import crc32c
from ..wire.decoding import verify
from ..wire.framing import INT64_MAX
from ..wire.native import piece

_PREFIX = struct.Struct(">qi")
_LENGTH = struct.Struct(">i")
_PEEK = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch
_OFFSET = struct.Struct(">q")
_CRC_FROM = 21  # a batch's CRC covers its bytes from the attributes on
_CONTROL = 0x20
# KRaft writes batches of at most 8 MiB; anything far above is a damaged length field.
MAX_BATCH_LENGTH = 64 * 1024 * 1024


def read_bytes(path: str, *, regular_only: bool = False) -> bytes:
    """The whole file, read-only; errors become one-line :class:`SourceError`. A file whose
    rest is a hole (sparse: preallocated, or extended without writing) is read up to
    :func:`written_end`: the hole reads as zeros, and a zero-filled tail says only that
    nothing more was written, so the verdict is the same without gigabytes of zeros.

    ``regular_only`` refuses FIFOs and devices, which could block or never end.
    """
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise SourceError(f"{path}: is a directory, not a file")
        if regular_only and not stat.S_ISREG(st.st_mode):
            raise SourceError(f"{path}: not a regular file (a FIFO or device?); not read")
        with open(path, "rb") as f:
            end = written_end(f.fileno(), st.st_size)
            f.seek(0)
            return f.read() if end >= st.st_size else f.read(end)
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file (deleted while mdshell read the directory? "
                          "Kafka removes old segments after a snapshot)") from None
    except PermissionError:
        raise SourceError(f"{path}: permission denied; run mdshell as a user who can read it "
                          "(read access is enough)") from None
    except OSError as e:
        raise SourceError(f"{path}: cannot read ({e.strerror})") from None


_ZEROS = bytes(1 << 20)
# What is read past the start of a file's trailing hole: a batch begun before it ends
# within this (a longer one is refused whatever follows), so it reads as it would whole.
_PAST_HOLE = LOG_OVERHEAD + MAX_BATCH_LENGTH
_MOST_HOLES = 1024  # a file with more holes is read whole (each one costs two lseeks)


def written_end(fd: int, size: int) -> int:
    """How much of the open file ``fd`` (of ``size`` bytes) to read: up to
    :data:`_PAST_HOLE` past the start of a hole that runs to its end; ``size`` when there
    is no such hole, the file system cannot say (``SEEK_HOLE`` then answers ``size``), or
    the file has more than :data:`_MOST_HOLES` holes. Moves the file offset."""
    if size <= _PAST_HOLE or not hasattr(os, "SEEK_HOLE"):
        return size
    pos = 0
    try:
        for _ in range(_MOST_HOLES):
            hole = os.lseek(fd, pos, os.SEEK_HOLE)
            if hole >= size:
                return size
            try:
                pos = os.lseek(fd, hole, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:  # no data after this hole
                    return min(size, hole + _PAST_HOLE)
                raise
    except OSError:
        return size
    return size


def zero_filled(data: bytes, pos: int) -> bool:
    """Whether ``data[pos:]`` is all zero bytes (True when empty): a preallocated or zeroed
    tail, where nothing more was written. Compared a MiB at a time in place (no copy of the
    tail: a segment may end in gigabytes of zeros)."""
    size = len(data)
    while pos < size:
        n = min(len(_ZEROS), size - pos)
        if not data.startswith(_ZEROS if n == len(_ZEROS) else _ZEROS[:n], pos):
            return False
        pos += n
    return True


_cwalk = piece("_cwalk")
_SKIP = struct.Struct(">qiib4xhi")  # baseOffset, length, epoch, magic, attributes, lastOffsetDelta


def skip_to(data: bytes, offset: int, first: int | None = None,
            ) -> tuple[int, list[int], int | None, int | None]:
    """:func:`skip_to_python`'s answer, by the compiled one where it is built (a log's
    hundreds of thousands of headers read at C speed: time travel's start in a big log)."""
    if _cwalk is not None:
        got: tuple[int, list[int], int | None, int | None] | None = _cwalk.skip_to(
            data, offset, first)
        if got is not None:
            return got
    return skip_to_python(data, offset, first)


def skip_to_python(data: bytes, offset: int, first: int | None = None,
                   ) -> tuple[int, list[int], int | None, int | None]:
    """Where the first batch reaching ``offset`` starts, the positions of the control
    batches before it, and the last offset and leader epoch passed over (None: none). Only
    headers are read: batches below a snapshot's end offset do not contribute to the image,
    so they are neither checked nor decoded (a fast path for logs with tens of thousands of
    small batches). ``first``: the offset the file's name gives.

    Anything odd before the offset (a length that does not fit, a magic other than 2, an
    offset that does not follow on) stops the skip one batch early: the walker checks the
    batch before the odd one, then the odd one with both its neighbours (a damaged length
    field passed over unchecked lands in the middle of a batch, or past one)."""
    pos = 0
    controls: list[int] = []
    last: int | None = None
    epoch: int | None = None
    # the batch before: its position, controls, and the last offset and epoch before it
    back: tuple[int, int, int | None, int | None] = (0, 0, None, None)
    expect = first
    size = len(data)
    limit = size - HEADER_SIZE
    while pos <= limit:
        base, length, batch_epoch, magic, attrs, last_delta = _SKIP.unpack_from(data, pos)
        if (length < MIN_BATCH_LENGTH or pos + LOG_OVERHEAD + length > size or magic != 2
                or (expect is not None and base != expect)):
            break
        if base + last_delta >= offset:
            return pos, controls, last, epoch  # reached the offset
        back = (pos, len(controls), last, epoch)
        if attrs & _CONTROL:
            controls.append(pos)
        last, epoch = base + last_delta, batch_epoch
        expect = last + 1
        pos += LOG_OVERHEAD + length
    if zero_filled(data, pos):
        return size, controls, last, epoch  # the end, or a zero-filled (preallocated) tail
    at, kept, before, before_epoch = back
    return at, controls[:kept], before, before_epoch


# ---------------------------------------------------------------- header fields outside the CRC


@dataclass(slots=True)
class Before:
    """What the batch being judged must follow on from: the last offset and the leader epoch
    of the batch before it (None: unknown), and whether that offset comes from a batch of
    the same file (rather than from the file's name)."""

    last: int | None = None
    epoch: int | None = None
    in_file: bool = False


def in_range(b: Batch) -> bool:
    """Whether a batch's offsets are offsets: from 0 up to the largest 64-bit value, its
    last offset delta and record count not negative (Kafka writes no other; a Java reader
    would wrap such offsets around)."""
    return (b.base_offset >= 0 and b.last_offset_delta >= 0 and b.count >= 0
            and b.last_offset <= INT64_MAX)


def counted(b: Batch) -> bool:
    """Whether a log batch spans as many offsets as it holds records (its last offset delta
    is its record count less one). Kafka writes no other, and cannot read past another: its
    KRaft reader ends a batch by the count (raft's ``Batch.lastOffset``, from which the
    client goes on) while the log goes on by the delta, so a batch spanning more offsets is
    given to the listener again and again, and one spanning fewer has it resume inside a
    later batch. Snapshots are not held to it: Kafka's snapshot reader takes each batch's
    records whatever its offsets say."""
    return b.count == b.last_offset_delta + 1


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, in the plural unless ``n`` is 1: "1 record", "3 records"."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def _not_offsets(b: Batch) -> str:
    """What is wrong with the offsets of a batch :func:`in_range` refuses."""
    if b.base_offset < 0:
        return "has a negative base offset"
    if b.last_offset_delta < 0 or b.count < 0:
        return "has a negative " + ("last offset delta" if b.last_offset_delta < 0
                                    else "record count")
    return "holds offsets past the 64-bit range"


def header_damage(before: Before, b: Batch, after: tuple[int, int] | None) -> str | None:
    """Which header field outside the CRC of ``b`` is damaged ("base offset", "leader
    epoch"), judged from its neighbours; None when nothing says so. ``after`` is the base
    offset and leader epoch of the next batch of the file (None: ``b`` ends the file).

    Metadata log offsets are dense: inside a file each batch starts where the one before
    ended. A batch that breaks the sequence while the next one goes on from before it (as if
    ``b`` held its offsets) has a damaged base offset; a jump that the next batch continues
    is a real gap (the caller's to report). At the end of a file nothing can confirm a jump,
    and a file never holds a gap: a break there is damage too. Leader epochs only rise on
    the new leader's LeaderChange (a control batch): one epoch that differs from equal
    neighbours, or that changes on the last batch of a file other than by such a rise, is a
    damaged field, not a new leader."""
    if before.last is not None and b.base_offset != before.last + 1:
        expected = before.last + 1
        if after is not None:
            if after[0] == expected + b.last_offset_delta + 1:
                return "base offset"
        elif before.in_file:
            return "base offset"
    if before.epoch is None or b.epoch == before.epoch:
        return None
    if after is not None:
        return "leader epoch" if after[1] == before.epoch else None
    rises_as_leader = b.epoch > before.epoch and b.attributes & _CONTROL
    return None if rises_as_leader else "leader epoch"


def true_end(data: bytes, pos: int, expected: int | None = None) -> int | None:
    """Where the batch at ``pos`` really ends when its length field is damaged: the first
    place (the next batch's base offset there, or the end of the file) up to which its
    CRC matches. None when none does (the batch itself is damaged, or its tail is cut).

    Linear in the bytes it looks at: the candidate ends are taken in order, each found by
    one ``find`` from the one before, and the CRC is carried on from one candidate to the
    next instead of computed again from the start."""
    size = len(data)
    if size - pos < HEADER_SIZE:
        return None
    base, crc, last_delta = struct.unpack_from(">q9xI2xi", data, pos)
    start = pos + HEADER_SIZE
    stop = min(size, pos + LOG_OVERHEAD + MAX_BATCH_LENGTH)
    patterns = []
    for first in dict.fromkeys(x for x in (base, expected) if x is not None):
        following = first + last_delta + 1
        if 0 <= following <= INT64_MAX:
            patterns.append(_OFFSET.pack(following))
    view = memoryview(data)
    running, done = 0, pos + _CRC_FROM  # the CRC of data[pos + 21:done]
    for end in _candidates(data, patterns, start, stop, size):
        running = crc32c(view[done:end], running)
        done = end
        if running == crc:
            return end
    return None


def _candidates(data: bytes, patterns: list[bytes], start: int, stop: int,
                size: int) -> Iterator[int]:
    """Where any of ``patterns`` starts in ``data[start:stop]``, in order, then the end of
    the file when it lies inside: each place found once, by one ``find`` a pattern from
    the last place."""
    nxt = {p: data.find(p, start, stop) for p in patterns}
    last = -1
    while True:
        live = [at for at in nxt.values() if at >= 0]
        if not live:
            break
        at = min(live)
        if at > last:
            yield at
            last = at
        for p, where in nxt.items():
            if where == at:
                nxt[p] = data.find(p, at + 1, stop)
    if stop == size and size > last:
        yield size


@dataclass(frozen=True, slots=True)
class Skip:
    """A batch the walker skipped because a header field outside its CRC is damaged: the
    problem to report, and the offsets the batch holds (its neighbours tell them)."""

    problem: Problem
    first: int
    last: int


def peek(data: bytes, pos: int) -> tuple[int, int] | None:
    """Base offset and leader epoch of the batch at ``pos``, when there is one a neighbour
    can be judged by: whole, magic 2, its CRC right and its offsets offsets. A batch that is
    not (damage, or the end of the file) tells nothing: a batch is then judged as the last
    of its file is, so that what comes after the damage never changes what is read before
    it."""
    size = len(data)
    if size - pos < HEADER_SIZE:
        return None
    b = parse_header(data, pos)
    if (not MIN_BATCH_LENGTH <= b.length <= MAX_BATCH_LENGTH or pos + b.size > size
            or b.magic != 2 or not in_range(b) or not counted(b) or not b.crc_ok()
            or not readable(b)):
        return None
    return b.base_offset, b.epoch


def readable(b: Batch) -> bool:
    """Whether every record of a batch frames and decodes (as replay would take it)."""
    try:
        buf, start, end = b.payload()
        if b.is_control:
            read_controls(b)
        else:
            verify(buf, start, end, b.count, b.base_offset, b.base_timestamp, b.size)
    except UNDECODABLE:
        return False
    return True


def misnamed_first(data: bytes, named: int) -> int | None:
    """The offset a segment named for offset ``named`` really starts at, when its first
    batch says another and that is not damage; None when the name holds (or there is no
    batch to tell). A misnamed segment (renamed, or joined from another node's files) is
    read from its batches' own offsets, by ``-d`` and ``-s`` alike, as Kafka reads any
    file: the name only orders a directory's segments.

    A first base offset that is damaged (the batch after it follows on from the name) does
    not make a file misnamed."""
    if len(data) < 8:
        return None
    first: int = int.from_bytes(data[:8], "big", signed=True)
    if first == named:
        return None
    if len(data) >= HEADER_SIZE:
        b = parse_header(data, 0)
        if (MIN_BATCH_LENGTH <= b.length <= MAX_BATCH_LENGTH and b.size <= len(data)
                and header_damage(Before(named - 1), b, peek(data, b.size)) == "base offset"):
            return None
    return first


def misnamed(path: str, named: int, real: int) -> Problem:
    """The notice for a segment named for ``named`` whose batches start at ``real``
    (:func:`misnamed_first`)."""
    return Problem("misnamed", f"{os.path.basename(path)}: named for offset {named} but its "
                   f"first batch is at offset {real} (a renamed, misplaced or joined file?); "
                   "its offsets are read from its batches", path, real)


# ---------------------------------------------------------------- the walk


def iter_batches(path: str, data: bytes, problems: list[Problem],
                 *, check_crc: bool = True, start: int = 0,
                 after: int | None = None, epoch: int | None = None, first: int | None = None,
                 dense: bool = False, on_skip: Callable[[Skip], None] | None = None,
                 ) -> Iterator[Batch]:
    """Yield the batches of ``data`` (the bytes of ``path``) until the end or the first damage
    (then one :class:`Problem` whose ``position`` is the byte where the damage starts).
    ``start`` and ``after`` (the last offset before it; ``epoch`` its leader epoch) go on
    from where :func:`skip_to` stopped.

    ``dense`` (a log segment) applies the neighbour rules of :func:`header_damage`; ``first``
    is the offset the file's first batch must have (its name). A batch whose damaged length
    field its CRC gives away (:func:`true_end`), or whose magic is wrong while its CRC is
    right, is skipped too. Each skip goes to ``on_skip`` (default: its problem to
    ``problems``)."""
    name = os.path.basename(path)
    pos = start
    size = len(data)
    before = Before(after, epoch, after is not None)
    if before.last is None and first is not None and start == 0:
        before.last = first - 1
    skip = on_skip if on_skip is not None else (lambda s: problems.append(s.problem))
    # The usual batch (well framed, v2, CRC right, following on) costs a few comparisons.
    expect = None if before.last is None else before.last + 1
    prev_epoch = before.epoch
    while pos < size:
        length = _LENGTH.unpack_from(data, pos + 8)[0] if size - pos >= LOG_OVERHEAD else -1
        end = pos + LOG_OVERHEAD + length
        if MIN_BATCH_LENGTH <= length <= MAX_BATCH_LENGTH and end <= size:
            batch = parse_header(data, pos)
            if (batch.magic == 2 and (not check_crc or batch.crc_ok()) and (not dense or (
                    batch.base_offset == expect and batch.epoch == prev_epoch
                    and batch.count == batch.last_offset_delta + 1)) and in_range(batch)):
                yield batch
                expect, prev_epoch = batch.last_offset + 1, batch.epoch
                pos = end
                continue
        before.last = None if expect is None else expect - 1
        before.epoch, before.in_file = prev_epoch, before.in_file or pos > start
        odd = _odd(path, name, data, pos, before, check_crc, dense)
        if odd is None:  # a batch that is sound after all (a new leader, a real gap)
            batch = parse_header(data, pos)
            yield batch
            expect, prev_epoch = batch.last_offset + 1, batch.epoch
            pos = end
        elif isinstance(odd, Problem):
            if odd.code:
                problems.append(odd)
            return
        else:
            skipped, pos = odd
            skip(skipped)
            expect = skipped.last + 1


def _odd(path: str, name: str, data: bytes, pos: int, before: Before, check_crc: bool,
         dense: bool) -> tuple[Skip, int] | Problem | None:
    """What to do with a batch that is not the usual one: skip it (and where to go on), stop
    the file (the problem to report; one with no code: a zero-filled tail, nothing to say),
    or None: read it (it is sound, only not what the one before announced)."""
    size = len(data)
    last = before.last if before.in_file else None  # for messages: the last good offset
    if size - pos < LOG_OVERHEAD:
        if not zero_filled(data, pos):
            return _truncated(path, name, pos, None, size - pos, last)
        return Problem("", "")
    base_offset, length = _PREFIX.unpack_from(data, pos)
    if length == 0 and zero_filled(data, pos):
        return Problem("", "")  # zero-filled (preallocated) tail: nothing more was written
    end = pos + LOG_OVERHEAD + length
    framed = MIN_BATCH_LENGTH <= length <= MAX_BATCH_LENGTH and end <= size
    batch = parse_header(data, pos) if size - pos >= HEADER_SIZE else None
    crc_ok = framed and batch is not None and (not check_crc or batch.crc_ok())
    if not crc_ok and batch is not None and check_crc:
        real = true_end(data, pos, None if before.last is None else before.last + 1)
        if real is not None and in_range(batch):
            # the CRC shows the batch whole: its length field is wrong
            return skip_of(path, name, pos, batch, before, "length", length,
                            real - pos - LOG_OVERHEAD), real
    if not MIN_BATCH_LENGTH <= length <= MAX_BATCH_LENGTH:
        # The header is garbage (a zeroed or overwritten region): its offset means nothing.
        return Problem(
            "corrupt",
            f"{name}: the batch at byte {pos} ({_after(last)}) has an impossible length "
            f"{length}; reading of this file stops there, later records are ignored "
            "(the file is damaged: copy it again from a healthy node)",
            path, _next(last, base_offset), pos)
    if batch is None or end > size:
        return _truncated(path, name, pos, base_offset, size - pos, last,
                          LOG_OVERHEAD + length)
    if batch.magic != 2 and not crc_ok:
        return Problem(
            "corrupt",
            f"{name}: the batch at byte {pos} ({_after(last)}) has magic {batch.magic}, "
            "not 2; reading of this file stops there (KRaft metadata logs only use v2 batches)",
            path, _next(last, base_offset), pos)
    if not crc_ok:
        return Problem(
            "crc",
            f"{name}: CRC mismatch in the batch at byte {pos} (offsets {base_offset}-"
            f"{batch.last_offset}); this batch and everything after it in the file are "
            "ignored (the file is damaged: copy it again from a healthy node, or use "
            "--strict to fail on it)",
            path, base_offset, pos)
    field = "magic" if batch.magic != 2 else None
    if field is None and dense and batch.last_offset_delta >= 0 and batch.count >= 0:
        field = header_damage(before, batch, peek(data, end))
    if field is None and not in_range(batch):
        return Problem(
            "corrupt",
            f"{name}: the batch at byte {pos} ({_after(last)}) {_not_offsets(batch)} "
            f"(base offset {batch.base_offset}, last offset delta "
            f"{batch.last_offset_delta}, {batch.count} records); reading of this file stops "
            "there (the file is damaged: copy it again from a healthy node)",
            path, _next(last, max(0, batch.base_offset)), pos)
    if field is None and dense and not counted(batch):
        return Problem(
            "corrupt",
            f"{name}: the batch at byte {pos} ({_after(last)}) holds "
            f"{plural(batch.count, 'record')} but spans "
            f"{plural(batch.last_offset_delta + 1, 'offset')} (base offset "
            f"{batch.base_offset}, last offset delta {batch.last_offset_delta}); reading of "
            "this file stops there (Kafka writes no such batch, and its KRaft reader cannot "
            "read past one: the file is damaged, copy it again from a healthy node)",
            path, _next(last, batch.base_offset), pos)
    if field is None:
        return None
    return skip_of(path, name, pos, batch, before, field, None, None), end


def skip_of(path: str, name: str, pos: int, b: Batch, before: Before, field: str,
             said: int | None, real: int | None) -> Skip:
    """The problem of a batch skipped for a damaged header field, and its true offsets (where
    the batch before it ended, when known: its own base offset may be the damaged field)."""
    first = b.base_offset
    if field == "base offset" and before.last is not None:
        first = before.last + 1  # the neighbours tell it; the field itself is wrong
    last = first + b.last_offset_delta
    what = {"base offset": f"claims base offset {b.base_offset}",
            "leader epoch": f"has leader epoch {b.epoch} among batches of epoch {before.epoch}",
            "magic": f"has magic {b.magic} (not 2) but a valid CRC",
            "length": f"says it is {said} bytes long but its CRC shows {real}"}[field]
    where = f"offset {first}" if first == last else f"offsets {first}-{last}"
    return Skip(Problem(
        "header",
        f"{name}: the batch at byte {pos} ({where}) {what}: its {field} field (outside the "
        "CRC) is damaged; the batch is skipped, so its records are not in the image, and "
        "the rest of the file is read (copy the file again from a healthy node)",
        path, first, pos), first, last)


def _after(last: int | None) -> str:
    return "at the start of the file" if last is None else f"after offset {last}"


def _next(last: int | None, claimed: int) -> int:
    """Where the damage starts in offsets: after the last good batch, when there is one."""
    return claimed if last is None else last + 1


def _truncated(path: str, name: str, pos: int, base_offset: int | None, have: int,
               last: int | None, need: int | None = None) -> Problem:
    where = f"offset {base_offset}, byte {pos}" if base_offset is not None else f"byte {pos}"
    size = f" ({have} of {need} bytes)" if need else f" ({have} bytes)"
    stops = ("nothing in it is read" if last is None
             else f"reading of this file stops after offset {last}")
    return Problem(
        "truncated",
        f"{name}: the last batch ({where}) is incomplete{size}; {stops} (Kafka stopped while "
        "writing, or the copy is partial)",
        path, base_offset, pos)
