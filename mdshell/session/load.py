"""Turn a source into images: which snapshot, which log, up to which offset.

A directory loads KIP-919 style: the newest usable snapshot, then every later log batch. A
damaged snapshot is skipped (with a warning) for an older one or the full log. One file
(``-s``) is replayed batch by batch from its start, as Kafka's shell does. ``upto`` stops the
replay after that offset (time travel). The source raises what its stream finds (gaps,
overlaps, damage); replay adds what it finds in the records.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import os
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ..image.history import CHECKPOINT_RECORDS, NO_CHECKPOINTS, History, Replayer
from ..image.index import SnapshotIndex
from ..image.model import Image
from ..image.replay import ImageBuilder, Observer, Sieve, Wants
from ..problems import STOPS, Problem, SourceError
from ..source import (
    BatchStream,
    Checkpoint,
    ControlEntry,
    FileRead,
    Located,
    Source,
    Stretch,
    control_entries,
)
from ..source.base import undecodable
from ..wire import control as ctl
from ..wire import frames
from ..wire.batch import COMPRESSION_MASK, CONTROL_FLAG, UNDECODABLE, parse_header
from ..wire.decoding import first_to_read
from ..wire.sieve import Sieve as ByteSieve

# What a front end may wrap around each stream a load reads (to count its batches).
StreamHook = Callable[[BatchStream], BatchStream]


def _same(stream: BatchStream) -> BatchStream:
    return stream


@dataclass(slots=True)
class Loaded:
    """An image and how it was made: what a session shows."""

    image: Image
    problems: list[Problem]
    _: KW_ONLY  # the rest by name: three places build one, with a dozen fields
    files: list[FileRead]
    controls: list[ControlEntry]
    snapshot: Checkpoint | None = None
    upto: int | None = None
    end_offset: int | None = None  # last offset read (any batch)
    complete_from_zero: bool = True  # False when offsets before the data are missing
    replayer: Replayer | None = field(default=None, compare=False, repr=False)
    base: int = -1  # the last offset of the snapshot replay started from (-1: none)
    next_offset: int = 0  # where the log goes on after what was read (live follow)
    index: SnapshotIndex | None = field(default=None, compare=False, repr=False)


def load(source: Source, upto: int | None = None, observer: Observer | None = None,
         history: bool = False, wants: Wants | None = None,
         every: int | None = None, sieve: Sieve | None = None,
         watch: StreamHook | None = None) -> Loaded:
    """The image as of ``upto`` (None: the end); ``observer`` sees every applied record
    (``wants`` narrows the PartitionRecords it sees, so the others stay undecoded).

    ``history`` starts from as far back as the data goes (the log from offset 0 when it is
    there, else the oldest usable snapshot) so that an observer sees every change.
    ``every`` sets how many records lie between the images kept for time travel.
    ``sieve`` (with an observer) applies only the records it picks: the image is partial.
    ``watch`` sees each stream the load reads (a front end's progress counts its batches)
    and returns the stream to read.
    """
    with _cyclic_gc_paused():
        return _load(source, upto, observer, history, wants, every, sieve, watch)


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """A load allocates millions of objects and frees almost none of them in cycles: the
    cyclic collector's passes during it walk them again and again and find nothing (a tenth
    of a long log tail's load). Paused for the load, then as it was: the one-shot command
    and the TUI freeze what the first load made (``cli``, ``tui``), where nothing else is
    there to collect; a long session's later loads leave the collector its first pass
    rather than freeze garbage for good. An image is made without reference cycles, so
    one let go is freed by its counts (``tests/test_session.py`` holds this)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _load(source: Source, upto: int | None, observer: Observer | None, history: bool,
          wants: Wants | None, every: int | None, sieve: Sieve | None,
          watch: StreamHook | None) -> Loaded:
    problems: list[Problem] = source.layout_problems()
    candidates = [c for c in reversed(source.snapshots())
                  if upto is None or c.end_offset - 1 <= upto]
    if history:
        start = source.history_start()
        candidates = [] if start is None else [c for c in reversed(candidates)]
    bootstrap = _bootstrap_controls(source)
    make = _Make(source, observer, wants, every, sieve, watch or _same)
    for cp in candidates:
        run = make.from_snapshot(cp, problems)
        if run is not None:
            run.controls[:0] = bootstrap
            run.replayer.builder.origin = ""
            return _replay_log(make, run, cp, problems, upto)
    run = make.empty()
    run.controls = bootstrap
    if candidates and not source.segments():
        # Every snapshot was refused and no log stands in for them (a log that does not
        # start at offset 0 says itself what is missing).
        problems.append(Problem(
            "incomplete", "no snapshot is usable and there is no log: the image lacks "
            "everything the snapshots held (copy the directory again from a healthy node)",
            candidates[0].path, 0))
    return _replay_log(make, run, None, problems, upto)


@dataclass
class _Run:
    replayer: Replayer
    files: list[FileRead] = field(default_factory=list)
    controls: list[ControlEntry] = field(default_factory=list)
    end_offset: int | None = None
    index: SnapshotIndex | None = None


@dataclass
class _Make:
    source: Source
    observer: Observer | None
    wants: Wants | None
    every: int | None
    sieve: Sieve | None = None
    watch: StreamHook = field(default=lambda stream: stream)

    def builder(self) -> ImageBuilder:
        return ImageBuilder(observer=self.observer, eager=self.source.eager, wants=self.wants,
                            sieve=self.sieve)

    def empty(self) -> _Run:
        return _Run(Replayer(self.builder(), History(), self._every()))

    def _every(self) -> int:
        return self.every if self.every is not None else (
            NO_CHECKPOINTS if self.observer is not None else CHECKPOINT_RECORDS)

    def from_snapshot(self, cp: Checkpoint, problems: list[Problem]) -> _Run | None:
        """Load a snapshot; None (with a warning) when it is damaged or incomplete."""
        builder = self.builder()
        builder.origin = cp.name
        if self.observer is None:
            builder.index = SnapshotIndex()
        run = _Run(Replayer(builder, History(), NO_CHECKPOINTS))
        stream = self.watch(self.source.snapshot_stream(cp))
        _apply(run, stream, None, -1)
        mine = stream.problems
        if mine and mine[0].code == "unreadable":
            problems.append(Problem("snapshot", f"{mine[0].message}; using older data instead",
                                    cp.path))
            return None
        kinds = [c.ctype for c in run.controls if c.file == cp.path]
        if not mine and ctl.SNAPSHOT_FOOTER not in kinds:
            mine.append(Problem("snapshot", f"{cp.name}: no SnapshotFooter (the snapshot was "
                                "not completely written)", cp.path))
        if mine:
            reasons = "; ".join(p.message for p in mine)
            problems.append(Problem("snapshot", f"snapshot {cp.name} is not usable ({reasons}); "
                                    "using older data instead", cp.path, cp.end_offset))
            return None
        prov = builder.image.provenance
        prov.offset, prov.epoch = cp.end_offset - 1, cp.epoch
        headers = [c for c in run.controls
                   if c.file == cp.path and c.ctype == ctl.SNAPSHOT_HEADER]
        if headers and isinstance(headers[0].value, dict):
            prov.time_ms = headers[0].value["lastContainedLogTimestamp"]
        # The snapshot's own control records use offsets inside the file: keep only quorum ones.
        for c in run.controls:
            c.offset = cp.end_offset - 1
        run.files = list(stream.files)
        # The snapshot's batches use offsets inside the file: the log's are up to its end.
        run.end_offset = cp.end_offset - 1
        if builder.index is not None:
            builder.index.applied = builder.records_applied  # the builder began here
        run.index, builder.index = builder.index, None
        run.replayer.every = self._every()
        run.replayer.checkpoint()
        return run


def _apply(run: _Run, stream: BatchStream, upto: int | None, skip_below: int) -> None:
    """Feed a stream to the run's replay; control records go to ``run.controls``."""
    replayer = run.replayer
    builder = replayer.builder
    path = None
    stream.stretches = True
    for loc in stream:
        if stream.below:
            _below(stream, run.controls)
        if type(loc) is Stretch:
            _apply_stretch(run, stream, loc, upto, skip_below)
            path = None
            continue
        batch = loc.batch
        if loc.file is not path:  # thousands of batches a file: name it once
            path = loc.file
            builder.file = os.path.basename(path)
        if loc.quiet is not None:  # one-NoOp batches passed over before this one
            _, off, epoch, time_ms = loc.quiet
            builder.pass_noops(off, epoch, time_ms, upto, skip_below)
        try:
            if batch.attributes & CONTROL_FLAG:  # batch.is_control, inline
                control_entries(batch, loc.file, run.controls)
            else:
                replayer.apply(batch, upto, skip_below)
        except UNDECODABLE as e:
            stream.damaged(undecodable(loc, e))
    if stream.below:
        _below(stream, run.controls)


def _apply_stretch(run: _Run, stream: BatchStream, st: Stretch, upto: int | None,
                   skip_below: int) -> None:
    """A clean stretch of a segment: its batches applied from the header columns
    (``Replayer.apply_run``: no :class:`Batch`, no :class:`Located`), the control batches
    it passed over read into ``run.controls`` after it, each batch it leaves as
    :func:`_apply` applies one; the one-NoOp batches between them passed over."""
    replayer = run.replayer
    replayer.builder.file = os.path.basename(st.file)
    h, data, path = st.heads, st.data, st.file
    assert h is not None
    plan = array("q", st.plan)
    cols = (h.starts, h.base, h.length, h.last_delta, h.epoch, h.max_ts, h.attrs, h.count,
            h.base_ts)
    starts = h.starts
    picks = _Picks(replayer.builder.sieve, st, plan)
    k, n = 0, len(plan)
    while k < n:
        try:
            try:
                k = replayer.apply_run(data, cols, plan, k, upto, skip_below)
            finally:
                _passed_controls(replayer, path, run.controls)
            if k < n and picks.on:
                k = picks.passed(k)
            if k == n:
                break
            i = replayer.at = plan[k]
            batch = parse_header(data, starts[i])
            if batch.attributes & CONTROL_FLAG:
                control_entries(batch, path, run.controls)
            else:
                replayer.apply(batch, upto, skip_below)
        except UNDECODABLE as e:
            i = replayer.at
            stream.damaged(undecodable(Located(parse_header(data, starts[i]), path,
                                                starts[i], "segment"), e))
            st.taken = plan.tolist().index(i) + 1
            return
        k += 1
    st.taken = n


def _passed_controls(replayer: Replayer, path: str, out: list[ControlEntry]) -> None:
    """The control records of the control batches ``apply_run`` passed over (read as it
    passed them) added to ``out``, in order."""
    for controls in replayer.passed_controls:
        out.extend([ControlEntry(o, e, t, c, v, path) for o, e, t, c, v in controls])
    replayer.passed_controls.clear()


class _Picks:
    """For a builder with a byte sieve (a one-shot ``changes``): the batches of a clean
    stretch it needs to see, and passing over the others without reading them. A batch
    whose records section holds no needle gives the sieve nothing to pick, and a batch
    picking nothing changes nothing (not even the provenance), so it need not be read.
    Control and compressed batches are always seen (the needles are looked for in the
    stored bytes). Only for a plan without gaps: a sieved load reads its one-NoOp batches
    like any other (``pass_noops`` is off for it), so none are left out of its plan."""

    def __init__(self, sieve: Sieve | None, st: Stretch, plan: Sequence[int]) -> None:
        self.sieve = sieve
        self.on = (isinstance(sieve, ByteSieve) and bool(plan)
                   and plan[-1] - plan[0] == len(plan) - 1)
        self.st = st
        self.plan = plan
        self.known = -1  # how many needles ``stops`` was found with
        self.stops: list[int] = []  # the places in ``plan`` of the batches to see, sorted
        self.always: list[int] = []  # those of control and compressed batches

    def passed(self, k: int) -> int:
        """The first place in ``plan`` from ``k`` whose batch the sieve needs to see
        (``len(plan)``: none); the batches before it are passed over, once the compiled
        check finds their records decode cleanly (the first it cannot vouch for is seen,
        so that damage replay would stop at stops this reading too)."""
        sieve = self.sieve
        assert isinstance(sieve, ByteSieve)
        if self.known != len(sieve.needles):  # a needle learnt (a topic's id by its name)
            self._find(sieve)
        stops = self.stops
        j = bisect.bisect_left(stops, k)
        stop = stops[j] if j < len(stops) else len(self.plan)
        if stop > k:
            first = self.plan[0]
            h = self.st.heads
            assert h is not None
            heads = (h.starts, h.length, h.count, h.base, h.base_ts, h.attrs)
            stop = first_to_read(self.st.data, heads, first + k, first + stop) - first
        return stop

    def _find(self, sieve: ByteSieve) -> None:
        h, plan = self.st.heads, self.plan
        assert h is not None
        first, last = plan[0], plan[-1]
        if self.known < 0:
            self.always = [i - first for i in _flagged(h) if first <= i <= last]
        self.known = len(sieve.needles)
        held = sieve.batches_holding(self.st.data, h.starts, h.length, first, last)
        self.stops = sorted({*(i - first for i in held), *self.always})


def _flagged(h: Any) -> list[int]:
    """The indices of the compressed and control batches of a stretch's headers: found in
    the attributes' low bytes by ``bytes.translate`` and ``find``, not by a loop over 100k
    batches."""
    raw = h.attrs.tobytes()
    flags = (raw[0::2] if sys.byteorder == "little" else raw[1::2]).translate(_FLAGGED)
    out = []
    at = flags.find(1)
    while at >= 0:
        out.append(at)
        at = flags.find(1, at + 1)
    return out


# A batch's attributes' low byte -> 1 when it says compressed or control.
_FLAGGED = bytes(1 if b & (CONTROL_FLAG | COMPRESSION_MASK) else 0 for b in range(256))


def _below(stream: BatchStream, out: list[ControlEntry]) -> None:
    """Control batches below the start offset: harmless when they do not decode."""
    for loc in stream.below:
        if loc.batch.crc_ok():
            with contextlib.suppress(*UNDECODABLE):
                control_entries(loc.batch, loc.file, out)
    stream.below.clear()


def _replay_log(make: _Make, run: _Run, cp: Checkpoint | None, problems: list[Problem],
                upto: int | None) -> Loaded:
    start = cp.end_offset if cp else 0
    source = make.source
    # A sieve picks the records to apply: one-NoOp batches go through it like any other.
    stream = make.watch(source.log_stream(start, upto, cp, pass_noops=make.sieve is None))
    _apply(run, stream, upto, start if cp else -1)
    problems.extend(stream.problems)
    run.files.extend(stream.files)
    ends = [e for e in (stream.end_offset, run.end_offset) if e is not None]
    end = max(ends) if ends else None  # a copy without log: the snapshot's end
    builder = run.replayer.builder
    if (not source.snapshots() and not source.segments() and builder.records_applied == 0
            and run.controls and not problems and builder.txn is None):
        problems.append(Problem(
            "no-metadata", f"{source.name(source.describe())} holds control records only (a "
            "bootstrap snapshot holds the KRaft voters, no metadata): the image is empty",
            source.describe()))
    problems.extend(open_transaction(builder, upto))
    problems.extend(builder.problems)
    problems.extend(unknown_controls(
        [c for c in run.controls if c.offset >= start or (cp is not None and c.file == cp.path)]))
    complete = not any(p.code == "incomplete" for p in stream.problems) and (
        cp is not None or source.log_from_zero())
    image = run.replayer.checkpoint()
    problems.extend(where_damage_leaves(source, cp, image, problems, upto))
    following = start if stream.end_offset is None else max(start, stream.end_offset + 1)
    return Loaded(image, problems, files=run.files, controls=run.controls, snapshot=cp,
                  upto=upto, end_offset=end, complete_from_zero=complete,
                  replayer=run.replayer, base=cp.end_offset - 1 if cp else -1,
                  next_offset=following, index=run.index)


def open_transaction(builder: ImageBuilder, upto: int | None = None) -> list[Problem]:
    """The problem of a replay that ends inside a metadata transaction (none when it does
    not): cut by time travel (``upto``), or at the end of what was written."""
    if builder.txn is None:
        return []
    where = "the log ends inside" if upto is None else f"offset {upto} (time travel) is inside"
    return [Problem(
        "open-transaction", f"{where} the metadata transaction begun at offset "
        f"{builder.txn_offset}: {_its_records(len(builder.txn))} not applied (Kafka "
        "applies them only when the EndTransactionRecord arrives)", None, builder.txn_offset)]


def where_damage_leaves(source: Source, cp: Checkpoint | None, image: Image,
                        problems: list[Problem], upto: int | None = None) -> list[Problem]:
    """When damage among ``problems`` stopped the replay (at or before ``upto``): the one
    line saying what it leaves of the image (code "image"; a notice for one damaged
    snapshot file read alone, where what to do is news)."""
    stops = [p for p in problems if p.code in STOPS and p.code != "stopped"]
    if not stops or (upto is not None and all(p.offset is not None and p.offset > upto
                                              for p in stops)):
        return []
    damaged_file = source.kind == "file" and source.describe().endswith(".checkpoint")
    return [Problem("notice" if damaged_file else "image", _stopped_at(source, cp, image),
                    None, None)]


def _stopped_at(source: Source, cp: Checkpoint | None, image: Image) -> str:
    """What the damage leaves of the image, and (one damaged snapshot file) what to do."""
    prov = image.provenance
    path = source.describe()
    if source.kind == "file" and path.endswith(".checkpoint"):
        return (f"because of the damage above, the snapshot {os.path.basename(path)} is read "
                f"only up to offset {prov.offset} inside the file: the image lacks the rest "
                "of the snapshot; read the directory instead (-d "
                f"{os.path.dirname(path) or '.'}) so that an older snapshot and the "
                "log are used")
    origin = f"snapshot {cp.name}, then the log" if cp else "the log"
    return (f"because of the damage above, the image is as of offset {prov.offset} (epoch "
            f"{prov.epoch}; read from {origin}): later records are not in it")


def _its_records(n: int) -> str:
    return "its record is" if n == 1 else f"its {n} records are"


def unknown_controls(controls: Sequence[ControlEntry],
                     said_before: Sequence[ControlEntry] = ()) -> list[Problem]:
    """A notice for each control record type mdshell does not know (its first record in
    ``controls``; none for a type ``said_before`` holds already): kept raw, it changes no
    image, but the Kafka versions mdshell knows refuse to read past it (raft's
    RecordsIterator: "Unknown control record type")."""
    out: list[Problem] = []
    said = {c.ctype for c in said_before if isinstance(c.value, frames.Unknown)}
    for c in controls:
        if isinstance(c.value, frames.Unknown) and c.ctype not in said:
            said.add(c.ctype)
            out.append(Problem(
                "notice", f"{os.path.basename(c.file)}: offset {c.offset}: unknown control "
                f"record type {c.ctype} (a newer Kafka's?), kept raw (see `records`); the Kafka "
                "versions this mdshell knows cannot read past it", c.file, c.offset))
    return out


def _bootstrap_controls(source: Source) -> list[ControlEntry]:
    """KRaftVersion/Voters of the bootstrap snapshot (3.9+), as of offset -1."""
    out: list[ControlEntry] = []
    for cp in source.bootstrap():
        try:
            stream = source.snapshot_stream(cp)
            for loc in stream:
                if loc.batch.is_control:
                    control_entries(loc.batch, loc.file, out)
        except (SourceError, *UNDECODABLE):
            continue
    for c in out:
        c.offset = -1
    return out


class LoadFailed(Exception):
    """A lazy session's first load could not read the source (its ``SourceError`` is the
    cause): front ends report it as the failed open it is, not as the command's error."""


def first_load(source: Source, **kwargs: Any) -> Loaded:
    """``load``, its ``SourceError`` raised as :class:`LoadFailed` (a session's first load)."""
    try:
        return load(source, **kwargs)
    except SourceError as e:
        raise LoadFailed(str(e)) from e
