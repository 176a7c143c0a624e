"""The one definition of how a batch's records section holds its records.

Every reader of records goes through :func:`frame`: replay (the load, re-read and follow,
time travel), ``records``, ``changes`` and its byte sieve, the directory's identity checks,
control records, and Spark's fast log reader. The compiled framing (``_cwalk.frame``, and the
compiled replay loop, which calls the same C function) implements exactly these rules; when
it meets bytes it refuses, this Python code reads them again and says what is wrong, so
there is one verdict and one message for any bytes.

The rules are those of the KRaft reader (raft's ``RecordsIterator``, which every controller
and broker replays a metadata log with; record format v2):

- A record is its length (a varint, at least 1, at most the bytes left in the section and
  the batch's size on disk), then that many bytes. Its last byte is the header count, which
  must be 0. Before it: attributes (1 byte, not used), the timestamp delta (a varlong, which
  must be 0), the offset delta (a varint, read but not used: records are numbered from the
  batch's base offset by their place), the key length (a varint) and the key, the value
  length and the value. Bytes between the value and the last byte are passed over, as
  Kafka's reader passes them over.
- A metadata record has no key (a negative length) and a value of at least one byte; a
  control record (in a control batch) a key and a value of at least one byte each.
- Every length is checked against the bytes left before its field is read: nothing is read
  outside the record.
- A varint takes at most 5 bytes and a varlong at most 10 (Kafka's ``ByteUtils`` refuses
  longer ones); their value is the low 32 (64) bits, zig-zag decoded, as Kafka reads them.
- The section holds ``count`` records (``count`` at least 1, at most its size in bytes);
  bytes after them are passed over, as Kafka's reader passes them over. A batch of no
  records is refused: raft's ``Batch.data`` and ``Batch.control`` refuse one ("Batch must
  contain at least one record"), so no controller, broker or shell reads past it.
- A record's offset (base offset + its place) must be a 64-bit value: a Java reader would
  wrap it around.

Records come out as tuples of positions into the buffer (no bytes copied):

- ``METADATA``: ``(offset, value_pos, value_end, api_key, version, body_pos)``. The metadata
  frame header (frame version 1, api key, version) is peeked when it has its common 3-byte
  form; otherwise ``api_key`` and ``version`` are -1 and ``body_pos`` is ``value_pos``
  (``frames.decode_metadata`` reads the whole value).
- ``FULL``: ``(offset, timestamp, attributes, key_pos, key_end, value_pos, value_end,
  headers_pos)`` (``key_end`` -1 for a metadata record's null key; ``timestamp`` is the
  batch's base timestamp; the header count, 0, is the byte at ``headers_pos``).

Anything else raises :class:`~.primitives.DecodeError` naming what is wrong.
"""

from __future__ import annotations

from .native import piece
from .primitives import DecodeError

METADATA, FULL = 0, 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
NO_LIMIT = (1 << 63) - 1  # batch_size when a record's length has no bound but the section's
_M32, _M64 = (1 << 32) - 1, (1 << 64) - 1

Framed = tuple[int, ...]

_cwalk = piece("_cwalk")
_cframe = _cwalk.frame if _cwalk is not None else None


def frame(buf: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int = 0,
          shape: int = METADATA, control: bool = False,
          batch_size: int = NO_LIMIT) -> list[Framed]:
    """The ``count`` records framed in ``buf[pos:end]`` (a batch's records section, already
    decompressed; ``control``: of a control batch; ``batch_size``: the batch's size on disk,
    which no record's length may pass), their offsets from ``base_offset`` and timestamps
    ``base_ts``, as tuples of ``shape``. Raises :class:`DecodeError` for bytes the rules
    above refuse."""
    if _cframe is not None:
        framed: list[Framed] | None = _cframe(buf, pos, end, count, base_offset, base_ts,
                                              shape, control, batch_size)
        if framed is not None:
            return framed
    return frame_python(buf, pos, end, count, base_offset, base_ts, shape, control,
                        batch_size)


