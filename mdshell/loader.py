"""Turn a source (a directory or one file) into an image: which files, in which order.

A directory loads KIP-919 style: the newest usable snapshot, then every later log batch across
all segments. A damaged snapshot is skipped (with a warning) for an older one or the full log.
One file (``-s``) is replayed batch by batch from its start, as Kafka's shell does, so the
provenance of a ``.checkpoint`` read this way uses the offsets inside the file.

``upto`` stops the replay after that offset: the image as of any offset (time travel).
The log is checked as it is read: offsets must follow on from batch to batch and segment to
segment, leader epochs must not go down, and every batch must decode; any break is a warning
that names the file and the offsets.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from .image.model import Image
from .image.replay import ImageBuilder, Observer
from .problems import Problem, SourceError
from .source.identity import check_metadata_log, read_head
from .source.layout import Checkpoint, Layout, scan_layout
from .source.reader import iter_batches, read_bytes
from .source.reader import skip_below as skip_below_offset
from .wire import control as ctl
from .wire import frames
from .wire.batch import Batch, iter_records, parse_header
from .wire.compression import CompressionError
from .wire.primitives import DecodeError

# What a batch with a valid CRC can still raise when its contents are nonsense.
UNDECODABLE = (DecodeError, CompressionError, IndexError, struct.error, ValueError)
_PRODUCER_SNAPSHOT = re.compile(r"^\d{20}\.snapshot$")
_BASE = struct.Struct(">q")


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
    complete_from_zero: bool = True  # False when offsets before the data are missing


@dataclass(slots=True)
class _Run:
    builder: ImageBuilder
    files: list[FileRead] = field(default_factory=list)
    controls: list[ControlEntry] = field(default_factory=list)
    end_offset: int | None = None
    expected: int | None = None  # the next offset the log should hold (segments only)
    epoch: int = -1  # the highest leader epoch seen in the log


def _controls(batch: Batch, path: str, out: list[ControlEntry]) -> None:
    for rec in iter_records(batch):
        ctype = frames.control_type(rec.key)
        out.append(ControlEntry(rec.offset, batch.epoch, rec.timestamp, ctype,
                                frames.decode_control(ctype, rec.value), path))


DONE, PASSED, DAMAGED = "done", "passed upto", "damaged"


def _replay_file(run: _Run, path: str, data: bytes, role: str, problems: list[Problem],
                 upto: int | None, skip_below: int = -1) -> str:
    """Replay one file's batches: DONE, PASSED (``upto`` reached) or DAMAGED."""
    read = FileRead(path, role, len(data))
    run.files.append(read)
    builder = run.builder
    name = builder.file = os.path.basename(path)
    start = 0
    if skip_below > 0:
        start, controls = skip_below_offset(data, skip_below)
        for pos in controls:
            batch = parse_header(data, pos)
            if batch.crc_ok():
                with contextlib.suppress(*UNDECODABLE):  # below the snapshot: harmless
                    _controls(batch, path, run.controls)
    damage: list[Problem] = []
    for batch in iter_batches(path, data, damage, start=start):
        if upto is not None and batch.base_offset > upto:
            problems.extend(damage)
            return PASSED
        read.batches += 1
        if read.first_offset is None:
            read.first_offset = batch.base_offset
        read.last_offset = batch.last_offset
        run.end_offset = batch.last_offset
        if batch.last_offset < skip_below:
            continue
        if role == "segment" and not _continuous(run, batch, name, path, problems):
            continue
        try:
            if batch.is_control:
                _controls(batch, path, run.controls)
            else:
                builder.apply_batch(batch, upto, skip_below)
        except UNDECODABLE as e:
            problems.append(Problem(
                "corrupt",
                f"{name}: the batch at offsets {batch.base_offset}-{batch.last_offset} has a "
                f"valid CRC but its records do not decode ({e}); it and the rest of the file "
                "are ignored (written by a faulty tool? copy the file again from a healthy "
                "node)", path, batch.base_offset))
            return DAMAGED
    problems.extend(damage)
    return DAMAGED if damage else DONE


