"""Checkpoints and segments named by a :class:`Layout`, read the same way wherever their
bytes are: a directory on disk (``-d``) or what live mode fetched (``-q``).

The log is checked as it is read: offsets must follow on from batch to batch and segment to
segment, leader epochs must not go down, and damage stops the stream (later segments are not
applied: the image would skip records). Every break is a :class:`Problem` naming the file and
the offsets. :func:`read_segment` reads one segment so; ``-s`` reads its one segment with it
too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator, Iterator, Sequence

from ..problems import Problem, SourceError, add
from ..wire.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    UNDECODABLE,
    parse_header,
    read_controls,
)
from ..wire.control import SNAPSHOT_HEADER, control_name
from . import cleanwalk
from .base import BatchStream, FileRead, Located, Stretch, count, file_read, stamp_of
from .continuity import Continuity
from .info import LogInfo, SegmentInfo, SnapshotInfo
from .layout import Checkpoint, Layout, Segment
from .walker import Skip, iter_batches, misnamed, misnamed_first, skip_to


def headless(path: str, data: bytes) -> Problem | None:
    """The problem of a snapshot (``path``, its bytes ``data``) whose first batch is not a
    control batch opening with a SnapshotHeader, which Kafka's snapshot reader
    (``RecordsSnapshotReader``) refuses ("First batch is not a control batch with at least
    one record", "First control record is not a snapshot header"), so no node loads it.
    None when it opens so, or when its first batch is not whole with a right CRC, or its
    records do not read (reading the file says what is wrong)."""
    if len(data) < HEADER_SIZE:
        return None
    first = parse_header(data, 0)
    if first.size > len(data) or first.length < MIN_BATCH_LENGTH or not first.crc_ok():
        return None
    if first.is_control:
        try:
            ctype = read_controls(first)[0][3]
        except UNDECODABLE:
            return None
        if ctype == SNAPSHOT_HEADER:
            return None
        what = f"a {control_name(ctype)} control record"
    else:
        what = "metadata records"
    return Problem("headless", f"{os.path.basename(path)}: it begins with {what}, not a "
                   "SnapshotHeader (Kafka's snapshot reader refuses such a snapshot: no node "
                   "loads it)", path, first.base_offset, first.pos)


class LaidOut:
    """Streams and descriptions of one layout; ``data(path)`` gives a file's bytes (raising
    :class:`SourceError` when it cannot)."""

    def __init__(self, layout: Layout, data: Callable[[str], bytes]) -> None:
        self.layout = layout
        self.data = data

    def snapshot_stream(self, snapshot: Checkpoint) -> BatchStream:
        stream = BatchStream()
        stream.batches = self._snapshot(stream, snapshot)
        return stream

    def _snapshot(self, stream: BatchStream, cp: Checkpoint) -> Iterator[Located]:
        stamp = self._stamp(cp.path)
        try:
            data = self.data(cp.path)
        except SourceError as e:
            stream.problems.append(Problem("unreadable", str(e), cp.path))
            return
        read = file_read(cp.path, "snapshot", data, stamp)
        stream.files.append(read)
        if (bad := headless(cp.path, data)) is not None:
            stream.problems.append(bad)  # read on: a listing shows what it holds
        for batch in iter_batches(cp.path, data, stream.problems):
            count(read, batch)
            stream.end_offset = batch.last_offset
            yield Located(batch, cp.path, batch.pos, "snapshot")
            if stream._stop or stream._stop_file:
                return

    def log_stream(self, start: int = 0, upto: int | None = None,
                   snapshot: Checkpoint | None = None, *,
                   pass_noops: bool = False) -> BatchStream:
        stream = BatchStream()
        stream.batches = self._log(stream, start, upto, snapshot, pass_noops)
        return stream

    def _log(self, stream: BatchStream, start: int, upto: int | None,
             cp: Checkpoint | None, pass_noops: bool) -> Iterator[Located]:
        segments = self.layout.segments
        problems = stream.problems
        check = Continuity(problems, cp.epoch if cp is not None else -1)
        check.expected = start
        # The first segment is read when no later one starts at or before ``start``: then the
        # log begins where it does (its name's offset, or its first batch's if misnamed).
        if segments and (len(segments) == 1 or segments[1].base_offset > start) and (
                upto is None or upto >= start):
            begins = self._begins(segments[0])
            if begins is not None and begins > start:
                what = (f"snapshot {cp.name} ends at offset {cp.end_offset - 1}" if cp
                        else "there is no snapshot" if start == 0 else f"offset {start - 1} "
                        "is the last one before")
                problems.append(Problem(
                    "incomplete",
                    f"the log starts at offset {begins} but {what}: offsets "
                    f"{start}-{begins - 1} are missing, so the image is incomplete "
                    "(copy the whole __cluster_metadata-0 directory, snapshots included)",
                    segments[0].path, start))
                check.expected = begins
        for i, seg in enumerate(segments):
            later = segments[i + 1] if i + 1 < len(segments) else None
            if later is not None and later.base_offset <= start:
                continue  # entirely below the start: nothing in it matters
            stamp = self._stamp(seg.path)
            try:
                data = self.data(seg.path)
            except SourceError as e:
                problems.append(Problem("unreadable", f"{e}; this and later segments are not "
                                        "read, so the image stops before them", seg.path))
                return
            if data == b"":
                # A newest segment is empty right after Kafka rolls one: normal. An empty
                # segment before others, or the only data there is, deserves a word.
                if not self.layout.virtual and (
                        later is not None or (cp is None and not stream.files)):
                    problems.append(Problem("empty", f"{os.path.basename(seg.path)}: empty "
                                            "segment (nothing written yet); skipped", seg.path))
                continue
            named = seg.base_offset
            real = misnamed_first(data, named)
            if real is not None:
                problems.append(misnamed(seg.path, named, real))
                named = real
            status = yield from read_segment(stream, seg.path, named, data, start,
                                              upto, check, pass_noops, stamp)
            if status == _PASSED or stream._stop:
                return
            if status == _DAMAGED:
                if later is not None:
                    problems.append(Problem("stopped", "later segments after "
                                            f"{os.path.basename(seg.path)} are not applied "
                                            "because of the damage above", seg.path))
                return

    def _begins(self, seg: Segment) -> int | None:
        """The offset the log's first segment starts at: its name's, or its first batch's
        when it is misnamed (:func:`misnamed_first`); None when it cannot be read (the
        walk says why)."""
        try:
            data = self.data(seg.path)
        except SourceError:
            return None
        real = misnamed_first(data, seg.base_offset) if data else None
        return seg.base_offset if real is None else real

    def _stamp(self, path: str) -> tuple[int, int] | None:
        """A file's size and time before it is read (None: not on disk)."""
        return None if self.layout.virtual else stamp_of(path)

    def offset_range(self, scanned: list[SegmentInfo] | None = None,
                     ) -> tuple[int | None, int | None]:
        """The end is the last offset of the newest segment that holds batches (an empty
        newest segment is normal), or of the newest snapshot when it reaches further."""
        layout = self.layout
        last: int | None = None
        for i in range(len(layout.segments) - 1, -1, -1):
            s = layout.segments[i]
            info = (scanned[i] if scanned is not None
                    else self.scan(s.path, s.base_offset))
            if info.last_offset is not None:
                last = info.last_offset
                break
        snaps = [c.end_offset for c in layout.checkpoints if c.end_offset > 0]
        if snaps and (last is None or max(snaps) - 1 > last):
            last = max(snaps) - 1
        if layout.segments and layout.segments[0].base_offset == 0:
            return 0, last
        first_seg = layout.segments[0].base_offset if layout.segments else None
        usable = [e - 1 for e in snaps if first_seg is None or e >= first_seg]
        return (min(usable) if usable else first_seg), last

    def scan(self, path: str, base: int) -> SegmentInfo:
        from .loginfo import scan_segment

        try:
            return scan_segment(os.path.basename(path), self.data(path), base, first=base)
        except SourceError as e:
            return SegmentInfo(os.path.basename(path), base, -1, damage=str(e))

    def log_info(self, in_use: str | None, unusable: set[str],
                 upto: int | None) -> LogInfo:
        layout = self.layout
        info = LogInfo(layout.directory)
        info.segments = [self.scan(s.path, s.base_offset)
                         for s in layout.segments]
        for cp in layout.checkpoints:
            if cp.path == in_use:
                status = "in use"
            elif cp.end_offset == 0:
                status = "bootstrap (voters only, no metadata)"
            elif cp.path in unusable:
                status = "unusable (see warnings)"
            elif upto is not None and cp.end_offset - 1 > upto:
                status = "newer than the selected offset"
            else:
                status = "older"
            info.snapshots.append(SnapshotInfo(cp.name, cp.end_offset, cp.epoch, cp.size,
                                               status))
        for cp in layout.ignored_checkpoints:
            why = ("being written (.part): ignored" if cp.state == "part"
                   else "scheduled for deletion (.deleted): ignored")
            info.ignored.append((os.path.basename(cp.path), why))
        for p in layout.producer_snapshots:
            info.ignored.append((os.path.basename(p), "producer-state snapshot, not metadata"))
        for path, why in layout.ignored + layout.suspicious:
            info.ignored.append((os.path.basename(path), why))
        info.start_offset, info.end_offset = self.offset_range(info.segments)
        return info


