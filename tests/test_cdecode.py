"""The C record decoder (``wire/_cdecode.c``) gives exactly what the generated Python decoder
gives: on every message and version of the schema (random records through the encoder), on
every record of the fixtures and of the corpus, and on damaged records (the same result, or
the same exception and message). "Exactly" is checked type by type and in key order, not
only with ``==``.

The C decoders are built here with no fallback (``fallback=None``: None where C gives up), so
a test sees C's own answers and cannot pass by silently running the Python decoder.
The extension is imported directly, so these tests run under ``MDSHELL_PURE=1`` too; they
are skipped when it is not built. Cost: ~3 CPU-s (the corpus test ~3.5 s more).
"""

from __future__ import annotations

import glob
import math
import os
import random
import struct
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mdshell.source.walker import iter_batches
from mdshell.wire import cdecoder, codec
from mdshell.wire.batch import metadata_ranges
from mdshell.wire.codec import UNKNOWN_TAGS
from mdshell.wire.primitives import read_uvarint, uvarint_bytes
from mdshell.wire.records import METADATA
from mdshell.wire.schema import Field, Message, parse_schemas

from .conftest import CORPUS, need_corpus

_cdecode = pytest.importorskip("mdshell.wire._cdecode", reason="the C extension is not built")

ROOT = Path(__file__).resolve().parent.parent
Dec = Callable[[bytes, int, int], Any]
VERSIONS = [(m, v) for m in METADATA.values()
            for v in range(m.valid.low, (m.valid.high or m.valid.low) + 1)]
IDS = [f"{m.name}-v{v}" for m, v in VERSIONS]


def c_decoder(msg: Message, v: int, fallback: Dec | None = None) -> Dec:
    dec: Dec = _cdecode.Decoder(cdecoder.spec(msg.fields, v), fallback, UNKNOWN_TAGS)
    return dec


def same(a: Any, b: Any, where: str = "") -> None:
    """``a`` and ``b`` are equal, of the same types all the way down, dicts in the same key
    order, floats to the bit."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{where}: key order {list(a)} vs {list(b)}"
        for k in a:
            same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), f"{where}: lengths {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert struct.pack(">d", a) == struct.pack(">d", b), f"{where}: {a!r} vs {b!r}"
    else:
        assert a == b, f"{where}: {a!r} vs {b!r}"


def lists_in(x: Any) -> Iterator[list[Any]]:
    if isinstance(x, dict):
        for v in x.values():
            yield from lists_in(v)
    elif isinstance(x, list):
        yield x
        for v in x:
            yield from lists_in(v)


# ---------------------------------------------------------------- random records

_INT = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_UINT = {"uint16": 16, "uint32": 32}
_TEXT = ["", "a", "topic-1", "é", "日本語", "\U0001f600", "x" * 200, "nul\x00in"]


def _scalar(f: Field, rng: random.Random, version: int) -> Any:
    if f.type in _INT:
        bits = _INT[f.type]
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return rng.choice([lo, hi, 0, -1, 1, min(hi, 128), rng.randint(lo, hi)])
    if f.type in _UINT:
        return rng.choice([0, 1, (1 << _UINT[f.type]) - 1, rng.randrange(1 << _UINT[f.type])])
    if f.type == "float64":
        return rng.choice([0.0, -0.0, 1.5, -2.25e300, math.inf, -math.inf, 5e-324, rng.random()])
    if f.type == "bool":
        return rng.random() < 0.5
    if f.type == "uuid":
        return rng.choice([bytes(16), rng.randbytes(16)])
    if f.type == "string":
        return rng.choice(_TEXT)
    if f.type == "bytes":
        return rng.randbytes(rng.choice([0, 1, 5, 300]))
    return _struct(f.fields, rng, version)


def _value(f: Field, rng: random.Random, version: int) -> Any:
    if f.nullable and rng.random() < 0.25:
        return None
    if not f.is_array:
        return _scalar(f, rng, version)
    # 40 items: the Python decoder reads uuid arrays of 32 and more another way
    return [_scalar(f, rng, version) for _ in range(rng.choice([0, 1, 3, 40]))]


def _struct(fields: list[Field], rng: random.Random, version: int) -> dict[str, Any]:
    d = {f.key: _value(f, rng, version) for f in fields if f.versions.contains(version)}
    if rng.random() < 0.3:  # unknown tags: past the schema's, and tags of absent fields
        used = {f.tag for f in fields if f.tag is not None and f.versions.contains(version)}
        free = [t for t in [f.tag for f in fields if f.tag is not None] + [9, 70, 300, 99999]
                if t is not None and t not in used]
        d[UNKNOWN_TAGS] = {t: rng.randbytes(rng.choice([0, 2, 200]))
                           for t in rng.sample(free, min(len(free), rng.choice([1, 2])))}
    return d


@pytest.mark.parametrize(("msg", "version"), VERSIONS, ids=IDS)
def test_random_records_decode_the_same(msg: Message, version: int) -> None:
    """Random records of every message and version (nulls, empty and long arrays, extreme
    ints, non-ASCII text, unknown tags), encoded by codec.encode: C gives Python's result."""
    rng = random.Random(f"{msg.name}-{version}")
    py, c = codec.python_decoder_for(msg, version), c_decoder(msg, version)
    for _ in range(60):
        raw = codec.encode(msg, version, _struct(msg.fields, rng, version))
        buf = b"\xff" * 3 + raw + b"\xee" * 2  # not at 0, not to the end of the buffer
        got = c(buf, 3, 3 + len(raw))
        assert got is not None, "the C decoder gave up on a well-formed record"
        same(got, py(buf, 3, 3 + len(raw)))
        assert got == py(buf, 3, 3 + len(raw))
    empty = codec.encode(msg, version, {})
    same(c(empty, 0, len(empty)), py(empty, 0, len(empty)))


