"""Robustness: damaged copies of the fixtures never crash mdshell.

Every case copies one fixture from ``fixtures/`` to a temporary directory, damages it
deterministically (a seeded ``random.Random``: flipped bits, truncation, inserted garbage,
zeroed ranges, absurd batch lengths, CRC-valid garbage, duplicated / reordered / renamed /
deleted segments, a segment that is a directory, empty files, a quorum-state that is not JSON,
a broken meta.properties...) and runs the CLI in-process on it with several commands.

Whatever the damage, mdshell must answer like a tool, not crash like a program:

- exit code 0 or 1 (2 is for usage errors, and no command here is one);
- no ``Traceback`` and no ``internal error`` on stderr;
- with ``-o json`` and exit code 0, stdout is valid JSON;
- damage to the bytes of a data file (flipped bits, truncation, garbage, zeros, an absurd
  length or base offset: ``REPORTED``) that changes ``/image`` is reported: a warning naming
  the damaged file and an offset (or an error naming the file when nothing can be shown), and
  ``--strict`` exits 1.

Beside the seeded cases: targeted damages (one per failure class), ``-s FILE`` on damaged
files, odd arguments, a FIFO named like a segment (must not hang), and a stricter oracle for a
few damages: when the damage changes ``/image``, a warning must say so.

A case that fails because of a known, not yet fixed bug is marked ``xfail(strict=True)`` with
the bug (per-case lists in ``RANDOM_KNOWN`` / ``FILE_KNOWN``, or the ``bug`` column of the
tables), so that a fix shows up as an XPASS and the mark must go. None is open today.
Seeded cases are named ``<fixture>-<damage>-<seed>``;
``pytest tests/test_fuzz.py -k <name>`` reruns one, and :func:`build_case` rebuilds it
anywhere for a look by hand. Adding a fixture reshuffles which fixture a seed damages: rerun
the file and update the two lists.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mdshell.wire.crc import crc32c

from .conftest import cli

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
MD = "__cluster_metadata-0"

COMMANDS: list[list[str]] = [
    ["ls", "/"],
    ["tree", "/image"],
    ["tree", "/quorum", "/log", "/local"],
    ["records"],
    ["health"],
    ["changes", "/image/topics"],
    ["at", "earliest"],
    ["diff", "earliest", "latest"],
    ["-o", "json", "tree", "/image"],
]
FILE_COMMANDS: list[list[str]] = [
    ["ls", "/"],
    ["tree", "/image"],
    ["tree", "/quorum", "/log", "/local"],
    ["records"],
    ["health"],
    ["-o", "json", "tree", "/image"],
]


def fixture_names() -> list[str]:
    """Fixtures with at least one segment or snapshot to damage."""
    return sorted(p.name for p in FIXTURES.iterdir()
                  if (p / MD).is_dir() and any((p / MD).glob("*.log")))


# ---------------------------------------------------------------- running the CLI


def run(argv: list[str]) -> tuple[int, str, str]:
    """``mdshell ARGV`` in-process: (exit code, stdout, stderr). An exception that escapes
    ``main`` becomes a traceback on stderr and exit code -1 (and fails the case)."""
    try:
        r = cli(*argv)
    except Exception:  # anything escaping main is the bug we look for
        return -1, "", traceback.format_exc()
    return r.code, r.out, r.err


def problems(argv: list[str]) -> list[str]:
    """What is wrong with one run (empty: it behaved)."""
    rc, out, err = run(argv)
    bad = []
    if rc not in (0, 1):
        bad.append(f"exit code {rc}")
    if "Traceback" in err or "internal error" in err:
        last = err.strip().splitlines()[-1] if err.strip() else ""
        bad.append(f"crash: {last[:300]}")
    if "-o" in argv and rc == 0:
        try:
            json.loads(out)
        except ValueError as e:
            bad.append(f"stdout is not JSON ({e})")
    return [f"mdshell {' '.join(argv)}: {b}" for b in bad]


# ---------------------------------------------------------------- damage

Rng = random.Random
Damage = Callable[[Rng, Path], str]


def _md(d: Path) -> Path:
    return d / MD


def _data_files(d: Path) -> list[Path]:
    """Segments and snapshots (every .log and .checkpoint, bootstrap included)."""
    return sorted(p for p in _md(d).iterdir()
                  if p.is_file() and p.name.endswith((".log", ".checkpoint")))


def _pick_file(rng: Rng, d: Path) -> Path | None:
    files = _data_files(d)
    return rng.choice(files) if files else None


def _segments(d: Path) -> list[Path]:
    return sorted(p for p in _md(d).iterdir() if p.is_file() and p.name.endswith(".log"))


def _batches(data: bytes | bytearray) -> list[tuple[int, int]]:
    """(position, size) of the well-framed batches at the start of a file."""
    pos, out = 0, []
    while pos + 61 <= len(data):
        length = struct.unpack_from(">i", data, pos + 8)[0]
        if length < 49 or pos + 12 + length > len(data):
            break
        out.append((pos, 12 + length))
        pos += 12 + length
    return out


def _fix_crc(buf: bytearray, pos: int) -> None:
    length = struct.unpack_from(">i", buf, pos + 8)[0]
    struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21:pos + 12 + length])))


def _pick_batch(rng: Rng, d: Path) -> tuple[Path, bytearray, int, int] | None:
    files = [f for f in _data_files(d) if _batches(f.read_bytes())]
    if not files:
        return None
    f = rng.choice(files)
    buf = bytearray(f.read_bytes())
    pos, size = rng.choice(_batches(buf))
    return f, buf, pos, size


def flip_bits(rng: Rng, d: Path) -> str:
    f = _pick_file(rng, d)
    if f is None:
        return "no data file"
    buf = bytearray(f.read_bytes())
    if not buf:
        return f"{f.name} (empty)"
    spots = [rng.randrange(len(buf)) for _ in range(rng.randint(1, 4))]
    for i in spots:
        buf[i] ^= 1 << rng.randrange(8)
    f.write_bytes(buf)
    return f"{f.name} bytes {spots}"


def truncate(rng: Rng, d: Path) -> str:
    f = _pick_file(rng, d)
    if f is None:
        return "no data file"
    size = f.stat().st_size
    at = rng.randrange(size + 1) if size else 0
    os.truncate(f, at)
    return f"{f.name} cut at {at} of {size}"


def insert_garbage(rng: Rng, d: Path) -> str:
    f = _pick_file(rng, d)
    if f is None:
        return "no data file"
    buf = bytearray(f.read_bytes())
    at = rng.randrange(len(buf) + 1)
    buf[at:at] = rng.randbytes(rng.randint(1, 64))
    f.write_bytes(buf)
    return f"{f.name} garbage at {at}"


def append_garbage(rng: Rng, d: Path) -> str:
    f = _pick_file(rng, d)
    if f is None:
        return "no data file"
    with f.open("ab") as fh:
        fh.write(rng.choice([bytes(rng.randint(1, 100)), rng.randbytes(rng.randint(1, 100))]))
    return f"{f.name} tail garbage"


def zero_range(rng: Rng, d: Path) -> str:
    f = _pick_file(rng, d)
    if f is None:
        return "no data file"
    buf = bytearray(f.read_bytes())
    if not buf:
        return f"{f.name} (empty)"
    at, n = rng.randrange(len(buf)), rng.randint(1, 200)
    buf[at:at + n] = bytes(len(buf[at:at + n]))
    f.write_bytes(buf)
    return f"{f.name} zeros at {at}+{n}"


def huge_length(rng: Rng, d: Path) -> str:
    """A batch length field (not covered by the CRC) set to an absurd value."""
    picked = _pick_batch(rng, d)
    if picked is None:
        return "no batch"
    f, buf, pos, size = picked
    value = rng.choice([0x7FFFFFFF, -1, -0x80000000, 0, 1, 48, 49, size, size + 4096,
                        len(buf)])
    struct.pack_into(">i", buf, pos + 8, value)
    f.write_bytes(buf)
    return f"{f.name} batch at {pos} length {value}"


def base_offset(rng: Rng, d: Path) -> str:
    """A batch base offset (not covered by the CRC) set to another value."""
    picked = _pick_batch(rng, d)
    if picked is None:
        return "no batch"
    f, buf, pos, _ = picked
    value = rng.choice([-1, -(1 << 63), (1 << 63) - 1, 0, 1 << 40, rng.randrange(200)])
    struct.pack_into(">q", buf, pos, value)
    f.write_bytes(buf)
    return f"{f.name} batch at {pos} base offset {value}"


def crc_valid_garbage(rng: Rng, d: Path) -> str:
    """Bytes changed inside a batch and its CRC recomputed: a writer bug, not a disk error."""
    picked = _pick_batch(rng, d)
    if picked is None:
        return "no batch"
    f, buf, pos, size = picked
    spots = [rng.randrange(pos + 21, pos + size) for _ in range(rng.randint(1, 3))]
    for i in spots:
        buf[i] = rng.randrange(256)
    _fix_crc(buf, pos)
    f.write_bytes(buf)
    return f"{f.name} batch at {pos} bytes {spots} (CRC fixed)"


_HEADER_FIELDS = {
    "attributes": (21, ">h", [0x05, 0x06, 0x07, 0x20, 0x25, -1]),
    "lastOffsetDelta": (23, ">i", [-1, 0, 0x7FFFFFFF, 100000]),
    "baseTimestamp": (27, ">q", [-1, -(1 << 63), (1 << 63) - 1, 10**15]),
    "maxTimestamp": (35, ">q", [-1, -(1 << 63), (1 << 63) - 1, 10**15]),
    "count": (57, ">i", [-1, 0, 0x7FFFFFFF, 100000]),
}


def header_field(rng: Rng, d: Path) -> str:
    """A CRC-covered header field set to an extreme value, CRC recomputed."""
    picked = _pick_batch(rng, d)
    if picked is None:
        return "no batch"
    f, buf, pos, _ = picked
    name = rng.choice(sorted(_HEADER_FIELDS))
    off, fmt, values = _HEADER_FIELDS[name]
    value = rng.choice(values)
    struct.pack_into(fmt, buf, pos + off, value)
    _fix_crc(buf, pos)
    f.write_bytes(buf)
    return f"{f.name} batch at {pos} {name}={value} (CRC fixed)"


def duplicate_segment(rng: Rng, d: Path) -> str:
    segs = _segments(d)
    if not segs:
        return "no segment"
    f = rng.choice(segs)
    base = int(f.name[:20]) + rng.choice([1, 5, 50, 1000])
    new = _md(d) / f"{base:020d}.log"
    while new.exists():
        base += 7
        new = _md(d) / f"{base:020d}.log"
    shutil.copyfile(f, new)
    return f"{f.name} copied to {new.name}"


def swap_names(rng: Rng, d: Path) -> str:
    files = _data_files(d)
    if len(files) < 2:
        return "fewer than two files"
    a, b = rng.sample(files, 2)
    tmp = a.with_name("swap.tmp")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)
    return f"{a.name} <-> {b.name}"


_ODD_NAMES = ["0.log", "x.checkpoint", "ünïcödé .log", "99999999999999999999.log",
              "00000000000000000000-0000000000.checkpoint",
              "00000000000000000001-0000000001.checkpoint",
              "99999999999999999999-9999999999.checkpoint",
              "00000000000000000007.log.deleted", "00000000000000000000.LOG",
              "-00000000000000000000.log"]


def odd_name(rng: Rng, d: Path) -> str:
    f = _pick_file(rng, d)
    if f is None:
        return "no data file"
    new = rng.choice([*_ODD_NAMES, f.name + ".bak"])
    target = _md(d) / new
    if target.exists():
        target.unlink()
    f.rename(target)
    return f"{f.name} renamed {new!r}"


def delete_file(rng: Rng, d: Path) -> str:
    f = _pick_file(rng, d)
    if f is None:
        return "no data file"
    f.unlink()
    return f"{f.name} deleted"


def make_directory(rng: Rng, d: Path) -> str:
    f = _pick_file(rng, d)
    if f is None:
        return "no data file"
    f.unlink()
    f.mkdir()
    (f / "inside").write_bytes(b"x")
    return f"{f.name} is a directory"


def symlink_loop(rng: Rng, d: Path) -> str:
    f = _pick_file(rng, d)
    if f is None:
        return "no data file"
    f.unlink()
    f.symlink_to(f.name)
    return f"{f.name} links to itself"


def empty_file(rng: Rng, d: Path) -> str:
    extra = [d / "meta.properties", d / "bootstrap.checkpoint", _md(d) / "quorum-state",
             _md(d) / "partition.metadata", _md(d) / "leader-epoch-checkpoint"]
    candidates = _data_files(d) + [p for p in extra if p.exists()]
    if not candidates:
        return "nothing to empty"
    f = rng.choice(candidates)
    f.write_bytes(b"")
    return f"{f.name} emptied"


_QUORUM_STATES = [
    b"not json", b"\xff\xfe\x00garbage", b"", b"[]", b"null", b"42", b'"text"',
    b'{"leaderId": "x", "leaderEpoch": null}', b'{"leaderId": 1e999}',
    b'{"currentVoters": "abc"}', b'{"currentVoters": [1, 2]}',
    b'{"currentVoters": [{"voterId": null}]}', b'{"currentVoters": [{"voterId": "seven"}]}',
    b'{"currentVoters": [{"voterId": 1.5}], "leaderEpoch": -5}',
    b'{"data_version": 1, "votedDirectoryId": 3, "leaderId": -1}',
    b"[" * 100_000,
]


def quorum_state(rng: Rng, d: Path) -> str:
    content = rng.choice(_QUORUM_STATES)
    (_md(d) / "quorum-state").write_bytes(content)
    return f"quorum-state {content[:40]!r}"


def meta_properties(rng: Rng, d: Path) -> str:
    content = rng.choice([b"\x00\xff garbage", b"node.id=abc\ncluster.id=", b"=\n:\n",
                          b"node.id=99999999999999999999999\n", rng.randbytes(100)])
    (d / "meta.properties").write_bytes(content)
    return f"meta.properties {content[:30]!r}"


BASIC: dict[str, Damage] = {f.__name__.replace("_", "-"): f for f in (
    flip_bits, truncate, insert_garbage, append_garbage, zero_range, huge_length, base_offset,
    crc_valid_garbage, header_field, duplicate_segment, swap_names, odd_name, delete_file,
    make_directory, symlink_loop, empty_file, quorum_state, meta_properties)}


def several(rng: Rng, d: Path) -> str:
    """Two or three damages at once."""
    names = rng.sample(sorted(BASIC), rng.randint(2, 3))
    return "; ".join(f"{n}: {BASIC[n](rng, d)}" for n in names)


DAMAGES: dict[str, Damage] = {**BASIC, "several": several}


# ---------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    fixture: str
    damage: str
    seed: int

    @property
    def id(self) -> str:
        return f"{self.fixture}-{self.damage}-{self.seed}"


def build_case(case: Case, where: Path) -> tuple[Path, str]:
    """Copy the fixture to ``where`` and damage it; returns (log dir, what was done)."""
    target = where / case.fixture
    shutil.copytree(FIXTURES / case.fixture, target, symlinks=True)
    rng = random.Random(case.seed)
    return target, DAMAGES[case.damage](rng, target)


N_RANDOM = 280


def random_cases() -> list[Case]:
    """Every damage on several fixtures; the fixture and damage of case i come from seed i."""
    fixtures = fixture_names()
    kinds = sorted(DAMAGES)
    cases = []
    for i in range(N_RANDOM):
        pick = random.Random(10_000 + i)
        # Round-robin over damages so that each one gets the same share of cases.
        cases.append(Case(pick.choice(fixtures), kinds[i % len(kinds)], 10_000 + i))
    return cases




def _mark(cases: list[Case], known: dict[str, tuple[str, ...]]) -> list[object]:
    """Parameters for ``cases``; the known failures get a strict xfail naming their bugs."""
    params: list[object] = []
    for c in cases:
        bugs = known.get(c.id)
        reason = " AND ".join(bugs) if bugs else ""
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if bugs else []
        params.append(pytest.param(c, id=c.id, marks=marks))
    return params


# ---------------------------------------------------------------- tests


# Damage to the bytes of one data file (its description starts with the file's name). Such
# damage breaks a CRC, the framing or the order of offsets, so whenever it changes /image the
# reader can tell, and must: the other damages can be silent by nature (a deleted last segment,
# CRC-valid garbage that still decodes, a timestamp rewritten with its CRC).
REPORTED = {"flip-bits", "truncate", "insert-garbage", "append-garbage", "zero-range",
            "huge-length", "base-offset"}
_OFFSET = re.compile(r"\boffsets? -?\d")
_UNDAMAGED: dict[tuple[str, ...], str] = {}


def undamaged_image(source: list[str]) -> str:
    """``tree /image`` of an undamaged fixture or file (``-d DIR`` / ``-s FILE``), once."""
    key = tuple(source)
    if key not in _UNDAMAGED:
        _, out, _ = run([*source, "tree", "/image"])
        _UNDAMAGED[key] = out
    return _UNDAMAGED[key]


def unreported(original: list[str], argv: list[str], damaged: str) -> list[str]:
    """What is missing when damage to the file ``damaged`` made /image differ from what
    ``original`` (the same source undamaged) gives: a warning that names the file and an
    offset (or, when nothing can be shown, an error naming the file), and exit code 1 with
    ``--strict``."""
    rc, image, err = run([*argv, "tree", "/image"])
    if image == undamaged_image(original):
        return []
    bad = []
    warnings = [line for line in err.splitlines() if line.startswith("mdshell: warning:")]
    failed = rc == 1 and not image and damaged in err
    if not failed and not any(damaged in w and _OFFSET.search(w) for w in warnings):
        bad.append(f"/image changed but no warning names {damaged} and an offset: {warnings}")
    strict, _, _ = run(["--strict", *argv, "ls", "/"])
    if strict != 1:
        bad.append(f"/image changed but --strict exits {strict}")
    return [f"mdshell {' '.join(argv)}: {b}" for b in bad]


def _check_directory(case: Case, tmp_path: Path) -> None:
    log_dir, what = build_case(case, tmp_path)
    bad: list[str] = []
    for cmd in COMMANDS:
        bad += problems(["-d", str(log_dir), *cmd])
    if case.damage in REPORTED:
        bad += unreported(["-d", str(FIXTURES / case.fixture)], ["-d", str(log_dir)],
                          what.split()[0])
    assert not bad, f"damage: {what}\n" + "\n".join(bad)


RANDOM_KNOWN: dict[str, tuple[str, ...]] = {}


@pytest.mark.parametrize("case", _mark(random_cases(), RANDOM_KNOWN))
def test_damaged_directory(case: Case, tmp_path: Path) -> None:
    _check_directory(case, tmp_path)


def file_cases() -> list[Case]:
    """``-s FILE`` on one damaged file (the damage touches that file only)."""
    fixtures = fixture_names()
    kinds = ["flip-bits", "truncate", "insert-garbage", "append-garbage", "zero-range",
             "huge-length", "crc-valid-garbage", "header-field"]
    cases = []
    for i in range(48):
        pick = random.Random(20_000 + i)
        cases.append(Case(pick.choice(fixtures), kinds[i % len(kinds)], 20_000 + i))
    return cases


FILE_KNOWN: dict[str, tuple[str, ...]] = {}


@pytest.mark.parametrize("case", _mark(file_cases(), FILE_KNOWN))
def test_damaged_file(case: Case, tmp_path: Path) -> None:
    log_dir, what = build_case(case, tmp_path)
    files = _data_files(log_dir)
    if not files:
        pytest.skip("the damage left no data file")
    # The file the damage picked is the one whose bytes differ from the fixture's.
    original = FIXTURES / case.fixture / MD
    changed = [f for f in files
               if not (original / f.name).is_file() or (original / f.name).read_bytes()
               != f.read_bytes()] or files[:1]
    bad: list[str] = []
    for cmd in FILE_COMMANDS:
        bad += problems(["-s", str(changed[0]), *cmd])
    if case.damage in REPORTED and (original / changed[0].name).is_file():
        bad += unreported(["-s", str(original / changed[0].name)], ["-s", str(changed[0])],
                          changed[0].name)
    assert not bad, f"damage: {what}\n" + "\n".join(bad)


# ---------------------------------------------------------------- targeted cases


def _patch_first_record(path: Path, prefix: bytes, patch: Callable[[bytearray, int], None],
                        ) -> int:
    """Patch the value of the first record whose value starts with ``prefix`` (uncompressed
    batches only), fix the CRC; returns its offset."""
    from mdshell.wire.batch import iter_records, parse_header

    buf = bytearray(path.read_bytes())
    for pos, _ in _batches(buf):
        batch = parse_header(bytes(buf), pos)
        if batch.is_control or batch.compression:
            continue
        for rec in iter_records(batch):
            value = rec.value
            if value is not None and value.startswith(prefix):
                patch(buf, rec.value_pos)
                _fix_crc(buf, pos)
                path.write_bytes(buf)
                return rec.offset
    raise AssertionError(f"no record starting with {prefix!r} in {path}")


def _segment0(d: Path) -> Path:
    return _md(d) / "00000000000000000000.log"


def t_partition_record_overrun(d: Path) -> None:
    """A PartitionRecord whose Replicas array claims 126 entries (CRC fixed)."""
    def patch(buf: bytearray, vpos: int) -> None:
        buf[vpos + 3 + 4 + 16] = 0x7F
    _patch_first_record(_segment0(d), b"\x01\x03", patch)


def t_unknown_codec(d: Path) -> None:
    """Compression codec 5 (unknown) in a batch after the snapshot, CRC fixed."""
    buf = bytearray(_segment0(d).read_bytes())
    pos, _ = _batches(buf)[-3]
    attrs = struct.unpack_from(">h", buf, pos + 21)[0]
    struct.pack_into(">h", buf, pos + 21, (attrs & ~0x07) | 0x05)
    _fix_crc(buf, pos)
    _segment0(d).write_bytes(buf)


def t_count_too_big(d: Path) -> None:
    """A batch (after the snapshot) claiming more records than it holds, CRC fixed."""
    buf = bytearray(_segment0(d).read_bytes())
    pos, _ = _batches(buf)[-5]
    struct.pack_into(">i", buf, pos + 57, struct.unpack_from(">i", buf, pos + 57)[0] + 1)
    _fix_crc(buf, pos)
    _segment0(d).write_bytes(buf)


def t_snapshot_bad_codec(d: Path) -> None:
    """The newest snapshot's second batch has an unknown codec (CRC fixed): the load should
    fall back to the log, as for any damaged snapshot."""
    snap = sorted(_md(d).glob("*.checkpoint"))[-1]
    buf = bytearray(snap.read_bytes())
    pos, _ = _batches(buf)[1]
    attrs = struct.unpack_from(">h", buf, pos + 21)[0]
    struct.pack_into(">h", buf, pos + 21, (attrs & ~0x07) | 0x06)
    _fix_crc(buf, pos)
    snap.write_bytes(buf)


def t_far_future_timestamp(d: Path) -> None:
    """A batch whose maxTimestamp is Long.MAX_VALUE (CRC fixed)."""
    buf = bytearray(_segment0(d).read_bytes())
    pos, _ = _batches(buf)[-1]
    struct.pack_into(">q", buf, pos + 35, (1 << 63) - 1)
    struct.pack_into(">q", buf, pos + 27, (1 << 63) - 1 - 10)
    _fix_crc(buf, pos)
    _segment0(d).write_bytes(buf)


def t_garbage_header_after_damage(d: Path) -> None:
    """The last batch of a segment is damaged (CRC mismatch) and its maxTimestamp is absurd:
    /log, which reads headers without checking CRCs, must still describe the segment."""
    buf = bytearray(_segment0(d).read_bytes())
    pos, _ = _batches(buf)[-1]
    struct.pack_into(">q", buf, pos + 35, (1 << 63) - 1)
    _segment0(d).write_bytes(buf)


def t_segment_is_directory(d: Path) -> None:
    seg = _segments(d)[-1]
    seg.unlink()
    seg.mkdir()


def t_segment_symlink_loop(d: Path) -> None:
    seg = _segments(d)[-1]
    seg.unlink()
    seg.symlink_to(seg.name)


def t_quorum_voter_null(d: Path) -> None:
    (_md(d) / "quorum-state").write_text('{"currentVoters": [{"voterId": null}]}')


def t_quorum_voter_text(d: Path) -> None:
    (_md(d) / "quorum-state").write_text('{"currentVoters": [{"voterId": "seven"}]}')


def t_quorum_deep(d: Path) -> None:
    (_md(d) / "quorum-state").write_text("[" * 100_000)


def t_quorum_not_json(d: Path) -> None:
    (_md(d) / "quorum-state").write_bytes(b"\x00\x01 not json at all")


def t_huge_length_first_batch(d: Path) -> None:
    buf = bytearray(_segment0(d).read_bytes())
    struct.pack_into(">i", buf, 8, 0x7FFFFFFF)
    _segment0(d).write_bytes(buf)


def t_negative_length_mid_file(d: Path) -> None:
    buf = bytearray(_segment0(d).read_bytes())
    pos, _ = _batches(buf)[len(_batches(buf)) // 2]
    struct.pack_into(">i", buf, pos + 8, -12)
    _segment0(d).write_bytes(buf)


def t_all_files_empty(d: Path) -> None:
    for f in _data_files(d):
        f.write_bytes(b"")


def t_only_garbage(d: Path) -> None:
    rng = random.Random(7)
    for f in _data_files(d):
        f.write_bytes(rng.randbytes(f.stat().st_size or 100))


def t_middle_segment_missing(d: Path) -> None:
    _segments(d)[1].unlink()


def t_segments_reordered(d: Path) -> None:
    a, b = _segments(d)[1:3]
    tmp = a.with_name("swap.tmp")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


Damage = Callable[[Path], None]


def table_params(table: list[tuple[str, str, Damage, str | None]]) -> list[object]:
    """pytest params of a (fixture, name, damage, known bug) table: a bug is a strict xfail."""
    return [pytest.param(fx, fn, id=f"{fx}-{name}",
                         marks=[pytest.mark.xfail(strict=True, reason=bug)] if bug else [])
            for fx, name, fn, bug in table]


TARGETED: list[tuple[str, str, Callable[[Path], None], str | None]] = [
    ("health-offline", "partition-record-overrun", t_partition_record_overrun, None),
    ("cluster-basic", "unknown-codec", t_unknown_codec, None),
    ("cluster-basic", "count-too-big", t_count_too_big, None),
    ("cluster-basic", "snapshot-bad-codec", t_snapshot_bad_codec, None),
    ("cluster-basic", "far-future-timestamp", t_far_future_timestamp, None),
    ("health-offline", "garbage-header-after-damage", t_garbage_header_after_damage, None),
    ("segments-snapshots", "segment-is-directory", t_segment_is_directory, None),
    ("segments-snapshots", "segment-symlink-loop", t_segment_symlink_loop, None),
    ("cluster-basic", "quorum-voter-null", t_quorum_voter_null, None),
    ("cluster-basic", "quorum-voter-text", t_quorum_voter_text, None),
    ("cluster-basic", "quorum-deep-json", t_quorum_deep, None),
    ("cluster-basic", "quorum-not-json", t_quorum_not_json, None),
    ("cluster-basic", "huge-length-first-batch", t_huge_length_first_batch, None),
    ("cluster-basic", "negative-length-mid-file", t_negative_length_mid_file, None),
    ("segments-snapshots", "all-files-empty", t_all_files_empty, None),
    ("segments-snapshots", "only-garbage", t_only_garbage, None),
    ("segments-snapshots", "middle-segment-missing", t_middle_segment_missing, None),
    ("segments-snapshots", "segments-reordered", t_segments_reordered, None),
]


@pytest.mark.parametrize("fixture,damage", table_params(TARGETED))
def test_targeted_damage(fixture: str, damage: Callable[[Path], None], tmp_path: Path) -> None:
    log_dir = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, log_dir)
    damage(log_dir)
    bad: list[str] = []
    for cmd in COMMANDS:
        bad += problems(["-d", str(log_dir), *cmd])
    assert not bad, "\n".join(bad)


# Odd but legal-looking arguments on an undamaged fixture: a usage complaint (2) or a
# one-line error (1), never a crash.
ODD_ARGS: list[tuple[list[str], str | None]] = [
    (["ls", "/image/[z-a]"], None),
    (["changes", "/image/topics/byName/["], None),
    (["ls", "/image/{a,b"], None),
    (["cat", "/image/topics/byName/*/99"], None),
    (["find", "/image", "-maxdepth", "-1"], None),
    (["records", "--from", "-5", "--to", "-1"], None),
    (["at", "-1"], None),
    (["diff", "latest", "earliest", "/image/topics"], None),
    (["tree", "/quorum/../../image/././features"], None),
]


@pytest.mark.parametrize("args", [
    pytest.param(a, id=" ".join(a),
                 marks=[pytest.mark.xfail(strict=True, reason=bug)] if bug else [])
    for a, bug in ODD_ARGS])
def test_odd_arguments(args: list[str]) -> None:
    rc, _, err = run(["-d", str(FIXTURES / "cluster-basic"), *args])
    assert rc in (0, 1, 2), (rc, err)
    assert "Traceback" not in err and "internal error" not in err, err


def test_fifo_segment_does_not_hang(tmp_path: Path) -> None:
    log_dir = tmp_path / "cluster-basic"
    shutil.copytree(FIXTURES / "cluster-basic", log_dir)
    os.mkfifo(_md(log_dir) / "00000000000000000500.log")
    try:
        proc = subprocess.run([sys.executable, "-m", "mdshell", "-d", str(log_dir), "ls", "/"],
                              capture_output=True, text=True, timeout=3, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail("mdshell hung on a FIFO named like a segment")
    assert proc.returncode in (0, 1)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


# ---------------------------------------------------------------- silent damage
#
# A stricter oracle for a few damages: when the damaged directory gives a different /image
# than the fixture, the user must be told (a warning on stderr, exit 1 with --strict). A
# stale or partial image presented as complete is the worst outcome for an operator.



def _batch_positions(path: Path) -> list[tuple[int, int]]:
    """(position, base offset) of every batch of a segment."""
    buf = path.read_bytes()
    return [(pos, struct.unpack_from(">q", buf, pos)[0]) for pos, _ in _batches(buf)]


def s_length_below_snapshot(d: Path) -> None:
    """cluster-basic: the snapshot ends at 96; a batch at offset ~43 gets a huge length."""
    seg = _segment0(d)
    pos = next(p for p, base in _batch_positions(seg) if 40 <= base < 96)
    buf = bytearray(seg.read_bytes())
    struct.pack_into(">i", buf, pos + 8, struct.unpack_from(">i", buf, pos + 8)[0] + 100_000)
    seg.write_bytes(buf)


def s_missing_segment_after_snapshot(d: Path) -> None:
    """segments-snapshots: keep the snapshot ending at 68, drop the segment holding 37-77."""
    (_md(d) / "00000000000000000094-0000000003.checkpoint").unlink()
    (_md(d) / "00000000000000000037.log").unlink()


def s_base_offset_backwards(d: Path) -> None:
    """cluster-basic: the batch at offset 98 (after the snapshot) claims base offset 5."""
    seg = _segment0(d)
    pos = next(p for p, base in _batch_positions(seg) if base == 98)
    buf = bytearray(seg.read_bytes())
    struct.pack_into(">q", buf, pos, 5)
    seg.write_bytes(buf)


def s_unknown_record_in_snapshot(d: Path) -> None:
    """cluster-basic: the snapshot's FeatureLevelRecord becomes api key 99 (CRC fixed)."""
    snap = _md(d) / "00000000000000000096-0000000001.checkpoint"

    def patch(buf: bytearray, vpos: int) -> None:
        buf[vpos + 1] = 99
    _patch_first_record(snap, b"\x01\x0c\x00", patch)


