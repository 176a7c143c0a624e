"""Runs of same-shaped records framed at once (``wire/framerun.py``) give exactly what the
one-by-one record loop gives: the same ranges, or the same error, on every fixture's batches
and on record sections built to sit at each edge of a run (another length, a key, a null
value, a gap or a jump in the deltas, deltas crossing a varint's length, long varints,
another frame header, bytes flipped anywhere). Each test runs twice: with the compiled
framing (``_cwalk.frame``, which ``ranges_in`` tries first) and without it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mdshell.wire import batch as wb
from mdshell.wire.batch import RecordSpec, encode_record, frame_metadata_value
from mdshell.wire.framerun import RUN_MIN
from mdshell.wire.primitives import DecodeError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(params=["python", "compiled"], autouse=True)
def framing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "python":
        monkeypatch.setattr(wb, "cframe", None)
    elif wb.cframe is None:
        pytest.skip("the compiled framing is not built (MDSHELL_PURE=1, or no C compiler)")
    return str(request.param)


def _one_by_one(buf: bytes, pos: int, end: int, count: int, base: int,
                frame: bool) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []
    if wb._loop(buf, pos, end, count, base, frame, out) != end:
        raise DecodeError("batch record framing does not add up")
    return out


def _outcome(fn, *args):  # type: ignore[no-untyped-def]
    try:
        return fn(*args)
    except wb.UNDECODABLE as e:
        return type(e)


def _agree(buf: bytes, pos: int, end: int, count: int, base: int) -> None:
    for frame in (False, True):
        args = (buf, pos, end, count, base, frame)
        assert _outcome(wb.ranges_in, *args) == _outcome(_one_by_one, *args), (count, frame)


def _section(values: list[bytes | None], deltas: list[int] | None = None,
             key_at: int | None = None, ts: int = 0) -> bytes:
    deltas = deltas if deltas is not None else list(range(len(values)))
    return b"".join(encode_record(RecordSpec(d, ts, v, key=b"k" if i == key_at else None))
                    for i, (d, v) in enumerate(zip(deltas, values, strict=False)))


def _value(size: int, key: int = 2, version: int = 1) -> bytes:
    return frame_metadata_value(key, version, bytes(i % 251 for i in range(size)))


def _sections() -> list[tuple[str, bytes, int]]:
    """Record sections and their record counts, each at an edge of a run."""
    v = _value(60)
    n = 300
    same = [v] * n
    cases = [
        ("same", _section(same), n),
        ("one longer in the middle", _section([*same[:40], _value(61), *same[41:]]), n),
        ("a key in the middle", _section(same, key_at=70), n),
        ("a null value", _section([*same[:20], None, *same[21:]]), n),
        ("a gap in the deltas", _section(same, list(range(50)) + list(range(51, n + 1))), n),
        ("deltas going back", _section(same, list(range(40)) + list(range(30, n - 10))), n),
        ("deltas from 50 (crossing 64)", _section(same, list(range(50, 50 + n))), n),
        ("deltas crossing 8192", _section([v] * 40, list(range(8170, 8210))), 40),
        ("a long timestamp delta", _section(same, ts=300), n),
        ("frame version 0", _section([b"\x00" + v[1:]] * n), n),
        ("api key of two bytes", _section([frame_metadata_value(200, 0, b"x" * 50)] * n), n),
        ("a short value", _section([b"\x01\x02"] * n), n),
        ("empty values", _section([b""] * n), n),
        ("just under a run", _section([v] * (RUN_MIN - 1)), RUN_MIN - 1),
        ("just a run", _section([v] * RUN_MIN), RUN_MIN),
        ("mixed lengths", _section([_value(40 + i % 3) for i in range(n)]), n),
        ("long records", _section([_value(5000)] * 40), 40),
        ("null values", _section([None] * n), n),
        # one byte more for the delta from 64 on, one less of value: the same length
        ("deltas crossing 64, same length", _section([_value(60)] * 14 + [_value(59)] * (n - 14),
                                                     list(range(50, 50 + n))), n),
    ]
    return cases


@pytest.mark.parametrize("name,section,count", _sections(),
                         ids=lambda x: x if isinstance(x, str) else "")
def test_a_section_frames_as_the_loop_does(name: str, section: bytes, count: int) -> None:
    pad = b"\xff" * 7  # bytes before and after: positions are not zero-based
    buf = pad + section + pad
    end = len(pad) + len(section)
    _agree(buf, len(pad), end, count, 1000)
    for wrong in (count - 1, count + 1):  # a record count the bytes do not add up to
        _agree(buf, len(pad), end, wrong, 1000)
    _agree(buf, len(pad), end - 1, count, 1000)  # cut short


def test_flipped_bytes_frame_as_the_loop_does() -> None:
    rng = random.Random(7)
    sections = _sections()
    for _ in range(3000):
        _name, section, count = rng.choice(sections)
        data = bytearray(section)
        for _flip in range(rng.randint(1, 3)):
            i = rng.randrange(len(data))
            data[i] = rng.choice((data[i] ^ (1 << rng.randrange(8)), rng.randrange(256)))
        _agree(bytes(data), 0, len(data), count, 5)


def test_every_fixture_batch_frames_as_the_loop_does(framing: str) -> None:
    seen = runs = 0
    for f in sorted(FIXTURES.glob("*/**/*")):
        if f.suffix not in (".log", ".checkpoint") or not f.is_file():
            continue
        data = f.read_bytes()
        pos = 0
        while pos + wb.HEADER_SIZE <= len(data):
            try:
                b = wb.parse_header(data, pos)
                buf, start, end = b.payload()
            except wb.UNDECODABLE:
                break
            _agree(buf, start, end, b.count, b.base_offset)
            if framing == "compiled" and end <= len(buf):  # framed in C, not left to the loop
                for meta in (False, True):
                    framed = wb.cframe(buf, start, end, b.count, b.base_offset, meta)
                    assert framed == _outcome(_one_by_one, buf, start, end, b.count,
                                              b.base_offset, meta), (f, b.base_offset)
            seen += 1
            runs += b.count >= RUN_MIN
            pos = b.pos + b.size
    assert seen > 100 and runs > 5, (seen, runs)
