"""Turn a source (a directory or one file) into an image: which files, in which order.

A directory loads KIP-919 style: the newest usable snapshot, then every later log batch across
all segments. A damaged snapshot is skipped (with a warning) for an older one or the full log.
One file (``-s``) is replayed batch by batch from its start, as Kafka's shell does, so the
provenance of a ``.checkpoint`` read this way uses the offsets inside the file.

``upto`` stops the replay after that offset: the image as of any offset (time travel).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .image.model import Image
from .image.replay import ImageBuilder, Observer
from .problems import Problem, SourceError
from .source.layout import Checkpoint, Layout, scan_layout
from .source.reader import iter_batches, read_bytes
from .source.reader import skip_below as skip_below_offset
from .wire import control as ctl
from .wire import frames
from .wire.batch import Batch, iter_records, parse_header


@dataclass(slots=True)
class ControlEntry:
    """A control record of the log (leader change, snapshot header, voters...)."""

    offset: int
    epoch: int
    timestamp: int
    ctype: int
    value: dict[str, Any] | frames.Unknown
    file: str


@dataclass(slots=True)
class FileRead:
    path: str
    role: str  # "snapshot", "segment" or "file"
    size: int
    batches: int = 0
    first_offset: int | None = None
    last_offset: int | None = None


@dataclass(slots=True)
class Loaded:
    image: Image
    problems: list[Problem]
    files: list[FileRead]
    controls: list[ControlEntry]
    snapshot: Checkpoint | None = None
    upto: int | None = None
    end_offset: int | None = None  # last offset read (any batch)
    complete_from_zero: bool = True


@dataclass(slots=True)
class _Run:
    builder: ImageBuilder
    files: list[FileRead] = field(default_factory=list)
    controls: list[ControlEntry] = field(default_factory=list)
    end_offset: int | None = None


def _controls(batch: Batch, path: str, out: list[ControlEntry]) -> None:
    for rec in iter_records(batch):
        ctype = frames.control_type(rec.key)
        out.append(ControlEntry(rec.offset, batch.epoch, rec.timestamp, ctype,
                                frames.decode_control(ctype, rec.value), path))


class FileSource:
    """One ``.checkpoint`` or ``.log`` file, replayed from its first batch (``-s``)."""

    kind = "file"

    def __init__(self, path: str) -> None:
        if os.path.isdir(path):
            raise SourceError(f"{path}: is a directory; use -d DIR for a metadata directory")
        self.path = path
        self._data = read_bytes(path)
        if not self._data:
            raise SourceError(f"{path}: the file is empty; nothing to read (give a .log "
                              "segment or .checkpoint snapshot that has data)")

    def describe(self) -> str:
        return self.path

    def data(self) -> bytes:
        return self._data

    def load(self, upto: int | None = None, observer: Observer | None = None,
             history: bool = False) -> Loaded:
        run = _Run(ImageBuilder(observer=observer))
        problems: list[Problem] = []
        _replay_file(run, self.path, self._data, "file", problems, upto)
        problems[:0] = run.builder.problems
        return Loaded(run.builder.image, problems, run.files, run.controls, None, upto,
                      run.end_offset)


def _replay_file(run: _Run, path: str, data: bytes, role: str, problems: list[Problem],
                 upto: int | None, skip_below: int = -1) -> bool:
    """Replay one file's batches; False once ``upto`` has been passed."""
    read = FileRead(path, role, len(data))
    run.files.append(read)
    builder = run.builder
    builder.file = os.path.basename(path)
    start = 0
    if skip_below > 0:
        start, controls = skip_below_offset(data, skip_below)
        for pos in controls:
            batch = parse_header(data, pos)
            if batch.crc_ok():
                _controls(batch, path, run.controls)
    for batch in iter_batches(path, data, problems, start=start):
        if upto is not None and batch.base_offset > upto:
            return False
        read.batches += 1
        if read.first_offset is None:
            read.first_offset = batch.base_offset
        read.last_offset = batch.last_offset
        run.end_offset = batch.last_offset
        if batch.last_offset < skip_below:
            continue
        if batch.is_control:
            _controls(batch, path, run.controls)
        else:
            builder.apply_batch(batch, upto, skip_below)
    return True