def read_segment(stream: BatchStream, path: str, named: int, data: bytes, start: int,
                 upto: int | None, check: Continuity, pass_noops: bool = False,
                 stamp: tuple[int, int] | None = None, role: str = "segment",
                 ) -> Generator[Located, None, str]:
    """The batches of one log segment (``data``, the bytes of ``path``, whose first batch
    should be at offset ``named``) from offset ``start`` up to ``upto``, judged by ``check``
    (the log's continuity) and the walker's damage rules: clean stretches by the fast walk,
    the rest by the walker. Returns how it ended (done, passed ``upto``, damaged). A
    directory reads each of its segments so; ``-s`` reads one segment alone so (``role``
    "file")."""
    read = file_read(path, role, data, stamp)
    stream.files.append(read)
    pos, after, epoch = 0, None, check.last_epoch
    if start > 0:
        pos, controls, after, skipped_epoch = skip_to(data, start, named)
        epoch = skipped_epoch if skipped_epoch is not None else epoch
        stream.below.extend(Located(parse_header(data, p), path, p, role)
                            for p in controls)
    stream._stop_file = False
    # Clean stretches by the fast walk, the rest by the walker. Stretches grow from a
    # few hundred batches: time travel replays a thousand records or so from a mark.
    most = cleanwalk.FIRST
    while pos < len(data):
        fast = _Fast.of(data, pos, named if after is None else after + 1, epoch, check,
                        start, upto, pass_noops, min(most, cleanwalk.CHUNK))
        if fast is None:
            break
        status = yield from fast.batches(stream, read, path, data, check, role)
        if status != _DONE:
            return status
        pos, after, epoch = fast.end, fast.last, check.last_epoch
        most *= 4
    else:
        if pos > 0:
            return _DONE
    damage: list[Problem] = []

    def skipped(s: Skip) -> None:
        """A batch with a damaged header: said when it holds offsets the stream
        covers; its offsets count as read either way."""
        if s.last >= start and (upto is None or s.first <= upto):
            add(stream.problems, s.problem)
        check.passed(s.first, s.last)
        if stream.end_offset is None or s.last > stream.end_offset:
            stream.end_offset = s.last

    for batch in iter_batches(path, data, damage, start=pos, after=after, epoch=epoch,
                              first=named, dense=True, on_skip=skipped):
        if upto is not None and batch.base_offset > upto:
            return _PASSED
        last = read.last_offset = stream.end_offset = batch.last_offset  # count(), inline
        read.batches += 1
        if read.first_offset is None:
            read.first_offset = batch.base_offset
        if last < start:
            if batch.is_control:  # below the start, walked when the skip gave up
                stream.below.append(Located(batch, path, batch.pos, role))
            continue
        if not check.follows(batch, path):
            continue
        yield Located(batch, path, batch.pos, role)
        if stream._stop_file:
            return _DAMAGED
        if stream._stop:
            return _PASSED
    stream.problems.extend(damage)
    return _DAMAGED if damage else _DONE