def _continuous(run: _Run, batch: Batch, name: str, path: str,
                problems: list[Problem]) -> bool:
    """Check that the log goes on where it left off; False to skip a batch already read."""
    if batch.epoch < run.epoch:
        problems.append(Problem(
            "epoch", f"{name}: the batch at offset {batch.base_offset} has leader epoch "
            f"{batch.epoch}, lower than the {run.epoch} before it (a log from another node "
            "mixed in, or damage)", path, batch.base_offset))
    run.epoch = max(run.epoch, batch.epoch)
    expected = run.expected
    if expected is not None:
        if batch.last_offset < expected:
            problems.append(Problem(
                "overlap", f"{name}: the batch at offsets {batch.base_offset}-"
                f"{batch.last_offset} repeats offsets already read (up to {expected - 1}); "
                "skipped (duplicated or reordered segments?)", path, batch.base_offset))
            return False
        if batch.base_offset > expected:
            problems.append(Problem(
                "gap", f"{name}: offsets {expected}-{batch.base_offset - 1} are missing before "
                f"the batch at offset {batch.base_offset}; records there are lost, so the "
                "image may be wrong (a segment was deleted or is damaged)", path, expected))
    run.expected = batch.last_offset + 1
    return True


class FileSource:
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
        self._data = read_bytes(path, regular_only=True)
        if not self._data:
            raise SourceError(f"{path}: the file is empty; nothing to read (give a .log "
                              "segment or .checkpoint snapshot that has data)")
        if len(self._data) >= 17 and self._data[16] != 2:
            raise SourceError(f"{path}: not a Kafka record batch file (a .log segment or a "
                              ".checkpoint snapshot of __cluster_metadata-0)")
        check_metadata_log(os.path.dirname(os.path.abspath(path)), self._data,
                           ".checkpoint" in name)

    def describe(self) -> str:
        return self.path

    def data(self) -> bytes:
        return self._data

    def load(self, upto: int | None = None, observer: Observer | None = None,
             history: bool = False) -> Loaded:
        run = _Run(ImageBuilder(observer=observer, eager=self.eager))
        problems: list[Problem] = []
        _replay_file(run, self.path, self._data, "file", problems, upto)
        if run.builder.records_applied == 0 and run.controls and not problems:
            problems.append(Problem(
                "no-metadata", f"{os.path.basename(self.path)} holds control records only (a "
                "bootstrap snapshot holds the KRaft voters, no metadata): the image is empty",
                self.path))
        _open_transaction(run, problems)
        problems[:0] = run.builder.problems
        return Loaded(run.builder.image, problems, run.files, run.controls, None, upto,
                      run.end_offset)


def _open_transaction(run: _Run, problems: list[Problem]) -> None:
    builder = run.builder
    if builder.txn is not None:
        problems.append(Problem(
            "open-transaction", f"the log ends inside the metadata transaction begun at offset "
            f"{builder.txn_offset}: its {len(builder.txn)} records are not applied (Kafka "
            "applies them only when the EndTransactionRecord arrives)", None,
            builder.txn_offset))


