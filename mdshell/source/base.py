"""What every source is: the interface the session reads, whatever holds the batches.

A source is a directory (``-d``), one file (``-s``) or the live quorum (``-q``). It
says what it is, which snapshots and segments it has, and hands out streams of batches: one
snapshot's batches, or the log from an offset. Streams carry the problems found on the way
(gaps, overlaps, epochs going back, damage, truncation), raised by one walker with one set of
rules. Nothing here decodes records: replay (``mdshell.image``) does, and tells a stream to
stop a file whose batches turn out not to decode.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..problems import Problem, SourceError
from ..wire import frames
from ..wire.batch import Batch, read_controls
from ..wire.crc import crc32c
from .info import LogInfo, QuorumInfo
from .layout import Checkpoint, Layout, Segment

if TYPE_CHECKING:
    from .cleanwalk import Heads
    from .quorum.discover import QuorumView
    from .quorum.status import LiveStatus


@dataclass(slots=True)
class Located:
    """A batch and where it came from (``file`` names the file or network chunk)."""

    batch: Batch
    file: str
    position: int  # byte of the batch in ``file``
    role: str  # "snapshot", "segment" or "file"
    # A stream asked to pass one-NoOp batches over: the run of them just before this batch
    # (how many, and the last one's offset, leader epoch and max timestamp); None: none.
    quiet: tuple[int, int, int, int] | None = None


@dataclass(slots=True)
class Stretch(Located):
    """Clean batches of a segment handed out at once, to a reader that asked for them
    (:attr:`BatchStream.stretches`): those at ``heads.starts[i]`` in ``data`` for each ``i``
    of ``plan``, the one-NoOp batches between them passed over (a planned batch whose
    predecessor is not planned follows a run of them, which ends with that predecessor).
    As a :class:`Located` it is the last planned batch. The reader sets ``taken``: how many
    of ``plan`` it used (all, unless it found a batch it cannot use)."""

    data: bytes = b""
    heads: Heads | None = None
    plan: Sequence[int] = ()
    taken: int = 0


@dataclass(slots=True)
class ControlEntry:
    """A control record of the log (leader change, snapshot header, voters...)."""

    offset: int
    epoch: int
    timestamp: int
    ctype: int
    value: dict[str, Any] | frames.Unknown
    file: str


def undecodable(loc: Located, e: Exception) -> Problem:
    """The problem of a batch whose CRC is right but whose records do not decode (framing
    or a record refused): said the same by the load, ``records`` and every other reader,
    which all stop the file there."""
    b = loc.batch
    return Problem(
        "corrupt",
        f"{os.path.basename(loc.file)}: the batch at offsets {b.base_offset}-{b.last_offset} "
        f"(byte {loc.position}) has a valid CRC but its records do not decode ({e}); it and "
        "the rest of the file are ignored (written by a faulty tool? copy the file again from "
        "a healthy node)", loc.file, b.base_offset, loc.position)


def control_entries(batch: Batch, file: str, out: list[ControlEntry]) -> None:
    """Decode the control records of a control batch into ``out`` (raises where Kafka's
    reader fails: ``wire.batch.read_controls``)."""
    out.extend([ControlEntry(o, e, t, c, v, file) for o, e, t, c, v in read_controls(batch)])


@dataclass(slots=True)
class FileRead:
    """A file a source read, and in what role. ``crc`` (CRC-32C of the ``size`` bytes read)
    and ``stamp`` (the file's size and modification time then, None: not a file on disk)
    let a re-read tell a file that only grew from one that changed under it."""

    path: str
    role: str  # "snapshot", "segment" or "file"
    size: int
    batches: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    crc: int = 0
    stamp: tuple[int, int] | None = None


@dataclass
class BatchStream:
    """An iterator of :class:`Located` batches with what was found on the way.

    ``problems`` fills as the stream is read; ``below`` holds the control batches that a skip
    to the start offset passed over (the quorum's history is in them); ``end_offset`` is the
    last offset read.
    """

    batches: Iterator[Located] = field(default_factory=lambda: iter(()))
    problems: list[Problem] = field(default_factory=list)
    files: list[FileRead] = field(default_factory=list)
    below: list[Located] = field(default_factory=list)
    end_offset: int | None = None
    # Set by a reader that takes clean stretches whole (:class:`Stretch`) before it reads:
    # replay's load. Sources without them ignore it.
    stretches: bool = False
    _stop: bool = False
    _stop_file: bool = False

    def __iter__(self) -> Iterator[Located]:
        return self.batches

    def damaged(self, problem: Problem) -> None:
        """The consumer found a batch it cannot use (records that do not decode): the rest of
        its file is not read, and neither are later files (as for any damage)."""
        self.problems.append(problem)
        self._stop_file = True

    def stop(self) -> None:
        """Stop the stream now (a consumer that has what it wanted)."""
        self._stop = True


def file_read(path: str, role: str, data: bytes,
              stamp: tuple[int, int] | None = None) -> FileRead:
    """What a source read of ``path``: ``data``, its bytes, read when the file had
    ``stamp`` (:func:`stamp_of`)."""
    return FileRead(path, role, len(data), crc=crc32c(data), stamp=stamp)


def stamp_of(path: str) -> tuple[int, int] | None:
    """A file's size and modification time (ns), to take before reading it; None when it
    cannot be had."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def count(read: FileRead, batch: Batch) -> None:
    read.batches += 1
    if read.first_offset is None:
        read.first_offset = batch.base_offset
    read.last_offset = batch.last_offset


class Source(ABC):
    """A source of metadata batches. ``kind`` names it for ``/local`` ("directory", "file",
    "quorum"); ``eager`` asks replay to decode every record at once (``--strict``).

    Besides being read, a source declares what else it can do (the methods under "what a
    source can do"): follow, poll, close, say how stale it is, describe a live quorum, hand
    over what it fetched, or its files on disk. The defaults are a file's or a directory's
    (nothing, None), so callers ask the source and never test its class.
    """

    kind: str = ""
    eager: bool = False
    # True when the source can keep fetching after the load (``follow``, then ``poll``).
    follows: bool = False
    # Why the last request about the quorum got no answer (live; None: it did, or none made).
    quorum_error: str | None = None

    @abstractmethod
    def describe(self) -> str:
        """What this is, for people: a path, or the bootstrap servers."""

    def refresh(self) -> None:
        """Look again for what was added since (a directory Kafka is writing to); nothing
        by default."""
        return None

    def snapshots(self) -> list[Checkpoint]:
        """Usable snapshots holding metadata, oldest first (the bootstrap one excluded)."""
        return []

    def bootstrap(self) -> list[Checkpoint]:
        """Snapshots at offset 0 (3.9+ bootstrap: KRaft voters only)."""
        return []

    def segments(self) -> list[Segment]:
        return []

    def log_from_zero(self) -> bool:
        """True when the log can be replayed from offset 0 without a snapshot (a directory
        with segments; one file, read as it is)."""
        return bool(self.segments())

    def layout_problems(self) -> list[Problem]:
        """What looks wrong before anything is read (odd file names...)."""
        return []

    @abstractmethod
    def snapshot_stream(self, snapshot: Checkpoint) -> BatchStream:
        """The batches of one snapshot (offsets inside it)."""

    @abstractmethod
    def log_stream(self, start: int = 0, upto: int | None = None,
                   snapshot: Checkpoint | None = None, *,
                   pass_noops: bool = False) -> BatchStream:
        """The log's batches reaching offsets ``start..upto``; continuity is checked from
        ``start`` (or from where ``snapshot`` ends, which is then named in messages).
        ``pass_noops``: a reader that only needs the provenance a batch holding one NoOp
        record moves (replay) may get, for a run of them, only the count and the last one's
        provenance, on the next batch (:attr:`Located.quiet`); the last batch of a file is
        always handed out."""

    @abstractmethod
    def offset_range(self) -> tuple[int | None, int | None]:
        """The oldest and newest offsets whose image this source can rebuild."""

    def history_start(self) -> Checkpoint | None:
        """Where replaying every change starts: None for the log from offset 0, else the
        oldest usable snapshot."""
        snaps = self.snapshots()
        segs = self.segments()
        if segs and segs[0].base_offset == 0:
            return None
        return snaps[0] if snaps else None

    @abstractmethod
    def log_info(self, in_use: str | None, unusable: set[str],
                 upto: int | None) -> LogInfo:
        """The files (or chunks) behind the source, for ``/log``."""

    def file_bytes(self, path: str) -> bytes:
        """The bytes of one of its checkpoints or segments (``batches`` lists them);
        :class:`SourceError` when there is no such file."""
        raise SourceError(f"{path}: no such file in {self.describe()}")

    def changed(self, read: FileRead) -> str | None:
        """Whether the file ``read`` was read from changed since, other than by growing at
        its end (what Kafka does): why, in a few words; None when it only grew, did not
        change, or cannot be looked at again (a fetched chunk, a file deleted by Kafka's
        retention once a snapshot holds it)."""
        return None

    def file_head(self, path: str, size: int) -> bytes | None:
        """The first ``size`` bytes of one of its files, None if unreadable (a directory
        reads only those; others hold the bytes already)."""
        try:
            return self.file_bytes(path)[:size]
        except SourceError:
            return None

    def local_quorum(self, q: QuorumInfo, problems: list[Problem]) -> None:
        """Fill what the source knows of the quorum besides the log (quorum-state...);
        nothing by default."""
        return None

    def name(self, path: str) -> str:
        return os.path.basename(path)

    # -- what a source can do (the defaults: a directory's or a file's) -------------------

    def follow(self) -> None:
        """Keep fetching in the background (live follow); nothing to do for files."""
        return None

    def poll(self) -> str | None:
        """What changed since the last call: None, "more" (batches after the ones known)
        or "reset" (the log restarted from another snapshot: load it afresh)."""
        return None

    def close(self) -> None:
        """Let go of connections and threads (live); nothing to do for files."""
        return None

    def staleness(self) -> str | None:
        """Why a followed view stopped following (None: it follows, or never followed)."""
        return None

    def status(self) -> LiveStatus | None:
        """The connection and the follower's progress (``/live``); None: not live."""
        return None

    def quorum(self) -> QuorumView | None:
        """A fresh DescribeQuorum (a request: live only); None when there is none, or no
        answer (``quorum_error`` says why)."""
        return None

    def known_quorum(self) -> QuorumView | None:
        """The last DescribeQuorum answer, without a request (None: none, or not live)."""
        return None

    def fetched(self) -> dict[str, bytes] | None:
        """File name -> bytes of what was fetched, as ``save`` writes them; None: the
        source is on disk already."""
        return None

    def disk_layout(self) -> Layout | None:
        """The directory's files when they are read straight from disk as they are (fast
        readers may read them themselves); None otherwise."""
        return None