@pytest.mark.parametrize(("msg", "version"), VERSIONS, ids=IDS)
def test_default_lists_are_never_shared(msg: Message, version: int) -> None:
    """Two results never share a list (a caller may change its own); nor do C and Python."""
    raw = codec.encode(msg, version, {})
    c, py = c_decoder(msg, version), codec.python_decoder_for(msg, version)
    results = [c(raw, 0, len(raw))[0], c(raw, 0, len(raw))[0], py(raw, 0, len(raw))[0]]
    ids = [id(x) for r in results for x in lists_in(r)]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(("msg", "version"), VERSIONS, ids=IDS)
def test_repeated_and_shuffled_tags_decode_the_same(msg: Message, version: int) -> None:
    """Tags out of order and repeated (known and unknown ones: the last one wins), which
    the encoder never writes."""
    rng = random.Random(f"tags-{msg.name}-{version}")
    tagged = [f for f in msg.fields if f.tag is not None and f.versions.contains(version)]
    base = codec.encode(msg, version, {})
    assert base.endswith(b"\x00")  # no tagged field written: the count is the last byte
    entries: list[bytes] = []
    for f in tagged:
        for _ in range(2):
            raw = bytearray()
            codec._enc_value(f, _value(f, rng, version), raw, version)
            entries.append(uvarint_bytes(f.tag or 0) + uvarint_bytes(len(raw)) + raw)
    for tail in (b"a", b"bc"):
        entries.append(uvarint_bytes(500) + uvarint_bytes(len(tail)) + tail)
    rng.shuffle(entries)
    body = base[:-1] + uvarint_bytes(len(entries)) + b"".join(entries)
    got = c_decoder(msg, version)(body, 0, len(body))
    assert got is not None
    same(got, codec.python_decoder_for(msg, version)(body, 0, len(body)))


# Every kind the schema language has, beyond what Kafka's records use today: float, bool,
# unsigned and nullable arrays, a struct that is not in an array, tagged structs, fields
# that come and go with the version.
EVERY_KIND = parse_schemas("""
900 EveryKind 0-2
  A int8
  B int16
  C int32
  D int64
  E uint16
  F uint32
  G float64 =2.5
  H uuid
  I bool =true
  J string =x
  K bytes?
  L []int8
  M []int16
  N []int64?
  O []uint16
  P []uint32
  Q []float64
  R []bool
  S []string
  T []bytes?
  U []uuid?
  V Inner
    X int32
    Y []string v1+
    Z int8 tag=0 =3
  W []Item? v1+
    Name string?
    Vals []int32
  Old int32 v0-0 =7
  TA float64 tag=0 =1.5
  TB []Item2 tag=1
    Id uuid
  TC Inner3 v2+ tag=2
    R int16
    S []int64 tag=4
  TD bytes? tag=3 =null
  TE string v0-1 tag=5 =gone
""")[900]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_every_kind_of_field_decodes_the_same(version: int) -> None:
    msg = EVERY_KIND
    rng = random.Random(version)
    py = codec.python_decoder_for(msg, version)
    raw_c, c = c_decoder(msg, version), c_decoder(msg, version, py)
    for _ in range(100):
        body = codec.encode(msg, version, _struct(msg.fields, rng, version))
        got = raw_c(body, 0, len(body))
        assert got is not None
        same(got, py(body, 0, len(body)))
        for _ in range(10):
            buf, pos, end = _damaged(body, rng)
            same(_outcome(c, buf, pos, end), _outcome(py, buf, pos, end), buf.hex())


