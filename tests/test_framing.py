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


def _agree(buf: bytes, pos: int, end: int, count: int, base: int = 0, base_ts: int = 0,
           control: bool = False, batch_size: int = framing.NO_LIMIT) -> object:
    """The outcome (records, or DecodeError) of both framings in both shapes, which must
    be the same; the METADATA one is returned."""
    out = None
    for shape in (framing.METADATA, framing.FULL):
        args = (buf, pos, end, count, base, base_ts, shape, control, batch_size)
        want = _python(*args)
        if _cwalk is not None:
            assert _compiled(*args) == want, (buf.hex(), args[1:])
        if shape == framing.METADATA:
            out = want
    return out


def _value(key: int = 20, version: int = 0, body: bytes = b"\x00") -> bytes:
    return frame_metadata_value(key, version, body)


def _raw(attrs: bytes = b"\x00", ts: bytes = b"\x00", off: bytes = b"\x00",
         key: bytes = b"\x01", value: bytes | None = None, headers: bytes = b"\x00",
         length: bytes | None = None) -> bytes:
    """A record from the bytes of each field (``length`` None: the right one; ``key``
    ``b"\\x01"``: the varint -1, no key)."""
    v = _value() if value is None else value
    body = attrs + ts + off + key + varint_bytes(len(v)) + v + headers
    return (varint_bytes(len(body)) if length is None else length) + body


def _body(body: bytes) -> bytes:
    """A record of these bytes after its length."""
    return varint_bytes(len(body)) + body


def _batches() -> list[tuple[bytes, int, int, int, int, int, bool, int]]:
    """(buffer, records start, end, count, base, base timestamp, control, size) of every
    uncompressed batch of the fixtures."""
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
                            b.base_timestamp, b.is_control, b.size))
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
_NULL_VALUE = b"\x00\x00\x00\x01\x01\x00"  # attributes, deltas, no key, value length -1, headers
EDGES: list[tuple[str, bytes, bool]] = [
    ("a plain record", _raw(), True),
    ("length 0", b"\x00" + _raw()[1:], False),
    ("length -1", varint_bytes(-1) + _raw()[1:], False),
    ("length -2 (steps back onto itself)", varint_bytes(-2) + _raw()[1:], False),
    ("length past the section", varint_bytes(1000) + _raw()[1:], False),
    ("length one short: the value's last byte read as the header count",
     _raw(length=varint_bytes(len(_raw()) - 2)), False),
    ("length 1: the header count alone", b"\x02\x00", False),
    ("a timestamp delta of 1", _raw(ts=varint_bytes(1)), False),
    ("a timestamp delta of -1", _raw(ts=varint_bytes(-1)), False),
    ("a 10-byte timestamp delta of 0", _raw(ts=b"\x80" * 9 + b"\x00"), True),
    ("an 11-byte timestamp delta", _raw(ts=b"\x80" * 10 + b"\x00"), False),
    ("a 5-byte offset delta", _raw(off=b"\x80" * 4 + b"\x00"), True),
    ("a 6-byte offset delta", _raw(off=b"\x80" * 5 + b"\x00"), False),
    ("an offset delta of 1000 (read, not used)", _raw(off=varint_bytes(1000)), True),
    ("an offset delta past 32 bits (Kafka keeps the low 32)", _raw(off=b"\xff" * 4 + b"\x7f"),
     True),
    ("key length -2: no key (Kafka: any negative)", _raw(key=varint_bytes(-2)), True),
    ("an empty key", _raw(key=varint_bytes(0)), False),
    ("a 3-byte key", _raw(key=varint_bytes(3) + b"abc"), False),
    ("key length past the record", _raw(key=varint_bytes(100) + b"abc"), False),
    ("value length -1: no value", _body(_NULL_VALUE), False),
    ("an empty value", _raw(value=b""), False),
    ("a one-byte value", _raw(value=b"\x07"), True),
    ("value length past the record", _body(b"\x00\x00\x00\x01" + varint_bytes(50) + _value()
                                           + b"\x00"), False),
    ("the value running into the header count", _body(
        b"\x00\x00\x00\x01" + varint_bytes(len(_value()) + 1) + _value() + b"\x00"), False),
    ("header count 1", _raw(headers=varint_bytes(1)), False),
    ("header count -1", _raw(headers=varint_bytes(-1)), False),
    ("one header", _raw(headers=varint_bytes(1) + varint_bytes(1) + b"k"
                        + varint_bytes(2) + b"vv"), False),
    ("a byte between the value and the header count (passed over, as Kafka does)",
     _raw(headers=b"\x05\x00"), True),
    ("a header count of 0 as two bytes (Kafka reads the last byte alone)",
     _raw(headers=b"\x80\x00"), True),
    ("a header count of 1 as two bytes", _raw(headers=b"\x81\x00"[::-1]), False),
    ("a 6-byte record length", b"\x80" * 5 + b"\x00" + _raw()[1:], False),
]


