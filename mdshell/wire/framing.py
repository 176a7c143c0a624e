"""The one definition of how a batch's records section holds its records.

Every reader of records goes through :func:`frame`: replay (the load, re-read and follow,
time travel), ``records``, ``changes`` and its byte sieve, the directory's identity checks,
control records, and Spark's fast log reader. The compiled framing (``_cwalk.frame``, and the
compiled replay loop, which calls the same C function) implements exactly these rules; when
it meets bytes it refuses, this Python code reads them again and says what is wrong, so
there is one verdict and one message for any bytes.

The rules are Kafka's for record format v2 (``DefaultRecord.readFrom`` and
``DefaultRecordBatch``'s record iterator):

- A record is its length (a varint), then exactly that many bytes: attributes (1 byte), the
  timestamp delta (a varlong), the offset delta (a varint), the key length (a varint; a
  negative length is a null key) and the key, the value length (likewise) and the value, the
  header count (a varint, not negative), and per header the key length (a varint, not
  negative), the key, the value length (negative: null) and the value.
- Every length and count is checked against the bytes left in the record before it is used:
  nothing is read outside the record, and its fields end exactly where its length says.
- A varint takes at most 5 bytes and a varlong at most 10 (Kafka's ``ByteUtils`` refuses
  longer ones); their value is the low 32 (64) bits, zig-zag decoded, as Kafka reads them.
- The section holds exactly ``count`` records (``count`` at least 0) and nothing after them.
- A record's offset (base offset + offset delta) and timestamp (base timestamp + timestamp
  delta) must be 64-bit values: a Java reader would wrap them around.

Records come out as tuples of positions into the buffer (no bytes copied):

- ``METADATA``: ``(offset, value_pos, value_end, api_key, version, body_pos)``. The metadata
  frame header (frame version 1, api key, version) is peeked when it has its common 3-byte
  form; otherwise ``api_key`` and ``version`` are -1 and ``body_pos`` is ``value_pos``
  (``frames.decode_metadata`` reads the whole value). A null value has ``value_end`` -1.
- ``FULL``: ``(offset, timestamp, attributes, key_pos, key_end, value_pos, value_end,
  headers_pos)`` (``key_end`` / ``value_end`` -1 for null; the headers section, already
  checked, starts at ``headers_pos`` and ends where the record does: :func:`headers`).

Anything else raises :class:`~.primitives.DecodeError` naming what is wrong.
"""

from __future__ import annotations

from .native import piece
from .primitives import DecodeError

METADATA, FULL = 0, 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_M32, _M64 = (1 << 32) - 1, (1 << 64) - 1

Framed = tuple[int, ...]

_cwalk = piece("_cwalk")
_cframe = _cwalk.frame if _cwalk is not None else None


def frame(buf: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int = 0,
          shape: int = METADATA) -> list[Framed]:
    """The ``count`` records framed in ``buf[pos:end]`` (a batch's records section, already
    decompressed), their offsets from ``base_offset`` and timestamps from ``base_ts``, as
    tuples of ``shape``. Raises :class:`DecodeError` for bytes the rules above refuse."""
    if _cframe is not None:
        framed: list[Framed] | None = _cframe(buf, pos, end, count, base_offset, base_ts,
                                              shape)
        if framed is not None:
            return framed
    return frame_python(buf, pos, end, count, base_offset, base_ts, shape)


def frame_python(buf: bytes, pos: int, end: int, count: int, base_offset: int,
                 base_ts: int = 0, shape: int = METADATA) -> list[Framed]:
    """:func:`frame` in Python: the reference the compiled framing is tested against, and
    what says why bytes are refused."""
    if not 0 <= pos <= end <= len(buf):
        raise DecodeError(f"records section {pos}-{end} lies outside its buffer")
    if count < 0:
        raise DecodeError(f"negative record count {count}")
    if count > end - pos:  # every record takes several bytes: checked before any list is made
        raise DecodeError(f"record count {count} is more than the {end - pos} bytes of the "
                          "records section can hold")
    out: list[Framed] = []
    append = out.append
    for i in range(count):
        if pos >= end:
            raise DecodeError(f"the batch holds {i} records, not the {count} its count says")
        length, pos = _varint(buf, pos, end, 5, "record length")
        if length <= 0 or length > end - pos:
            raise DecodeError(f"record {i} has length {length}, but {end - pos} bytes are "
                              "left in the batch")
        append(_record(buf, pos, pos + length, base_offset, base_ts, shape))
        pos += length
    if pos != end:
        raise DecodeError(f"{end - pos} bytes are left after the last of the {count} records "
                          "of the batch")
    return out