# ---------------------------------------------------------------- real records


def _records(paths: list[str]) -> dict[tuple[int, int, bytes], None]:
    """The distinct (key, version, body) of the metadata records in these files."""
    out: dict[tuple[int, int, bytes], None] = {}
    for path in paths:
        data = Path(path).read_bytes()
        for batch in iter_batches(path, data, [], check_crc=False):
            if batch.is_control:
                continue
            buf, ranges = metadata_ranges(batch)
            for _off, vpos, vend, key, ver, body in ranges:
                if vend < 0:
                    continue
                if key < 0:  # a frame in its long form: read the header here
                    _fv, body = read_uvarint(buf, vpos)
                    key, body = read_uvarint(buf, body)
                    ver, body = read_uvarint(buf, body)
                msg = METADATA.get(key)
                if msg is not None and msg.valid.contains(ver):
                    out[key, ver, buf[body:vend]] = None
    return out


def _files(root: Path) -> list[str]:
    return sorted(p for pat in ("**/*.log", "**/*.checkpoint")
                  for p in glob.glob(str(root / pat), recursive=True) if os.path.isfile(p))


def _check_all(records: dict[tuple[int, int, bytes], None]) -> None:
    for key, ver, body in records:
        msg = METADATA[key]
        py, c = codec.python_decoder_for(msg, ver), c_decoder(msg, ver)
        try:
            want = py(body, 0, len(body))
        except Exception:  # a damaged record of a bad-* fixture: the damage test's business
            continue
        got = c(body, 0, len(body))
        if got is None:  # C gives up only where Python read past the record
            assert want[1] > len(body), f"{msg.name} v{ver}: C gave up on {body.hex()}"
            continue
        same(got, want, f"{msg.name} v{ver}")


@pytest.fixture(scope="module")
def fixture_records() -> dict[tuple[int, int, bytes], None]:
    return _records(_files(ROOT / "fixtures"))


def test_every_fixture_record_decodes_the_same(
        fixture_records: dict[tuple[int, int, bytes], None]) -> None:
    kinds = {(k, v) for k, v, _ in fixture_records}
    assert len(fixture_records) > 500 and len(kinds) > 20
    _check_all(fixture_records)


@pytest.mark.corpus
def test_every_corpus_record_decodes_the_same() -> None:
    need_corpus()
    records = _records(_files(CORPUS))
    assert len(records) > 1000
    _check_all(records)


# ---------------------------------------------------------------- damaged records


def _outcome(dec: Callable[..., Any], *args: Any) -> tuple[Any, ...]:
    try:
        return ("ok", dec(*args))
    except Exception as e:  # the point: the same exception, whatever it is
        return ("error", type(e), str(e))


def _damaged(body: bytes, rng: random.Random) -> tuple[bytes, int, int]:
    """A damaged copy of a record in a buffer, with where to decode it."""
    b = bytearray(body)
    how = rng.randrange(5)
    if how == 0 and b:  # a byte changed
        b[rng.randrange(len(b))] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
    elif how == 1 and b:  # a bit flipped
        i = rng.randrange(len(b))
        b[i] ^= 1 << rng.randrange(8)
    elif how == 2:  # a byte inserted
        b.insert(rng.randrange(len(b) + 1), rng.randrange(256))
    elif how == 3:  # cut short, the buffer ending there
        cut = rng.randrange(len(b) + 1)
        return bytes(b[:cut]), 0, cut
    else:  # cut short, the next bytes of the buffer being another record's
        cut = rng.randrange(len(b) + 1)
        return bytes(b) + bytes(rng.randbytes(8)), 0, cut
    return bytes(b), 0, len(b)