def s_segment_renamed(d: Path) -> None:
    _segment0(d).rename(_md(d) / "0.log")


def s_truncated_tail(d: Path) -> None:
    seg = _segment0(d)
    os.truncate(seg, seg.stat().st_size - 30)


def s_crc_in_tail(d: Path) -> None:
    seg = _segment0(d)
    pos = next(p for p, base in _batch_positions(seg) if base >= 140)
    buf = bytearray(seg.read_bytes())
    buf[pos + 70] ^= 0x01
    seg.write_bytes(buf)


def s_newest_snapshot_truncated(d: Path) -> None:
    snap = _md(d) / "00000000000000000094-0000000003.checkpoint"
    os.truncate(snap, snap.stat().st_size // 2)


SILENT: list[tuple[str, str, Callable[[Path], None], str | None]] = [
    ("cluster-basic", "length-below-snapshot", s_length_below_snapshot, None),
    ("segments-snapshots", "missing-segment-after-snapshot", s_missing_segment_after_snapshot,
     None),
    ("cluster-basic", "base-offset-backwards", s_base_offset_backwards, None),
    ("cluster-basic", "unknown-record-in-snapshot", s_unknown_record_in_snapshot, None),
    ("cluster-basic", "segment-renamed", s_segment_renamed, None),
    ("cluster-basic", "truncated-tail", s_truncated_tail, None),
    ("cluster-basic", "crc-in-tail", s_crc_in_tail, None),
    ("segments-snapshots", "newest-snapshot-truncated", s_newest_snapshot_truncated, None),
]


@pytest.mark.parametrize("fixture,damage", table_params(SILENT))
def test_damage_that_changes_the_image_is_reported(
        fixture: str, damage: Callable[[Path], None], tmp_path: Path) -> None:
    _, before, _ = run(["-d", str(FIXTURES / fixture), "tree", "/image"])
    log_dir = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, log_dir)
    damage(log_dir)
    rc, after, err = run(["-d", str(log_dir), "tree", "/image"])
    assert rc in (0, 1) and "internal error" not in err, err
    if after != before:
        assert "mdshell: warning:" in err, "the image changed and nothing was said"
        strict_rc, _, _ = run(["--strict", "-d", str(log_dir), "ls", "/"])
        assert strict_rc == 1, "the image changed and --strict still exits 0"