def _record(buf: bytes, pos: int, rec_end: int, base_offset: int, base_ts: int,
            shape: int) -> Framed:
    """One record occupying ``buf[pos:rec_end]`` (after its length)."""
    attributes = buf[pos]
    p = pos + 1
    ts_delta, p = _varint(buf, p, rec_end, 10, "timestamp delta")
    off_delta, p = _varint(buf, p, rec_end, 5, "offset delta")
    offset, timestamp = base_offset + off_delta, base_ts + ts_delta
    if not (INT64_MIN <= offset <= INT64_MAX and INT64_MIN <= timestamp <= INT64_MAX):
        raise DecodeError(f"record offset {offset} or timestamp {timestamp} is outside the "
                          "64-bit range")
    key_pos, key_end, p = _bytes(buf, p, rec_end, "key")
    value_pos, value_end, p = _bytes(buf, p, rec_end, "value")
    headers_pos = p
    p = _skip_headers(buf, p, rec_end)
    if p != rec_end:
        raise DecodeError(f"the record at offset {offset} has {rec_end - p} bytes past its "
                          "fields")
    if shape == FULL:
        return (offset, timestamp, attributes, key_pos, key_end, value_pos, value_end,
                headers_pos)
    return metadata_view(buf, offset, value_pos, value_end)


def _bytes(buf: bytes, p: int, rec_end: int, what: str) -> tuple[int, int, int]:
    """A length-prefixed field (negative length: null): ``(start, end or -1, next)``."""
    n, p = _varint(buf, p, rec_end, 5, f"{what} length")
    if n < 0:
        return p, -1, p
    if n > rec_end - p:
        raise DecodeError(f"{what} length {n} runs past the record ({rec_end - p} bytes left)")
    return p, p + n, p + n


def _skip_headers(buf: bytes, p: int, rec_end: int) -> int:
    """Past the headers section that starts at ``p``, every length checked."""
    count, p = _varint(buf, p, rec_end, 5, "header count")
    if count < 0 or count > rec_end - p:
        raise DecodeError(f"header count {count} does not fit the record "
                          f"({rec_end - p} bytes left)")
    for _ in range(count):
        n, p = _varint(buf, p, rec_end, 5, "header key length")
        if n < 0 or n > rec_end - p:
            raise DecodeError(f"header key length {n} does not fit the record "
                              f"({rec_end - p} bytes left)")
        p += n
        n, p = _varint(buf, p, rec_end, 5, "header value length")
        if n > rec_end - p:
            raise DecodeError(f"header value length {n} runs past the record "
                              f"({rec_end - p} bytes left)")
        if n > 0:
            p += n
    return p


def _varint(buf: bytes, p: int, limit: int, most: int, what: str) -> tuple[int, int]:
    """A zig-zag varint of at most ``most`` bytes inside ``buf[p:limit]``, as Kafka reads it
    (the low 32 bits for a varint, 64 for a varlong): ``(value, next position)``."""
    b = buf[p] if p < limit else -1
    if 0 <= b < 0x80:  # one byte: most of them
        return (b >> 1) ^ -(b & 1), p + 1
    n = shift = 0
    for i in range(most):
        if p + i >= limit:
            raise DecodeError(f"{what} runs past the record")
        b = buf[p + i]
        n |= (b & 0x7F) << shift
        if b < 0x80:
            n &= _M32 if most == 5 else _M64
            return (n >> 1) ^ -(n & 1), p + i + 1
        shift += 7
    raise DecodeError(f"{what} is a varint longer than {most} bytes")


def metadata_view(buf: bytes, offset: int, value_pos: int, value_end: int) -> Framed:
    """A ``FULL`` record's :data:`METADATA` tuple, from its offset and value range."""
    if (value_end - value_pos >= 3 and buf[value_pos] == 1 and buf[value_pos + 1] < 0x80
            and buf[value_pos + 2] < 0x80):
        return (offset, value_pos, value_end, buf[value_pos + 1], buf[value_pos + 2],
                value_pos + 3)
    return (offset, value_pos, value_end, -1, -1, value_pos)


def headers(buf: bytes, pos: int, rec_end: int) -> list[tuple[str, bytes | None]]:
    """The headers of a framed record (``FULL``'s ``headers_pos`` to the record's end):
    keys as UTF-8 text (bad bytes replaced, as Kafka does), values as bytes or None."""
    count, p = _varint(buf, pos, rec_end, 5, "header count")
    out: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        n, p = _varint(buf, p, rec_end, 5, "header key length")
        key = bytes(buf[p:p + n]).decode("utf-8", "replace")
        p += n
        n, p = _varint(buf, p, rec_end, 5, "header value length")
        value = None
        if n >= 0:
            value = bytes(buf[p:p + n])
            p += n
        out.append((key, value))
    return out
