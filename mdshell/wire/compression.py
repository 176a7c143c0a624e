"""Record batch compression codecs (attribute bits 0-2), all through cramjam.

Java's snappy-java writes Kafka batches in xerial framing (a 16-byte header, then blocks of
``[int32 length][raw snappy]``); some non-Java producers write raw snappy. Both are read.

LZ4 is written as Kafka's ``Lz4BlockOutputStream`` writes it, because Kafka reads nothing else
(it rejects linked blocks with "Dependent block stream is unsupported"): an LZ4 frame with
independent blocks of at most 64 KiB, no block or content checksum, no content size.
"""

from __future__ import annotations

import struct
from typing import Any

# cramjam is imported where a payload is (de)compressed: most metadata batches are not, and a
# one-shot command on them does not pay for the import.

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
# The most a batch's records section may decompress to. Kafka's KRaft writer bounds a
# metadata batch, log and snapshot alike, at 8 MiB (KafkaRaftClient.MAX_BATCH_SIZE_BYTES: the
# BatchAccumulator's and RecordsSnapshotWriter's maxBatchSize) and writes it uncompressed
# (Compression.NONE), so no batch Kafka writes holds more records than that. A payload that
# would expand past it is refused (a decompression bomb, or not Kafka's): reading one batch
# never takes more memory or time than this much output.
RECORDS_MAX = 8 * 1024 * 1024
NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}
XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_BLOCK_LEN = struct.Struct(">i")

# Kafka's LZ4 frame header: magic, FLG 0x60 (version 1, independent blocks, no checksums, no
# content size), BD 0x40 (64 KiB blocks), and the header checksum: the second byte of
# xxHash32(FLG BD, seed 0), which is 0x82 for these two bytes.
_LZ4_HEADER = bytes.fromhex("04224d18" "60" "40" "82")
_LZ4_BLOCK = 64 * 1024
_LZ4_STORED = 0x80000000  # block length bit: the block is stored uncompressed
_LZ4_LEN = struct.Struct("<I")


class CompressionError(ValueError):
    """A compressed batch payload that cannot be decompressed."""


def _xerial_decompress(data: bytes, limit: int) -> bytes:
    import cramjam

    pos = _XERIAL_HEADER.size
    out = bytearray()
    while pos < len(data):
        if pos + 4 > len(data):
            raise CompressionError("truncated xerial snappy block header")
        (n,) = _BLOCK_LEN.unpack_from(data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise CompressionError("truncated xerial snappy block")
        block = data[pos:pos + n]
        if len(out) + cramjam.snappy.decompress_raw_len(block) > limit:
            raise CompressionError(_over("snappy", limit))
        out += bytes(cramjam.snappy.decompress_raw(block))
        pos += n
    return bytes(out)


def _over(name: str, limit: int) -> str:
    return (f"{name} payload expands past {limit // (1024 * 1024)} MiB, more than any batch "
            "Kafka writes (a decompression bomb, or not Kafka's)")


def _bounded(name: str, module: Any, data: bytes, limit: int) -> bytes:
    """``module.decompress_into`` a buffer of at most ``limit + 1`` bytes: the work and the
    memory stop there, whatever the payload claims. A small buffer first (most batches are
    small: a buffer zeroed for each of a log's one-record batches costs more than their
    decompression), then the largest."""
    size = min(limit + 1, max(1 << 10, 16 * len(data)))
    while True:
        out = bytearray(size)
        try:
            n = module.decompress_into(data, out)
        except Exception as e:  # cramjam's DecompressionError
            full = "whole buffer" in str(e)
            if full and size <= limit:
                size = limit + 1
                continue
            raise CompressionError(_over(name, limit) if full
                                   else f"{name} payload does not decompress: {e}") from None
        if n > limit:
            raise CompressionError(_over(name, limit))
        del out[n:]
        return bytes(out)


def _lz4_compress(data: bytes) -> bytes:
    import cramjam

    out = bytearray(_LZ4_HEADER)
    for i in range(0, len(data), _LZ4_BLOCK):
        chunk = data[i:i + _LZ4_BLOCK]
        packed = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(packed) >= len(chunk):  # incompressible: stored as is, like Kafka
            out += _LZ4_LEN.pack(len(chunk) | _LZ4_STORED) + chunk
        else:
            out += _LZ4_LEN.pack(len(packed)) + packed
    out += _LZ4_LEN.pack(0)  # end mark; no content checksum
    return bytes(out)


def decompress(codec: int, data: bytes, limit: int = RECORDS_MAX) -> bytes:
    """A batch's records section decompressed; :class:`CompressionError` when it does not
    decompress, or would expand past ``limit`` bytes (the work stops there)."""
    if codec == NONE:
        return data
    import cramjam

    name = NAMES.get(codec, str(codec))
    try:
        if codec == SNAPPY:
            if data[:8] == XERIAL_MAGIC:
                return _xerial_decompress(data, limit)
            if cramjam.snappy.decompress_raw_len(data) > limit:
                raise CompressionError(_over(name, limit))
            return bytes(cramjam.snappy.decompress_raw(data))
        module = {GZIP: cramjam.gzip, LZ4: cramjam.lz4, ZSTD: cramjam.zstd}.get(codec)
        if module is not None:
            return _bounded(name, module, data, limit)
    except CompressionError:
        raise
    except Exception as e:  # cramjam raises its own DecompressionError
        raise CompressionError(f"{name} payload does not decompress: {e}") from None
    raise CompressionError(f"unknown compression codec {codec}")


def compress(codec: int, data: bytes, *, xerial: bool = True) -> bytes:
    """Compress a payload the way Java Kafka does (xerial framing for snappy by default)."""
    if codec == NONE:
        return data
    import cramjam

    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:
        if not xerial:
            return bytes(cramjam.snappy.compress_raw(data))
        out = bytearray(_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1))
        block = 32 * 1024
        for i in range(0, len(data), block):
            chunk = bytes(cramjam.snappy.compress_raw(data[i:i + block]))
            out += _BLOCK_LEN.pack(len(chunk)) + chunk
        return bytes(out)
    if codec == LZ4:
        return _lz4_compress(data)
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")