Change = Callable[[dict[str, Any], int, int], bytes]


def _rewrite_first(path: Path, prefix: bytes, change: Change) -> None:
    """Replace the first metadata record whose value starts with ``prefix`` by
    ``change(decoded, key, version)`` and write its batch again (same header fields, new
    length and CRC)."""
    from mdshell.wire import frames, rewrite
    from mdshell.wire.batch import iter_records, parse_header

    data = path.read_bytes()
    out = bytearray()
    done = False
    for pos, size in _batches(data):
        batch = parse_header(data, pos)
        if done or batch.is_control:
            out += data[pos:pos + size]
            continue
        specs = []
        for rec in iter_records(batch):
            value = rec.value
            if not done and value is not None and value.startswith(prefix):
                key, ver, d = frames.decode_metadata(rec.buf, rec.value_pos, rec.value_end)
                assert isinstance(d, dict)
                value = change(d, key, ver)
                done = True
            specs.append(rewrite.spec_of(batch, rec, value))
        out += rewrite.rebuild(batch, specs)
    assert done, f"no record starting {prefix!r} in {path}"
    path.write_bytes(out)


def _add_unknown_tag(path: Path, api_key: int) -> None:
    """Give the first record of type ``api_key`` an unknown tagged field (tag 9)."""
    from mdshell.wire import codec
    from mdshell.wire.batch import frame_metadata_value
    from mdshell.wire.records import METADATA

    def change(d: dict[str, Any], key: int, ver: int) -> bytes:
        d[codec.UNKNOWN_TAGS] = {9: b"\x01"}
        return frame_metadata_value(key, ver, codec.encode(METADATA[key], ver, d))
    _rewrite_first(path, bytes([1, api_key]), change)


