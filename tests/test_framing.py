"""The one definition of a batch's records (``wire/framing.py``): its rules, and the compiled
framing (``_cwalk.frame``, whose ``parse_record`` the compiled replay loop uses too) giving
exactly what the Python reference gives, records or refusal, on every fixture's batches, on
records built to sit on each rule's edge, and on random damage."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path

import pytest

from mdshell.wire import framing
from mdshell.wire.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    RecordSpec,
    encode_record,
    frame_metadata_value,
    parse_header,
)
from mdshell.wire.native import piece
from mdshell.wire.primitives import DecodeError, uvarint_bytes, varint_bytes

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
_cwalk = piece("_cwalk")
INT64_MAX = (1 << 63) - 1


def _python(*args: object) -> object:
    try:
        return framing.frame_python(*args)  # type: ignore[arg-type]
    except DecodeError:
        return DecodeError


def _compiled(*args: object) -> object:
    assert _cwalk is not None
    got = _cwalk.frame(*args)
    return DecodeError if got is None else got


def _agree(buf: bytes, pos: int, end: int, count: int, base: int = 0,
           base_ts: int = 0) -> object:
    """The outcome (records, or DecodeError) of both framings in both shapes, which must
    be the same; the METADATA one is returned."""
    out = None
    for shape in (framing.METADATA, framing.FULL):
        want = _python(buf, pos, end, count, base, base_ts, shape)
        if _cwalk is not None:
            assert _compiled(buf, pos, end, count, base, base_ts, shape) == want, (
                buf.hex(), pos, end, count, base, base_ts, shape)
        if shape == framing.METADATA:
            out = want
    return out


def _value(key: int = 20, version: int = 0, body: bytes = b"\x00") -> bytes:
    return frame_metadata_value(key, version, body)


def _raw(attrs: bytes = b"\x00", ts: bytes = b"\x00", off: bytes = b"\x00",
         key: bytes = b"\x01", value: bytes | None = None, headers: bytes = b"\x00",
         length: bytes | None = None) -> bytes:
    """A record from the bytes of each field (``length`` None: the right one)."""
    v = _value() if value is None else value
    body = attrs + ts + off + key + varint_bytes(len(v)) + v + headers
    return (varint_bytes(len(body)) if length is None else length) + body


def _batches() -> list[tuple[bytes, int, int, int, int, int]]:
    """(buffer, records start, end, count, base, base timestamp) of every uncompressed batch
    of the fixtures."""
    out = []
    for path in sorted(FIXTURES.rglob("*")):
        if path.suffix not in (".log", ".checkpoint"):
            continue
        data = path.read_bytes()
        pos = 0
        while len(data) - pos >= HEADER_SIZE:
            b = parse_header(data, pos)
            if b.length < HEADER_SIZE - LOG_OVERHEAD or pos + b.size > len(data):
                break
            if not b.compression:
                out.append((data, pos + HEADER_SIZE, pos + b.size, b.count, b.base_offset,
                            b.base_timestamp))
            pos += b.size
    return out


def test_every_fixture_batch_frames_the_same() -> None:
    batches = _batches()
    assert len(batches) > 500
    framed = 0
    for args in batches:
        got = _agree(*args)
        framed += got is not DecodeError
    assert framed > 0.9 * len(batches)  # bad-* fixtures damage some


# The rules, each at its edge: (what, record bytes, accepted?)
EDGES: list[tuple[str, bytes, bool]] = [
    ("a plain record", _raw(), True),
    ("length 0", b"\x00" + _raw()[1:], False),
    ("length -1", varint_bytes(-1) + _raw()[1:], False),
    ("length -2 (steps back onto itself)", varint_bytes(-2) + _raw()[1:], False),
    ("length past the section", varint_bytes(1000) + _raw()[1:], False),
    ("length one short", _raw(length=varint_bytes(len(_raw()) - 2)), False),
    ("a 10-byte timestamp delta", _raw(ts=b"\x80" * 9 + b"\x00"), True),
    ("an 11-byte timestamp delta", _raw(ts=b"\x80" * 10 + b"\x00"), False),
    ("a 5-byte offset delta", _raw(off=b"\x80" * 4 + b"\x00"), True),
    ("a 6-byte offset delta", _raw(off=b"\x80" * 5 + b"\x00"), False),
    ("offset delta past 32 bits (Kafka keeps the low 32)", _raw(off=b"\xff" * 4 + b"\x7f"),
     True),
    ("key length -1: null", _raw(key=varint_bytes(-1)), True),
    ("key length -2: null (Kafka: any negative)", _raw(key=varint_bytes(-2)), True),
    ("a 3-byte key", _raw(key=varint_bytes(3) + b"abc"), True),
    ("key length past the record", _raw(key=varint_bytes(100) + b"abc"), False),
    ("value length -1: null", b"\x0c\x00\x00\x00\x01\x01\x00", True),
    ("value length -5: null (Kafka: any negative)", b"\x0c\x00\x00\x00\x01\x09\x00", True),
    ("header count -1", _raw(headers=varint_bytes(-1)), False),
    ("header count past the record", _raw(headers=varint_bytes(1000)), False),
    ("one header", _raw(headers=varint_bytes(1) + varint_bytes(1) + b"k"
                        + varint_bytes(2) + b"vv"), True),
    ("a header with a null value", _raw(headers=varint_bytes(1) + varint_bytes(1) + b"k"
                                        + varint_bytes(-1)), True),
    ("header key length -1", _raw(headers=varint_bytes(1) + varint_bytes(-1)
                                  + varint_bytes(0)), False),
    ("header key length -2 (steps back)", _raw(headers=varint_bytes(1) + varint_bytes(-2)
                                               + varint_bytes(0)), False),
    ("header value length past the record", _raw(headers=varint_bytes(1) + varint_bytes(1)
                                                 + b"k" + varint_bytes(50)), False),
    ("2^31 headers", _raw(headers=varint_bytes(2**31 - 1)), False),
    ("a byte past the fields", _raw(headers=b"\x00\x00"), False),
    ("a 6-byte record length", b"\x80" * 5 + b"\x00" + _raw()[1:], False),
]


@pytest.mark.parametrize(("what", "raw", "ok"), EDGES, ids=[e[0] for e in EDGES])
def test_each_rule_at_its_edge(what: str, raw: bytes, ok: bool) -> None:
    buf = b"\xee" * 5 + raw + b"\xee" * 5  # other bytes around: nothing read outside
    got = _agree(buf, 5, 5 + len(raw), 1, 100)
    assert (got is not DecodeError) is ok, (what, got)


def test_offsets_and_timestamps_stay_in_64_bits() -> None:
    raw = _raw(off=varint_bytes(1))
    assert _agree(raw, 0, len(raw), 1, INT64_MAX - 1) != DecodeError
    assert _agree(raw, 0, len(raw), 1, INT64_MAX) is DecodeError
    raw = _raw(ts=varint_bytes(-1))
    assert _agree(raw, 0, len(raw), 1, 0, -(1 << 63) + 1) != DecodeError
    assert _agree(raw, 0, len(raw), 1, 0, -(1 << 63)) is DecodeError


def test_the_count_must_match_the_records() -> None:
    two = _raw() + _raw(off=varint_bytes(1))
    assert len(_agree(two, 0, len(two), 2)) == 2  # type: ignore[arg-type]
    assert _agree(two, 0, len(two), 1) is DecodeError  # a record left over
    assert _agree(two, 0, len(two), 3) is DecodeError  # one missing
    assert _agree(two, 0, len(two), -1) is DecodeError
    assert _agree(b"", 0, 0, 0) == []


def test_what_comes_out() -> None:
    value = _value(5, 1, b"xyz")
    raw = (encode_record(RecordSpec(2, 7, value))
           + encode_record(RecordSpec(3, 9, None, key=b"kk", headers=(("h", b"v"),))))
    recs = framing.frame(raw, 0, len(raw), 2, 40, 1000)
    vpos = raw.index(value)
    assert recs[0] == (42, vpos, vpos + len(value), 5, 1, vpos + 3)
    assert recs[1][0] == 43 and recs[1][2] == -1
    full = framing.frame(raw, 0, len(raw), 2, 40, 1000, framing.FULL)
    off, ts, attrs, kpos, kend, _vpos, vend, hpos = full[1]
    assert (off, ts, attrs, raw[kpos:kend], vend) == (43, 1009, 0, b"kk", -1)
    assert framing.headers(raw, hpos, len(raw)) == [("h", b"v")]
    # a frame header in its long form is left to the general reader
    long_form = uvarint_bytes(1) + uvarint_bytes(200) + uvarint_bytes(0) + b"\x00"
    raw = encode_record(RecordSpec(0, 0, long_form))
    assert framing.frame(raw, 0, len(raw), 1, 0)[0][3:5] == (-1, -1)


def test_random_damage_frames_the_same() -> None:
    """Bytes changed, flipped, inserted, cut and counts off by one, in fixture batches and
    in records with keys and headers: both framings give the same records or refuse."""
    rng = random.Random(31)
    sections = [(bytes(d[p:e]), c, b, t) for d, p, e, c, b, t in rng.sample(_batches(), 80)]
    for _ in range(40):
        specs = [RecordSpec(i, rng.randrange(-5, 5), rng.choice([None, rng.randbytes(9)]),
                            key=rng.choice([None, b"", rng.randbytes(3)]),
                            headers=tuple(("h" * rng.randrange(3), rng.choice([None, b"x"]))
                                          for _ in range(rng.randrange(3))))
                 for i in range(rng.randrange(1, 6))]
        sections.append((b"".join(encode_record(s) for s in specs), len(specs), 10, 0))
    refused = 0
    for section, count, base, base_ts in sections:
        for _ in range(30):
            b = bytearray(section)
            how = rng.randrange(5)
            if how == 0 and b:
                b[rng.randrange(len(b))] = rng.choice([0, 1, 2, 3, 0x7F, 0x80, 0xFF])
            elif how == 1 and b:
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            elif how == 2:
                b.insert(rng.randrange(len(b) + 1), rng.randrange(256))
            elif how == 3:
                del b[rng.randrange(len(b) + 1):]
            c = count + (rng.choice([-1, 1]) if how == 4 else 0)
            refused += _agree(bytes(b), 0, len(b), c, base, base_ts) is DecodeError
    assert refused > 500


def test_a_huge_count_allocates_nothing() -> None:
    """A count of 2^31 over a few bytes is refused before any list is made."""
    raw = _raw()
    tracemalloc.start()
    try:
        assert _agree(raw, 0, len(raw), 2**31 - 1) is DecodeError
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000
