"""The wire layer: varints, codec, compression, batches, frames."""

from __future__ import annotations

import random
import struct

import cramjam
import pytest

from mdshell.wire import codec, compression, frames
from mdshell.wire.batch import (
    RecordSpec,
    encode_batch,
    frame_metadata_value,
    iter_records,
    metadata_ranges,
    parse_header,
)
from mdshell.wire.primitives import (
    DecodeError,
    read_uvarint,
    read_varint,
    uuid_from_str,
    uuid_sort_key,
    uuid_str,
    uvarint_bytes,
    varint_bytes,
)
from mdshell.wire.records import METADATA


@pytest.mark.parametrize("n", [0, 1, 63, 64, 127, 128, 300, 2**31 - 1, 2**35 - 1])
def test_uvarint_round_trip(n: int) -> None:
    raw = uvarint_bytes(n)
    assert read_uvarint(raw, 0) == (n, len(raw))


def test_uvarint_longer_than_kafka_reads_is_refused() -> None:
    """Kafka's ByteUtils.readUnsignedVarint reads at most 5 bytes."""
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        read_uvarint(uvarint_bytes(2**35), 0)
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        read_uvarint(b"\x80\x80\x80\x80\x80\x00", 0)  # an over-long zero


@pytest.mark.parametrize("n", [0, -1, 1, -64, 64, -(2**31), 2**31 - 1])
def test_zigzag_round_trip(n: int) -> None:
    raw = varint_bytes(n)
    assert read_varint(raw, 0) == (n, len(raw))


def test_zigzag_matches_kafka_encoding() -> None:
    assert varint_bytes(-1) == b"\x01"
    assert varint_bytes(1) == b"\x02"
    assert varint_bytes(64) == b"\x80\x01"


def test_truncated_varint_is_an_error() -> None:
    with pytest.raises(DecodeError):
        read_uvarint(b"\x80\x80", 0)


def test_uuid_string_form_is_kafkas_base64() -> None:
    raw = bytes(range(16))
    text = uuid_str(raw)
    assert text == "AAECAwQFBgcICQoLDA0ODw"
    assert uuid_from_str(text) == raw
    with pytest.raises(ValueError):
        uuid_from_str("short")


def test_uuid_order_is_signed_like_java() -> None:
    hi = b"\x80" + bytes(15)  # negative most-significant bits sort first in Java
    lo = b"\x01" + bytes(15)
    assert sorted([lo, hi], key=uuid_sort_key) == [hi, lo]


def _topic(name: str = "t", tid: bytes = b"\x01" * 16) -> dict:
    return {"name": name, "topicId": tid}


