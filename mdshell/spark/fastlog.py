"""The ``records`` table of one clean file, fast: one pass over the bytes, columns in bulk.

The shell's reader (:func:`mdshell.source.logscan.iter_log`) builds a batch object, a record
object and a decoded dict for every record, and the table then turns each into a row: about
20 µs a record, most of a quiet log being one NoOp record per batch. Here the batches are
found and checked by the shell's fast walk (:mod:`mdshell.source.cleanwalk`: batch lengths
followed in runs, headers cut into columns, the walker's rules on whole arrays), its CRCs
computed by :mod:`.crcs` with numpy; the framing of one-record batches is checked together
with numpy too, and their values are gathered into an Arrow binary array and
dictionary-encoded. Other batches (compressed, control, many
records) are decoded record by record. Each *distinct* value is decoded once (a quiet log
repeats a handful of values millions of times), and the value columns are gathered from the
distinct rows with Arrow's ``take``.

Only a clean file goes this way: every batch whole, magic 2, CRC right, offsets following on
and epochs not going down, every record framed exactly, nothing outside the file's offset
range. Anything else returns None and the caller reads the file with the shell's reader, so
rows and warnings stay exactly the shell's (the damage rules live in one place).
"""

from __future__ import annotations

import os
import struct
from array import array
from typing import Any

import numpy as np
import pyarrow as pa

from ..problems import SourceError
from ..source import DirectorySource, Source, cleanwalk
from ..source.laidout import headless
from ..source.logscan import LogRecord
from ..wire import compression, frames
from ..wire.batch import HEADER_SIZE, LOG_OVERHEAD, UNDECODABLE, records_in
from .crcs import crcs

_CONTROL, _CODEC = 0x20, 0x07
_SIMPLE = 0x27  # codec bits and the control flag: a simple batch has none of them
_LENGTH = struct.Struct(">i")


_Unclean = cleanwalk.Unclean  # something the fast path does not handle: the shell's reader
_ORDER = 22  # records sort by (batch position << _ORDER) + record number within the batch
_CRC_FROM = 21  # a batch's CRC covers its bytes from the attributes on


class _Columns:
    """Per-record arrays of the batches read one by one, and the distinct values."""

    def __init__(self) -> None:
        self.order = array("q")
        self.offsets = array("q")
        self.timestamps = array("q")
        self.epochs = array("i")
        self.index = array("i")
        self.keys: dict[Any, int] = {}
        self.distinct: list[LogRecord] = []

    def value(self, control: bool, rkey: bytes | None, raw: bytes) -> int:
        """The index of a distinct value, decoding it the first time."""
        key: Any = (rkey, raw) if control else raw
        i = self.keys.get(key)
        if i is None:
            i = self.keys[key] = len(self.distinct)
            self.distinct.append(_decode(control, rkey, raw))
        return i


def _decode(control: bool, rkey: bytes | None, raw: bytes) -> LogRecord:
    """A LogRecord carrying only what the value columns need (as logscan decodes it)."""
    if control:
        ctype = frames.control_type(rkey)
        return LogRecord(0, 0, 0, "", True, ctype, 0, frames.decode_control(ctype, raw))
    try:
        key, ver, value = frames.decode_metadata(raw, 0, len(raw))
    except UNDECODABLE as e:
        raise _Unclean from e  # a record replay refuses: the shell's reader says so
    return LogRecord(0, 0, 0, "", False, key, ver, value)


def _records(cols: _Columns, buf: bytes, pos: int, end: int, count: int, base: int,
             base_ts: int, epoch: int, control: bool, order: int, batch_size: int) -> None:
    """The records of one batch, framed by the wire layer's one loop (it raises on damage)."""
    value = cols.value
    for i, r in enumerate(records_in(buf, pos, end, count, base, base_ts, control,
                                     batch_size)):
        ix = value(control, r.key, r.value)
        cols.order.append(order + i)
        cols.offsets.append(r.offset)
        cols.timestamps.append(r.timestamp)
        cols.epochs.append(epoch)
        cols.index.append(ix)


