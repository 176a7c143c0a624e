"""The compiled walk (``mdshell/wire/_cwalk.c``) against the Python it stands for: the scan
of a segment's batches (starts, header columns, where the first wrong CRC is and where
offsets first fail to follow on) against ``batch_starts`` + ``heads`` + the CRC package,
on every fixture and corpus file, at every limit a reader asks for, and on damaged copies
(bytes flipped or cut anywhere). Its framing is compared in ``test_framing.py``, and whole
loads both ways in ``test_cleanwalk.py``."""

from __future__ import annotations

import os
import random
from array import array
from itertools import pairwise
from pathlib import Path

import pytest

from mdshell.source import cleanwalk
from mdshell.wire import batch as wb
from mdshell.wire.crc import crc32c
from mdshell.wire.native import PURE, piece

from .conftest import FIXTURES, corpus_dirs

_cwalk = piece("_cwalk")
compiled = pytest.mark.skipif(_cwalk is None or not cleanwalk.COMPILED,
                              reason="the compiled walk is not built")


def test_ci_builds_the_compiled_pieces() -> None:
    """CI installs with a C compiler: a build that silently fell back to Python would leave
    the compiled code untested and the figures in docs/performance.md untrue."""
    if not os.environ.get("CI") or PURE:
        pytest.skip("outside CI, or MDSHELL_PURE=1")
    assert _cwalk is not None and cleanwalk.COMPILED


def test_the_built_pieces_are_as_new_as_their_sources() -> None:
    """A piece built before its C source was changed would test and run the old code."""
    wire = Path(__file__).resolve().parent.parent / "mdshell" / "wire"
    headers = list(wire.glob("_*.h"))  # included by the pieces: each is built of them too
    for source in wire.glob("_*.c"):
        for built, of in ((b, s) for b in wire.glob(source.stem + ".*.so")
                          for s in (source, *headers)):
            # setuptools copies the build with its time cut to the second
            assert built.stat().st_mtime + 2 >= of.stat().st_mtime, (
                f"{built.name} is older than {of.name}: rebuild it with "
                "`python setup.py build_ext --inplace` (or `pip install -e .` again)")


Scanned = tuple[list[list[int]], bytes, int, int]


def _python_scan(data: bytes, pos: int, limit: int) -> Scanned:
    h = cleanwalk.heads(data, cleanwalk.batch_starts(data, pos, limit))
    good = next((i for i, (p, n, want) in enumerate(zip(h.starts, h.length, h.crc, strict=True))
                 if crc32c(data[p + wb.CRC_START:p + wb.LOG_OVERHEAD + n]) != want), len(h))
    follows = next((i for i in range(len(h)) if h.last_delta[i] < 0
                    or h.count[i] != h.last_delta[i] + 1 or (
        i and h.base[i] != h.base[i - 1] + h.last_delta[i - 1] + 1)), len(h))
    # the rule cleanwalk's own check applies: all follow on, or not
    assert not len(h) or (follows == len(h)) == cleanwalk._follow_on(h.base, h.last_delta,
                                                                      h.count)
    return _columns(h), h.magic, good, follows


def _columns(h: cleanwalk.Heads) -> list[list[int]]:
    return [list(c) for c in (h.starts, h.base, h.length, h.epoch, h.crc, h.attrs,
                              h.last_delta, h.base_ts, h.max_ts, h.count)]


def _compiled_scan(data: bytes, pos: int, limit: int) -> Scanned:
    h = cleanwalk.scan(data, pos, limit)
    return _columns(h), h.magic, h.good, h.follows


def _outcome(fn, *args):  # type: ignore[no-untyped-def]
    try:
        return fn(*args)
    except cleanwalk.Unclean:
        return "unclean"


def _agree(data: bytes, pos: int = 0, limit: int = -1) -> object:
    got = _outcome(_compiled_scan, data, pos, limit)
    assert got == _outcome(_python_scan, data, pos, limit), (pos, limit)
    return got


def _files() -> list[Path]:
    dirs = [FIXTURES, *corpus_dirs()]
    return sorted(f for d in dirs for f in Path(d).rglob("*")
                  if f.suffix in (".log", ".checkpoint") and f.is_file())


@compiled
def test_every_file_scans_as_python_does() -> None:
    whole = 0
    for f in _files():
        data = f.read_bytes()
        got = _agree(data)
        whole += got != "unclean"
        starts = cleanwalk.batch_starts(data, 0, 8) if got != "unclean" and data else []
        for limit in (1, 3, 4096):  # a reader's stretches, from the first batches on
            for pos in starts[:3]:
                _agree(data, pos, limit)
    assert whole > (100 if corpus_dirs() else 30), whole  # most files are whole