_DONE, _PASSED, _DAMAGED = "done", "passed upto", "damaged"


class _Fast:
    """A clean stretch of a segment (some batches from a position on), checked whole by
    :mod:`.cleanwalk`: the batches the walker would hand out there, and say nothing about,
    without checking each again. ``end``: the byte after it."""

    def __init__(self, heads: cleanwalk.Heads, read: int, plan: Sequence[int],
                 end: int) -> None:
        self.heads, self.read, self.plan, self.end = heads, read, plan, end

    @classmethod
    def of(cls, data: bytes, pos: int, first: int, prior: int | None, check: Continuity,
           start: int, upto: int | None, pass_noops: bool, most: int) -> _Fast | None:
        """``most`` batches at most; None when the walker must read them (anything it would
        judge or say)."""
        try:
            h = cleanwalk.scan(data, pos, most)
            follows = cleanwalk.Follows(first, prior, check.epoch, check.expected, start)
            read = cleanwalk.check(data, h, follows, upto)
        except cleanwalk.Unclean:
            return None
        plan = cleanwalk.noop_plan(data, h, read) if pass_noops else range(read)
        end = h.starts[-1] + LOG_OVERHEAD + h.length[-1]
        return cls(h, read, plan, end)

    @property
    def last(self) -> int:
        """The last offset of the stretch."""
        h = self.heads
        return h.base[-1] + h.last_delta[-1]

    def batches(self, stream: BatchStream, read: FileRead, path: str, data: bytes,
                check: Continuity, role: str = "segment") -> Generator[Located, None, str]:
        h = self.heads
        if self.read and read.first_offset is None:
            read.first_offset = h.base[0]
        counted = read.batches
        if stream.stretches and self.plan:
            return (yield from self._whole(stream, read, path, data, check, counted, role))
        before = -1
        starts, base, epoch, max_ts = h.starts, h.base, h.epoch, h.max_ts
        for i in self.plan:
            batch = parse_header(data, starts[i])
            read.batches = counted + i + 1
            read.last_offset = stream.end_offset = batch.last_offset
            # cleanwalk.quiet, inline: the one-NoOp batches passed over before this one
            yield Located(batch, path, batch.pos, role, None if i - before < 2 else
                          (i - before - 1, base[i - 1], epoch[i - 1], max_ts[i - 1]))
            if stream._stop_file:
                return _DAMAGED
            if stream._stop:
                return _PASSED
            before = i
        return self._read_all(check)

    def _read_all(self, check: Continuity) -> str:
        h = self.heads
        if self.read:
            last = self.read - 1
            check.expected = h.base[last] + h.last_delta[last] + 1
            check.epoch = max(check.epoch, h.epoch[last])
            check.last_epoch = h.epoch[last]
        return _PASSED if self.read < len(h) else _DONE

    def _whole(self, stream: BatchStream, read: FileRead, path: str, data: bytes,
               check: Continuity, counted: int, role: str = "segment",
               ) -> Generator[Located, None, str]:
        """The stretch as one :class:`Stretch`; then what the reader took of it is counted
        as read, as :meth:`batches` counts each batch it hands out."""
        h, plan = self.heads, self.plan
        batch = parse_header(data, h.starts[plan[-1]])
        stretch = Stretch(batch, path, batch.pos, role, None, data, h, plan)
        yield stretch
        if stretch.taken:
            i = plan[stretch.taken - 1]
            read.batches = counted + i + 1
            read.last_offset = stream.end_offset = h.base[i] + h.last_delta[i]
        if stream._stop_file:
            return _DAMAGED
        if stream._stop:
            return _PASSED
        return self._read_all(check)
