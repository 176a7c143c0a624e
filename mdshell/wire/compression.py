"""Record batch compression codecs (attribute bits 0-2), all through cramjam.

Java's snappy-java writes Kafka batches in xerial framing (a 16-byte header, then blocks of
``[int32 length][raw snappy]``); some non-Java producers write raw snappy. Both are read.

LZ4 is written as Kafka's ``Lz4BlockOutputStream`` writes it, because Kafka reads nothing else
(it rejects linked blocks with "Dependent block stream is unsupported"): an LZ4 frame with
independent blocks of at most 64 KiB, no block or content checksum, no content size.
"""

from __future__ import annotations

import struct

# cramjam is imported where a payload is (de)compressed: most metadata batches are not, and a
# one-shot command on them does not pay for the import.

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
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


def _xerial_decompress(data: bytes) -> bytes:
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
        out += bytes(cramjam.snappy.decompress_raw(data[pos:pos + n]))
        pos += n
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


def decompress(codec: int, data: bytes) -> bytes:
    if codec == NONE:
        return data
    import cramjam

    try:
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == SNAPPY:
            if data[:8] == XERIAL_MAGIC:
                return _xerial_decompress(data)
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except CompressionError:
        raise
    except Exception as e:  # cramjam raises its own DecompressionError
        raise CompressionError(f"{NAMES[codec]} payload does not decompress: {e}") from None
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
