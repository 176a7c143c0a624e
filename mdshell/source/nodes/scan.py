"""One node's log as the comparison needs it: every batch's offsets, leader epoch and CRC,
its control records, and where each epoch starts; nothing else is decoded.

A clean segment (every batch whole, CRC right, offsets following on, epochs never going
down) is read at once by the shell's fast walk (:mod:`..cleanwalk`: header fields as
columns); any other is read batch by batch by :func:`..batchscan.file_batches` (the listing
of ``records --batches``), which says what is wrong. The log is read as far as it is
whole: the first damaged batch (a CRC mismatch, a damaged header, a cut tail), a gap or
overlap between batches, or a leader epoch going backwards ends it, with one line saying
where; the comparison covers what comes before (Kafka itself recovers a log by cutting it at
its first invalid batch). A last segment that ends inside its last batch is a torn write (a
crash, or a copy taken while Kafka wrote), said in ``torn``: not damage.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import compress
from operator import add

from ...problems import Problem, SourceError
from ...wire.batch import (
    CONTROL_FLAG,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    UNDECODABLE,
    Batch,
    parse_header,
)
from .. import cleanwalk
from ..base import ControlEntry, Source, control_entries
from ..batchscan import BatchInfo, file_batches
from ..layout import Checkpoint
from ..walker import MAX_BATCH_LENGTH, plural


@dataclass
class LogScan:
    """The batches of one node's log, in offset order, as parallel arrays (a long log has
    hundreds of thousands of batches)."""

    source: Source
    bases: array[int] = field(default_factory=lambda: array("q"))
    lasts: array[int] = field(default_factory=lambda: array("q"))
    epochs: array[int] = field(default_factory=lambda: array("i"))
    crcs: array[int] = field(default_factory=lambda: array("I"))
    positions: array[int] = field(default_factory=lambda: array("q"))
    file_index: array[int] = field(default_factory=lambda: array("H"))
    control: bytearray = field(default_factory=bytearray)  # 1: a control batch
    paths: list[str] = field(default_factory=list)
    controls: list[ControlEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    cut: str | None = None  # why the log is read no further (damage, a gap): one of problems
    torn: str | None = None  # the last segment ends inside a batch (one of problems)
    snapshot: Checkpoint | None = None  # the newest usable snapshot
    epoch_starts: list[tuple[int, int]] = field(default_factory=list)  # (epoch, first offset)
    start_offsets: list[int] = field(default_factory=list)  # the offsets of epoch_starts

    def __len__(self) -> int:
        return len(self.bases)

    @property
    def start(self) -> int | None:
        """The first offset of the log's batches (None: no batch)."""
        return self.bases[0] if self.bases else None

    @property
    def log_end(self) -> int | None:
        """The last offset of the log's batches (None: no batch)."""
        return self.lasts[-1] if self.lasts else None

    @property
    def end(self) -> int | None:
        """The last offset the node holds: its log's, or its newest snapshot's when the log
        holds nothing past it (Kafka's log end offset, minus one)."""
        snap = self.snapshot.end_offset - 1 if self.snapshot is not None else None
        if self.lasts and (snap is None or self.lasts[-1] >= snap):
            return self.lasts[-1]
        return snap

    @property
    def last_epoch(self) -> int | None:
        """The epoch of the last batch (or of the snapshot that ends the log): what Kafka's
        vote compares first."""
        snap = self.snapshot
        if self.lasts and (snap is None or self.lasts[-1] >= snap.end_offset - 1):
            return self.epochs[-1]
        return snap.epoch if snap is not None else None

    def epoch_at(self, offset: int) -> int | None:
        """The leader epoch of the batch holding ``offset`` (None: outside the log)."""
        i = self.index_at(offset)
        return None if i is None else self.epochs[i]

    def index_at(self, offset: int) -> int | None:
        """The index of the batch holding ``offset`` (None: outside the log)."""
        if not self.lasts or offset < self.bases[0] or offset > self.lasts[-1]:
            return None
        i = bisect_right(self.lasts, offset - 1)
        return i if self.bases[i] <= offset else None

    def epoch_start(self, epoch: int) -> int | None:
        """Where ``epoch`` starts in the log (None: it has no batch of it)."""
        for e, offset in self.epoch_starts:
            if e == epoch:
                return offset
        return None

    def epoch_of(self, offset: int) -> int | None:
        """The epoch of ``offset`` from the epoch starts (None: before the log)."""
        i = bisect_right(self.start_offsets, offset) - 1
        return self.epoch_starts[i][0] if i >= 0 else None

    def batch(self, i: int) -> Batch:
        """Batch ``i`` read from its file (:class:`SourceError` if it cannot be)."""
        data = self.source.file_bytes(self.paths[self.file_index[i]])
        return parse_header(data, self.positions[i])


