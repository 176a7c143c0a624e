"""Fast encoding of PartitionRecord values and of metadata record framing.

The generic codec walks the schema for every record (~10 µs); a million-partition snapshot
needs better. A PartitionRecord body is ``PartitionId, TopicId`` followed by bytes that depend
only on the partition's state, and fresh partitions share few distinct states, so the tail is
encoded once per (state, version) and cached. The layout below follows the PartitionRecord
schema in ``mdshell.wire.records`` (tests compare every variant with ``codec.encode``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from ..wire.primitives import uvarint_bytes, varint_bytes
from .state import PState

_I32 = struct.Struct(">i")
_III = struct.Struct(">iii")
_FRAME = {v: bytes([1, 3, v]) for v in range(3)}  # frame version 1, api key 3, version
# (id(state), version) -> (state, tail); holding the state keeps its id from being reused.
_tails: dict[tuple[int, int], tuple[PState, bytes]] = {}
_TAIL_CACHE_LIMIT = 1 << 16


def _int_array(values: tuple[int, ...]) -> bytes:
    return uvarint_bytes(len(values) + 1) + struct.pack(f">{len(values)}i", *values)


def _tagged(tag: int, raw: bytes) -> bytes:
    return uvarint_bytes(tag) + uvarint_bytes(len(raw)) + raw


def _tail(s: PState, version: int) -> bytes:
    """Everything after PartitionId and TopicId."""
    out = [_int_array(s.replicas), _int_array(s.isr), _int_array(s.removing),
           _int_array(s.adding), _III.pack(s.leader, s.leader_epoch, s.partition_epoch)]
    if version >= 1:
        out.append(uvarint_bytes(len(s.directories) + 1) + b"".join(s.directories))
    tags: list[bytes] = []
    if s.leader_recovery_state != 0:
        tags.append(_tagged(0, struct.pack(">b", s.leader_recovery_state)))
    if version >= 2:
        if s.elr is not None:
            tags.append(_tagged(1, _int_array(s.elr)))
        if s.last_known_elr is not None:
            tags.append(_tagged(2, _int_array(s.last_known_elr)))
    out.append(uvarint_bytes(len(tags)))
    out.extend(tags)
    return b"".join(out)


def partition_value(partition_id: int, topic_id: bytes, s: PState, version: int) -> bytes:
    """The framed value of a PartitionRecord (frame version, api key 3, version, body)."""
    key = (id(s), version)
    hit = _tails.get(key)
    if hit is None:
        if len(_tails) >= _TAIL_CACHE_LIMIT:
            _tails.clear()
        hit = _tails[key] = (s, _tail(s, version))
    tail = hit[1]
    return _FRAME[version] + _I32.pack(partition_id) + topic_id + tail


# ---------------------------------------------------------------- record framing

_zz: list[bytes] = []


def _zigzag_table(upto: int) -> list[bytes]:
    """Zigzag varints of 0..upto-1, grown on demand."""
    if len(_zz) < upto:
        _zz.extend(varint_bytes(i) for i in range(len(_zz), max(upto, 4096)))
    return _zz


def frame_values(values: Iterable[bytes], first_delta: int = 0) -> tuple[bytes, int]:
    """Records section for metadata values: ``(bytes, count)``.

    Each record has attributes 0, timestamp delta 0, a null key and no headers — exactly what
    ``mdshell.wire.batch.encode_record`` writes for such a record.
    """
    vals = values if isinstance(values, list) else list(values)
    n = len(vals)
    zz = _zigzag_table(max(first_delta + n, 1024))
    parts: list[bytes] = []
    extend = parts.extend
    delta = first_delta
    for v in vals:
        od = zz[delta]
        vl = len(v)
        vlb = zz[vl] if vl < len(zz) else varint_bytes(vl)
        body_len = 4 + len(od) + len(vlb) + vl
        blb = zz[body_len] if body_len < len(zz) else varint_bytes(body_len)
        extend((blb, b"\x00\x00", od, b"\x01", vlb, v, b"\x00"))
        delta += 1
    return b"".join(parts), n