class _Heads:
    """Header fields of the simple batches (one uncompressed metadata record each)."""

    def __init__(self, pos: np.ndarray, end: np.ndarray, base: np.ndarray, epoch: np.ndarray,
                 base_ts: np.ndarray) -> None:
        self.pos, self.end, self.base, self.epoch, self.base_ts = pos, end, base, epoch, base_ts


def _starts(data: bytes) -> np.ndarray:
    """Where each batch starts (:func:`cleanwalk.batch_starts`)."""
    return np.frombuffer(cleanwalk.batch_starts(data), np.int64)


_HEADER = np.dtype([("base", ">i8"), ("length", ">i4"), ("epoch", ">i4"), ("magic", "u1"),
                    ("crc", ">u4"), ("attrs", ">i2"), ("last_delta", ">i4"),
                    ("base_ts", ">i8"), ("max_ts", ">i8"), ("producer", ">i8"),
                    ("producer_epoch", ">i2"), ("sequence", ">i4"), ("count", ">i4")])


def _heads(data: bytes, starts: array[int]) -> cleanwalk.Heads:
    """:func:`cleanwalk.heads` with numpy: the headers gathered at once, a column each."""
    at = np.frombuffer(starts, np.int64)
    if not len(at):
        return cleanwalk.heads(data, starts)
    rows = np.lib.stride_tricks.sliding_window_view(np.frombuffer(data, np.uint8),
                                                    HEADER_SIZE)[at]
    h = rows.view(_HEADER).ravel()

    def column(name: str, code: str) -> array[int]:
        col = array(code)
        col.frombytes(h[name].astype(np.dtype(code).newbyteorder("=")).tobytes())
        return col

    return cleanwalk.Heads(starts, column("base", "q"), column("length", "i"),
                           column("epoch", "i"), column("crc", "I"), column("attrs", "h"),
                           column("last_delta", "i"), column("base_ts", "q"),
                           column("max_ts", "q"), column("count", "i"), h["magic"].tobytes())


def _follow_on(base: array[int], last_delta: array[int], count: array[int]) -> bool:
    """:func:`cleanwalk._follow_on` with numpy."""
    b = np.frombuffer(base, np.int64)
    d = np.frombuffer(last_delta, np.int32).astype(np.int64)
    c = np.frombuffer(count, np.int32).astype(np.int64)
    return bool((d >= 0).all() and (c == d + 1).all() and (b[1:] == b[:-1] + d[:-1] + 1).all())


def _crcs_right(data: bytes, starts: array[int], lengths: array[int],
                want: array[int]) -> bool:
    """:func:`cleanwalk.crcs_right` with numpy: batches of one length checked together."""
    if not len(starts):
        return True
    at = np.frombuffer(starts, np.int64)
    sizes = np.frombuffer(lengths, np.int32).astype(np.int64) - (_CRC_FROM - LOG_OVERHEAD)
    return bool((crcs(data, at + _CRC_FROM, sizes) == np.frombuffer(want, np.uint32)).all())