def scan_log(source: Source) -> LogScan:
    """Every whole batch of the source's segments (see the module's doc)."""
    scan = LogScan(source)
    snaps = source.snapshots()
    scan.snapshot = snaps[-1] if snaps else None
    expected: int | None = None
    segments = source.segments()
    for seg in segments:
        name = os.path.basename(seg.path)
        try:
            data = source.file_bytes(seg.path)
        except SourceError as e:
            scan.cut = f"{e}; the log is read up to the file before it"
            scan.problems.append(scan.cut)
            return scan
        scan.paths.append(seg.path)
        index = len(scan.paths) - 1
        clean = _clean(scan, data, index, seg.base_offset if expected is None else expected)
        if clean is not None:
            expected = clean
            continue
        found: list[Problem] = []
        whole = 0  # where the last whole batch read ends
        for b in file_batches(seg.path, data, found, first=seg.base_offset, dense=True):
            why = _stops(b, expected, scan)
            entries: list[ControlEntry] = []
            if why is None and b.control:
                try:
                    control_entries(parse_header(data, b.position), seg.path, entries)
                except UNDECODABLE as e:
                    why = f"the control batch at offset {b.base_offset} does not decode ({e})"
            if why is not None:
                before = f"offset {expected - 1}" if expected is not None else "its start"
                scan.cut = f"{name}: {why}; the log is compared up to {before}"
                scan.problems.append(scan.cut)
                return scan
            _add(scan, b, index, entries)
            expected = b.last_offset + 1
            whole = b.position + b.size
        upto = f"offset {expected - 1}" if expected is not None else "its start"
        if found and seg is segments[-1] and _torn(found[0], data, whole):
            scan.torn = (f"{name}: its last batch is cut short at byte {whole} ("
                         f"{len(data) - whole} bytes): a write Kafka stopped in, or a copy "
                         "taken while it wrote; Kafka's recovery drops it, and the node "
                         f"fetches it again; the log is compared up to {upto}")
            scan.problems.append(scan.torn)
            return scan
        if found:
            scan.cut = (f"{found[0].message.split('; ')[0]}; the log is compared up to "
                        f"offset {expected - 1 if expected is not None else '-'}")
            scan.problems.append(scan.cut)
            return scan
    return scan


def _torn(problem: Problem, data: bytes, pos: int) -> bool:
    """The bytes from ``pos`` to the end of the file are the start of one batch that the
    file ends inside (a torn write), not a damaged one: the reader's "incomplete" verdict,
    or fewer bytes than a batch header whose length field runs past the end."""
    if problem.code == "truncated":
        return True
    rest = len(data) - pos
    if rest < LOG_OVERHEAD or rest >= HEADER_SIZE:
        return False
    length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
    return (MIN_BATCH_LENGTH <= length <= MAX_BATCH_LENGTH
            and pos + LOG_OVERHEAD + length > len(data))


def _clean(scan: LogScan, data: bytes, index: int, first: int) -> int | None:
    """Every batch of a clean segment added at once; the offset after its last (None: the
    segment is not clean, or empty: read it batch by batch)."""
    prior = scan.epochs[-1] if scan.epochs else None
    try:
        h = cleanwalk.scan(data)
        cleanwalk.check(data, h, cleanwalk.Follows(first, prior, -1 if prior is None else prior))
    except cleanwalk.Unclean:
        return None
    n = len(h)
    controls = [bool(a & CONTROL_FLAG) for a in h.attrs]
    entries: list[ControlEntry] = []
    try:  # a control batch the loader refuses: read batch by batch, which says so
        for k in compress(range(n), controls):
            control_entries(parse_header(data, h.starts[k]), scan.paths[index], entries)
    except UNDECODABLE:
        return None
    epochs = h.epoch
    i = 0
    while i < n:  # where each epoch starts (epochs never go down here)
        e = epochs[i]
        if not scan.epoch_starts or scan.epoch_starts[-1][0] != e:
            scan.epoch_starts.append((e, h.base[i]))
            scan.start_offsets.append(h.base[i])
        i = bisect_right(epochs, e, i)
    lasts = array("q", map(add, h.base, h.last_delta))
    scan.bases.extend(h.base)
    scan.lasts.extend(lasts)
    scan.epochs.extend(epochs)
    scan.crcs.extend(h.crc)
    scan.positions.extend(h.starts)
    scan.file_index.extend(array("H", [index]) * n)
    scan.control.extend(controls)
    scan.controls.extend(entries)
    return lasts[-1] + 1


def _stops(b: BatchInfo, expected: int | None, scan: LogScan) -> str | None:
    """Why the log cannot be read past batch ``b`` by its header (None: it can): the
    loader's rules (a control batch's records are read by the caller)."""
    if b.header_damage is not None:
        return f"a damaged batch header at byte {b.position} (offset {b.base_offset}?)"
    if not b.crc_valid:
        return f"a CRC mismatch in the batch at offset {b.base_offset}"
    if b.count != b.last_offset - b.base_offset + 1:  # walker.counted
        return (f"the batch at offset {b.base_offset} holds {b.count} records but spans "
                f"{plural(b.last_offset - b.base_offset + 1, 'offset')}")
    if expected is not None and b.base_offset != expected:
        gap = b.base_offset > expected
        return (f"offsets {expected}-{b.base_offset - 1} are missing" if gap else
                f"the batch at offset {b.base_offset} repeats offsets before {expected}")
    if scan.epochs and b.epoch < scan.epochs[-1]:
        return (f"the leader epoch goes back from {scan.epochs[-1]} to {b.epoch} at offset "
                f"{b.base_offset}")
    return None


def _add(scan: LogScan, b: BatchInfo, index: int, controls: list[ControlEntry]) -> None:
    """Batch ``b`` of file ``index`` added to the scan, with its control records read."""
    if not scan.epochs or scan.epochs[-1] != b.epoch:
        scan.epoch_starts.append((b.epoch, b.base_offset))
        scan.start_offsets.append(b.base_offset)
    scan.bases.append(b.base_offset)
    scan.lasts.append(b.last_offset)
    scan.epochs.append(b.epoch)
    scan.crcs.append(b.crc)
    scan.positions.append(b.position)
    scan.file_index.append(index)
    scan.control.append(1 if b.control else 0)
    scan.controls.extend(controls)
