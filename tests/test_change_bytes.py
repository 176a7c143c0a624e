"""The run loop's own reading of PartitionChangeRecord bytes (``_cwalk.change_values``, the
reader behind the compiled replay of a log tail's partition changes) against the
schema-driven decoders (the generated Python one is the reference): every record it reads,
it reads as they do, on the encodings Kafka writes at every version and on those bytes
damaged every way (a byte changed, cut, inserted, a tag out of order or unknown, a varint
in a longer form). What it leaves, the decoder reads and says what is wrong."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mdshell.wire import codec
from mdshell.wire.native import piece
from mdshell.wire.records import METADATA, NAME_TO_KEY

_cwalk = piece("_cwalk")
pytestmark = pytest.mark.skipif(_cwalk is None, reason="the compiled walk is not built")

MSG = METADATA[NAME_TO_KEY["PartitionChangeRecord"]]
VERSIONS = (0, 1, 2)
ARRAYS = ("isr", "replicas", "removingReplicas", "addingReplicas", "eligibleLeaderReplicas",
          "lastKnownElr")


def _record(rng: random.Random, version: int) -> dict[str, Any]:
    """A PartitionChangeRecord with a random choice of its fields given."""
    d: dict[str, Any] = {"partitionId": rng.randrange(-1, 1 << 31),
                         "topicId": rng.randbytes(16)}
    for name in ARRAYS[:4] + (ARRAYS[4:] if version >= 2 else ()):
        if rng.random() < 0.5:
            d[name] = [rng.randrange(-(1 << 31), 1 << 31) for _ in range(rng.choice(
                (0, 1, 3, 5, 200)))]
    if rng.random() < 0.5:
        d["leader"] = rng.choice((-1, 0, 7, (1 << 31) - 1, -(1 << 31)))
    if rng.random() < 0.3:
        d["leaderRecoveryState"] = rng.choice((0, 1, 127, -128))
    if version >= 1 and rng.random() < 0.3:
        d["directories"] = [rng.randbytes(16) for _ in range(rng.choice((0, 1, 3)))]
    return d


def _reference(body: bytes, version: int) -> dict[str, Any] | None:
    """What the generated Python decoder gives for the whole body (None: it refuses it)."""
    try:
        d, at = codec.python_decoder_for(MSG, version)(body, 0, len(body))
    except codec.DecodeError:
        return None
    return d if at == len(body) else None


def _agrees(body: bytes, version: int) -> bool:
    """Whether the run loop's reading agrees with the decoders; True when it read it."""
    assert _cwalk is not None
    got = _cwalk.change_values(body, 0, len(body), version)
    if got is None:
        return False
    want = _reference(body, version)
    assert want is not None and codec.UNKNOWN_TAGS not in want, body.hex()
    assert got == want and list(map(type, got.values())) == [
        type(want[k]) for k in got], (body.hex(), got, want)
    compiled = codec.decode(MSG, version, body, 0, len(body))
    assert compiled == got
    return True


@pytest.mark.parametrize("version", VERSIONS)
def test_every_record_as_kafka_writes_it(version: int) -> None:
    rng = random.Random(version)
    for _ in range(3000):
        body = codec.encode(MSG, version, _record(rng, version))
        assert _agrees(body, version), body.hex()


def _damaged(rng: random.Random, body: bytes) -> bytes:
    b = bytearray(body)
    how = rng.randrange(5)
    if how == 0 and b:
        b[rng.randrange(len(b))] = rng.randrange(256)
    elif how == 1:
        del b[rng.randrange(len(b) + 1):]
    elif how == 2:
        b.insert(rng.randrange(len(b) + 1), rng.randrange(256))
    elif how == 3 and len(b) > 21:  # the tagged fields' count or a varint in a longer form
        at = rng.randrange(20, len(b))
        b[at:at + 1] = bytes([b[at] | 0x80, 0])
    elif how == 4 and len(b) > 21:
        b[20] = rng.randrange(12)  # another count of tagged fields
    return bytes(b)


@pytest.mark.parametrize("version", VERSIONS)
def test_damaged_records_are_read_as_the_decoder_reads_them_or_left_to_it(version: int) -> None:
    rng = random.Random(100 + version)
    read = left = 0
    for _ in range(20000):
        body = codec.encode(MSG, version, _record(rng, version))
        for _ in range(rng.randrange(1, 4)):
            body = _damaged(rng, body)
        if _agrees(body, version):
            read += 1
        else:
            left += 1
    assert read > 1000 and left > 1000, (read, left)


def test_tags_the_version_does_not_know_or_out_of_order_are_left_to_the_decoder() -> None:
    assert _cwalk is not None
    head = bytes(4) + bytes(range(16))
    isr = bytes([0, 2, 2, 0, 0, 0, 1])  # tag 0, size 2... (a wrong size: left)
    leader = bytes([1, 4, 0, 0, 0, 5])
    lrs = bytes([5, 1, 1])
    elr = bytes([6, 5, 2, 0, 0, 0, 3])
    dirs = bytes([8, 17, 2]) + bytes(16)
    body = head + bytes([2]) + leader + lrs
    assert _cwalk.change_values(body, 0, len(body), 0) == {
        "topicId": bytes(range(16)), "partitionId": 0, "replicas": None, "directories": None,
        "isr": None, "removingReplicas": None, "addingReplicas": None, "leader": 5,
        "leaderRecoveryState": 1, "eligibleLeaderReplicas": None, "lastKnownElr": None}
    for version, body in ((0, head + bytes([1]) + elr), (1, head + bytes([1]) + elr),
                          (0, head + bytes([1]) + dirs),
                          (0, head + bytes([2]) + lrs + leader),  # out of order
                          (0, head + bytes([2]) + leader + leader),  # twice
                          (0, head + bytes([1]) + isr), (3, head + bytes([0]))):
        assert _cwalk.change_values(body, 0, len(body), version) is None, body.hex()
    for version in (1, 2):
        body = head + bytes([1]) + dirs
        assert _cwalk.change_values(body, 0, len(body), version) is not None
    body = head + bytes([1]) + elr
    assert _cwalk.change_values(body, 0, len(body), 2)["eligibleLeaderReplicas"] == [3]