def _walk(data: bytes, cols: _Columns, first: int | None, last: int | None,
          prior: int | None = None) -> tuple[_Heads, tuple[int, int, int] | None]:
    """Check every batch of a file (:mod:`cleanwalk`, the shell's fast walk) and decode
    those that are not simple; the headers of the simple ones (one uncompressed metadata
    record) are returned for :func:`_simple`. ``first`` (a segment): offsets must start
    there and follow on, up to ``last``; then the span is returned too: (first epoch,
    highest epoch, last offset). ``prior``: the leader epoch of the batch before the file,
    when the reader knows it."""
    h = cleanwalk.scan(data) if cleanwalk.COMPILED else _heads(data, cleanwalk.batch_starts(data))
    span = None
    if first is not None and len(h):
        cleanwalk.check(data, h, cleanwalk.Follows(first, prior, bound=last), crc=_crcs_right,
                        follow_on=_follow_on)
        span = h.epoch[0], max(h.epoch), h.base[-1] + h.last_delta[-1]
    else:
        cleanwalk.check_frames(data, h, crc=_crcs_right)
    at = np.frombuffer(h.starts, np.int64)
    lengths = np.frombuffer(h.length, np.int32).astype(np.int64)
    base, epochs = np.frombuffer(h.base, np.int64), np.frombuffer(h.epoch, np.int32)
    attrs = np.frombuffer(h.attrs, np.int16).astype(np.int32)
    counts = np.frombuffer(h.count, np.int32).astype(np.int64)
    simple = ((attrs & _SIMPLE) == 0) & (counts == 1)
    view = memoryview(data)
    for i in np.flatnonzero(~simple).tolist():
        p = int(at[i])
        _batch(cols, data, view, p, p + LOG_OVERHEAD + int(lengths[i]), int(attrs[i]),
               int(counts[i]))
    pos = at[simple]
    return _Heads(pos, pos + LOG_OVERHEAD + lengths[simple], base[simple], epochs[simple],
                  np.frombuffer(h.base_ts, np.int64)[simple]), span


def _batch(cols: _Columns, data: bytes, view: memoryview, pos: int, end: int, attrs: int,
           count: int) -> None:
    base, _, epoch = struct.unpack_from(">qii", data, pos)
    base_ts = struct.unpack_from(">q", data, pos + 27)[0]
    codec = attrs & _CODEC
    try:
        if codec == compression.NONE:
            _records(cols, data, pos + HEADER_SIZE, end, count, base, base_ts, epoch,
                     bool(attrs & _CONTROL), pos << _ORDER, end - pos)
        else:
            raw = compression.decompress(codec, bytes(view[pos + HEADER_SIZE:end]))
            _records(cols, raw, 0, len(raw), count, base, base_ts, epoch,
                     bool(attrs & _CONTROL), pos << _ORDER, end - pos)
    except UNDECODABLE as e:
        raise _Unclean from e


class _Distinct:
    """The distinct record sections of simple batches, each framed once by the wire
    layer's loop (which refuses one whose record it does not take): its value's index."""

    def __init__(self, cols: _Columns) -> None:
        self.cols = cols
        self.value = array("i")

    def add(self, section: bytes) -> None:
        try:
            (r,) = records_in(section, 0, len(section), 1, 0, 0)
        except UNDECODABLE as e:
            raise _Unclean from e
        self.value.append(self.cols.value(False, r.key, r.value))


def _simple(data: bytes, cols: _Columns, heads: _Heads) -> tuple[np.ndarray, ...]:
    """The simple batches all at once: their record sections (the bytes after the header)
    are grouped by length, each group's distinct sections found with Arrow's hashing and
    framed once (a quiet log repeats a few sections millions of times), then spread back
    with numpy. ``(order, offsets, timestamps, epochs, index)``."""
    a = np.frombuffer(data, np.uint8)
    starts = heads.pos + HEADER_SIZE
    lens = heads.end - starts
    n = len(starts)
    which = np.empty(n, np.int64)  # each batch's distinct section
    distinct = _Distinct(cols)
    # group by length: a stable radix sort on 16 bits, longer sections grouped by numpy's
    # general sort (rare)
    short = n == 0 or int(lens.max()) < 1 << 15
    order = np.argsort(lens.astype(np.int16 if short else np.int64), kind="stable")
    sorted_lens = lens[order]
    cuts = (np.flatnonzero(np.diff(sorted_lens)) + 1).tolist()
    for lo, hi in zip([0, *cuts], [*cuts, n], strict=True) if n else ():
        length = int(sorted_lens[lo])
        rows = order[lo:hi]
        if length == 0:
            raise _Unclean  # no room for the record the count promises
        block = np.lib.stride_tricks.sliding_window_view(a, length)[starts[rows]]
        known = len(distinct.value)
        if hi - lo == 1:
            distinct.add(block.tobytes())
            which[rows] = known
            continue
        enc = pa.Array.from_buffers(pa.binary(length), hi - lo,
                                    [None, pa.py_buffer(block)]).dictionary_encode()
        for section in enc.dictionary.to_pylist():
            distinct.add(section)
        which[rows] = known + enc.indices.to_numpy(zero_copy_only=False)
    value = np.frombuffer(distinct.value, np.int32)[which] if n else np.zeros(0, np.int32)
    # one record at the batch's base offset and timestamp: the framing numbers records by
    # their place and takes timestamp deltas of 0 only
    return heads.pos << _ORDER, heads.base, heads.base_ts, heads.epoch, value


