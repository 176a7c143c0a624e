"""A ``__cluster_metadata-0`` directory (``-d``): snapshots, then log segments in order.

The files are found on disk (:func:`scan_layout`) and read as they are; how a layout is
streamed and checked is :mod:`laidout`'s, shared with live mode.
"""

from __future__ import annotations

import os

from ..problems import Problem, SourceError
from ..wire.crc import crc32c
from .base import BatchStream, FileRead, Source, stamp_of
from .file import NOT_BATCHES, starts_with_batch
from .identity import check_metadata_log, read_head
from .info import LogInfo, QuorumInfo
from .laidout import LaidOut
from .layout import Checkpoint, Layout, Segment, scan_layout
from .localfiles import read_properties, read_quorum_state
from .walker import read_bytes


class DirectorySource(Source):
    """A ``__cluster_metadata-0`` directory (``-d``)."""

    kind = "directory"

    def __init__(self, path: str, *, eager: bool = False) -> None:
        self.layout: Layout = scan_layout(path)
        self.eager = eager
        self._cache: dict[str, bytes] = {}
        _check_identity(self.layout)

    def describe(self) -> str:
        return self.layout.directory

    def refresh(self) -> None:
        """Files are read again: segments grow and new ones appear while Kafka runs."""
        self.layout = scan_layout(self.layout.directory)
        self._cache.clear()

    def data(self, path: str) -> bytes:
        if path not in self._cache:
            self._cache[path] = read_bytes(path, regular_only=True)
        return self._cache[path]

    def snapshots(self) -> list[Checkpoint]:
        return [c for c in self.layout.checkpoints if c.end_offset > 0]

    def bootstrap(self) -> list[Checkpoint]:
        return [c for c in self.layout.checkpoints if c.end_offset == 0]

    def segments(self) -> list[Segment]:
        return self.layout.segments

    def layout_problems(self) -> list[Problem]:
        return [Problem("unrecognized", f"{os.path.basename(path)}: {why}", path)
                for path, why in self.layout.suspicious]

    def file_bytes(self, path: str) -> bytes:
        return self.data(path)

    def changed(self, read: FileRead) -> str | None:
        if read.stamp is None:
            return None
        now = stamp_of(read.path)
        if now is None or now == read.stamp:
            return None  # gone (Kafka deletes what a snapshot holds), or untouched
        if now[0] < read.size:
            return f"it shrank from {read.size:,} to {now[0]:,} bytes"
        try:
            head = self.data(read.path)[:read.size]
        except SourceError:
            return None  # unreadable now: reading it again says so
        if len(head) < read.size:
            return f"it shrank from {read.size:,} to {len(head):,} bytes"
        if crc32c(head) != read.crc:
            return f"its first {read.size:,} bytes, read before, are not the same any more"
        return None

    def file_head(self, path: str, size: int) -> bytes | None:
        return read_head(path, size)

    def disk_layout(self) -> Layout:
        return self.layout

    def _laid(self) -> LaidOut:
        return LaidOut(self.layout, self.data)

    def snapshot_stream(self, snapshot: Checkpoint) -> BatchStream:
        return self._laid().snapshot_stream(snapshot)

    def log_stream(self, start: int = 0, upto: int | None = None,
                   snapshot: Checkpoint | None = None, *,
                   pass_noops: bool = False) -> BatchStream:
        return self._laid().log_stream(start, upto, snapshot, pass_noops=pass_noops)

    def offset_range(self) -> tuple[int | None, int | None]:
        return self._laid().offset_range()

    def log_info(self, in_use: str | None, unusable: set[str],
                 upto: int | None) -> LogInfo:
        return self._laid().log_info(in_use, unusable, upto)

    def local_quorum(self, q: QuorumInfo, problems: list[Problem]) -> None:
        from .loginfo import quorum_from_files

        state = read_quorum_state(self.layout.directory, problems)
        props = None
        if self.layout.log_dir:
            props = read_properties(os.path.join(self.layout.log_dir, "meta.properties"),
                                    problems)
        quorum_from_files(q, state, props, problems)


def _check_identity(layout: Layout) -> None:
    """Refuse a topic's own partition directory (see :mod:`identity`), and one whose
    segments hold no record batch at all (text, or another kind of file) when no snapshot
    is there either: as ``-s`` refuses such a file."""
    snapshots = bool(layout.checkpoints or layout.ignored_checkpoints)
    head = None
    if not snapshots:
        first = next((s for s in layout.segments if s.size > 0), None)
        head = read_head(first.path) if first is not None else None
        written = [s for s in layout.segments if s.size > 0]
        if written and not any(_batches_in(s.path) for s in written):
            others = f" (and {len(written) - 1} more)" if len(written) > 1 else ""
            raise SourceError(f"{written[0].path}{others}: {NOT_BATCHES}; the directory holds "
                              "no metadata to read")
    check_metadata_log(layout.directory, head, snapshots)


def _batches_in(path: str) -> bool:
    """Whether a segment starts with a record batch (unreadable: left to the load to say)."""
    head = read_head(path, 17)
    if head is None or starts_with_batch(head):
        return True
    try:
        return starts_with_batch(read_bytes(path, regular_only=True))
    except SourceError:
        return True