def test_damaged_records_fail_the_same(
        fixture_records: dict[tuple[int, int, bytes], None]) -> None:
    """Changed, flipped, inserted and cut bytes: the C-backed decoder (falling back on the
    Python one) gives the same result or the same exception and message; where C decodes by
    itself, it gives Python's result."""
    rng = random.Random(19)
    by_kind: dict[tuple[int, int], list[bytes]] = {}
    for key, ver, body in fixture_records:
        by_kind.setdefault((key, ver), []).append(body)
    for msg, version in VERSIONS:  # random records too, for the kinds no fixture has
        by_kind.setdefault((msg.key, version), []).extend(
            codec.encode(msg, version, _struct(msg.fields, rng, version)) for _ in range(3))
    c_alone = c_gave_up = 0
    for (key, ver), bodies in sorted(by_kind.items()):
        msg = METADATA[key]
        py = codec.python_decoder_for(msg, ver)
        wrapped, raw = c_decoder(msg, ver, py), c_decoder(msg, ver)
        for body in rng.sample(bodies, min(len(bodies), 8)):
            for _ in range(25):
                buf, pos, end = _damaged(body, rng)
                want = _outcome(py, buf, pos, end)
                got = _outcome(wrapped, buf, pos, end)
                same(got, want, f"{msg.name} v{ver} {buf.hex()} [{pos}:{end}]")
                alone = raw(buf, pos, end)
                if alone is None:
                    c_gave_up += 1
                else:
                    c_alone += 1
                    assert want[0] == "ok"
                    same(alone, want[1])
    assert c_alone > 1000 and c_gave_up > 1000  # both paths were exercised


def test_a_damaged_array_length_allocates_nothing() -> None:
    """An array claiming millions of items in a short record is given up on before any list
    is made (the Python decoder checks the same), not after allocating it."""
    msg = METADATA[3]
    raw = codec.encode(msg, 2, {"replicas": [1]})
    at = raw.index(uvarint_bytes(2) + struct.pack(">i", 1))  # the replicas' length
    body = raw[:at] + uvarint_bytes(10_000_001) + raw[at + 1:]
    raw_c = c_decoder(msg, 2)
    tracemalloc.start()
    try:
        assert raw_c(body, 0, len(body)) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000
    py = codec.python_decoder_for(msg, 2)
    same(_outcome(c_decoder(msg, 2, py), body, 0, len(body)), _outcome(py, body, 0, len(body)))


def test_other_buffers_and_odd_arguments_are_the_python_decoders() -> None:
    """bytearray, memoryview, bad positions, wrong arguments: what the Python decoder does."""
    msg = METADATA[4]  # ConfigRecord: strings, which a memoryview cannot .decode()
    raw = codec.encode(msg, 0, {"resourceType": 2, "resourceName": "t", "name": "n"})
    py = codec.python_decoder_for(msg, 0)
    c = c_decoder(msg, 0, py)
    for args in [(bytearray(raw), 0, len(raw)), (memoryview(raw), 0, len(raw)),
                 (raw, -len(raw), len(raw)), (raw, 0, len(raw) + 5), (raw, 5, 2),
                 (raw, 0, 2 ** 70), (raw, "0", len(raw)), (raw, 0), (raw, 0, 1, 2, 3)]:
        same(_outcome(c, *args), _outcome(py, *args), repr(args))
    assert c_decoder(msg, 0)(bytearray(raw), 0, len(raw)) is None
    # the check mode (a fourth argument) answers False for what it does not take
    for args in [(bytearray(raw), 0, len(raw)), (raw, -1, len(raw)), (raw, 0, len(raw) + 1),
                 (raw, "0", len(raw))]:
        assert c(*args, True) is False, args


def _clean(py: Callable[..., Any], buf: bytes, pos: int, end: int) -> bool:
    """What the check mode must answer: the Python decoder decodes ``buf[pos:end]`` exactly,
    without unknown tagged fields."""
    got = _outcome(py, buf, pos, end)
    return got[0] == "ok" and got[1][1] == end and UNKNOWN_TAGS not in got[1][0]


def test_the_check_mode_says_what_decoding_would(
        fixture_records: dict[tuple[int, int, bytes], None]) -> None:
    """``decoder(buf, pos, end, True)``: True exactly when the record decodes cleanly (no
    error, no unknown tagged field, every byte used), on fixture records, random ones of
    every kind and version, and damaged copies of both; where it says True, C alone decodes
    it too (the bytes a PartitionRecord is held undecoded on)."""
    rng = random.Random(23)
    by_kind: dict[tuple[int, int], list[bytes]] = {}
    for key, ver, body in fixture_records:
        by_kind.setdefault((key, ver), []).append(body)
    for msg, version in VERSIONS:
        by_kind.setdefault((msg.key, version), []).extend(
            codec.encode(msg, version, _struct(msg.fields, rng, version)) for _ in range(3))
    yes = no = 0
    for (key, ver), bodies in sorted(by_kind.items()):
        msg = METADATA[key]
        py = codec.python_decoder_for(msg, ver)
        c = c_decoder(msg, ver, py)
        for body in rng.sample(bodies, min(len(bodies), 8)):
            cases = [(body, 0, len(body))] + [_damaged(body, rng) for _ in range(25)]
            for buf, pos, end in cases:
                said = c(buf, pos, end, True)
                assert said is _clean(py, buf, pos, end), f"{msg.name} v{ver} {buf.hex()}"
                if said:
                    yes += 1
                    same(c_decoder(msg, ver)(buf, pos, end), py(buf, pos, end))
                else:
                    no += 1
    assert yes > 300 and no > 1000


