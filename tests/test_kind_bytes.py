"""The run loop's own reading of BrokerRegistrationChangeRecord and ConfigRecord bytes
(``_cwalk.bytes_values``, the readers behind the compiled replay of a log tail's broker
changes and config sets) against the generated Python decoder (the reference): a record
it reads, it reads as the decoder does, on the encodings Kafka writes at every version and
on those bytes damaged every way; it reads every record as Kafka writes it that its
handler's common case holds (a broker's fenced or shutdown state; a config value set), and
leaves the rest to the decoder."""

from __future__ import annotations

import random
from typing import Any

import pytest

from mdshell.wire import codec
from mdshell.wire.native import piece
from mdshell.wire.records import METADATA, NAME_TO_KEY

from .test_change_bytes import _damaged

_cwalk = piece("_cwalk")
pytestmark = pytest.mark.skipif(_cwalk is None, reason="the compiled walk is not built")

CHANGE = NAME_TO_KEY["BrokerRegistrationChangeRecord"]
CONFIG = NAME_TO_KEY["ConfigRecord"]
KINDS = [(CHANGE, v) for v in range(4)] + [(CONFIG, 0)]


def _record(rng: random.Random, key: int, version: int) -> dict[str, Any]:
    if key == CONFIG:
        text = ("", "t", "topic-é-" * rng.randrange(3), "x" * 300)
        return {"resourceType": rng.choice((0, 2, 4, 16, -1)), "resourceName": rng.choice(text),
                "name": rng.choice(text), "value": rng.choice((None, *text))}
    d: dict[str, Any] = {"brokerId": rng.randrange(-(1 << 31), 1 << 31),
                         "brokerEpoch": rng.randrange(-(1 << 63), 1 << 63)}
    if rng.random() < 0.7:
        d["fenced"] = rng.choice((-1, 0, 1, 1, 2, -128))
    if version >= 1 and rng.random() < 0.5:
        d["inControlledShutdown"] = rng.choice((0, 1, 1, 2, -1))
    if version >= 2 and rng.random() < 0.3:
        d["logDirs"] = [rng.randbytes(16) for _ in range(rng.choice((0, 0, 1, 2)))]
    if version >= 3 and rng.random() < 0.3:
        d["cordonedLogDirs"] = rng.choice((None, [], [bytes(16)]))
    return d


def _common(d: dict[str, Any], key: int) -> bool:
    """Whether a decoded record is in its compiled handler's common case."""
    if key == CONFIG:
        return d["value"] is not None
    return (-1 <= d["fenced"] <= 1 and 0 <= d["inControlledShutdown"] <= 1
            and d["logDirs"] == [] and d["cordonedLogDirs"] is None)


def _reference(body: bytes, key: int, version: int) -> dict[str, Any] | None:
    try:
        d, at = codec.python_decoder_for(METADATA[key], version)(body, 0, len(body))
    except (codec.DecodeError, UnicodeDecodeError):  # codec.decode says which, and where
        return None
    return d if at == len(body) else None


def _agrees(body: bytes, key: int, version: int) -> bool:
    """Whether the run loop's reading agrees with the decoder; True when it read it."""
    assert _cwalk is not None
    got = _cwalk.bytes_values(key, b"ab" + body + b"c", 2, 2 + len(body), version)
    if got is None:
        return False
    want = _reference(body, key, version)
    assert want is not None and codec.UNKNOWN_TAGS not in want and _common(want, key), (
        body.hex(), got, want)
    assert got == {k: want[k] for k in got}, (body.hex(), got, want)
    assert all(type(got[k]) is type(want[k]) for k in got)
    return True


@pytest.mark.parametrize(("key", "version"), KINDS)
def test_every_record_as_kafka_writes_it(key: int, version: int) -> None:
    rng = random.Random(key * 10 + version)
    read = 0
    for _ in range(3000):
        body = codec.encode(METADATA[key], version, _record(rng, key, version))
        want = _reference(body, key, version)
        assert want is not None
        assert _agrees(body, key, version) == _common(want, key), body.hex()
        read += _common(want, key)
    assert 500 < read < 3000, read


