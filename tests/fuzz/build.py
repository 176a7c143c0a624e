"""Bytes for the reader tests, made by the test itself with mdshell's writer.

Metadata values come from the schema's encoder (``mdshell.synth`` records); batches from
``mdshell.wire.batch.encode_batch``. :func:`record` writes one record with any of its framing
fields overridden (a length of -1, a count of 2**31 - 1, an over-long varint...), so a test
says exactly which field it breaks; :func:`batch` wraps raw records in a batch whose CRC is
right, so that the damage reaches the record decoder.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path

from mdshell.synth.records import ControlRec, meta
from mdshell.wire import compression
from mdshell.wire.batch import CONTROL_FLAG, RecordSpec, encode_batch
from mdshell.wire.crc import crc32c

from .mutate import varint

MD = "__cluster_metadata-0"
TOPIC_ID = bytes(range(1, 17))
OTHER_ID = bytes(range(17, 33))


def topic(name: str = "orders", tid: bytes = TOPIC_ID) -> bytes:
    return meta("TopicRecord", 0, name=name, topicId=tid).value()


def partition(pid: int = 0, tid: bytes = TOPIC_ID, replicas: tuple[int, ...] = (1, 2, 3),
              ) -> bytes:
    return meta("PartitionRecord", 0, partitionId=pid, topicId=tid, replicas=list(replicas),
                isr=list(replicas), removingReplicas=[], addingReplicas=[],
                leader=replicas[0], leaderEpoch=0, partitionEpoch=0).value()


def feature(level: int = 21) -> bytes:
    return meta("FeatureLevelRecord", 0, name="metadata.version", featureLevel=level).value()


def noop() -> bytes:
    return meta("NoOpRecord", 0).value()


def quota(entity: list[tuple[str, str | None]], key: str = "producer_byte_rate",
          value: float = 1024.0) -> bytes:
    return meta("ClientQuotaRecord", 0, key=key, value=value, remove=False,
                entity=[{"entityType": t, "entityName": n} for t, n in entity]).value()


def record(value: bytes | None, *, offset_delta: int = 0, timestamp_delta: int = 0,
           key: bytes | None = None, headers: Iterable[tuple[bytes, bytes | None]] = (),
           attributes: int = 0, **raw: bytes) -> bytes:
    """One record's bytes. Any framing field can be given as raw bytes instead (``length``,
    ``attributes_raw``, ``timestampDelta``, ``offsetDelta``, ``keyLength``, ``valueLength``,
    ``headerCount``, ``headers_raw``): the others are written as Kafka writes them, and the
    length (unless given) counts what was written."""
    body = raw.get("attributes_raw", bytes([attributes]))
    body += raw.get("timestampDelta", varint(timestamp_delta))
    body += raw.get("offsetDelta", varint(offset_delta))
    body += raw.get("keyLength", varint(-1 if key is None else len(key))) + (key or b"")
    body += raw.get("valueLength", varint(-1 if value is None else len(value))) + (value or b"")
    heads = list(headers)
    if "headers_raw" in raw:
        body += raw.get("headerCount", varint(len(heads))) + raw["headers_raw"]
    else:
        body += raw.get("headerCount", varint(len(heads)))
        for k, v in heads:
            body += varint(len(k)) + k + (varint(-1) if v is None else varint(len(v)) + v)
    return raw.get("length", varint(len(body))) + body


def batch(base: int, records: list[bytes], *, count: int | None = None, codec: int = 0,
          control: bool = False, epoch: int = 1, timestamp: int = 1_700_000_000_000,
          last_delta: int | None = None) -> bytes:
    """A batch of raw ``records`` (compressed with ``codec``) with a right CRC; ``count``
    and ``last_delta`` default to what the records are."""
    stored = compression.compress(codec, b"".join(records))
    out = encode_batch(base, [RecordSpec(0, 0, None)] * len(records), epoch=epoch,
                       base_timestamp=timestamp, max_timestamp=timestamp,
                       attributes=codec | (CONTROL_FLAG if control else 0),
                       last_offset_delta=len(records) - 1 if last_delta is None else last_delta,
                       payload=stored)
    return out if count is None else patch(out, 0, 57, ">i", count)


def patch(data: bytes, pos: int, at: int, fmt: str, value: int, *, crc: bool = True) -> bytes:
    """Header field ``at`` of the batch at ``pos`` set to ``value``; the CRC computed again
    (``crc``) so that the batch is valid bytes, or left as it was."""
    buf = bytearray(data)
    struct.pack_into(fmt, buf, pos + at, value)
    return recrc(bytes(buf), pos) if crc else bytes(buf)


def values_batch(base: int, values: list[bytes], **kw: object) -> bytes:
    """A plain metadata batch: one record per value, offset deltas 0, 1, 2..."""
    return batch(base, [record(v, offset_delta=i) for i, v in enumerate(values)],
                 **kw)  # type: ignore[arg-type]


def control_batch(base: int, ctype: int, data: Mapping[str, object], **kw: object) -> bytes:
    rec = ControlRec(ctype, dict(data))
    return batch(base, [record(rec.value(), key=rec.key_bytes())], control=True,
                 **kw)  # type: ignore[arg-type]


def recrc(data: bytes, pos: int) -> bytes:
    """The batch at ``pos`` with its CRC computed again."""
    buf = bytearray(data)
    length = struct.unpack_from(">i", buf, pos + 8)[0]
    struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21:pos + 12 + length])))
    return bytes(buf)


def write_log_dir(root: Path, files: Mapping[str, bytes]) -> Path:
    """A log dir holding ``files`` (names inside ``__cluster_metadata-0``)."""
    md = root / MD
    md.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (md / name).write_bytes(data)
    return root


def segment_name(base: int) -> str:
    return f"{base:020d}.log"


def snapshot_name(end: int, epoch: int = 1) -> str:
    return f"{end:020d}-{epoch:010d}.checkpoint"


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and os.path.getsize(p) >= 0}