@pytest.mark.parametrize("api_key", [
    pytest.param(2, id="TopicRecord"),
    pytest.param(3, id="PartitionRecord"),
])
def test_unknown_tagged_fields_are_reported(api_key: int, tmp_path: Path) -> None:
    log_dir = tmp_path / "health-offline"
    shutil.copytree(FIXTURES / "health-offline", log_dir)
    _add_unknown_tag(_segment0(log_dir), api_key)
    rc, _, err = run(["--strict", "-d", str(log_dir), "ls", "/"])
    assert rc == 1 and "unknown tagged fields" in err, err


def test_huge_array_length_does_not_hang(tmp_path: Path) -> None:
    from mdshell.wire import codec
    from mdshell.wire.batch import frame_metadata_value
    from mdshell.wire.primitives import uvarint_bytes
    from mdshell.wire.records import METADATA

    def change(d: dict[str, Any], key: int, ver: int) -> bytes:
        d["directories"] = []
        body = codec.encode(METADATA[3], 1, d)
        assert body.endswith(b"\x01\x00")  # empty Directories, no tagged fields
        return frame_metadata_value(3, 1, body[:-2] + uvarint_bytes(1 << 33) + b"\x00")

    log_dir = tmp_path / "health-offline"
    shutil.copytree(FIXTURES / "health-offline", log_dir)
    _rewrite_first(_segment0(log_dir), b"\x01\x03\x01", change)
    try:
        proc = subprocess.run([sys.executable, "-m", "mdshell", "-d", str(log_dir), "records"],
                              capture_output=True, text=True, timeout=3, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail("mdshell hung on a record whose array length is 2**33")
    assert proc.returncode in (0, 1)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


# ---------------------------------------------------------------- header fields outside the CRC
#
# A batch's CRC covers its bytes from ``attributes`` on: baseOffset, batchLength,
# partitionLeaderEpoch and magic are not covered, so damage there passes every CRC. For each
# case the verdict must hold: either the image is the undamaged one and no damage is reported,
# or damage is reported (a problem health counts as damage, and one naming the file), --strict
# exits 1, and the image claims no offset beyond what the undamaged data holds.

_OUTSIDE_CRC = ("baseOffset", "batchLength", "partitionLeaderEpoch", "magic")


def _outside_value(rng: Rng, field: str, buf: bytearray, pos: int, size: int,
                   batches: list[tuple[int, int]]) -> int:
    if field == "baseOffset":
        base = struct.unpack_from(">q", buf, pos)[0]
        return rng.choice([base + (1 << 56), base + 1, base - 1, base + rng.randrange(2, 500),
                           max(0, base - rng.randrange(2, 500)), 0, -1, (1 << 63) - 1,
                           -(1 << 63), struct.unpack_from(">q", buf, rng.choice(batches)[0])[0]])
    if field == "batchLength":
        length = size - 12
        return rng.choice([length + 1, length - 1, length + 12, length + rng.randrange(13, 5000),
                           length - rng.randrange(2, 12), len(buf), 0x7FFFFFFF, -1, 0, 48, 49])
    if field == "partitionLeaderEpoch":
        epoch = struct.unpack_from(">i", buf, pos + 12)[0]
        return rng.choice([epoch + 1, epoch - 1, epoch + 1000, -1, 0, 0x7FFFFFFF])
    return rng.choice([0, 1, 3, 0x7F, -1])


_PACK = {"baseOffset": (0, ">q"), "batchLength": (8, ">i"), "partitionLeaderEpoch": (12, ">i"),
         "magic": (16, ">b")}


def outside_crc(field: str, seed: int, d: Path) -> str:
    """One header field outside the CRC of one batch (of any data file, the newest snapshot
    more often) set to another value, seeded."""
    rng = random.Random(seed)
    files = [f for f in _data_files(d) if _batches(f.read_bytes())]
    snapshots = [f for f in files if f.name.endswith(".checkpoint")]
    # a third of the cases hit the newest snapshot: the one a load reads
    f = snapshots[-1] if snapshots and rng.random() < 0.33 else rng.choice(files)
    buf = bytearray(f.read_bytes())
    batches = _batches(buf)
    pos, size = rng.choice(batches)
    value = _outside_value(rng, field, buf, pos, size, batches)
    at, fmt = _PACK[field]
    struct.pack_into(fmt, buf, pos + at, value)
    f.write_bytes(buf)
    return f"{f.name} batch at {pos} {field}={value}"


def header_cases() -> list[tuple[str, str, int]]:
    fixtures = [f for f in fixture_names()
                if any(_batches(p.read_bytes()) for p in _data_files(FIXTURES / f))]
    return [(random.Random(30_000 + i).choice(fixtures), _OUTSIDE_CRC[i % 4], 30_000 + i)
            for i in range(64)]


def _verdict(directory: Path) -> tuple[list[Any], int | None]:
    """The problems of a load and the image's offset (the library's view of ``-d``)."""
    from mdshell.session import load
    from mdshell.source import open_source

    loaded = load(open_source(str(directory)))
    return loaded.problems, loaded.image.provenance.offset


@pytest.mark.parametrize("fixture,field,seed", [
    pytest.param(*c, id=f"{c[0]}-{c[1]}-{c[2]}") for c in header_cases()])
def test_header_field_outside_the_crc(fixture: str, field: str, seed: int,
                                      tmp_path: Path) -> None:
    from mdshell.problems import DAMAGE

    log_dir = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, log_dir)
    what = outside_crc(field, seed, log_dir)
    damaged_file = what.split()[0]
    before, truth = _verdict(FIXTURES / fixture)
    problems, offset = _verdict(log_dir)
    image = run(["-d", str(log_dir), "tree", "/image"])[1]
    known = {(p.code, p.message) for p in before}
    said = [p for p in problems if p.code in DAMAGE and (p.code, p.message) not in known]
    if image == undamaged_image(["-d", str(FIXTURES / fixture)]) and not said:
        return  # the damage changes nothing the image shows (e.g. below the snapshot)
    assert said, f"{what}: the image changed and no damage was reported: {problems}"
    # the damaged file is named (a damaged snapshot by the warning that it is not used)
    assert any(damaged_file in p.message for p in problems), (what, said)
    assert run(["--strict", "-d", str(log_dir), "ls", "/"])[0] == 1, what
    assert offset is not None and truth is not None and offset <= truth, (what, offset, truth)
