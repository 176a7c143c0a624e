"""The ``records`` table of one clean file, fast: one pass over the bytes, columns in bulk.

The shell's reader (:func:`mdshell.source.logscan.iter_log`) builds a batch object, a record
object and a decoded dict for every record, and the table then turns each into a row: about
20 µs a record, most of a quiet log being one NoOp record per batch. Here a Python loop only
follows batch lengths and computes CRCs (about 1 µs a batch); the headers are then checked
together with numpy, and so is the framing of one-record batches, whose values are gathered
into an Arrow binary array and dictionary-encoded. Other batches (compressed, control, many
records) are decoded record by record. Each *distinct* value is decoded once (a quiet log
repeats a handful of values millions of times), and the value columns are gathered from the
distinct rows with Arrow's ``take``.

Only a clean file goes this way: every batch whole, magic 2, CRC right, offsets following on
and epochs not going down, every record framed exactly, nothing outside the file's offset
range. Anything else returns None and the caller reads the file with the shell's reader, so
rows and warnings stay exactly the shell's (the damage rules live in one place).
"""

from __future__ import annotations

import struct
from array import array
from typing import Any

import numpy as np
import pyarrow as pa

from ..problems import SourceError
from ..source import DirectorySource
from ..source.logscan import LogRecord
from ..source.walker import MAX_BATCH_LENGTH
from ..wire import compression, frames
from ..wire.batch import HEADER_SIZE, LOG_OVERHEAD, MIN_BATCH_LENGTH, UNDECODABLE, records_in
from ..wire.crc import crc32c

_CONTROL, _CODEC = 0x20, 0x07


class _Unclean(Exception):
    """Something the fast path does not handle: read the file the shell's way."""


_LENGTH = struct.Struct(">i")
_SIMPLE = 0x27  # codec bits and the control flag: a simple batch has none of them
_ORDER = 22  # records sort by (batch position << _ORDER) + record number within the batch


class _Columns:
    """Per-record arrays of the batches read one by one, and the distinct values."""

    def __init__(self) -> None:
        self.order = array("q")
        self.offsets = array("q")
        self.timestamps = array("q")
        self.epochs = array("i")
        self.index = array("i")
        self.keys: dict[Any, int] = {}
        self.distinct: list[LogRecord | None] = []  # None: a null metadata value (no row)

    def value(self, control: bool, rkey: bytes | None, raw: bytes | None) -> int:
        """The index of a distinct value, decoding it the first time."""
        key: Any = (rkey, raw) if control else raw
        i = self.keys.get(key)
        if i is None:
            i = self.keys[key] = len(self.distinct)
            self.distinct.append(_decode(control, rkey, raw))
        return i


def _decode(control: bool, rkey: bytes | None, raw: bytes | None) -> LogRecord | None:
    """A LogRecord carrying only what the value columns need (as logscan decodes it)."""
    if control:
        ctype = frames.control_type(rkey)
        return LogRecord(0, 0, 0, "", True, ctype, 0, frames.decode_control(ctype, raw))
    if raw is None:
        return None
    key, ver, value = frames.decode_metadata(raw, 0, len(raw))
    return LogRecord(0, 0, 0, "", False, key, ver, value)


def _records(cols: _Columns, buf: bytes, pos: int, end: int, count: int, base: int,
             base_ts: int, epoch: int, control: bool, order: int) -> None:
    """The records of one batch, framed by the wire layer's one loop (it raises on damage)."""
    value = cols.value
    for i, r in enumerate(records_in(buf, pos, end, count, base, base_ts)):
        raw = None if r.value_end < 0 else bytes(buf[r.value_pos:r.value_end])
        ix = value(control, r.key, raw)
        if not control and raw is None:
            continue  # a null metadata value: the reader skips it
        cols.order.append(order + i)
        cols.offsets.append(r.offset)
        cols.timestamps.append(r.timestamp)
        cols.epochs.append(epoch)
        cols.index.append(ix)