@compiled
def test_damaged_copies_scan_as_python_does() -> None:
    rng = random.Random(19)
    files = [f for f in _files() if f.stat().st_size < 2_000_000]
    wrong_crc = broken = 0
    for _ in range(1500):
        data = bytearray(rng.choice(files).read_bytes())
        if not data:
            continue
        how = rng.randrange(3)
        if how == 0:  # bytes flipped anywhere (a CRC, a length, a header field, a record)
            for _flip in range(rng.randint(1, 3)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif how == 1:  # cut short
            del data[rng.randrange(len(data)):]
        else:  # a length field set to something else
            starts = _outcome(cleanwalk.batch_starts, bytes(data), 0, 64)
            if starts != "unclean":
                at = rng.choice(starts) + 8
                length = rng.choice((0, 48, 49, 61, 1 << 30, -5 & 0xFFFFFFFF))
                data[at:at + 4] = length.to_bytes(4, "big")
        got = _agree(bytes(data), 0, rng.choice((-1, 1, 7, 4096)))
        if got != "unclean":
            wrong_crc += got[2] < len(got[0][0])  # type: ignore[index]
            broken += got[3] < len(got[0][0])  # type: ignore[index]
    # the flips found wrong CRCs and offsets that do not follow on, not only unclean files
    assert wrong_crc > 50 and broken > 20, (wrong_crc, broken)


@compiled
def test_crc32c_as_the_package_computes_it() -> None:
    assert _cwalk is not None
    rng = random.Random(5)
    for n in [*range(0, 40), 1000, 4097, 65_536]:
        data = rng.randbytes(n + 9)
        for start in range(9):  # every alignment of the 8-byte steps
            end = start + n
            want = crc32c(data[start:end])
            # the dispatching one (the CPU's instruction where it has one) and the tables
            assert _cwalk.crc32c(data, start, end) == want
            assert _cwalk.crc32c_portable(data, start, end) == want
    for f in (_cwalk.crc32c, _cwalk.crc32c_portable):
        with pytest.raises(ValueError):
            f(b"abc", 2, 5)


@compiled
def test_crc32c_takes_the_instruction_on_a_cpu_with_sse42() -> None:
    """Where /proc/cpuinfo lists sse4_2 the instruction is used, or the speed is lost."""
    assert _cwalk is not None
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        pytest.skip("no /proc/cpuinfo")
    if " sse4_2" not in flags or os.uname().machine != "x86_64":
        pytest.skip("not an x86-64 CPU with SSE 4.2")
    assert _cwalk.crc32c_hardware()


def _noops_agree(data: bytes, h: cleanwalk.Heads, n: int) -> list[int]:
    """The NoOps found, and the plan made of them at once (``noop_plan``), as Python
    finds and makes them."""
    got = cleanwalk.noops(data, h, n)
    python = cleanwalk.noops_python(data, h, n)
    assert got == sorted(python), n
    plan = cleanwalk.noop_plan(data, h, n)
    assert list(plan) == list(cleanwalk.plan_python(n, python)), n
    assert not n or isinstance(plan, array)
    return got


@compiled
def test_one_noop_batches_found_as_python_finds_them() -> None:
    """The compiled ``noop_batches`` against cleanwalk's Python on every file, on damaged
    copies, and on header columns that point anywhere in random bytes holding NoOp-like
    records (a long frame header, another key, a record that does not frame)."""
    found = 0
    for f in _files():
        data = f.read_bytes()
        h = _outcome(cleanwalk.scan, data, 0, -1)
        if h != "unclean":
            found += len(_noops_agree(data, h, len(h)))
            _noops_agree(data, h, len(h) // 2)
    assert found > (10_000 if corpus_dirs() else 50), found
    rng = random.Random(23)
    noop = bytes.fromhex("1400000001080114000000")  # a NoOpRecord v0, framed
    hits = 0
    for _ in range(3000):
        data = bytearray(rng.randbytes(rng.randrange(80, 400)))
        placed = []
        for _put in range(rng.randrange(4)):  # a NoOp record, perhaps altered, somewhere
            rec = bytearray(noop)
            if rng.random() < 0.5:
                rec[rng.randrange(len(rec))] = rng.choice((0, 1, 0x14, 0x7F, 0x80, 0xFF))
            at = rng.randrange(61, len(data) - len(rec))
            data[at:at + len(rec)] = rec
            placed.append(at - 61)
        n = rng.randrange(1, 12)
        starts = [rng.choice(placed) if placed and rng.random() < 0.7 else
                  max(0, rng.randrange(len(data) + 40) - 61) for _ in range(n)]
        h = cleanwalk.Heads(
            starts=array("q", starts), base=array("q", [0] * n),
            length=array("i", [rng.choice((49, 60, 61, 72, 73, 74, 1000, -3)) for _ in starts]),
            epoch=array("i", [0] * n), crc=array("I", [0] * n),
            attrs=array("h", [rng.choice((0, 0, 0x10, 1, 0x20)) for _ in starts]),
            last_delta=array("i", [rng.choice((0, 0, 1)) for _ in starts]),
            base_ts=array("q", [0] * n), max_ts=array("q", [0] * n),
            count=array("i", [rng.choice((1, 1, 0, 2)) for _ in starts]), magic=b"\2" * n)
        hits += len(_noops_agree(bytes(data), h, n))
    assert hits > 20, hits


@compiled
def test_column_bounds_and_order_as_python_computes_them() -> None:
    """``bounds`` and ``ascending`` (the checks of a stretch's header columns) against
    min, max and the pairwise comparison, on columns of each width, extremes included;
    what they do not take (unsigned, bytes, empty) is left to Python (None)."""
    assert _cwalk is not None
    rng = random.Random(29)
    for code, bits in (("h", 16), ("i", 32), ("q", 64)):
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        for _ in range(300):
            n = rng.choice((1, 2, 3, 17, 200))
            pool = (lo, hi, 0, -1, 1, rng.randint(lo, hi))
            items = sorted(rng.choice(pool) for _ in range(n)) if rng.random() < 0.4 else \
                [rng.choice(pool) if rng.random() < 0.5 else rng.randint(lo, hi)
                 for _ in range(n)]
            column = array(code, items)
            assert _cwalk.bounds(column) == (min(items), max(items))
            assert cleanwalk.bounds(column) == (min(items), max(items))
            want = all(a <= b for a, b in pairwise(items))
            assert _cwalk.ascending(column) is want is cleanwalk.ascending(column)
    assert _cwalk.bounds(array("q")) is None
    assert _cwalk.bounds(array("I", [1])) is None and _cwalk.ascending(b"\1\0") is None
    assert _cwalk.ascending(array("i")) is True


@compiled
def test_the_plan_of_batches_as_python_makes_it() -> None:
    """The compiled plan (``_cwalk.kept``) against ``plan_python``: the batches but the
    one-NoOp ones, and the last, for NoOps found anywhere and in any order, duplicates and
    the last batch among them."""
    rng = random.Random(31)
    for _ in range(2000):
        n = rng.choice((1, 2, 3, 10, 1000))
        noop = rng.sample(range(n), rng.randrange(n + 1))
        if noop and rng.random() < 0.3:
            noop.append(noop[0])
        want = list(cleanwalk.plan_python(n, noop))
        got = cleanwalk.plan(n, noop)
        assert list(got) == want and (not noop or isinstance(got, array)), (n, noop)
    assert list(cleanwalk.plan(0, [])) == []


@compiled
def test_attributes_read_as_getattr_reads_them() -> None:
    """The handlers' attribute reads (``_cwalk.read_attr``: a __slots__ slot read where it
    lies) against getattr: slots set and not, other attributes, properties, classes changed
    after a read (a slot turned into a property in the class, a subclass's), objects of a
    custom __getattribute__, and a class holding another class's slot descriptor."""
    assert _cwalk is not None
    read = _cwalk.read_attr

    class Slots:
        __slots__ = ("a", "b")

    class Sub(Slots):
        __slots__ = ("c",)

    class Plain:
        def __init__(self) -> None:
            self.a = "plain"

    class Odd(Slots):
        __slots__ = ()

        def __getattribute__(self, name: str) -> object:
            return "odd"

    s, sub, odd = Slots(), Sub(), Odd()
    s.a, sub.a, sub.c = 1, 2, 3
    for _ in range(3):  # the second and third time from the table
        assert read(s, "a") == 1 and read(sub, "a") == 2 and read(sub, "c") == 3
        assert read(Plain(), "a") == "plain" and read(odd, "a") == "odd"
        assert read(s, "__class__") is Slots
        with pytest.raises(AttributeError):
            read(s, "b")  # a slot not set
        with pytest.raises(AttributeError):
            read(s, "nothing")
    class Borrowed:  # another class's slot descriptor: not read at its offset
        __slots__ = ()
        a = Slots.__dict__["a"]

    for _ in range(2):
        with pytest.raises(TypeError):
            read(Borrowed(), "a")
    assert read(s, "a") == 1  # in the table now
    Slots.a = property(lambda self: "now a property")  # type: ignore[assignment]
    assert read(s, "a") == "now a property" == s.a
    assert read(sub, "a") == "now a property"
    assert read(sub, "c") == 3


@compiled
def test_the_records_a_transaction_keeps_as_python_finds_them() -> None:
    """The compiled ``txn_span`` against replay's: runs of dicts and undecoded partitions
    up to a transaction marker, an unknown record or the end, from every index."""
    from mdshell.image import replay
    from mdshell.wire.frames import Unknown

    assert _cwalk is not None
    rng = random.Random(37)
    lazy = (b"x", 0, 1, 2)
    unknown = Unknown(99, 0, b"", "unknown")
    for _ in range(3000):
        decoded = [(o, rng.choice((2, 3, 4, 23, 24, 25, 99)), 0,
                    rng.choice(({}, {}, lazy, lazy, unknown)), o) for o in range(rng.randrange(8))]
        for i in range(len(decoded) + 2):
            assert _cwalk.txn_span(decoded, i) == replay.txn_span(decoded, i), (decoded, i)
    with pytest.raises(ValueError):
        _cwalk.txn_span([], -1)


@compiled
def test_idset_is_a_set_of_ids() -> None:
    """The builder's IdSet against a set of ints: random adds, discards (held and not),
    clears and questions, growing past many table sizes and filling with removal marks;
    the ids of live objects and ints near them (neighbours in one table slot chain)."""
    rng = random.Random(7)
    held = [object() for _ in range(3000)]
    pool = [id(o) for o in held] + [id(o) + 16 for o in held[:200]] + [2, 3, 2**63 - 1]
    assert _cwalk is not None
    s, ref = _cwalk.IdSet(), set()
    for step in range(60_000):
        k = rng.choice(pool)
        op = rng.random()
        if op < 0.5:
            s.add(k)
            ref.add(k)
        elif op < 0.8:
            s.discard(k)
            ref.discard(k)
        elif op < 0.8003:
            s.clear()
            ref.clear()
        assert (k in s) == (k in ref), step
        if step % 997 == 0:
            assert len(s) == len(ref) and all((x in s) == (x in ref) for x in pool)
    assert len(s) == len(ref) > 500
    for bad in (0, 1, -5, 2**64, "x", 1.5, None):
        assert bad not in s
        s.discard(bad)  # nothing held: nothing happens
    with pytest.raises(ValueError):
        s.add(1)
    with pytest.raises(TypeError):
        _cwalk.IdSet(1)


@compiled
def test_skip_to_as_python_skips() -> None:
    """The compiled ``skip_to`` (time travel's start in a segment: headers only) against
    ``walker.skip_to_python``: every file at offsets before, inside and past it, named
    rightly, wrongly and not at all; then copies damaged every way (a byte changed in a
    header, cut short, a zero-filled tail, offsets near the 64-bit limit), and random bytes."""
    from mdshell.source import walker

    assert _cwalk is not None
    rng = random.Random(41)

    def agree(data: bytes, offset: int, first: int | None) -> None:
        want = walker.skip_to_python(data, offset, first)
        got = _cwalk.skip_to(data, offset, first)
        assert got is None or got == want, (offset, first, got, want)
        assert walker.skip_to(data, offset, first) == want

    taken = 0
    for f in _files():
        data = f.read_bytes()
        stem = f.name.split(".")[0].split("-")[0]
        named = int(stem) if stem.isdigit() else 0
        try:
            starts = list(cleanwalk.batch_starts(data, 0, 4000))
        except cleanwalk.Unclean:
            starts = []
        bases = [int.from_bytes(data[p:p + 8], "big", signed=True) for p in starts[:4000]]
        offsets = {-1, 0, named, named + 1, 1 << 62, *rng.sample(bases, min(len(bases), 6)),
                   *(b + 1 for b in bases[-2:])}
        for off in offsets:
            for first in (named, None, named + 1):
                agree(data, off, first)
                taken += _cwalk.skip_to(data, off, first) is not None
        for _ in range(6):
            damaged = bytearray(data)
            if not damaged:
                break
            how = rng.randrange(4)
            if how == 0:
                at = rng.choice(starts or [0]) + rng.randrange(61)
                damaged[min(at, len(damaged) - 1)] ^= 1 << rng.randrange(8)
            elif how == 1:
                del damaged[rng.randrange(len(damaged)):]
            elif how == 2:
                damaged += bytes(rng.choice((1, 60, 61, 500)))
            else:
                at = rng.choice(starts or [0])
                damaged[at:at + 8] = (2**63 - 1 - rng.randrange(3)).to_bytes(8, "big")
            off = rng.choice(sorted(offsets))
            agree(bytes(damaged), off, rng.choice((named, None)))
    assert taken > 100, taken
    for _ in range(500):
        data = rng.randbytes(rng.randrange(200))
        agree(data, rng.randrange(-5, 1000), rng.choice((None, 0, 5)))
    assert _cwalk.skip_to(b"", 1 << 64, None) is None  # an offset beyond int64: Python's
