"""ClearElrRecord's compiled filter (``_cwalk.elr_held``: which partitions of a topic may
hold eligible leader replicas) against the reference, which decodes every partition: a
partition it leaves out holds no ELR and no last known ELR and decodes cleanly, on
PartitionRecords at every version as Kafka writes them and on those bytes damaged every way;
it leaves out every record of the encoding Kafka writes that holds none."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mdshell.image import model as m
from mdshell.image import replay
from mdshell.wire import codec
from mdshell.wire.native import piece
from mdshell.wire.records import METADATA, NAME_TO_KEY

from .test_change_bytes import _damaged

_cwalk = piece("_cwalk")
pytestmark = pytest.mark.skipif(_cwalk is None, reason="the compiled walk is not built")

MSG = METADATA[NAME_TO_KEY["PartitionRecord"]]
VERSIONS = (0, 1, 2)


def _ints(rng: random.Random) -> list[int]:
    return [rng.randrange(-(1 << 31), 1 << 31) for _ in range(rng.choice((0, 1, 3, 40)))]


def _record(rng: random.Random, version: int) -> dict[str, Any]:
    """A PartitionRecord, its ELR lists absent, null, empty or not at random (v2)."""
    d: dict[str, Any] = {"partitionId": rng.randrange(1 << 31), "topicId": rng.randbytes(16),
                         "replicas": _ints(rng), "isr": _ints(rng),
                         "removingReplicas": _ints(rng), "addingReplicas": _ints(rng),
                         "leader": rng.randrange(-1, 9), "leaderEpoch": rng.randrange(9),
                         "partitionEpoch": rng.randrange(9)}
    if rng.random() < 0.3:
        d["leaderRecoveryState"] = rng.choice((0, 1, -128))
    if version >= 1:
        d["directories"] = [rng.randbytes(16) for _ in range(rng.choice((0, 1, 3)))]
    if version >= 2:
        for name in ("eligibleLeaderReplicas", "lastKnownElr"):
            d[name] = rng.choice((None, [], [], [1], [3, 4]))
    return d


def _clean_without_elr(body: bytes, version: int) -> bool | None:
    """Whether the reference decodes the body cleanly with no ELR (None: it refuses it)."""
    try:
        d, at = codec.python_decoder_for(MSG, version)(body, 0, len(body))
    except codec.DecodeError:
        return None
    if at != len(body) or codec.UNKNOWN_TAGS in d:
        return False
    return not d["eligibleLeaderReplicas"] and not d["lastKnownElr"]


def _held(parts: dict[int, Any]) -> list[int]:
    assert _cwalk is not None
    return list(_cwalk.elr_held(parts))


@pytest.mark.parametrize("version", VERSIONS)
def test_records_as_kafka_writes_them(version: int) -> None:
    rng = random.Random(version)
    parts: dict[int, Any] = {}
    want = []
    for pid in range(3000):
        body = codec.encode(MSG, version, _record(rng, version))
        parts[pid] = (b"xy" + body + b"z", 2, 2 + len(body), version)
        if not _clean_without_elr(body, version):
            want.append(pid)
    assert _held(parts) == want
    assert 0 < len(want) < 3000 if version == 2 else want == []


@pytest.mark.parametrize("version", VERSIONS)
def test_damaged_records_it_leaves_out_hold_no_elr_and_decode(version: int) -> None:
    rng = random.Random(50 + version)
    parts: dict[int, Any] = {}
    for pid in range(20000):
        body = codec.encode(MSG, version, _record(rng, version))
        for _ in range(rng.randrange(1, 4)):
            body = _damaged(rng, body)
        parts[pid] = (body, 0, len(body), version)
    held = set(_held(parts))
    for pid, lazy in parts.items():
        if pid not in held:
            assert _clean_without_elr(lazy[0], version), lazy[0].hex()
    assert 1000 < len(held) < 19500, len(held)  # both sides tried, hundreds of times


def test_decoded_partitions_and_anything_else() -> None:
    p = m.Partition([1], [m.MIGRATING_DIR], [1], [], [], [], [], 1, 0, 0, 0)
    body = codec.encode(MSG, 2, {"topicId": bytes(16), "replicas": [1], "isr": [1],
                                 "removingReplicas": [], "addingReplicas": []})
    parts: dict[int, Any] = {
        0: p, 1: m.Partition([1], [m.MIGRATING_DIR], [1], [], [], [2], [], 1, 0, 0, 0),
        2: m.Partition([1], [m.MIGRATING_DIR], [1], [], [], [], [3], 1, 0, 0, 0),
        3: (body, 0, len(body), 2), 4: (body, 0, len(body), 3),  # a version it does not read
        5: (body, 1, len(body), 2), 6: (body, 0, len(body) + 1, 2), 7: (body, -1, 3, 2),
        8: (body, 0, len(body), 1 << 70), 9: None, 10: (body, 0, len(body))}
    assert _held(parts) == [1, 2, 4, 5, 6, 7, 8, 9, 10]
    with pytest.raises(TypeError):
        _held([])  # type: ignore[arg-type]
    assert replay._elr_held is _cwalk.elr_held  # type: ignore[union-attr]