def test_codec_round_trip_and_defaults() -> None:
    msg = METADATA[0]
    d = {"brokerId": 3, "incarnationId": b"\x02" * 16, "brokerEpoch": 7,
         "endPoints": [{"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}],
         "features": [], "rack": None, "fenced": True, "inControlledShutdown": False,
         "isMigratingZkBroker": False, "logDirs": [b"\x03" * 16]}
    for version in (0, 1, 2, 3, 4):
        raw = codec.encode(msg, version, d)
        back = codec.decode(msg, version, raw, 0, len(raw))
        assert back["brokerId"] == 3 and back["endPoints"][0]["port"] == 9092
        # fields that do not exist at this version come back at their defaults
        assert back["logDirs"] == ([b"\x03" * 16] if version >= 3 else [])
        assert back["cordonedLogDirs"] is None
        assert codec.encode(msg, version, back) == raw


def test_unknown_tagged_fields_are_kept_and_re_encoded() -> None:
    msg = METADATA[2]
    raw = codec.encode(msg, 0, _topic())
    assert raw.endswith(b"\x00")  # no tagged fields
    with_tag = raw[:-1] + b"\x01" + b"\x07" + b"\x02" + b"hi"
    d = codec.decode(msg, 0, with_tag, 0, len(with_tag))
    assert d[codec.UNKNOWN_TAGS] == {7: b"hi"}
    assert codec.encode(msg, 0, d) == with_tag


def test_trailing_bytes_are_rejected() -> None:
    msg = METADATA[2]
    raw = codec.encode(msg, 0, _topic()) + b"\x00"
    with pytest.raises(DecodeError):
        codec.decode(msg, 0, raw, 0, len(raw))


def test_non_nullable_null_is_rejected() -> None:
    msg = METADATA[2]
    raw = b"\x00" + b"\x01" * 16 + b"\x00"  # name = null
    with pytest.raises(DecodeError):
        codec.decode(msg, 0, raw, 0, len(raw))


def test_partition_change_tagged_defaults() -> None:
    msg = METADATA[5]
    raw = codec.encode(msg, 0, {"partitionId": 4, "topicId": b"\x01" * 16, "isr": [1, 2]})
    d = codec.decode(msg, 0, raw, 0, len(raw))
    assert d["isr"] == [1, 2]
    assert d["leader"] == -2 and d["replicas"] is None and d["leaderRecoveryState"] == -1


def test_frames_report_unknown_keys_and_versions() -> None:
    body = codec.encode(METADATA[2], 0, _topic())
    for key, version, reason in ((99, 0, "unknown metadata record type 99"),
                                 (2, 7, "unknown version 7 of TopicRecord")):
        value = frame_metadata_value(key, version, body)
        k, v, d = frames.decode_metadata(value, 0, len(value))
        assert (k, v) == (key, version)
        assert isinstance(d, frames.Unknown) and d.reason == reason and d.raw == value


def test_control_records_decode_at_their_own_version() -> None:
    from mdshell.wire.control import CONTROL, LEADER_CHANGE

    msg = CONTROL[LEADER_CHANGE]
    d1 = {"version": 1, "leaderId": 2, "voters": [{"voterId": 2, "voterDirectoryId": b"\x05" * 16}],
          "grantingVoters": []}
    raw = codec.encode(msg, 1, d1)
    back = frames.decode_control(LEADER_CHANGE, raw)
    assert isinstance(back, dict) and back["voters"][0]["voterDirectoryId"] == b"\x05" * 16
    raw0 = codec.encode(msg, 0, {**d1, "version": 0})
    back0 = frames.decode_control(LEADER_CHANGE, raw0)
    assert isinstance(back0, dict) and back0["voters"][0]["voterDirectoryId"] == bytes(16)


def test_control_records_as_kafkas_reader_reads_them() -> None:
    """Bytes after the message are passed over (Kafka's generated reader stops at the
    message's end); a value of a known type that does not read, an ABORT or COMMIT marker
    and a negative key version are refused; an unknown type is kept raw."""
    from mdshell.wire.control import CONTROL, KRAFT_VERSION, LEADER_CHANGE, SNAPSHOT_HEADER

    leader = codec.encode(CONTROL[LEADER_CHANGE], 0, {"version": 0, "leaderId": 3,
                                                       "voters": [], "grantingVoters": []})
    got = frames.decode_control(LEADER_CHANGE, leader + b"\x07\x07")
    assert isinstance(got, dict) and got["leaderId"] == 3
    for ctype, value in ((LEADER_CHANGE, leader[:3]), (SNAPSHOT_HEADER, b"\x00\x00\x01"),
                         (KRAFT_VERSION, b"\x00\x00"), (0, b"\x00" * 6), (1, b"\x00" * 6)):
        with pytest.raises(DecodeError):
            frames.decode_control(ctype, value)
    assert isinstance(frames.decode_control(9, b"\x00\x00\x01"), frames.Unknown)
    assert frames.control_type(b"\x00\x01\x00\x02") == LEADER_CHANGE  # key version 1: read
    with pytest.raises(DecodeError):
        frames.control_type(b"\xff\xff\x00\x02")


@pytest.mark.parametrize("codec_id", [compression.NONE, compression.GZIP, compression.SNAPPY,
                                      compression.LZ4, compression.ZSTD])
def test_compressed_batches_round_trip(codec_id: int) -> None:
    values = [frame_metadata_value(2, 0, codec.encode(METADATA[2], 0, _topic(f"t{i}")))
              for i in range(50)]
    raw = encode_batch(100, [RecordSpec(i, 0, v) for i, v in enumerate(values)],
                       attributes=codec_id, base_timestamp=1000)
    b = parse_header(raw, 0)
    assert b.crc_ok() and b.compression == codec_id
    assert b.last_offset == 149 and b.max_timestamp == 1000
    buf, ranges = metadata_ranges(b)
    assert [r[0] for r in ranges] == list(range(100, 150))
    assert [bytes(buf[r[1]:r[2]]) for r in ranges] == values
    recs = list(iter_records(b))
    assert [r.timestamp for r in recs] == [1000] * 50


def test_raw_snappy_without_xerial_framing_is_read() -> None:
    data = b"hello kafka " * 100
    raw = compression.compress(compression.SNAPPY, data, xerial=False)
    assert not raw.startswith(compression.XERIAL_MAGIC)
    assert compression.decompress(compression.SNAPPY, raw) == data
    framed = compression.compress(compression.SNAPPY, data)
    assert framed.startswith(compression.XERIAL_MAGIC)
    assert compression.decompress(compression.SNAPPY, framed) == data


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of a short input (< 16 bytes), from the algorithm's specification."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask
    h = (seed + p5 + len(data)) & mask
    i = 0
    while i + 4 <= len(data):
        h = rotl((h + int.from_bytes(data[i:i + 4], "little") * p3) & mask, 17) * p4 & mask
        i += 4
    for byte in data[i:]:
        h = rotl((h + byte * p5) & mask, 11) * p1 & mask
    h ^= h >> 15
    h = h * p2 & mask
    h ^= h >> 13
    h = h * p3 & mask
    return h ^ (h >> 16)


def test_lz4_frames_are_kafkas() -> None:
    """Kafka reads only independent blocks (FLG 0x60), 64 KiB max (BD 0x40), no checksums."""
    noise = random.Random(1).randbytes(65536)  # an incompressible block: stored as is
    data = bytes(range(256)) * 512 + noise + b"x" * 100_000
    z = compression.compress(compression.LZ4, data)
    assert z[:4] == bytes.fromhex("04224d18") and z[4] == 0x60 and z[5] == 0x40
    assert z[6] == (_xxh32(z[4:6]) >> 8) & 0xFF
    pos, blocks = 7, []
    while (n := int.from_bytes(z[pos:pos + 4], "little")) != 0:
        size, chunk = n & 0x7FFFFFFF, data[len(blocks) * 65536:(len(blocks) + 1) * 65536]
        body = z[pos + 4:pos + 4 + size]
        # each block decodes on its own: no block refers to an earlier one
        alone = body if n >> 31 else cramjam.lz4.decompress_block(body, output_len=len(chunk))
        assert bytes(alone) == chunk
        blocks.append(n >> 31)
        pos += 4 + size
    assert pos + 4 == len(z)  # the end mark, then nothing: no content checksum
    assert len(blocks) == -(-len(data) // 65536) and 1 in blocks and 0 in blocks
    assert compression.decompress(compression.LZ4, z) == data


def test_corrupt_compressed_payload_is_a_clear_error() -> None:
    with pytest.raises(compression.CompressionError, match="zstd"):
        compression.decompress(compression.ZSTD, b"not zstd at all")


def test_crc_detects_a_flipped_bit() -> None:
    raw = bytearray(encode_batch(0, [RecordSpec(0, 0, b"\x01\x14\x00\x00")]))
    assert parse_header(bytes(raw), 0).crc_ok()
    raw[-2] ^= 0x10
    assert not parse_header(bytes(raw), 0).crc_ok()


def test_batch_header_layout() -> None:
    raw = encode_batch(42, [RecordSpec(0, 0, b"x")], epoch=7, base_timestamp=5)
    base, length, epoch, magic = struct.unpack_from(">qiib", raw, 0)
    assert (base, length + 12, epoch, magic) == (42, len(raw), 7, 2)


@pytest.mark.parametrize(("head", "want"), [
    (b"\x01\x05\x00", (5, 0, 3)),
    (b"\x81\x00\x05\x00", (5, 0, 4)),  # frame version 1 in two bytes
    (b"\x81\x80\x80\x80\x08\x02\x00", (2, 0, 7)),  # bit 31 set: a negative int, cast: 1
    (b"\x01\x82\x80\x80\x80\x08\x00", (2, 0, 7)),  # the type read so: 2
    (b"\x00\x05\x00", None), (b"\x02\x05\x00", None),  # frame versions Kafka refuses
    (b"\x81\x80\x80\x80\x07\x02\x00", None),  # past 32767
    (b"\x01\x80\x80\x02\x00", None), (b"\x01\x02\x80\x80\x02", None),
    (b"\x01\xff\xff\x83\x80\x08\x00", None),  # a type that casts to -1
    (b"\x01\x85\x80", None), (b"\x01\x80\x80\x80\x80\x80\x01\x00", None),  # cut; 6 bytes
])
def test_the_frame_header_is_read_as_kafkas_serde_reads_it(
        head: bytes, want: tuple[int, int, int] | None) -> None:
    """AbstractApiMessageSerde.read: each varint's low 32 bits as a Java int, refused past
    32767 (a negative int passes) and cast to a short; frame version 1 only."""
    if want is None:
        with pytest.raises(DecodeError):
            frames.peek_frame(head + b"\x00", 0)
    else:
        assert frames.peek_frame(head + b"\x00", 0) == want