def test_decoder_for_is_compiled_unless_mdshell_pure() -> None:
    code = ("from mdshell.wire import codec, records;"
            "print(type(codec.decoder_for(records.METADATA[3], 2)).__name__)")
    env = {k: v for k, v in os.environ.items() if k != "MDSHELL_PURE"}

    def run(**extra: str) -> str:
        return subprocess.run([sys.executable, "-c", code], env={**env, **extra}, check=True,
                              capture_output=True, text=True, cwd=ROOT).stdout.strip()

    assert run() == "Decoder"
    assert run(MDSHELL_PURE="1") == "function"


def test_a_damaged_tagged_count_reads_nothing_past_its_record() -> None:
    """A tagged-field count far above what the record holds, in a record followed by a
    megabyte of other records' bytes (zeros: an empty tagged field every two bytes): the
    decoders stop at the record's end, not at the buffer's (which, record after record, is
    work that grows faster than the bytes)."""
    msg = METADATA[20]  # NoOpRecord: a tagged section alone
    py = codec.python_decoder_for(msg, 0)
    body = uvarint_bytes(2**30) + bytes(4)
    buf = body + bytes(1 << 20)
    for dec in (py, c_decoder(msg, 0, py)):
        got = _outcome(dec, buf, 0, len(body))
        assert got[0] == "error" and "more tagged fields than the record holds" in got[2], got


# ---------------------------------------------------------------- the fields mode


def _fields_agree(dec: Any, buf: bytes, pos: int, end: int) -> bool:
    """The fields mode gives the values of the dict decoding gives, in its key order, of
    the same types, its lists its own; or None exactly when there is no such dict without
    unknown tags (C gives up, or the record holds an unknown tagged field). Whether it gave
    the values."""
    got = _cdecode.fields(dec, buf, pos, end)
    decoded = dec(buf, pos, end) if dec.fallback is not None else None
    if decoded is not None and UNKNOWN_TAGS not in decoded[0] and decoded[1] == end:
        assert got is not None
        same(list(got), list(decoded[0].values()))
        again = _cdecode.fields(dec, buf, pos, end)
        ids = [id(v) for r in (got, again) for v in r if isinstance(v, list)]
        assert len(ids) == len(set(ids))  # as decoding's dicts, each has its own lists
        return True
    assert got is None
    return False


@pytest.mark.parametrize(("msg", "version"), VERSIONS, ids=IDS)
def test_fields_mode_gives_the_dicts_values(msg: Message, version: int) -> None:
    """Random records of every message and version (unknown tags among them), shuffled and
    repeated tags, and the same cut short or with a byte changed: the fields mode agrees
    with decoding (apply_fields reads them so into the handlers)."""
    rng = random.Random(f"fields-{msg.name}-{version}")
    py = codec.python_decoder_for(msg, version)
    dec = c_decoder(msg, version, py)
    given = 0
    for i in range(80):
        raw = codec.encode(msg, version, _struct(msg.fields, rng, version))
        buf = b"\xff" * 3 + raw + b"\xee" * 2
        given += _fields_agree(dec, buf, 3, 3 + len(raw))
        damaged = bytearray(buf)
        if raw:
            damaged[3 + rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        for end in (3 + len(raw) - 1 - i % 3, 3 + len(raw)):
            if end < 3:
                continue
            try:
                _fields_agree(dec, bytes(damaged), 3, end)
            except Exception as e:  # the reference refuses it: so does the fields mode
                assert not isinstance(e, AssertionError), e
                assert _cdecode.fields(dec, bytes(damaged), 3, end) is None
    assert given >= 40
    empty = codec.encode(msg, version, {})
    assert _fields_agree(dec, empty, 0, len(empty))


def test_fields_mode_every_kind() -> None:
    for version in range(3):
        rng = random.Random(version)
        py = codec.python_decoder_for(EVERY_KIND, version)
        dec = c_decoder(EVERY_KIND, version, py)
        for _ in range(200):
            raw = codec.encode(EVERY_KIND, version, _struct(EVERY_KIND.fields, rng, version))
            _fields_agree(dec, raw, 0, len(raw))