@pytest.mark.parametrize(("key", "version"), KINDS)
def test_damaged_records_are_read_as_the_decoder_reads_them_or_left_to_it(
        key: int, version: int) -> None:
    rng = random.Random(200 + key * 10 + version)
    read = 0
    for _ in range(12000):
        body = codec.encode(METADATA[key], version, _record(rng, key, version))
        for _ in range(rng.randrange(1, 4)):
            body = _damaged(rng, body)
        read += _agrees(body, key, version)
    assert 300 < read < 11000, read


def test_what_it_leaves_to_the_decoder() -> None:
    assert _cwalk is not None
    head = bytes(4) + bytes(7) + b"\x05"  # broker 0, epoch 5
    for version, tail in ((0, b"\x01\x01\x01\x01"),  # tag 1 before version 1
                          (1, b"\x02\x01\x01\x01\x00\x01\x00"),  # out of order
                          (1, b"\x02\x00\x01\x01\x00\x01\x00"),  # twice
                          (1, b"\x01\x00\x02\x00\x01"),  # a size of 2
                          (1, b"\x01\x80\x00\x01\x01"),  # a longer varint
                          (2, b"\x01\x02\x11\x02" + bytes(16)),  # a log dir given
                          (3, b"\x01\x03\x01\x01"),  # cordoned log dirs given (empty)
                          (3, b"\x01\x04\x01\x00"),  # a tag no version knows
                          (4, b"\x00"), (0, b"\x00\x00")):  # a version it does not read; after
        body = head + tail
        assert _cwalk.bytes_values(CHANGE, body, 0, len(body), version) is None, body.hex()
    body = head + b"\x02\x00\x01\xff\x01\x01\x01"
    assert _cwalk.bytes_values(CHANGE, body, 0, len(body), 1) == {
        "brokerId": 0, "brokerEpoch": 5, "fenced": -1, "inControlledShutdown": 1}
    for body in (b"\x02\x02t\x02x\x00\x00",  # a removal (value null)
                 b"\x02\x02t\x02x\x02y\x01\x00\x00",  # a tagged field
                 b"\x02\x02t\x02x\x03\xff\xfe\x00",  # not UTF-8
                 b"\x02\x02t\x02x\x02y\x00\x00"):  # something after
        assert _cwalk.bytes_values(CONFIG, body, 0, len(body), 0) is None, body.hex()
    body = b"\x02\x02t\x02x\x02y\x00"
    assert _cwalk.bytes_values(CONFIG, body, 0, len(body), 0) == {
        "resourceType": 2, "resourceName": "t", "name": "x", "value": "y"}
    with pytest.raises(ValueError):
        _cwalk.bytes_values(CONFIG, body, 0, len(body) + 1, 0)


REGISTER = NAME_TO_KEY["RegisterBrokerRecord"]


def _registration(rng: random.Random, version: int) -> dict[str, Any]:
    """A RegisterBrokerRecord, its endpoints, features, rack and log dirs at random."""
    names = ("", "PLAINTEXT", "CONTROLLER-é", "x" * 200)
    d: dict[str, Any] = {
        "brokerId": rng.randrange(-(1 << 31), 1 << 31), "incarnationId": rng.randbytes(16),
        "brokerEpoch": rng.randrange(-(1 << 63), 1 << 63),
        "endPoints": [{"name": rng.choice(names), "host": rng.choice(names),
                       "port": rng.randrange(1 << 16), "securityProtocol": rng.randrange(-3, 4)}
                      for _ in range(rng.choice((0, 1, 3)))],
        "features": [{"name": rng.choice(names), "minSupportedVersion": rng.randrange(-2, 30),
                      "maxSupportedVersion": rng.randrange(-2, 30)}
                     for _ in range(rng.choice((0, 2, 5)))],
        "rack": rng.choice((None, "", "rack-é", "r" * 300)), "fenced": rng.random() < 0.5}
    if version >= 1:
        d["inControlledShutdown"] = rng.random() < 0.5
    if version >= 2:
        d["isMigratingZkBroker"] = rng.random() < 0.5
    if version >= 3 and rng.random() < 0.6:
        d["logDirs"] = [rng.randbytes(16) for _ in range(rng.choice((0, 1, 1, 2)))]
    if version >= 4 and rng.random() < 0.4:
        d["cordonedLogDirs"] = rng.choice((None, [], [bytes(16)]))
    return d


