"""Header fields outside the batch CRC (issue 18 item 3) and warning floods (item 7).

A batch's CRC covers its bytes from ``attributes`` on: baseOffset, batchLength,
partitionLeaderEpoch and magic can be damaged while every CRC holds. A batch whose header is
damaged is skipped with one problem (counted as damage: ``health`` fails, ``--strict`` exits
1) and the rest is read; the image never claims an offset the data does not hold. A problem
that repeats per batch or record is said once, with a count and the offsets.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from mdshell.session import load
from mdshell.source import open_source

from .conftest import CORPUS, FIXTURES, cli, need_corpus

MD = "__cluster_metadata-0"
_FIELDS = {"base": (0, ">q"), "length": (8, ">i"), "epoch": (12, ">i"), "magic": (16, ">b")}


def _positions(path: Path) -> list[tuple[int, int, int]]:
    """(byte, base offset, size) of every batch of a file."""
    data = path.read_bytes()
    out, pos = [], 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        out.append((pos, base, 12 + length))
        pos += 12 + length
    return out


def _damage(path: Path, pos: int, field: str, value: int) -> None:
    buf = bytearray(path.read_bytes())
    at, fmt = _FIELDS[field]
    struct.pack_into(fmt, buf, pos + at, value)
    path.write_bytes(buf)


def _copy(tmp_path: Path, fixture: str) -> Path:
    target = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, target)
    return target


def _segment(d: Path) -> Path:
    return d / MD / "00000000000000000000.log"


def _offset(d: Path) -> int:
    return load(open_source(str(d))).image.provenance.offset


def _said(err: str) -> list[str]:
    """The problem lines of stderr: each said once, then the image's verdict once (which
    names the image as not sound)."""
    lines = err.splitlines()
    assert len(lines) >= 2 and lines[-1].startswith("mdshell: warning: the image "), err
    assert sum(x.startswith("mdshell: warning: the image ") for x in lines) == 1, err
    return lines[:-1]


def _one_header_problem(d: Path, what: str) -> str:
    """The one line said about the damage; health fails "data", --strict exits 1."""
    run = cli("-d", str(d), "ls", "/")
    lines = _said(run.err)
    assert len(lines) == 1 and what in lines[0], run.err
    health = cli("-d", str(d), "health")
    assert health.code == 1 and "FAIL  data" in health.out, health.out
    assert cli("--strict", "-d", str(d), "ls", "/").code == 1
    return lines[0]


# cluster-basic: a snapshot at 96, then log batches 96-158 in one segment.
def _after_snapshot(d: Path, nth: int = 10) -> tuple[int, int, int]:
    return [b for b in _positions(_segment(d)) if b[1] >= 96][nth]


def test_base_offset_far_too_high_is_skipped_once(tmp_path: Path) -> None:
    d = _copy(tmp_path, "cluster-basic")
    pos, base, _ = _after_snapshot(d)
    _damage(_segment(d), pos, "base", base + (1 << 56))
    line = _one_header_problem(d, f"claims base offset {base + (1 << 56)}")
    assert f"(offset {base})" in line or f"(offsets {base}-" in line, line
    assert _offset(d) == _offset(FIXTURES / "cluster-basic") == 158


@pytest.mark.parametrize("delta", [-1, 1, -5, 1 << 40])
def test_base_offset_off_by_a_little_is_skipped(tmp_path: Path, delta: int) -> None:
    d = _copy(tmp_path, "cluster-basic")
    pos, base, _ = _after_snapshot(d)
    _damage(_segment(d), pos, "base", base + delta)
    _one_header_problem(d, "its base offset field (outside the CRC) is damaged")
    assert _offset(d) == 158


def test_last_batch_base_offset_cannot_move_the_image_past_the_data(tmp_path: Path) -> None:
    """Nothing follows the last batch to confirm a jump, and a file holds no gaps."""
    d = _copy(tmp_path, "cluster-basic")
    pos, base, _ = _positions(_segment(d))[-1]
    _damage(_segment(d), pos, "base", base + (1 << 56))
    _one_header_problem(d, "claims base offset")
    assert _offset(d) < 158


def test_a_real_gap_stays_a_gap(tmp_path: Path) -> None:
    """Every batch from one on moved by 1000 (the later ones follow on from the moved one):
    offsets are missing, not a damaged header; the later batches are applied."""
    d = _copy(tmp_path, "cluster-basic")
    seg = _segment(d)
    first = _after_snapshot(d)[0]
    for pos, base, _ in _positions(seg):
        if pos >= first:
            _damage(seg, pos, "base", base + 1000)
    run = cli("-d", str(d), "ls", "/")
    assert "are missing before the batch" in run.err and "header" not in run.err, run.err
    assert _offset(d) == 1158


@pytest.mark.parametrize("delta", [100, -10, 100_000_000, 12])
def test_damaged_length_is_found_by_the_crc(tmp_path: Path, delta: int) -> None:
    """Not "incomplete" or "CRC mismatch ... everything after it is ignored": the batch's
    CRC shows where it ends; it is skipped and the rest of the file is read."""
    d = _copy(tmp_path, "cluster-basic")
    pos, _, size = _after_snapshot(d)
    _damage(_segment(d), pos, "length", size - 12 + delta)
    line = _one_header_problem(d, f"but its CRC shows {size - 12}")
    assert "incomplete" not in line and "CRC mismatch" not in line
    assert _offset(d) == 158


def test_damaged_length_below_the_snapshot_is_not_read_into_the_log(tmp_path: Path) -> None:
    """The fast skip to the snapshot's end does not check CRCs: a damaged length there must
    not land the walk in the middle of a batch (an "impossible length" far from the damage)."""
    d = _copy(tmp_path, "cluster-basic")
    pos, _, size = [b for b in _positions(_segment(d)) if b[1] < 96][40]
    _damage(_segment(d), pos, "length", size - 12 - 20)
    run = cli("--strict", "-d", str(d), "tree", "/image")
    assert run.code == 0 and run.err == "", run.err  # below the snapshot: the image is whole
    assert run.out == cli("-d", str(FIXTURES / "cluster-basic"), "tree", "/image").out


@pytest.mark.parametrize("value", [2, 0, 99])
def test_a_single_odd_epoch_is_damage_not_a_new_leader(tmp_path: Path, value: int) -> None:
    """One batch of epoch ``value`` among batches of epoch 1: not a leader change (then a
    flood of "lower epoch" warnings followed), a damaged field."""
    d = _copy(tmp_path, "cluster-basic")
    pos, _, _ = _after_snapshot(d)
    _damage(_segment(d), pos, "epoch", value)
    _one_header_problem(d, f"has leader epoch {value} among batches of epoch 1")
    loaded = load(open_source(str(d)))
    assert (loaded.image.provenance.offset, loaded.image.provenance.epoch) == (158, 1)


def test_last_batch_epoch_rises_only_on_a_leader_change(tmp_path: Path) -> None:
    d = _copy(tmp_path, "cluster-basic")
    pos, _, _ = _positions(_segment(d))[-1]
    _damage(_segment(d), pos, "epoch", 7)
    _one_header_problem(d, "has leader epoch 7 among batches of epoch 1")
    assert load(open_source(str(d))).image.provenance.epoch == 1


@pytest.mark.parametrize("magic", [0, 1, 3])
def test_wrong_magic_with_a_valid_crc_skips_one_batch(tmp_path: Path, magic: int) -> None:
    """Not "reading of this file stops there": the CRC shows a v2 batch."""
    d = _copy(tmp_path, "cluster-basic")
    pos, _, _ = _after_snapshot(d)
    _damage(_segment(d), pos, "magic", magic)
    _one_header_problem(d, f"has magic {magic} (not 2) but a valid CRC")
    assert _offset(d) == 158


@pytest.mark.parametrize("value", [(1 << 63) - 1, -(1 << 63), -5])
def test_snapshot_base_offset_does_not_drop_its_records(tmp_path: Path, value: int) -> None:
    """Offsets inside a snapshot do not matter to the image; a damaged base offset there put
    the batch's records past the replay's bounds, and they were dropped without a word."""
    d = _copy(tmp_path, "cluster-basic")
    snap = d / MD / "00000000000000000096-0000000001.checkpoint"
    pos, _, _ = _positions(snap)[1]
    _damage(snap, pos, "base", value)
    run = cli("-d", str(d), "tree", "/image")
    assert run.out == cli("-d", str(FIXTURES / "cluster-basic"), "tree", "/image").out


def test_records_batches_names_the_damaged_header(tmp_path: Path) -> None:
    d = _copy(tmp_path, "cluster-basic")
    pos, base, _ = _after_snapshot(d)
    _damage(_segment(d), pos, "base", base + (1 << 56))
    run = cli("-d", str(d), "-o", "json", "records", "--batches")
    import json

    rows = json.loads(run.out)
    rows = rows if isinstance(rows, list) else rows["batches"]
    damaged = [r for r in rows if r["headerDamage"]]
    assert [(r["position"], r["headerDamage"]) for r in damaged] == [(pos, "base offset")]
    assert "claims base offset" in run.err


def test_a_time_does_not_reach_a_damaged_offset(tmp_path: Path) -> None:
    """``--at TIME`` takes the last offset written by then: not the damaged header's."""
    from mdshell.source.batchscan import offset_at_time

    d = _copy(tmp_path, "cluster-basic")
    pos, base, _ = _positions(_segment(d))[-1]
    _damage(_segment(d), pos, "base", base + (1 << 56))
    point = offset_at_time(open_source(str(d)), 1 << 62)
    assert point.offset == base - 1


