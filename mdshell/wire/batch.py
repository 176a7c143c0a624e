"""Record batches, magic v2: header, CRC-32C, records; reading and writing.

Layout (big-endian): baseOffset i64, batchLength i32, partitionLeaderEpoch i32, magic i8,
crc u32, attributes i16, lastOffsetDelta i32, baseTimestamp i64, maxTimestamp i64,
producerId i64, producerEpoch i16, baseSequence i32, count i32, then ``count`` records.
The CRC covers everything from ``attributes`` to the end of the batch.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from . import compression
from .crc import crc32c
from .framerun import RUN_MIN, run
from .native import piece
from .primitives import DecodeError, read_uvarint, uvarint_bytes, varint_bytes

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
CRC_START = 21  # offset of attributes within the batch
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD

# What a batch with a valid CRC can still raise when its contents are nonsense.
UNDECODABLE = (DecodeError, compression.CompressionError, IndexError, struct.error, ValueError)

_cwalk = piece("_cwalk")
cframe = _cwalk.frame if _cwalk is not None else None

COMPRESSION_MASK = 0x07
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20


@dataclass(slots=True)
class Batch:
    """One record batch; ``buf[pos:pos + size]`` are its bytes in the file buffer."""

    base_offset: int
    length: int
    epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    count: int
    buf: bytes
    pos: int
    # base_offset + last_offset_delta, read half a dozen times a batch by the walk and replay
    last_offset: int

    @property
    def size(self) -> int:
        return self.length + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    def raw(self) -> bytes:
        return bytes(self.buf[self.pos:self.pos + self.size])

    def crc_ok(self) -> bool:
        start = self.pos + CRC_START
        end = self.pos + self.size
        return crc32c(memoryview(self.buf)[start:end]) == self.crc

    def payload(self) -> tuple[bytes, int, int]:
        """The records section, decompressed: ``(buffer, start, end)``."""
        start = self.pos + HEADER_SIZE
        end = self.pos + self.size
        codec = self.compression
        if codec == compression.NONE:
            return self.buf, start, end
        data = compression.decompress(codec, bytes(self.buf[start:end]))
        return data, 0, len(data)


@dataclass(slots=True)
class Record:
    """One record of a batch. The value is ``buf[value_pos:value_end]`` (None when null)."""

    offset: int
    timestamp: int
    attributes: int
    key: bytes | None
    buf: bytes
    value_pos: int
    value_end: int  # -1 for a null value
    headers: list[tuple[str, bytes | None]]

    @property
    def value(self) -> bytes | None:
        if self.value_end < 0:
            return None
        return bytes(self.buf[self.value_pos:self.value_end])


def parse_header(buf: bytes, pos: int) -> Batch:
    (base, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, seq,
     count) = HEADER.unpack_from(buf, pos)
    return Batch(base, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid,
                 pepoch, seq, count, buf, pos, base + last_delta)


def _uv(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    return read_uvarint(buf, pos)


def _sv(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    n, pos = read_uvarint(buf, pos)
    return (n >> 1) ^ -(n & 1), pos


def iter_records(batch: Batch) -> Iterator[Record]:
    """Decode the record framing of a batch (values are left as byte ranges)."""
    buf, pos, end = batch.payload()
    return records_in(buf, pos, end, batch.count, batch.base_offset, batch.base_timestamp)


def records_in(buf: bytes, pos: int, end: int, count: int, base_offset: int,
               base_ts: int) -> Iterator[Record]:
    """The records framed in ``buf[pos:end]`` (a batch's decompressed payload): the one
    framing loop, so every reader accepts and refuses exactly the same bytes."""
    for _ in range(count):
        if pos >= end:
            raise DecodeError("batch has fewer records than its count")
        length, pos = _sv(buf, pos)
        rec_end = pos + length
        if length < 0 or rec_end > end:
            raise DecodeError("record overruns its batch")
        attrs = buf[pos]
        pos += 1
        ts_delta, pos = _sv(buf, pos)
        off_delta, pos = _sv(buf, pos)
        klen, pos = _sv(buf, pos)
        key = None
        if klen >= 0:
            key = bytes(buf[pos:pos + klen])
            pos += klen
        vlen, pos = _sv(buf, pos)
        vpos, vend = pos, -1
        if vlen >= 0:
            vend = pos + vlen
            pos = vend
        nh, pos = _sv(buf, pos)
        headers: list[tuple[str, bytes | None]] = []
        for _h in range(nh):
            hk, pos = _sv(buf, pos)
            name = bytes(buf[pos:pos + hk]).decode("utf-8", "replace")
            pos += hk
            hv, pos = _sv(buf, pos)
            hval = None
            if hv >= 0:
                hval = bytes(buf[pos:pos + hv])
                pos += hv
            headers.append((name, hval))
        if pos != rec_end:
            raise DecodeError("record length does not match its contents")
        yield Record(base_offset + off_delta, base_ts + ts_delta, attrs, key, buf, vpos, vend,
                     headers)
    if pos != end:
        raise DecodeError("bytes left after the last record of the batch")


def value_ranges(batch: Batch) -> tuple[bytes, list[tuple[int, int, int]]]:
    """``(buffer, [(offset, value_pos, value_end)])`` skipping keys and headers."""
    buf, out = _ranges(batch, False)
    return buf, out  # type: ignore[return-value]


def metadata_ranges(batch: Batch) -> tuple[bytes, list[tuple[int, int, int, int, int, int]]]:
    """Hot path of replay: ``(buffer, [(offset, value_pos, value_end, api_key, version,
    body_pos)])``. The metadata frame header (frameVersion, apiKey, version as unsigned
    varints) is read here when it has its common 3-byte form (frame version 1, key and
    version below 128); otherwise ``api_key`` is -1 and ``frames.decode_metadata`` reads the
    whole value. A null value has ``value_end`` -1."""
    if not batch.attributes & COMPRESSION_MASK:  # most batches: the records are in place
        buf, start = batch.buf, batch.pos + HEADER_SIZE
        out = ranges_in(buf, start, batch.pos + LOG_OVERHEAD + batch.length, batch.count,
                        batch.base_offset, True)
    else:
        buf, out = _ranges(batch, True)
    return buf, out  # type: ignore[return-value]


def _ranges(batch: Batch, frame: bool) -> tuple[bytes, list[tuple[int, ...]]]:
    buf, pos, end = batch.payload()
    return buf, ranges_in(buf, pos, end, batch.count, batch.base_offset, frame)


def ranges_in(buf: bytes, pos: int, end: int, count: int, base: int,
              frame: bool) -> list[tuple[int, ...]]:
    """The records' framing (``count`` records in ``buf[pos:end]``, offsets from ``base``):
    runs of same-shaped records at once (``framerun``: a snapshot's batches), the rest by
    one loop over the records. The compiled framing (``_cwalk.frame``) gives the same
    list, or None for anything it does not read as a well-formed batch does: the loop then
    says what is wrong."""
    if cframe is not None:
        framed: list[tuple[int, ...]] | None = cframe(buf, pos, end, count, base, frame)
        if framed is not None:
            return framed
    out: list[tuple[int, ...]] = []
    if count < RUN_MIN:
        pos = _loop(buf, pos, end, count, base, frame, out)
    else:
        left = count
        while left > 0:
            k, stop = run(buf, pos, end, left, base, frame, out)
            if k == 0:
                k = min(left, RUN_MIN)
                stop = _loop(buf, pos, end, k, base, frame, out)
            pos, left = stop, left - k
    if pos != end:
        raise DecodeError("batch record framing does not add up")
    return out


def _loop(buf: bytes, pos: int, end: int, count: int, base: int, frame: bool,
          out: list[tuple[int, ...]]) -> int:
    """``count`` records one by one from ``pos``; where the next one starts. Varints of one
    or two bytes (almost all of them) are decoded inline."""
    append = out.append
    for _ in range(count):
        # record length
        b = buf[pos]
        if b < 0x80:
            n = b
            pos += 1
        else:
            b2 = buf[pos + 1]
            if b2 < 0x80:
                n = (b & 0x7F) | (b2 << 7)
                pos += 2
            else:
                n, pos = read_uvarint(buf, pos)
        rec_end = pos + ((n >> 1) ^ -(n & 1))
        p = pos + 1  # skip attributes
        # timestamp delta: skip
        while buf[p] >= 0x80:
            p += 1
        p += 1
        # offset delta
        b = buf[p]
        if b < 0x80:
            n = b
            p += 1
        else:
            b2 = buf[p + 1]
            if b2 < 0x80:
                n = (b & 0x7F) | (b2 << 7)
                p += 2
            else:
                b3 = buf[p + 2]
                if b3 < 0x80:  # offsets past 8191 in a large snapshot batch
                    n = (b & 0x7F) | ((b2 & 0x7F) << 7) | (b3 << 14)
                    p += 3
                else:
                    n, p = read_uvarint(buf, p)
        off = base + ((n >> 1) ^ -(n & 1))
        # key length (metadata records have none: 0x01 = -1)
        b = buf[p]
        if b == 1:
            p += 1
        else:
            n, p = read_uvarint(buf, p)
            klen = (n >> 1) ^ -(n & 1)
            if klen > 0:
                p += klen
        # value length
        b = buf[p]
        if b < 0x80:
            n = b
            p += 1
        else:
            b2 = buf[p + 1]
            if b2 < 0x80:
                n = (b & 0x7F) | (b2 << 7)
                p += 2
            else:
                n, p = read_uvarint(buf, p)
        vlen = (n >> 1) ^ -(n & 1)
        if rec_end > end or rec_end < p:
            raise DecodeError("record overruns its batch")
        if not frame:
            append((off, p, p + vlen if vlen >= 0 else -1))
        elif vlen >= 3 and buf[p] == 1 and buf[p + 1] < 0x80 and buf[p + 2] < 0x80:
            append((off, p, p + vlen, buf[p + 1], buf[p + 2], p + 3))
        else:
            append((off, p, p + vlen if vlen >= 0 else -1, -1, -1, p))
        pos = rec_end
    return pos


# ---------------------------------------------------------------- writing


@dataclass(slots=True)
class RecordSpec:
    """A record to write: its deltas, key, value and headers."""

    offset_delta: int
    timestamp_delta: int
    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    attributes: int = 0


def encode_record(r: RecordSpec) -> bytes:
    body = bytearray([r.attributes])
    body += varint_bytes(r.timestamp_delta)
    body += varint_bytes(r.offset_delta)
    if r.key is None:
        body += varint_bytes(-1)
    else:
        body += varint_bytes(len(r.key)) + r.key
    if r.value is None:
        body += varint_bytes(-1)
    else:
        body += varint_bytes(len(r.value)) + r.value
    body += varint_bytes(len(r.headers))
    for name, val in r.headers:
        raw = name.encode()
        body += varint_bytes(len(raw)) + raw
        body += varint_bytes(-1) if val is None else varint_bytes(len(val)) + val
    return varint_bytes(len(body)) + bytes(body)


def encode_batch(
    base_offset: int,
    records: list[RecordSpec],
    *,
    epoch: int = 0,
    base_timestamp: int = 0,
    max_timestamp: int | None = None,
    attributes: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    last_offset_delta: int | None = None,
    payload: bytes | None = None,
    xerial: bool = True,
) -> bytes:
    """Build a batch. ``payload`` overrides the records section (already compressed)."""
    if payload is None:
        raw = b"".join(encode_record(r) for r in records)
        payload = compression.compress(attributes & COMPRESSION_MASK, raw, xerial=xerial)
    if last_offset_delta is None:
        last_offset_delta = max((r.offset_delta for r in records), default=0)
    if max_timestamp is None:
        max_timestamp = base_timestamp + max((r.timestamp_delta for r in records), default=0)
    tail = struct.pack(">hiqqqhii", attributes, last_offset_delta, base_timestamp,
                       max_timestamp, producer_id, producer_epoch, base_sequence, len(records))
    tail += payload
    crc = crc32c(tail)
    length = len(tail) + 4 + 1 + 4  # epoch + magic + crc
    return struct.pack(">qiibI", base_offset, length, epoch, 2, crc) + tail


def frame_metadata_value(api_key: int, version: int, body: bytes) -> bytes:
    """A metadata record value: frame version 1, api key, version, then the message."""
    return uvarint_bytes(1) + uvarint_bytes(api_key) + uvarint_bytes(version) + body


def control_key(ctype: int) -> bytes:
    return struct.pack(">hh", 0, ctype)