def _walk(data: bytes, cols: _Columns, first: int | None, last: int | None
          ) -> tuple[np.ndarray, tuple[int, int, int] | None]:
    """Check every batch of a file and decode those that are not simple; the positions of
    the simple ones (one uncompressed metadata record) are returned for :func:`_simple`.
    ``first`` (a segment): offsets must start there and follow on, up to ``last``; then the
    span is returned too: (first epoch, highest epoch, last offset).

    The loop only follows batch lengths and computes CRCs; the headers are checked together
    afterwards with numpy."""
    view = memoryview(data)
    size = len(data)
    length_at = _LENGTH.unpack_from
    starts, crcs = array("q"), array("q")
    add_start, add_crc = starts.append, crcs.append
    pos = 0
    while pos < size:
        if size - pos < HEADER_SIZE:
            raise _Unclean
        length = length_at(data, pos + 8)[0]
        if length < MIN_BATCH_LENGTH:
            raise _Unclean
        add_start(pos)
        pos += LOG_OVERHEAD + length
        add_crc(crc32c(view[starts[-1] + 21:pos]))
    if pos != size:
        raise _Unclean  # the last batch runs past the end
    a = np.frombuffer(data, np.uint8)
    at = np.frombuffer(starts, np.int64)
    lengths = _be(a, at + 8, ">i4")
    if len(at) and (lengths.max() > MAX_BATCH_LENGTH or (a[at + 16] != 2).any()
                    or (_be(a, at + 17, ">u4") != np.frombuffer(crcs, np.int64)).any()):
        raise _Unclean
    span = None
    if first is not None and len(at):
        base, epochs = _be(a, at, ">i8"), _be(a, at + 12, ">i4")
        deltas = _be(a, at + 23, ">i4")
        after = base + deltas
        # the reader's continuity rules, where breaking one means a warning or a skip
        if (base[0] != first or (base[1:] != after[:-1] + 1).any() or (deltas < 0).any()
                or epochs[0] < -1 or (np.diff(epochs) < 0).any()
                or (last is not None and after.max() > last)):
            raise _Unclean
        span = int(epochs[0]), int(epochs.max()), int(after[-1])
    attrs, counts = _be(a, at + 21, ">i2"), _be(a, at + 57, ">i4")
    simple = ((attrs & _SIMPLE) == 0) & (counts == 1)
    for i in np.flatnonzero(~simple).tolist():
        p = int(at[i])
        _batch(cols, data, view, p, p + LOG_OVERHEAD + int(lengths[i]), int(attrs[i]),
               int(counts[i]))
    return at[simple], span


def _batch(cols: _Columns, data: bytes, view: memoryview, pos: int, end: int, attrs: int,
           count: int) -> None:
    base, _, epoch = struct.unpack_from(">qii", data, pos)
    base_ts = struct.unpack_from(">q", data, pos + 27)[0]
    codec = attrs & _CODEC
    try:
        if codec == compression.NONE:
            _records(cols, data, pos + HEADER_SIZE, end, count, base, base_ts, epoch,
                     bool(attrs & _CONTROL), pos << _ORDER)
        else:
            raw = compression.decompress(codec, bytes(view[pos + HEADER_SIZE:end]))
            _records(cols, raw, 0, len(raw), count, base, base_ts, epoch,
                     bool(attrs & _CONTROL), pos << _ORDER)
    except UNDECODABLE as e:
        raise _Unclean from e


def _be(a: np.ndarray, at: np.ndarray, dtype: str) -> np.ndarray:
    """Big-endian integers of ``dtype`` at byte positions ``at`` of ``a``."""
    width = np.dtype(dtype).itemsize
    rows = np.lib.stride_tricks.sliding_window_view(a, width)[at]
    return rows.view(dtype).ravel().astype(dtype[1:])


def _zzv(n: np.ndarray) -> np.ndarray:
    return (n >> 1) ^ -(n & 1)


