"""One ``.checkpoint`` or ``.log`` file (``-s``), read from its first batch as Kafka's shell
does: the provenance of a ``.checkpoint`` read this way uses the offsets inside the file."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator

from ..problems import Problem, SourceError, add
from .base import BatchStream, Located, Source, count, file_read, stamp_of
from .continuity import Continuity
from .identity import check_metadata_log
from .info import LogInfo
from .laidout import headless, read_segment
from .layout import Checkpoint
from .walker import Skip, iter_batches, misnamed, misnamed_first, read_bytes

_PRODUCER_SNAPSHOT = re.compile(r"^\d{20}\.snapshot$")
_SEGMENT = re.compile(r"^(\d{20})\.log$")


class FileSource(Source):
    """One ``.checkpoint`` or ``.log`` file, replayed from its first batch (``-s``)."""

    kind = "file"

    def __init__(self, path: str, *, eager: bool = False) -> None:
        if os.path.isdir(path):
            raise SourceError(f"{path}: is a directory; use -d DIR for a metadata directory")
        name = os.path.basename(path)
        if _PRODUCER_SNAPSHOT.match(name):
            raise SourceError(f"{path}: a producer-state snapshot, not metadata; metadata "
                              "snapshots are named <end offset>-<epoch>.checkpoint (or give "
                              "the whole directory with -d)")
        if not os.path.lexists(path):
            raise SourceError(f"{path}: no such file")
        self.path = path
        self.eager = eager
        # A log segment's offsets are dense, and its name gives the first one.
        self.dense = not name.endswith((".checkpoint", ".checkpoint.part",
                                        ".checkpoint.deleted"))
        named = _SEGMENT.match(name)
        self.first = int(named.group(1)) if named else None
        self._stamp = stamp_of(path)
        self._data = read_bytes(path, regular_only=True)
        if not self._data:
            raise SourceError(f"{path}: the file is empty; nothing to read (give a .log "
                              "segment or .checkpoint snapshot that has data)")
        if not starts_with_batch(self._data):
            raise SourceError(f"{path}: {NOT_BATCHES}")
        check_metadata_log(os.path.dirname(os.path.abspath(path)), self._data,
                           ".checkpoint" in name)

    def describe(self) -> str:
        return self.path

    def data(self) -> bytes:
        return self._data

    def snapshot_stream(self, snapshot: Checkpoint) -> BatchStream:
        raise SourceError(f"{self.path}: one file has no snapshots of its own")

    def log_stream(self, start: int = 0, upto: int | None = None,
                   snapshot: Checkpoint | None = None, *,
                   pass_noops: bool = False) -> BatchStream:
        stream = BatchStream()
        stream.batches = self._walk(stream, start, upto, pass_noops)
        return stream

    def _walk(self, stream: BatchStream, start: int, upto: int | None,
              pass_noops: bool = False) -> Iterator[Located]:
        if self.dense:
            yield from self._segment(stream, start, upto, pass_noops)
            return
        # A snapshot's offsets are offsets inside the file (Kafka 3.7 could write them
        # overlapping): no continuity, the walker's damage rules only.
        read = file_read(self.path, "file", self._data, self._stamp)
        stream.files.append(read)
        damage: list[Problem] = []
        if (bad := headless(self.path, self._data)) is not None:
            stream.problems.append(bad)  # read on: -s shows what the file holds
        for batch in iter_batches(self.path, self._data, damage,
                                  on_skip=self._skipped(stream.problems, None)):
            if upto is not None and batch.base_offset > upto:
                return
            count(read, batch)
            stream.end_offset = batch.last_offset
            if batch.last_offset < start:
                continue
            yield Located(batch, self.path, batch.pos, "file")
            if stream._stop or stream._stop_file:
                return
        stream.problems.extend(damage)

    def _segment(self, stream: BatchStream, start: int, upto: int | None,
                 pass_noops: bool) -> Iterator[Located]:
        """A log segment alone, read as a directory reads each of its segments
        (:func:`.laidout.read_segment`: the fast walk of clean stretches, the walker's rules
        elsewhere). Its offsets follow on from its name; a file whose first batch is
        elsewhere, not by damage, is misnamed (said), and one whose name gives no offset,
        is read from its batches' offsets."""
        check = Continuity(stream.problems, -1)
        named = self.first
        real = misnamed_first(self._data, named) if named is not None else None
        if named is not None and real is None:
            first = check.expected = named
        else:  # misnamed, or a name that gives no offset: the first batch's
            if named is not None and real is not None:
                add(stream.problems, misnamed(self.path, named, real))
            first = int.from_bytes(self._data[:8], "big", signed=True) \
                if len(self._data) >= 8 else 0
        yield from read_segment(stream, self.path, first, self._data, start, upto, check,
                                pass_noops, self._stamp, role="file")

    @staticmethod
    def _skipped(problems: list[Problem],
                 check: Continuity | None) -> Callable[[Skip], None]:
        """A batch the walker skips (a damaged header): said at once, and its offsets
        passed."""
        def skipped(s: Skip) -> None:
            add(problems, s.problem)  # a flood folded, as in a directory
            if check is not None:
                check.passed(s.first, s.last)
        return skipped

    def offset_range(self) -> tuple[int | None, int | None]:
        from .loginfo import scan_segment

        seg = scan_segment("", self._data, 0, first=self.first, dense=self.dense)
        return seg.first_offset, seg.last_offset

    def log_from_zero(self) -> bool:
        return True

    def history_start(self) -> Checkpoint | None:
        return None

    def log_info(self, in_use: str | None, unusable: set[str],
                 upto: int | None) -> LogInfo:
        from .loginfo import scan_segment

        seg = scan_segment(os.path.basename(self.path), self._data, 0, first=self.first,
                           dense=self.dense)
        return LogInfo(self.path, [seg], start_offset=seg.first_offset,
                       end_offset=seg.last_offset)


NOT_BATCHES = ("not a Kafka record batch file (a .log segment or a .checkpoint snapshot of "
               "__cluster_metadata-0)")


def starts_with_batch(data: bytes) -> bool:
    """Whether ``data`` (a file's bytes, or at least its first batch's) starts like a record
    batch file: magic 2 where a v2 batch has it, or a first batch whose CRC holds. Text, or
    any other file, fails both; bytes too few to hold the magic byte start a batch unless
    they are text (a batch starts with its base offset's high bytes: 0 below 2^56)."""
    if len(data) < 17:
        return not _is_text(data)
    return data[16] == 2 or _crc_holds(data)


def _is_text(data: bytes) -> bool:
    """Whether ``data`` is printable ASCII text (lines, tabs), as no batch header is."""
    return bool(data) and all(32 <= b < 127 or b in (9, 10, 13) for b in data)


def _crc_holds(data: bytes) -> bool:
    """Whether the first batch is a v2 batch by its CRC (its magic byte, outside the CRC,
    may be the damaged part: the walker then says so)."""
    from ..wire.batch import HEADER_SIZE, MIN_BATCH_LENGTH, parse_header

    if len(data) < HEADER_SIZE:
        return False
    b = parse_header(data, 0)
    return b.length >= MIN_BATCH_LENGTH and b.size <= len(data) and b.crc_ok()
