"""A map of a record-batch file, read by the fuzzer's own tolerant parser.

The mutators need to know where every field is (a batch header's fields, each record's
length, attributes, deltas, key, value, headers, the metadata frame of its value) so that
they can set one to an edge value and make everything around it consistent again (record
length, batch length, compression, CRC), so that the damage reaches the decoder it is aimed
at. This parser is written apart from mdshell's readers on purpose: it judges them, so it
must not share their mistakes. It never raises on bad bytes; it maps what it can.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

HEADER_SIZE = 61
LOG_OVERHEAD = 12
CRC_FROM = 21  # the CRC covers a batch from its attributes on
CRC_AT = 17

# (name, position in the header, struct format): every field of a v2 batch header.
HEADER_FIELDS: list[tuple[str, int, str]] = [
    ("baseOffset", 0, ">q"), ("batchLength", 8, ">i"), ("partitionLeaderEpoch", 12, ">i"),
    ("magic", 16, ">b"), ("crc", 17, ">I"), ("attributes", 21, ">h"),
    ("lastOffsetDelta", 23, ">i"), ("baseTimestamp", 27, ">q"), ("maxTimestamp", 35, ">q"),
    ("producerId", 43, ">q"), ("producerEpoch", 51, ">h"), ("baseSequence", 53, ">i"),
    ("count", 57, ">i"),
]
OUTSIDE_CRC = {"baseOffset", "batchLength", "partitionLeaderEpoch", "magic"}


@dataclass(frozen=True, slots=True)
class Span:
    """A field of a record: ``buf[start:end]`` of the payload it lies in."""

    name: str  # "length", "attributes", "timestampDelta", ..., "frame.apiKey", "value.body"
    start: int
    end: int
    kind: str  # "varint" (zigzag), "uvarint", "byte", "bytes"


@dataclass(slots=True)
class RecordMap:
    """One record of a payload: where it starts and ends, and its fields."""

    start: int
    end: int  # where its length field says it ends
    body: int  # where its body starts (after the length varint)
    fields: list[Span] = field(default_factory=list)

    def span(self, name: str) -> Span | None:
        return next((s for s in self.fields if s.name == name), None)


@dataclass(slots=True)
class BatchMap:
    """One batch of a file: its place, its header and the records of its payload."""

    pos: int
    size: int  # 12 + batchLength
    codec: int
    payload: bytes  # the records section, decompressed (None when it would not)
    records: list[RecordMap]
    complete: bool  # every record parsed and the payload used up exactly

    @property
    def end(self) -> int:
        return self.pos + self.size


def batches(data: bytes) -> list[tuple[int, int]]:
    """``(position, size)`` of the batches that frame cleanly from the start of a file."""
    pos, out = 0, []
    while pos + HEADER_SIZE <= len(data):
        length = struct.unpack_from(">i", data, pos + 8)[0]
        if length < HEADER_SIZE - LOG_OVERHEAD or pos + LOG_OVERHEAD + length > len(data):
            break
        out.append((pos, LOG_OVERHEAD + length))
        pos += LOG_OVERHEAD + length
    return out


def read_uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int] | None:
    """An unsigned varint of at most 10 bytes at ``pos`` (None: cut short or too long)."""
    value, shift = 0, 0
    for i in range(10):
        if pos + i >= end:
            return None
        b = buf[pos + i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos + i + 1
        shift += 7
    return None


def read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int] | None:
    got = read_uvarint(buf, pos, end)
    if got is None:
        return None
    n, p = got
    return (n >> 1) ^ -(n & 1), p


def map_records(payload: bytes, count: int) -> tuple[list[RecordMap], bool]:
    """The records of a payload as far as they parse; whether all ``count`` did, exactly."""
    out: list[RecordMap] = []
    pos, end = 0, len(payload)
    for _ in range(max(0, min(count, 1 << 16))):
        rec = _map_record(payload, pos, end)
        if rec is None:
            return out, False
        out.append(rec)
        pos = rec.end
    return out, pos == end and len(out) == count


def _map_record(buf: bytes, pos: int, end: int) -> RecordMap | None:
    spans: list[Span] = []

    def varint(name: str, p: int) -> tuple[int, int] | None:
        got = read_varint(buf, p, end)
        if got is not None:
            spans.append(Span(name, p, got[1], "varint"))
        return got

    got = varint("length", pos)
    if got is None:
        return None
    length, body = got
    rec_end = body + length
    if length < 0 or rec_end > end:
        return None
    if body >= rec_end:
        return None
    spans.append(Span("attributes", body, body + 1, "byte"))
    p = body + 1
    for name in ("timestampDelta", "offsetDelta"):
        got = varint(name, p)
        if got is None:
            return None
        p = got[1]
    for name in ("key", "value"):
        got = varint(f"{name}Length", p)
        if got is None:
            return None
        n, p = got
        if n > 0:
            if p + n > rec_end:
                return None
            spans.append(Span(name, p, p + n, "bytes"))
            if name == "value":
                _map_frame(buf, p, p + n, spans)
            p += n
    got = varint("headerCount", p)
    if got is None:
        return None
    count, p = got
    for i in range(max(0, min(count, 64))):
        for part in ("Key", "Value"):
            got = varint(f"header{i}.{part.lower()}Length", p)
            if got is None:
                return None
            n, p = got
            if n > 0:
                if p + n > rec_end:
                    return None
                spans.append(Span(f"header{i}.{part.lower()}", p, p + n, "bytes"))
                p += n
    return RecordMap(pos, rec_end, body, spans)


def _map_frame(buf: bytes, pos: int, end: int, spans: list[Span]) -> None:
    """The metadata frame of a value (frame version, api key, version) and its body."""
    p = pos
    for name in ("frame.version", "frame.apiKey", "frame.recordVersion"):
        got = read_uvarint(buf, p, end)
        if got is None:
            return
        spans.append(Span(name, p, got[1], "uvarint"))
        p = got[1]
    if p < end:
        spans.append(Span("value.body", p, end, "bytes"))


def map_file(data: bytes, decompress: bool = True) -> list[BatchMap]:
    """Every batch that frames cleanly, with its records mapped (compressed payloads are
    decompressed with cramjam, bounded to 64 MiB)."""
    out = []
    for pos, size in batches(data):
        attrs = struct.unpack_from(">h", data, pos + 21)[0]
        count = struct.unpack_from(">i", data, pos + 57)[0]
        codec = attrs & 0x07
        raw = data[pos + HEADER_SIZE:pos + size]
        payload: bytes | None = raw
        if codec:
            payload = _decompress(codec, raw) if decompress else None
        if payload is None:
            out.append(BatchMap(pos, size, codec, b"", [], False))
            continue
        records, complete = map_records(payload, count)
        out.append(BatchMap(pos, size, codec, payload, records, complete))
    return out


def _decompress(codec: int, raw: bytes) -> bytes | None:
    from mdshell.wire import compression

    if len(raw) > 1 << 20:
        return None
    try:
        out = compression.decompress(codec, raw)
    except Exception:
        return None
    return out if len(out) <= 64 << 20 else None