@pytest.mark.parametrize(("what", "raw", "ok"), EDGES, ids=[e[0] for e in EDGES])
def test_each_rule_at_its_edge(what: str, raw: bytes, ok: bool) -> None:
    buf = b"\xee" * 5 + raw + b"\xee" * 5  # other bytes around: nothing read outside
    got = _agree(buf, 5, 5 + len(raw), 1, 100)
    assert (got is not DecodeError) is ok, (what, got)


def test_control_records_need_a_key_and_a_value() -> None:
    key = varint_bytes(4) + b"\x00\x00\x00\x02"
    assert _agree(_raw(key=key), 0, len(_raw(key=key)), 1, control=True) != DecodeError
    for raw in (_raw(), _raw(key=varint_bytes(0)), _raw(key=key, value=b"")):
        assert _agree(raw, 0, len(raw), 1, control=True) is DecodeError
    raw = _raw(key=key)
    assert _agree(raw, 0, len(raw), 1) is DecodeError  # a key on a metadata record


def test_no_record_longer_than_its_batch() -> None:
    """Kafka's reader refuses a record longer than its batch on disk (a compressed batch's
    records may be longer than the batch)."""
    raw = _raw()
    n = len(raw) - 1  # the record's length field is one byte
    assert _agree(raw, 0, len(raw), 1, batch_size=n) != DecodeError
    assert _agree(raw, 0, len(raw), 1, batch_size=n - 1) is DecodeError


def test_offsets_are_numbered_by_place_in_64_bits() -> None:
    raw = _raw(off=varint_bytes(7)) + _raw(off=varint_bytes(3))
    assert [r[0] for r in _agree(raw, 0, len(raw), 2, 40)] == [40, 41]  # type: ignore[union-attr]
    assert _agree(raw, 0, len(raw), 2, INT64_MAX - 1) != DecodeError
    assert _agree(raw, 0, len(raw), 2, INT64_MAX) is DecodeError
    assert _agree(raw, 0, len(raw), 1, INT64_MAX) != DecodeError


def test_the_count_of_records_is_read() -> None:
    two = _raw() + _raw(off=varint_bytes(1))
    assert len(_agree(two, 0, len(two), 2)) == 2  # type: ignore[arg-type]
    # bytes after the count's records are passed over, as Kafka's reader passes them over
    assert len(_agree(two, 0, len(two), 1)) == 1  # type: ignore[arg-type]
    assert _agree(two, 0, len(two), 3) is DecodeError  # one missing
    assert _agree(two, 0, len(two), -1) is DecodeError
    # no records: raft's Batch.data and Batch.control refuse a batch without one
    assert _agree(b"", 0, 0, 0) is DecodeError
    assert _agree(two, 0, len(two), 0) is DecodeError


def test_what_comes_out() -> None:
    value = _value(5, 1, b"xyz")
    raw = encode_record(RecordSpec(2, 0, value))
    recs = framing.frame(raw, 0, len(raw), 1, 40, 1000)
    vpos = raw.index(value)
    assert recs == [(40, vpos, vpos + len(value), 5, 1, vpos + 3)]
    raw = (encode_record(RecordSpec(0, 0, b"\x01", key=b"k"))
           + encode_record(RecordSpec(3, 0, b"\x09", key=b"kk")))
    full = framing.frame(raw, 0, len(raw), 2, 40, 1000, framing.FULL, True)
    off, ts, attrs, kpos, kend, vpos, vend, hpos = full[1]
    assert (off, ts, attrs, raw[kpos:kend], raw[vpos:vend]) == (41, 1000, 0, b"kk", b"\x09")
    assert hpos == len(raw) - 1 and raw[hpos] == 0
    # a frame header in its long form is left to the general reader
    long_form = uvarint_bytes(1) + uvarint_bytes(200) + uvarint_bytes(0) + b"\x00"
    raw = encode_record(RecordSpec(0, 0, long_form))
    assert framing.frame(raw, 0, len(raw), 1, 0)[0][3:5] == (-1, -1)


def test_random_damage_frames_the_same() -> None:
    """Bytes changed, flipped, inserted, cut and counts off by one, in fixture batches and
    in records with keys and headers: both framings give the same records or refuse."""
    rng = random.Random(31)
    sections = [(bytes(d[p:e]), c, b, t) for d, p, e, c, b, t, _c, _s
                in rng.sample(_batches(), 80)]
    for _ in range(40):
        specs = [RecordSpec(i, rng.choice([0, 0, 0, 1, -1]),
                            rng.choice([None, b"", rng.randbytes(9)]),
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
            control = rng.random() < 0.3
            refused += _agree(bytes(b), 0, len(b), c, base, base_ts, control,
                              rng.choice([framing.NO_LIMIT, len(b)])) is DecodeError
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