def frame_python(buf: bytes, pos: int, end: int, count: int, base_offset: int,
                 base_ts: int = 0, shape: int = METADATA, control: bool = False,
                 batch_size: int = NO_LIMIT) -> list[Framed]:
    """:func:`frame` in Python: the reference the compiled framing is tested against, and
    what says why bytes are refused."""
    if not 0 <= pos <= end <= len(buf):
        raise DecodeError(f"records section {pos}-{end} lies outside its buffer")
    if count < 0:
        raise DecodeError(f"negative record count {count}")
    if count == 0:
        raise DecodeError("the batch holds no records: its record count is 0, and Kafka's reader "
                          "refuses a batch without records")
    if count > end - pos:  # every record takes several bytes: checked before any list is made
        raise DecodeError(f"record count {count} is more than the {end - pos} bytes of the "
                          "records section can hold")
    if base_offset + count - 1 > INT64_MAX:
        raise DecodeError(f"the offsets of {count} records from {base_offset} pass the 64-bit "
                          "range")
    out: list[Framed] = []
    append = out.append
    for i in range(count):
        if pos >= end:
            raise DecodeError(f"the batch holds {i} records, not the {count} its count says")
        length, pos = _varint(buf, pos, end, 5, "record length")
        if length <= 0 or length > end - pos:
            raise DecodeError(f"record {i} has length {length}, but {end - pos} bytes are "
                              "left in the batch")
        if length > batch_size:
            raise DecodeError(f"record {i} has length {length}, more than the batch's "
                              f"{batch_size} bytes (Kafka's reader refuses it)")
        append(_record(buf, pos, pos + length, base_offset + i, base_ts, shape, control))
        pos += length
    return out


def _record(buf: bytes, pos: int, rec_end: int, offset: int, base_ts: int, shape: int,
            control: bool) -> Framed:
    """One record occupying ``buf[pos:rec_end]`` (after its length), at ``offset``."""
    last = rec_end - 1  # the header count; the fields end before it
    if buf[last] != 0:
        raise DecodeError(f"the record at offset {offset} has headers (its last byte, the "
                          f"header count, is {buf[last]}; the KRaft reader takes 0 only)")
    if pos >= last:
        raise DecodeError(f"the record at offset {offset} has length {rec_end - pos}: no room "
                          "for its fields before its header count")
    attributes = buf[pos]
    ts_delta, p = _varint(buf, pos + 1, last, 10, "timestamp delta")
    if ts_delta != 0:
        raise DecodeError(f"the record at offset {offset} has timestamp delta {ts_delta} (the "
                          "KRaft reader takes 0 only)")
    _off_delta, p = _varint(buf, p, last, 5, "offset delta")
    key_pos, key_end, p = _bytes(buf, p, last, "key")
    value_pos, value_end, p = _bytes(buf, p, last, "value")
    if control and key_end <= key_pos:
        raise DecodeError(f"the control record at offset {offset} has "
                          f"{'no' if key_end < 0 else 'an empty'} key")
    if not control and key_end >= 0:
        raise DecodeError(f"the metadata record at offset {offset} has a key (the KRaft "
                          "reader takes none)")
    if value_end <= value_pos:
        raise DecodeError(f"the record at offset {offset} has "
                          f"{'no' if value_end < 0 else 'an empty'} value")
    if shape == FULL:
        return (offset, base_ts, attributes, key_pos, key_end, value_pos, value_end, last)
    return metadata_view(buf, offset, value_pos, value_end)


def _bytes(buf: bytes, p: int, rec_end: int, what: str) -> tuple[int, int, int]:
    """A length-prefixed field (negative length: null): ``(start, end or -1, next)``."""
    n, p = _varint(buf, p, rec_end, 5, f"{what} length")
    if n < 0:
        return p, -1, p
    if n > rec_end - p:
        raise DecodeError(f"{what} length {n} runs past the record ({rec_end - p} bytes left "
                          "before its header count)")
    return p, p + n, p + n


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