def _registration_agrees(body: bytes, version: int, section: bytes | None) -> bool:
    """Whether the run loop's reading of a registration agrees with the decoder (True when
    it read it). With `section` (the endpoints and features of the record before damage):
    what it reads with those very bytes, the decoder decodes."""
    assert _cwalk is not None
    got = _cwalk.bytes_values(REGISTER, b"ab" + body + b"c", 2, 2 + len(body), version)
    if got is None:
        return False
    want = _reference(body, REGISTER, version)
    if want is None:  # refused: for bytes of its endpoints or features, never taken then
        assert section is not None and got["section"] != section, body.hex()
        return True
    assert codec.UNKNOWN_TAGS not in want and len(want["logDirs"]) <= 1, (body.hex(), want)
    assert want["cordonedLogDirs"] is None, (body.hex(), want)
    fields = {k: v for k, v in got.items() if k != "section"}
    assert fields == {k: want[k] for k in fields}, (body.hex(), got, want)
    assert all(type(got[k]) is type(want[k]) for k in fields)
    assert got["section"] == _section(want), body.hex()  # what the decoder read there
    return True


def _section(d: dict[str, Any]) -> bytes:
    """The bytes of a registration's endpoints and features, as Kafka writes them."""
    body = codec.encode(METADATA[REGISTER], 0, {
        "brokerId": 0, "incarnationId": bytes(16), "brokerEpoch": 0,
        "endPoints": d["endPoints"], "features": d["features"], "rack": None, "fenced": False})
    return body[28:-3]  # after the ids and epoch; before the rack, fenced and tagged fields


@pytest.mark.parametrize("version", range(5))
def test_registrations_as_kafka_writes_them(version: int) -> None:
    rng = random.Random(300 + version)
    read = 0
    for _ in range(2000):
        d = _registration(rng, version)
        body = codec.encode(METADATA[REGISTER], version, d)
        common = len(d.get("logDirs", [])) <= 1 and d.get("cordonedLogDirs") is None
        assert _registration_agrees(body, version, None) == common, body.hex()
        read += common
    assert read > 1000, read


@pytest.mark.parametrize("version", range(5))
def test_damaged_registrations_are_read_as_the_decoder_reads_them_or_left_to_it(
        version: int) -> None:
    rng = random.Random(400 + version)
    read = 0
    for _ in range(8000):
        d = _registration(rng, version)
        body = codec.encode(METADATA[REGISTER], version, d)
        for _ in range(rng.randrange(1, 4)):
            body = _damaged(rng, body)
        read += _registration_agrees(body, version, _section(d))
    assert 300 < read < 7500, read


def test_names_and_ids_are_kept_by_their_bytes() -> None:
    """Config names and topic ids read from the bytes are kept by their bytes (``_kept.h``:
    tables of a few thousand slots, a newcomer replacing what hashes alike): many more
    distinct ones than slots, of every length and script, read again and again, are each
    what the decoder gives, and a name or id read twice in a row is one object."""
    assert _cwalk is not None
    rng = random.Random(11)
    alphabet = "abc.-_é日\U0001f600"
    names = ["".join(rng.choice(alphabet) for _ in range(rng.choice((0, 1, 7, 8, 9, 30, 64, 65,
                                                                     200))))
             for _ in range(12_000)]
    for i in range(40_000):
        d = {"resourceType": 2, "resourceName": rng.choice(names), "name": rng.choice(names),
             "value": "v"}
        body = codec.encode(METADATA[CONFIG], 0, d)
        assert _agrees(body, CONFIG, 0)
        if i % 50 == 0:
            first = _cwalk.bytes_values(CONFIG, body, 0, len(body), 0)
            again = _cwalk.bytes_values(CONFIG, body, 0, len(body), 0)
            for k in ("resourceName", "name"):
                assert first[k] == again[k]
                if len(d[k].encode()) <= 64:
                    assert first[k] is again[k]
    change = NAME_TO_KEY["PartitionChangeRecord"]
    ids = [rng.randbytes(16) for _ in range(10_000)]
    for i in range(30_000):
        tid = rng.choice(ids)
        body = codec.encode(METADATA[change], 0, {"topicId": tid, "partitionId": i, "leader": 1})
        got = _cwalk.change_values(body, 0, len(body), 0)
        assert got["topicId"] == tid
        assert _cwalk.change_values(body, 0, len(body), 0)["topicId"] is got["topicId"]
