"""Record batches as Kafka's KRaft writers lay them out, built with ``mdshell.wire``.

Metadata records use the fast framing of :mod:`.fastpart`; the header, CRC and compression
come from ``mdshell.wire.batch.encode_batch`` and ``mdshell.wire.compression``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..wire import compression
from ..wire.batch import CONTROL_FLAG, RecordSpec, encode_batch
from .fastpart import frame_values
from .records import ControlRec


@dataclass(frozen=True, slots=True)
class Codec:
    """A batch compression choice: the attribute bits, plus snappy's framing."""

    name: str
    code: int
    xerial: bool = True


CODECS: dict[str, Codec] = {
    "none": Codec("none", compression.NONE),
    "gzip": Codec("gzip", compression.GZIP),
    "snappy": Codec("snappy", compression.SNAPPY, xerial=True),  # what Java writes
    "snappy-raw": Codec("snappy-raw", compression.SNAPPY, xerial=False),  # non-Java producers
    "lz4": Codec("lz4", compression.LZ4),
    "zstd": Codec("zstd", compression.ZSTD),
}
NONE = CODECS["none"]

_COUNT_ONLY = RecordSpec(0, 0, None)


def codec_named(name: str) -> Codec:
    try:
        return CODECS[name]
    except KeyError:
        raise ValueError(f"unknown compression {name!r}; choose from "
                         f"{', '.join(CODECS)}") from None


def metadata_batch(base_offset: int, values: Sequence[bytes], *, epoch: int,
                   timestamp: int, codec: Codec = NONE) -> bytes:
    """A data batch of metadata record values at offsets ``base_offset ...``."""
    raw, count = frame_values(values)
    payload = compression.compress(codec.code, raw, xerial=codec.xerial)
    # encode_batch takes the payload as it is; the records list only gives the count.
    return encode_batch(base_offset, [_COUNT_ONLY] * count, epoch=epoch,
                        base_timestamp=timestamp, max_timestamp=timestamp,
                        attributes=codec.code, last_offset_delta=count - 1,
                        payload=payload, xerial=codec.xerial)


def control_batch(base_offset: int, records: Sequence[ControlRec], *, epoch: int,
                  timestamp: int) -> bytes:
    """A control batch (never compressed, as Kafka writes them)."""
    specs = [RecordSpec(i, 0, r.value(), key=r.key_bytes()) for i, r in enumerate(records)]
    return encode_batch(base_offset, specs, epoch=epoch, base_timestamp=timestamp,
                        attributes=CONTROL_FLAG)


def generic_metadata_batch(base_offset: int, values: Sequence[bytes], *, epoch: int,
                           timestamp: int, codec: Codec = NONE) -> bytes:
    """The same batch as :func:`metadata_batch`, through the generic record encoder only.

    Slow; it exists so that tests (and doubters) can compare the two paths.
    """
    specs = [RecordSpec(i, 0, v) for i, v in enumerate(values)]
    return encode_batch(base_offset, specs, epoch=epoch, base_timestamp=timestamp,
                        attributes=codec.code, xerial=codec.xerial)


__all__ = ["CODECS", "NONE", "Codec", "codec_named", "control_batch",
           "generic_metadata_batch", "metadata_batch"]
