"""Record values: the metadata frame (frameVersion, apiKey, version) and control keys.

The decoders here never raise for data they merely do not know: an unknown api key, version
or control type comes back as :class:`Unknown` so that a load keeps going and reports it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from . import codec
from .control import ABORT, COMMIT, CONTROL, control_name
from .primitives import DecodeError, read_uvarint
from .records import METADATA
from .schema import Message

_CONTROL_KEY = struct.Struct(">hh")
_I16 = struct.Struct(">h")
_PARTITION_PREFIX = struct.Struct(">i16s")

# Kafka's reserved directory ids (DirectoryId): where a replica's log dir is not known.
MIGRATING_DIR = bytes(16)  # Uuid(0, 0): replicas placed before directory ids existed
UNASSIGNED_DIR = bytes(15) + b"\x01"  # Uuid(0, 1): not assigned yet
LOST_DIR = bytes(15) + b"\x02"  # Uuid(0, 2): the replica's log dir went offline


@dataclass(slots=True)
class Unknown:
    """A value mdshell cannot decode: kept raw, with the reason."""

    api_key: int  # metadata api key, or control type for control records
    version: int
    raw: bytes
    reason: str


def peek_frame(buf: bytes, pos: int, end: int | None = None) -> tuple[int, int, int]:
    """``(api_key, version, body_pos)`` of a metadata record value ``buf[pos:end]`` (default:
    to the end of ``buf``), read as Kafka's serde (``AbstractApiMessageSerde.read``) reads
    it: three unsigned varints of at most 5 bytes, each possibly longer than it needs (frame
    version 1 as ``81 00``), each taken as ``unsignedIntToShort`` takes it (:func:`_short`).
    Raises :class:`DecodeError` where that read fails, which is damage: a header that runs
    past ``end``, a varint longer than 5 bytes, a frame version other than 1, a type or
    version past 32767 or below 0."""
    end = len(buf) if end is None else min(end, len(buf))
    if pos >= end:
        raise DecodeError("an empty value (no metadata frame header)")
    if buf[pos] == 1 and pos + 2 < end and buf[pos + 1] < 0x80 and buf[pos + 2] < 0x80:
        return buf[pos + 1], buf[pos + 2], pos + 3
    frame, p = _header_varint(buf, pos, end, "frame version")
    if frame != 1:
        raise DecodeError(f"metadata frame version {frame}; Kafka reads frame version 1 only"
                          + (" (0 was KRaft's 2.8 preview)" if frame == 0 else ""))
    api_key, p = _header_varint(buf, p, end, "type")
    version, p = _header_varint(buf, p, end, "version")
    if api_key < 0 or version < 0:
        raise DecodeError(f"the value's metadata frame header says type {api_key} version "
                          f"{version}; Kafka reads neither below 0")
    return api_key, version, p


def _header_varint(buf: bytes, pos: int, end: int, what: str) -> tuple[int, int]:
    """One varint of a metadata frame header, as a short (:func:`_short`), and the position
    after it."""
    try:
        value, pos = read_uvarint(buf, pos, end)
    except DecodeError as e:
        raise DecodeError(f"the value's metadata frame header does not read ({e})") from None
    return _short(value, what), pos


def _short(value: int, what: str) -> int:
    """An unsigned varint's value as Kafka's ``unsignedIntToShort`` takes it: its low 32 bits
    as a Java int (``ByteUtils.readUnsignedVarint``), refused past 32767 (a negative int
    passes), then cast to a short."""
    value &= 0xFFFFFFFF
    if value >= 1 << 31:
        value -= 1 << 32
    if value > 0x7FFF:
        raise DecodeError(f"the value's metadata frame header says {what} {value}; Kafka "
                          "reads none past 32767")
    return ((value + 0x8000) & 0xFFFF) - 0x8000


# ``(partitionId, topicId)`` at a body position: the fixed prefix of PartitionRecord and
# PartitionChangeRecord bodies (every version), read without decoding the record.
partition_prefix = _PARTITION_PREFIX.unpack_from
# Its size: a PartitionRecord's body past it holds everything but which partition it is.
PARTITION_PREFIX_SIZE = _PARTITION_PREFIX.size


def decode_metadata(buf: bytes, pos: int, end: int) -> tuple[int, int, dict[str, Any] | Unknown]:
    """Decode one metadata record value occupying ``buf[pos:end]``: a dict, or
    :class:`Unknown` for a type or version this mdshell does not know (newer Kafka). Raises
    :class:`DecodeError` when the frame header is not one Kafka reads (:func:`peek_frame`),
    or the type and version are known but the bytes are not such a record (damage: the
    caller refuses the batch)."""
    api_key, version, body = peek_frame(buf, pos, end)
    msg = METADATA.get(api_key)
    if msg is None or not msg.valid.contains(version):
        return api_key, version, unknown(buf, pos, end, api_key, version)
    return api_key, version, decoded(api_key, version, codec.decoder_for(msg, version), buf,
                                     body, end)


def unknown(buf: bytes, pos: int, end: int, api_key: int, version: int) -> Unknown:
    """The :class:`Unknown` of a record of an unknown type or version at ``buf[pos:end]``."""
    msg = METADATA.get(api_key)
    reason = (f"unknown metadata record type {api_key}" if msg is None
              else f"unknown version {version} of {msg.name}")
    return Unknown(api_key, version, bytes(buf[pos:end]), reason)


def decoded(api_key: int, version: int, dec: codec.Decoder, buf: bytes, body: int,
            end: int) -> dict[str, Any]:
    """The body ``buf[body:end]`` of a record of a known type and version, decoded by
    ``dec``; :class:`DecodeError` naming the record when the bytes are not one."""
    try:
        return codec.decode_with(dec, METADATA[api_key].name, version, buf, body, end)
    except DecodeError as e:
        raise DecodeError(f"a {METADATA[api_key].name} v{version} that does not decode ({e})"
                          ) from None


def control_type(key: bytes | None) -> int:
    """The control type from a control record key (i16 version, i16 type). Raises
    :class:`DecodeError` where Kafka's ``ControlRecordType.parseTypeId`` fails: a key shorter
    than 4 bytes, a negative key version."""
    if key is None or len(key) < 4:
        raise DecodeError("control record without a 4-byte key")
    version, ctype = _CONTROL_KEY.unpack_from(key, 0)
    if version < 0:
        raise DecodeError(f"control record key version {version}; Kafka refuses a negative one")
    return int(ctype)


def decode_control(ctype: int, value: bytes | None) -> dict[str, Any] | Unknown:
    """Decode a control record value, as KRaft's reader (raft's ``RecordsIterator``) reads
    it: by the message's own Version field when mdshell knows that version, else as version
    0 (Kafka reads each at version 0); bytes after the message are passed over, as Kafka's
    reader leaves them. A type this mdshell does not know (a newer Kafka's) is kept raw.
    Raises :class:`DecodeError` where Kafka's reader fails, which is damage: an ABORT or
    COMMIT marker (a transaction marker of ordinary topics: never in a metadata log), a
    value of a known type that does not read."""
    raw = value or b""
    if ctype in (ABORT, COMMIT):
        raise DecodeError(f"a control record of type {ctype} ({control_name(ctype)}), a "
                          "transaction marker of ordinary topics, which Kafka's KRaft reader "
                          "refuses")
    msg = CONTROL.get(ctype)
    if msg is None:
        return Unknown(ctype, 0, raw, f"unknown control record type {ctype}")
    version = _I16.unpack_from(raw, 0)[0] if len(raw) >= 2 else 0
    if not msg.valid.contains(version):
        version = 0
    try:
        return _control_value(msg, version, raw)
    except DecodeError as e:
        if version != 0:
            try:
                return _control_value(msg, 0, raw)
            except DecodeError:
                pass
        raise DecodeError(f"a {msg.name} that does not read ({e})") from None


def _control_value(msg: Message, version: int, raw: bytes) -> dict[str, Any]:
    return codec.decode_with(codec.decoder_for(msg, version), msg.name, version, raw, 0,
                             len(raw), exact=False)
