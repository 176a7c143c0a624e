"""Framing a run of same-shaped records at C speed.

A snapshot's batch holds up to thousands of records of one kind (PartitionRecords with the
same replica count, say), written by Kafka with offset deltas 0, 1, 2... and no key: every
record then has the same length and its fields sit at the same places, so record ``j``
starts ``j`` record-lengths after the first. That is checked for a whole run at once with
strided byte slices (each field's bytes of every record, compared with what they must be)
and the run's ranges are made by ``zip`` over ``range``s, instead of a Python loop per
record. What ``batch.ranges_in``'s record loop would read differently (another length, a
key, a null value, a gap in the deltas, a long varint) ends the run; that loop reads on, so
the result and the errors are the loop's own.
"""

from __future__ import annotations

from functools import lru_cache

RUN_MIN = 16  # fewer records than this: the loop is as fast


def run(buf: bytes, pos: int, end: int, left: int, base: int, frame: bool,
        out: list[tuple[int, ...]]) -> tuple[int, int]:
    """Frame the longest run (at most ``left`` records) of records shaped as the one at
    ``pos``; append their ranges to ``out`` as ``ranges_in`` does and return how many there
    were and where the run ends, or ``(0, pos)`` (nothing appended) when there is no run of
    ``RUN_MIN`` or more."""
    shape = _shape(buf, pos, end, left)
    if shape is None:
        return 0, pos
    size, h, d, o, c, vlen, k = shape
    if frame and vlen < 3:
        return 0, pos
    k = _equal_prefix(buf, pos, size, h, k)
    if k < RUN_MIN:
        return 0, pos
    stop = pos + k * size
    if not _fields_agree(buf, pos, stop, size, h, d, o, c, k):
        return 0, pos
    vs = pos + c
    starts = range(vs, vs + k * size, size)
    ends = range(vs + vlen, vs + vlen + k * size, size)
    offsets = range(base + d, base + d + k)
    if not frame:
        out.extend(zip(offsets, starts, ends, strict=True))
        return k, stop
    if buf[vs:stop:size] != b"\x01" * k:  # frame version 1, the common 3-byte header
        return 0, pos
    keys, versions = buf[vs + 1:stop:size], buf[vs + 2:stop:size]
    if max(keys) >= 0x80 or max(versions) >= 0x80:
        return 0, pos
    out.extend(zip(offsets, starts, ends, keys, versions,
                   range(vs + 3, vs + 3 + k * size, size), strict=True))
    return k, stop


def _shape(buf: bytes, pos: int, end: int,
           left: int) -> tuple[int, int, int, int, int, int, int] | None:
    """The first record's layout: (size, length-varint bytes, offset delta, its varint
    bytes, where the value starts, value length, most records such a run can hold)."""
    b = buf[pos]
    if b < 0x80:
        h, n = 1, b
    elif buf[pos + 1] < 0x80:
        h, n = 2, (b & 0x7F) | (buf[pos + 1] << 7)
    else:
        return None
    if n & 1 or n == 0:
        return None
    size = h + (n >> 1)
    k = min(left, (end - pos) // size)
    q = pos + h + 1  # past the attributes
    if k < RUN_MIN or buf[q] >= 0x80:  # a one-byte timestamp delta
        return None
    q += 1
    z = buf[q]
    if z < 0x80:
        o = 1
    elif buf[q + 1] < 0x80:
        o, z = 2, (z & 0x7F) | (buf[q + 1] << 7)
    else:
        return None
    if z & 1:
        return None
    d = z >> 1
    k = min(k, (64 if o == 1 else 8192) - d)  # the deltas keep their varint's length
    q += o
    if buf[q] != 1:  # a null key
        return None
    q += 1
    v = buf[q]
    if v < 0x80:
        q += 1
    elif buf[q + 1] < 0x80:
        v = (v & 0x7F) | (buf[q + 1] << 7)
        q += 2
    else:
        return None
    vlen = (v >> 1) ^ -(v & 1)
    c = q - pos
    if vlen < 0 or c + vlen > size or k < RUN_MIN:
        return None
    return size, h, d, o, c, vlen, k


def _equal_prefix(buf: bytes, pos: int, size: int, h: int, k: int) -> int:
    """How many of the next ``k`` records have the first one's length: a record starts
    where the one before ends, so this is a prefix (the bytes after the first other length
    are not record starts)."""
    stop = pos + k * size
    for i in range(h):
        col = buf[pos + i:stop:size]
        k = min(k, len(col) - len(col.lstrip(col[:1])))
    return k


def _fields_agree(buf: bytes, pos: int, stop: int, size: int, h: int, d: int, o: int,
                  c: int, k: int) -> bool:
    """Every record of the run has a one-byte timestamp delta, offset deltas ``d``,
    ``d + 1``... in ``o`` bytes each, a null key and the first one's value length."""
    if max(buf[pos + h + 1:stop:size]) >= 0x80:
        return False
    q = pos + h + 2
    for i, want in enumerate(_deltas(d, k, o)):
        if buf[q + i:stop:size] != want:
            return False
    q += o
    first = pos + c  # the value length's bytes lie between the key and the value
    return all(buf[j:stop:size] == buf[j:j + 1] * k for j in range(q, first))


@lru_cache(maxsize=64)
def _deltas(d: int, k: int, o: int) -> tuple[bytes, ...]:
    """The bytes of the zigzag varints of ``d .. d + k - 1``, one ``bytes`` per varint
    byte (each byte of every record, as strided slices give them)."""
    zs = [2 * x for x in range(d, d + k)]
    if o == 1:
        return (bytes(zs),)
    return bytes((z & 0x7F) | 0x80 for z in zs), bytes(z >> 7 for z in zs)
