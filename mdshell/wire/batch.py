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
from typing import Any

from . import compression, frames, framing
from .crc import crc32c
from .kinds import RecordKind
from .primitives import DecodeError, uvarint_bytes, varint_bytes

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
CRC_START = 21  # offset of attributes within the batch
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD

# What a batch with a valid CRC can still raise when its contents are nonsense.
UNDECODABLE = (DecodeError, compression.CompressionError, IndexError, struct.error, ValueError)

NO_OP_KEY = RecordKind.NO_OP
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
        data = _decompressed(codec, self.buf, start, end)
        return data, 0, len(data)


@dataclass(slots=True)
class Record:
    """One record of a batch, as the KRaft reader takes it (no headers; a key only in a
    control batch; a value of at least one byte): its value is
    ``buf[value_pos:value_end]``."""

    offset: int
    timestamp: int
    attributes: int
    key: bytes | None
    buf: bytes
    value_pos: int
    value_end: int

    @property
    def value(self) -> bytes:
        return bytes(self.buf[self.value_pos:self.value_end])


def parse_header(buf: bytes, pos: int) -> Batch:
    (base, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, seq,
     count) = HEADER.unpack_from(buf, pos)
    return Batch(base, length, epoch, magic, crc, attrs, last_delta, base_ts, max_ts, pid,
                 pepoch, seq, count, buf, pos, base + last_delta)


def iter_records(batch: Batch) -> Iterator[Record]:
    """The records of a batch (values are left as byte ranges), framed by the one
    definition (:mod:`.framing`); raises :class:`DecodeError` (or a compression error) for
    a batch whose records it refuses, before any record is handed out."""
    buf, pos, end = batch.payload()
    return iter(records_in(buf, pos, end, batch.count, batch.base_offset,
                           batch.base_timestamp, batch.is_control, batch.size))


def records_in(buf: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int,
               control: bool = False, batch_size: int = framing.NO_LIMIT) -> list[Record]:
    """The records framed in ``buf[pos:end]`` (a batch's decompressed payload; ``control``:
    of a control batch) as :class:`Record` objects: :func:`.framing.frame`, with keys read
    out."""
    out = []
    for off, ts, attrs, kpos, kend, vpos, vend, _h in framing.frame(
            buf, pos, end, count, base_offset, base_ts, framing.FULL, control, batch_size):
        key = None if kend < 0 else bytes(buf[kpos:kend])
        out.append(Record(off, ts, attrs, key, buf, vpos, vend))
    return out


def metadata_ranges(batch: Batch) -> tuple[bytes, list[tuple[int, int, int, int, int, int]]]:
    """``(buffer, [(offset, value_pos, value_end, api_key, version, body_pos)])``: the
    records of a metadata batch framed in :data:`.framing.METADATA` shape."""
    buf, pos, end = batch.payload()
    recs = framing.frame(buf, pos, end, batch.count, batch.base_offset, batch.base_timestamp,
                         batch_size=batch.size)
    return buf, recs  # type: ignore[return-value]


def noop_section(section: bytes) -> bool:
    """Whether a metadata batch's records section (uncompressed), read as holding one
    record, holds a NoOpRecord by the one framing: such a batch frames the same at any base
    offset and timestamp (the framing numbers records by their place and takes timestamp
    deltas of 0 only), so a reader may pass it over knowing only its header."""
    try:
        ((_off, _vpos, _vend, key, _ver, _body),) = framing.frame(section, 0, len(section), 1,
                                                                   0, 0)
    except UNDECODABLE:
        return False
    return key == NO_OP_KEY


def is_noop_batch(buf: bytes, pos: int) -> bool:
    """Whether the batch at ``pos`` (whole in ``buf``) is a plain batch of one NoOpRecord."""
    if len(buf) - pos < HEADER_SIZE:
        return False
    b = parse_header(buf, pos)
    end = pos + LOG_OVERHEAD + b.length
    if b.count != 1 or b.attributes & (COMPRESSION_MASK | CONTROL_FLAG) or not (
            pos + HEADER_SIZE <= end <= len(buf)):
        return False
    return noop_section(bytes(buf[pos + HEADER_SIZE:end]))


# A control record read: (offset, leader epoch, timestamp, control type, value).
ControlRead = tuple[int, int, int, int, "dict[str, Any] | frames.Unknown"]


def read_controls(batch: Batch) -> list[ControlRead]:
    """The control records of a control batch, each value decoded
    (:func:`.frames.decode_control`). Raises :class:`DecodeError` (or a compression error)
    where Kafka's KRaft reader fails: records that do not frame, a key that holds no control
    type, an ABORT or COMMIT marker, a value of a known type that does not read."""
    buf, pos, end = batch.payload()
    return _controls(buf, pos, end, batch.count, batch.base_offset, batch.base_timestamp,
                     batch.epoch, batch.size)


def control_records(buf: bytes, pos: int) -> list[ControlRead] | None:
    """:func:`read_controls` of the uncompressed control batch at ``pos`` (whole in
    ``buf``); None when it raises, or the batch is compressed (Kafka writes none: the
    caller reads it the general way, which says what is wrong). The compiled replay calls
    it for each control batch it passes over (read from the header without a
    :class:`Batch`: a quorum that keeps electing writes one a few milliseconds)."""
    base, length, epoch, _magic, _crc, attrs, _delta, base_ts, _max_ts, _pid, _pepoch, \
        _seq, count = HEADER.unpack_from(buf, pos)
    if attrs & COMPRESSION_MASK:
        return None
    try:
        return _controls(buf, pos + HEADER_SIZE, pos + LOG_OVERHEAD + length, count, base,
                         base_ts, epoch, LOG_OVERHEAD + length)
    except UNDECODABLE:
        return None


def _controls(buf: bytes, pos: int, end: int, count: int, base: int, base_ts: int,
              epoch: int, size: int) -> list[ControlRead]:
    """The control records framed in ``buf[pos:end]``, decoded (:func:`read_controls`)."""
    out: list[ControlRead] = []
    for off, ts, _attrs, kpos, kend, vpos, vend, _h in framing.frame(
            buf, pos, end, count, base, base_ts, framing.FULL, True, size):
        ctype = frames.control_type(buf[kpos:kend])
        out.append((off, epoch, ts, ctype, frames.decode_control(ctype, buf[vpos:vend])))
    return out


def compressed_payload(buf: bytes, pos: int) -> bytes | None:
    """The records section of the compressed batch at ``pos`` (whole in ``buf``),
    decompressed (bounded as :func:`.compression.decompress` bounds it); None when it does
    not decompress (reading the batch again says why)."""
    try:
        (length,) = _LENGTH_AT.unpack_from(buf, pos + 8)
        (attributes,) = _ATTRIBUTES_AT.unpack_from(buf, pos + CRC_START)
        return _decompressed(attributes & COMPRESSION_MASK, buf, pos + HEADER_SIZE,
                             pos + LOG_OVERHEAD + length)
    except UNDECODABLE:
        return None


# compressed_payload reads these two fields alone: no Batch made for a batch of the run
_LENGTH_AT, _ATTRIBUTES_AT = struct.Struct(">i"), struct.Struct(">h")


def _decompressed(codec: int, buf: bytes, start: int, end: int) -> bytes:
    """``buf[start:end]``, a compressed records section, decompressed."""
    return compression.decompress(codec, bytes(buf[start:end]))


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
