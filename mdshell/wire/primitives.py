"""Kafka wire primitives: varints, zigzag, UUIDs.

Decoders take ``(buf, pos)`` and return ``(value, new_pos)`` so that callers can walk a
buffer without slicing it. They raise :class:`DecodeError` on truncated or malformed input.
"""

from __future__ import annotations

import base64
import struct


class DecodeError(ValueError):
    """Bytes that do not decode as the expected Kafka structure."""


ZERO_UUID = bytes(16)


def read_uvarint(buf: bytes, pos: int, end: int | None = None) -> tuple[int, int]:
    """Unsigned LEB128 varint (Kafka's ``UNSIGNED_VARINT``) inside ``buf[pos:end]`` (default:
    to the end of ``buf``): at most 5 bytes, as Kafka's ``ByteUtils.readUnsignedVarint``
    reads it (a longer one is refused)."""
    result = 0
    end = len(buf) if end is None else min(end, len(buf))
    for shift in (0, 7, 14, 21, 28):
        if pos >= end:
            raise DecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
    raise DecodeError("varint longer than 5 bytes")


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zigzag-encoded signed varint (at most 5 bytes)."""
    n, pos = read_uvarint(buf, pos)
    return (n >> 1) ^ -(n & 1), pos


def uvarint_bytes(n: int) -> bytes:
    if n < 0:
        raise ValueError("unsigned varint cannot be negative")
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def varint_bytes(n: int) -> bytes:
    """Zigzag-encode a signed 64-bit value."""
    return uvarint_bytes((n << 1) ^ (n >> 63))


def uuid_str(raw: bytes) -> str:
    """Kafka's ``Uuid.toString()``: URL-safe base64 without padding (22 chars)."""
    return base64.urlsafe_b64encode(raw).decode("ascii")[:22]


def uuid_from_str(text: str) -> bytes:
    """Inverse of :func:`uuid_str`; raises ``ValueError`` on anything but 16 bytes."""
    if len(text) != 22:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    return raw


_QQ = struct.Struct(">qq")


def uuid_sort_key(raw: bytes) -> tuple[int, int]:
    """Kafka orders Uuids by signed most- then least-significant 64 bits."""
    hi, lo = _QQ.unpack(raw)
    return hi, lo