class DirectorySource:
    """A ``__cluster_metadata-0`` directory (``-d``)."""

    kind = "directory"

    def __init__(self, path: str) -> None:
        self.layout: Layout = scan_layout(path)
        self._cache: dict[str, bytes] = {}

    def describe(self) -> str:
        return self.layout.directory

    def data(self, path: str) -> bytes:
        if path not in self._cache:
            self._cache[path] = read_bytes(path)
        return self._cache[path]

    def load(self, upto: int | None = None, observer: Observer | None = None,
             history: bool = False) -> Loaded:
        """The image as of ``upto`` (None: the end); ``observer`` sees every applied record.

        ``history`` starts from as far back as the data goes (the whole log when it starts at
        offset 0, else the oldest usable snapshot) so that an observer sees every change.
        """
        problems: list[Problem] = []
        candidates = [c for c in reversed(self.layout.checkpoints)
                      if c.end_offset > 0 and (upto is None or c.end_offset - 1 <= upto)]
        if history:
            segments = self.layout.segments
            if segments and segments[0].base_offset == 0:
                candidates = []
            else:
                candidates.reverse()
        bootstrap = self._bootstrap_controls()
        for cp in candidates:
            run = self._from_snapshot(cp, problems, observer)
            if run is not None:
                run.controls[:0] = bootstrap
                run.builder.origin = ""
                return self._replay_log(run, cp, problems, upto)
        run = _Run(ImageBuilder(observer=observer), controls=bootstrap)
        return self._replay_log(run, None, problems, upto)

    def _bootstrap_controls(self) -> list[ControlEntry]:
        """KRaftVersion/Voters of the bootstrap snapshot (3.9+), as of offset -1."""
        out: list[ControlEntry] = []
        for cp in self.layout.checkpoints:
            if cp.end_offset != 0:
                continue
            try:
                data = self.data(cp.path)
            except SourceError:
                continue
            for batch in iter_batches(cp.path, data, []):
                if batch.is_control:
                    _controls(batch, cp.path, out)
        for c in out:
            c.offset = -1
        return out

    def _from_snapshot(self, cp: Checkpoint, problems: list[Problem],
                       observer: Observer | None = None) -> _Run | None:
        """Load a snapshot; None (with a warning) when it is damaged or incomplete."""
        run = _Run(ImageBuilder(observer=observer))
        run.builder.origin = cp.name
        mine: list[Problem] = []
        try:
            data = self.data(cp.path)
        except SourceError as e:
            problems.append(Problem("snapshot", f"{e}; using older data instead", cp.path))
            return None
        _replay_file(run, cp.path, data, "snapshot", mine, None)
        kinds = [c.ctype for c in run.controls if c.file == cp.path]
        if not mine and ctl.SNAPSHOT_FOOTER not in kinds:
            mine.append(Problem("snapshot", f"{cp.name}: no SnapshotFooter (the snapshot was "
                                "not completely written)", cp.path))
        if mine:
            reasons = "; ".join(p.message for p in mine)
            problems.append(Problem("snapshot", f"snapshot {cp.name} is not usable ({reasons}); "
                                    "using older data instead", cp.path, cp.end_offset))
            return None
        prov = run.builder.image.provenance
        prov.offset, prov.epoch = cp.end_offset - 1, cp.epoch
        headers = [c for c in run.controls
                   if c.file == cp.path and c.ctype == ctl.SNAPSHOT_HEADER]
        if headers and isinstance(headers[0].value, dict):
            prov.time_ms = headers[0].value["lastContainedLogTimestamp"]
        # The snapshot's own control records use offsets inside the file: keep only quorum ones.
        for c in run.controls:
            c.offset = cp.end_offset - 1
        run.builder.problems.clear()
        return run

    def _replay_log(self, run: _Run, cp: Checkpoint | None, problems: list[Problem],
                    upto: int | None) -> Loaded:
        start = cp.end_offset if cp else 0
        segments = self.layout.segments
        complete = True
        if segments and segments[0].base_offset > start:
            complete = False
            what = (f"snapshot {cp.name} ends at offset {cp.end_offset - 1}" if cp
                    else "there is no snapshot")
            problems.append(Problem(
                "incomplete",
                f"the log starts at offset {segments[0].base_offset} but {what}: offsets "
                f"{start}-{segments[0].base_offset - 1} are missing, so the image is incomplete "
                "(copy the whole __cluster_metadata-0 directory, snapshots included)",
                segments[0].path, start))
        elif not segments and cp is None:
            complete = False
        for seg in segments:
            try:
                data = self.data(seg.path)
            except SourceError as e:
                problems.append(Problem("unreadable", f"{e}; later segments are not read",
                                        seg.path))
                break
            if data == b"":
                # A newest segment is empty right after Kafka rolls one: normal. An empty
                # segment before others, or the only data there is, deserves a word.
                if seg is not segments[-1] or (cp is None and not run.files):
                    problems.append(Problem("empty", f"{os.path.basename(seg.path)}: empty "
                                            "segment (nothing written yet); skipped", seg.path))
                continue
            seg_problems: list[Problem] = []
            if not _replay_file(run, seg.path, data, "segment", seg_problems, upto, start):
                problems.extend(seg_problems)
                break
            problems.extend(seg_problems)
            if seg_problems and seg is not segments[-1]:
                problems.append(Problem("stopped", f"later segments after "
                                        f"{os.path.basename(seg.path)} are not applied because "
                                        "of the damage above", seg.path))
                break
        problems.extend(run.builder.problems)
        return Loaded(run.builder.image, problems, run.files, run.controls, cp, upto,
                      run.end_offset, complete)


Source = FileSource | DirectorySource


def open_source(directory: str | None = None, file: str | None = None) -> Source:
    if directory is not None:
        return DirectorySource(directory)
    if file is not None:
        return FileSource(file)
    raise SourceError("give a metadata directory (-d DIR) or one file (-s FILE)")


def iter_controls(loaded: Loaded, ctype: int) -> Iterator[ControlEntry]:
    return (c for c in loaded.controls if c.ctype == ctype)