def _simple(data: bytes, cols: _Columns, pos: np.ndarray) -> tuple[np.ndarray, ...]:
    """The simple batches all at once with numpy: their single record's framing is checked
    the way :func:`_records` checks it when every varint is short, the rest (rare) go through
    :func:`_records`. ``(order, offsets, timestamps, epochs, index)``."""
    a = np.frombuffer(data, np.uint8)
    top = len(a) - 1
    base, epoch, base_ts = _be(a, pos, ">i8"), _be(a, pos + 12, ">i4"), _be(a, pos + 27, ">i8")
    end = pos + LOG_OVERHEAD + _be(a, pos + 8, ">i4").astype(np.int64)

    def at(i: np.ndarray) -> np.ndarray:
        return a[np.minimum(i, top)].astype(np.int64)

    r = pos + HEADER_SIZE
    ok = end - r >= 7
    b0, b1 = at(r), at(r + 1)
    two = b0 >= 0x80
    ok &= ~two | (b1 < 0x80)
    q = r + 1 + two
    ok &= q + _zzv(np.where(two, (b0 & 0x7F) | (b1 << 7), b0)) == end
    ts, off, k = at(q + 1), at(q + 2), at(q + 3)
    ok &= (ts < 0x80) & (off < 0x80) & (k == 1)
    v0, v1 = at(q + 4), at(q + 5)
    vtwo = v0 >= 0x80
    ok &= ~vtwo | (v1 < 0x80)
    vlen = _zzv(np.where(vtwo, (v0 & 0x7F) | (v1 << 7), v0))
    vs = q + 5 + vtwo
    ve = vs + vlen
    ok &= (vlen >= 0) & (ve + 1 == end) & (at(ve) == 0)
    for i in np.flatnonzero(~ok).tolist():  # long varints, keys, headers, damage: one by one
        p = int(pos[i])
        _records(cols, data, p + HEADER_SIZE, int(end[i]), 1, int(base[i]), int(base_ts[i]),
                 int(epoch[i]), False, p << _ORDER)
    vs, vlen = vs[ok], vlen[ok]
    bounds = np.zeros(len(vs) + 1, np.int64)
    np.cumsum(vlen, out=bounds[1:])
    gather = np.arange(int(bounds[-1]), dtype=np.int64) - np.repeat(bounds[:-1] - vs, vlen)
    values = pa.Array.from_buffers(pa.large_binary(), len(vs), [
        None, pa.py_buffer(bounds), pa.py_buffer(a[gather])]).dictionary_encode()
    known = np.array([cols.value(False, None, v) for v in values.dictionary.to_pylist()],
                     np.int32)
    index = known[values.indices.to_numpy(zero_copy_only=False)] if len(known) else (
        np.zeros(0, np.int32))
    return (pos[ok] << _ORDER, base[ok] + _zzv(off[ok]), base_ts[ok] + _zzv(ts[ok]),
            epoch[ok], index)


def read_file(directory: str, path: str, role: str, first: int, last: int | None,
              source: DirectorySource | None = None) -> tuple[Any, ...] | None:
    """``(offsets, epochs, timestamps, index, distinct, span)`` of a clean file, or None
    (``span``: see :func:`_walk`). ``source``: the directory's source whose bytes to read
    (default: a new one).

    A segment with ``last`` has a next segment: the shell's reader looks at that one's first
    batch before it stops (and may warn about it), so that must be clean too.
    """
    segment = role == "segment"
    cols = _Columns()
    try:
        source = source or DirectorySource(directory)
        data = source.data(path)
        if not data:
            return None  # an empty file may deserve a warning: the reader knows
        simple, span = _walk(data, cols, first if segment else None, last if segment else None)
        fast = _simple(data, cols, simple)
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
            if last is not None and not _later_clean(source, last):
                return None
    except (_Unclean, SourceError):
        return None
    return offs, epochs, stamps, index, cols.distinct, span


def _later_clean(source: DirectorySource, last: int) -> bool:
    """Whether the shell's reader, passing into the next segment, finds nothing to say."""
    stream = source.log_stream(last + 1, last)
    for _ in stream:
        return False
    return not stream.problems


def constant(value: Any, type_: pa.DataType, n: int) -> pa.Array:
    """``n`` copies of one value, without a Python list of ``n`` items."""
    return pa.array([value], type_).take(pa.array(np.zeros(n, np.int32)))