def test_issue_scenario_on_a_real_log(tmp_path: Path) -> None:
    """The issue's case: one base offset 2^56 too high in the middle of a real 4 MB log with
    thousands of later batches: one line (not one per later batch), health fails, the image
    is as of the real end."""
    need_corpus()
    name = "ArpithaPrakash__Real-Time-Air-Quality-Prediction-with-Apache-Kafka"
    d = tmp_path / name
    (d / MD).mkdir(parents=True)
    for f in (CORPUS / name / MD).iterdir():
        if not f.name.endswith(".checkpoint"):  # the whole log is replayed
            shutil.copyfile(f, d / MD / f.name)
    seg = _segment(d)
    batches = _positions(seg)
    pos, base, _ = batches[len(batches) // 2]
    _damage(seg, pos, "base", base + (1 << 56))
    _one_header_problem(d, f"claims base offset {base + (1 << 56)}")
    assert _offset(d) == batches[-1][1]


# ---------------------------------------------------------------- floods


def _without_history(tmp_path: Path) -> Path:
    """cluster-basic's log from offset 96 on, without its snapshot: records name topics and
    brokers whose creation is not in the copy."""
    d = _copy(tmp_path, "cluster-basic")
    seg = _segment(d)
    data = seg.read_bytes()
    start = next(p for p, base, _ in _positions(seg) if base >= 96)
    (d / MD / "00000000000000000096.log").write_bytes(data[start:])
    seg.unlink()
    (d / MD / "00000000000000000096-0000000001.checkpoint").unlink()
    return d


def test_repeated_problems_are_said_once_with_a_count(tmp_path: Path) -> None:
    d = _without_history(tmp_path)
    run = cli("-d", str(d), "ls", "/")
    lines = _said(run.err)
    assert len(lines) == 3, run.err  # incomplete, unknown topics, unknown broker
    assert "19 more records name unknown topics (offsets 102-157)" in lines[1]
    assert "1 more record names a broker that is not registered (offset 111)" in lines[2]
    # Records naming what the missing start held: the image is incomplete, not damaged.
    assert "the image is incomplete because of data missing from offset 0" in run.err
    debug = cli("--debug", "-d", str(d), "ls", "/")
    assert debug.err.count("names unknown topic") == 21  # the summary, and each one
    loaded = load(open_source(str(d)))
    assert [p.count for p in loaded.problems if p.code == "no-topic"] == [20]


def test_flood_of_unknown_topics_on_a_real_log(tmp_path: Path) -> None:
    """A segment copied without the snapshot before it: 1,785 records name unknown topics."""
    need_corpus()
    d = tmp_path / "userchic" / MD
    d.mkdir(parents=True)
    for f in (CORPUS / "userchic__MyMicroservices" / MD).iterdir():
        if not f.name.endswith(".checkpoint"):
            shutil.copyfile(f, d / f.name)
    run = cli("-d", str(d), "ls", "/")
    assert len(_said(run.err)) == 2, run.err
    assert "1,784 more records name unknown topics (offsets 32040-87930)" in run.err


def test_fold_and_merge() -> None:
    from mdshell.problems import Problem, add, merge

    problems: list[Problem] = []
    for off in (5, 6, 9):
        add(problems, Problem("overlap", f"batch {off} repeats", "f.log", off))
    add(problems, Problem("crc", "stop", "f.log", 10))
    add(problems, Problem("overlap", "batch 11 repeats", "g.log", 11))
    assert [p.message for p in problems] == [
        "batch 5 repeats; 3 more batches repeat offsets already read (skipped) "
        "(offsets 6-11)", "stop"]
    assert problems[0].count == 4 and [p.offset for p in problems[0].each] == [5, 6, 9, 11]
    # live follow: a flood that grew replaces its earlier self
    old = list(problems)
    add(problems, Problem("overlap", "batch 12 repeats", "g.log", 12))
    merged = merge(old, problems)
    assert len(merged) == 2 and merged[0].count == 5
    assert merge(old, [Problem("gap", "new")])[-1].message == "new"


@pytest.mark.parametrize("keep", [12, 40, 60])
def test_a_last_batch_cut_inside_its_header_is_said_as_the_loader_says_it(
        tmp_path: Path, keep: int) -> None:
    """The last batch cut after its length field but inside its 61-byte header (a node
    killed mid-write): ``records --batches`` says what the load says (incomplete, with its
    offset and sizes), not that its length does not fit (corrupt)."""
    d = _copy(tmp_path, "cluster-basic")
    seg = _segment(d)
    start = _positions(seg)[-1][0]
    seg.write_bytes(seg.read_bytes()[:start + keep])
    listed = cli("-d", str(d), "records", "--batches")
    loaded = cli("-d", str(d), "cat", "/image/provenance")
    said = [w for w in listed.err.splitlines() if ".log:" in w]
    assert said and said == [w for w in loaded.err.splitlines() if ".log:" in w], (
        listed.err, loaded.err)
    assert "incomplete" in said[0] and "does not fit" not in said[0]