class DirectorySource:
    """A ``__cluster_metadata-0`` directory (``-d``)."""

    kind = "directory"

    def __init__(self, path: str, *, eager: bool = False) -> None:
        self.layout: Layout = scan_layout(path)
        self.eager = eager
        self._cache: dict[str, bytes] = {}
        _check_identity(self.layout)

    def describe(self) -> str:
        return self.layout.directory

    def data(self, path: str) -> bytes:
        if path not in self._cache:
            self._cache[path] = read_bytes(path, regular_only=True)
        return self._cache[path]

    def load(self, upto: int | None = None, observer: Observer | None = None,
             history: bool = False) -> Loaded:
        """The image as of ``upto`` (None: the end); ``observer`` sees every applied record.

        ``history`` starts from as far back as the data goes (the whole log when it starts at
        offset 0, else the oldest usable snapshot) so that an observer sees every change.
        """
        problems: list[Problem] = self._layout_problems()
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
        run = _Run(self._builder(observer), controls=bootstrap)
        return self._replay_log(run, None, problems, upto)

    def _builder(self, observer: Observer | None) -> ImageBuilder:
        return ImageBuilder(observer=observer, eager=self.eager)

    def _layout_problems(self) -> list[Problem]:
        return [Problem("unrecognized", f"{os.path.basename(path)}: {why}", path)
                for path, why in self.layout.suspicious]

    def _bootstrap_controls(self) -> list[ControlEntry]:
        """KRaftVersion/Voters of the bootstrap snapshot (3.9+), as of offset -1."""
        out: list[ControlEntry] = []
        for cp in self.layout.checkpoints:
            if cp.end_offset != 0:
                continue
            try:
                data = self.data(cp.path)
                for batch in iter_batches(cp.path, data, []):
                    if batch.is_control:
                        _controls(batch, cp.path, out)
            except (SourceError, *UNDECODABLE):
                continue
        for c in out:
            c.offset = -1
        return out

    def _from_snapshot(self, cp: Checkpoint, problems: list[Problem],
                       observer: Observer | None = None) -> _Run | None:
        """Load a snapshot; None (with a warning) when it is damaged or incomplete."""
        run = _Run(self._builder(observer))
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
        run.epoch = cp.epoch
        return run

    def _replay_log(self, run: _Run, cp: Checkpoint | None, problems: list[Problem],
                    upto: int | None) -> Loaded:
        start = cp.end_offset if cp else 0
        segments = self.layout.segments
        complete = True
        if segments and segments[0].base_offset > start and (upto is None or upto >= start):
            complete = False
            what = (f"snapshot {cp.name} ends at offset {cp.end_offset - 1}" if cp
                    else "there is no snapshot")
            problems.append(Problem(
                "incomplete",
                f"the log starts at offset {segments[0].base_offset} but {what}: offsets "
                f"{start}-{segments[0].base_offset - 1} are missing, so the image is incomplete "
                "(copy the whole __cluster_metadata-0 directory, snapshots included)",
                segments[0].path, start))
            run.expected = segments[0].base_offset
        elif not segments and cp is None:
            complete = False
        else:
            run.expected = start
        for i, seg in enumerate(segments):
            later = segments[i + 1] if i + 1 < len(segments) else None
            if later is not None and later.base_offset <= start:
                continue  # entirely below the snapshot: nothing in it matters
            try:
                data = self.data(seg.path)
            except SourceError as e:
                problems.append(Problem("unreadable", f"{e}; this and later segments are not "
                                        "read, so the image stops before them", seg.path))
                break
            if data == b"":
                # A newest segment is empty right after Kafka rolls one: normal. An empty
                # segment before others, or the only data there is, deserves a word.
                if later is not None or (cp is None and not run.files):
                    problems.append(Problem("empty", f"{os.path.basename(seg.path)}: empty "
                                            "segment (nothing written yet); skipped", seg.path))
                continue
            first = _BASE.unpack_from(data, 0)[0] if len(data) >= 8 else None
            if first is not None and first != seg.base_offset:
                problems.append(Problem(
                    "misnamed", f"{os.path.basename(seg.path)}: named for offset "
                    f"{seg.base_offset} but its first batch is at offset {first} (a renamed "
                    "or misplaced file?)", seg.path, first))
            status = _replay_file(run, seg.path, data, "segment", problems, upto, start)
            if status == PASSED:
                break
            if status == DAMAGED and later is not None:
                problems.append(Problem("stopped", "later segments after "
                                        f"{os.path.basename(seg.path)} are not applied because "
                                        "of the damage above", seg.path))
                break
        _open_transaction(run, problems)
        problems.extend(run.builder.problems)
        return Loaded(run.builder.image, problems, run.files, run.controls, cp, upto,
                      run.end_offset, complete)


Source = FileSource | DirectorySource


def _check_identity(layout: Layout) -> None:
    """Refuse a topic's own partition directory (see :mod:`source.identity`)."""
    snapshots = bool(layout.checkpoints or layout.ignored_checkpoints)
    head = None
    if not snapshots:
        first = next((s for s in layout.segments if s.size > 0), None)
        head = read_head(first.path) if first is not None else None
    check_metadata_log(layout.directory, head, snapshots)


def open_source(directory: str | None = None, file: str | None = None, *,
                eager: bool = False) -> Source:
    """``eager`` decodes every record at load (``--strict``: no damage may hide undecoded)."""
    if directory is not None:
        return DirectorySource(directory, eager=eager)
    if file is not None:
        return FileSource(file, eager=eager)
    raise SourceError("give a metadata directory (-d DIR) or one file (-s FILE)")

