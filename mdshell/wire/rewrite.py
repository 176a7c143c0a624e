"""Write a batch again: the same header fields around new (or re-encoded) records.

Used to prove the codec (decode then encode must give the original bytes) and to cut a batch
at an offset (the image of a log prefix, for time-travel checks).
"""

from __future__ import annotations

from collections.abc import Iterable

from . import codec, compression, frames
from .batch import HEADER_SIZE, Batch, Record, RecordSpec, encode_batch, frame_metadata_value
from .batch import iter_records as _iter_records
from .control import CONTROL
from .records import METADATA


def spec_of(batch: Batch, r: Record, value: bytes | None) -> RecordSpec:
    return RecordSpec(r.offset - batch.base_offset, r.timestamp - batch.base_timestamp, value,
                      r.key, (), r.attributes)


def reencoded_value(batch: Batch, r: Record) -> bytes | None:
    """The record's value decoded and encoded again (raw when mdshell cannot decode it)."""
    if batch.is_control:
        ctype = frames.control_type(r.key)
        d = frames.decode_control(ctype, r.value)
        if isinstance(d, frames.Unknown):
            return d.raw
        return codec.encode(CONTROL[ctype], d["version"], d)
    key, version, value = frames.decode_metadata(r.buf, r.value_pos, r.value_end)
    if isinstance(value, frames.Unknown):
        return value.raw
    return frame_metadata_value(key, version, codec.encode(METADATA[key], version, value))


def rebuild(batch: Batch, specs: Iterable[RecordSpec], *,
            keep_last_offset_delta: bool = True) -> bytes:
    """A batch with ``batch``'s header fields and codec (xerial framing kept) and these
    records. ``keep_last_offset_delta=False`` recomputes it (for a cut batch)."""
    start = batch.pos + HEADER_SIZE
    xerial = batch.buf[start:start + 8] == compression.XERIAL_MAGIC
    records = list(specs)
    return encode_batch(batch.base_offset, records, epoch=batch.epoch,
                        base_timestamp=batch.base_timestamp, max_timestamp=batch.max_timestamp,
                        attributes=batch.attributes, producer_id=batch.producer_id,
                        producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
                        last_offset_delta=(batch.last_offset_delta if keep_last_offset_delta
                                           else None),
                        xerial=xerial)


def reencode(batch: Batch) -> bytes:
    """Decode every record of ``batch`` and write the batch again with the generic encoder."""
    return rebuild(batch, (spec_of(batch, r, reencoded_value(batch, r))
                           for r in _iter_records(batch)))


def cut(batch: Batch, upto: int) -> bytes:
    """``batch`` holding only its records with offsets <= upto (values untouched)."""
    return rebuild(batch, (spec_of(batch, r, r.value) for r in _iter_records(batch)
                           if r.offset <= upto), keep_last_offset_delta=False)