def read_file(directory: str, path: str, role: str, first: int, last: int | None,
              source: Source | None = None, prior: int | None = None,
              ) -> tuple[Any, ...] | None:
    """``(offsets, epochs, timestamps, index, distinct, span)`` of a clean file, or None
    (``span``: see :func:`_walk`). ``source``: the directory's source whose bytes to read
    (default: a new one); ``prior``: the leader epoch before the file (the whole log read in
    order knows it).

    A segment with ``last`` has a next segment: the shell's reader looks at that one's first
    batch before it stops (and may warn about it), so that must be clean too.
    """
    segment = role == "segment"
    cols = _Columns()
    try:
        source = source or DirectorySource(directory)
        data = source.file_bytes(path)
        if not data:
            return None  # an empty file may deserve a warning: the reader knows
        if not segment and headless(path, data) is not None:
            return None  # the shell's reader says why no node loads it
        heads, span = _walk(data, cols, first if segment else None, last if segment else None,
                            prior)
        fast = _simple(data, cols, heads)
        general = (np.frombuffer(cols.order, np.int64), np.frombuffer(cols.offsets, np.int64),
                   np.frombuffer(cols.timestamps, np.int64),
                   np.frombuffer(cols.epochs, np.int32), np.frombuffer(cols.index, np.int32))
        order, offs, stamps, epochs, index = (np.concatenate([x, y]) for x, y in
                                              zip(fast, general, strict=True))
        if len(general[0]):
            ranks = np.argsort(order, kind="stable")
            offs, stamps, epochs, index = offs[ranks], stamps[ranks], epochs[ranks], index[ranks]
        if segment:
            if len(offs) and (offs.min() < first or (last is not None and offs.max() > last)):
                return None
            if last is not None and not _later_clean(directory, last):
                return None
    except (_Unclean, SourceError):
        return None
    return offs, epochs, stamps, index, cols.distinct, span


class _FirstBatches(DirectorySource):
    """The directory with each file cut after its first batch. The shell's reader, passing
    from a segment into the next one, stops at that batch: it reads the same bytes as on
    the whole file, without reading (and keeping) the whole next segment."""

    _HEAD = 1 << 16

    def data(self, path: str) -> bytes:
        head = self.file_head(path, self._HEAD) if os.path.isfile(path) else None
        if head is None:
            return super().data(path)  # unreadable, a FIFO...: the whole file's error
        if len(head) >= 12:
            need = LOG_OVERHEAD + _LENGTH.unpack_from(head, 8)[0]
            if need > len(head) == self._HEAD:
                head = self.file_head(path, need) or head
        return head


def _later_clean(directory: str, last: int) -> bool:
    """Whether the shell's reader, passing into the next segment, finds nothing to say."""
    stream = _FirstBatches(directory).log_stream(last + 1, last)
    for _ in stream:
        return False
    return not stream.problems


def constant(value: Any, type_: pa.DataType, n: int) -> pa.Array:
    """``n`` copies of one value, without a Python list of ``n`` items."""
    return pa.array([value], type_).take(pa.array(np.zeros(n, np.int32)))
