"""Time travel: ``at O`` must equal replaying only the log's offsets <= O."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from mdshell.commands import Shell
from mdshell.commands.navigate import tree_lines
from mdshell.session import load
from mdshell.source import DirectorySource
from mdshell.source.walker import iter_batches
from mdshell.tree.node import RenderOptions
from mdshell.tree.paths import lookup
from mdshell.wire import rewrite

from .conftest import CORPUS, FIXTURES, need_corpus, open_shell

SHOW = RenderOptions(show_secrets=True)
# Single-segment logs from offset 0, with and without snapshots, with transactions.
DIRS = ["PhilippDuck__rotorwind", "greenlemonT__kafka-temp__2", "IndusWargods__local-test-rig",
        "ArthurArutunyan04__Backend_labs"]


def prefix_file(logs: list[Path], upto: int, out: Path) -> None:
    """Write the batches of the segments holding offsets <= upto; cut the last one if needed."""
    parts = []
    batches = [b for log in logs for b in iter_batches(str(log), log.read_bytes(), [])]
    for b in batches:
        if b.base_offset > upto:
            break
        if b.last_offset <= upto:
            parts.append(b.raw())
            continue
        parts.append(rewrite.cut(b, upto))
    out.write_bytes(b"".join(parts))


def image_text(shell: Shell) -> list[str]:
    node = lookup(shell.session.root, ["image"])
    assert node is not None
    return [line for line in tree_lines(node, SHOW)]


def _offsets(directory: Path) -> list[int]:
    src = DirectorySource(str(directory))
    last = load(src).end_offset or 0
    snaps = [c.end_offset for c in src.layout.checkpoints if c.end_offset > 0]
    picks = {1, 3, 7, last // 3, last // 2, last - 2}
    picks |= {s + 5 for s in snaps if s + 5 <= last}
    return sorted(o for o in picks if 0 < o <= last)


@pytest.mark.parametrize("name", DIRS)
def test_at_equals_prefix_replay(name: str, tmp_path: Path) -> None:
    need_corpus()
    check_at_equals_prefix_replay(CORPUS / name, tmp_path)


# Fixtures with logs from offset 0: snapshots, several segments, transactions, ELR.
FIXTURE_DIRS = ["cluster-basic", "segments-snapshots", "transactions", "elr", "codecs"]


@pytest.mark.parametrize("name", FIXTURE_DIRS)
def test_at_equals_prefix_replay_on_fixtures(name: str, tmp_path: Path) -> None:
    check_at_equals_prefix_replay(FIXTURES / name, tmp_path)


def check_at_equals_prefix_replay(directory: Path, tmp_path: Path) -> None:
    logs = sorted((directory / "__cluster_metadata-0").glob("*.log"))
    shell = open_shell(directory, secrets=True)
    checked = 0
    for offset in _offsets(directory):
        result = shell.run(["at", str(offset)])
        assert result.code == 0, result.errors
        prefix = tmp_path / f"prefix-{offset}.log"
        prefix_file(logs, offset, prefix)
        ref = open_shell(prefix, secrets=True)
        assert image_text(shell) == image_text(ref), f"{directory.name} offset {offset}"
        checked += 1
    assert checked >= 5
    assert shell.run(["at", "latest"]).code == 0
    assert shell.session.loaded is shell.session.latest


def test_at_rejects_offsets_outside_the_log() -> None:
    need_corpus()
    source = DirectorySource(str(CORPUS / "13LAckHEart__kafka"))
    shell = Shell(source, load(source), SHOW)
    for bad, words, code in (("99999", "after the end", 1), ("abc", "not an offset", 2)):
        r = shell.run(["at", bad])
        assert r.code == code and words in r.errors[0]
    # the corpus directory whose first segment is gone: only snapshots reach back
    gone = DirectorySource(str(CORPUS / "qkrckstjq__spring-kafka__2"))
    shell2 = Shell(gone, load(gone), SHOW)
    r = shell2.run(["at", "10"])
    assert r.code == 1 and "before the oldest data" in r.errors[0]


def test_at_rejects_offsets_outside_the_log_on_fixtures() -> None:
    shell = open_shell("cluster-basic", secrets=True)
    for bad, words, code in (("99999", "after the end", 1), ("abc", "not an offset", 2)):
        r = shell.run(["at", bad])
        assert r.code == code and words in r.errors[0]
    # kafka37-snapshot's log before its snapshot (offset 60) is gone: only the snapshot
    gone = open_shell("kafka37-snapshot", secrets=True)
    r = gone.run(["at", "10"])
    assert r.code == 1 and "before the oldest data" in r.errors[0]


def test_diff_between_offsets_reports_fields_on_fixtures() -> None:
    shell = open_shell("cluster-basic", secrets=True)
    r = shell.run(["diff", "20", "latest", "/image/cluster"])
    lines = list(r.lines)
    assert r.code == 0
    assert "~ /image/cluster/brokers/2" in lines
    assert "    epoch: 11 -> 112" in lines
    same = shell.run(["diff", "50", "50"])
    assert list(same.lines)[-1] == "no differences"
    data = shell.run(["diff", "20", "latest", "/image/topics"]).json()
    kinds = {(c["kind"], c["path"]) for c in data["changes"]}
    assert ("added", "/image/topics/byName/topic-3") in kinds


def test_diff_between_offsets_reports_fields() -> None:
    need_corpus()
    source = DirectorySource(str(CORPUS / "PhilippDuck__rotorwind"))
    shell = Shell(source, load(source), SHOW)
    r = shell.run(["diff", "100", "latest", "/image/cluster"])
    lines = list(r.lines)
    assert r.code == 0
    assert "~ /image/cluster/brokers/1" in lines
    assert "    epoch: 5 -> 27169" in lines
    same = shell.run(["diff", "500", "500"])
    assert list(same.lines)[-1] == "no differences"
    data = shell.run(["diff", "100", "latest", "/image/topics"]).json()
    kinds = {(c["kind"], c["path"]) for c in data["changes"]}
    assert ("added", "/image/topics/byName/test") in kinds


@pytest.mark.parametrize("name", FIXTURE_DIRS)
def test_diff_of_fixture_offsets_matches_fresh_loads(name: str) -> None:
    """``diff A B`` compares the images a fresh load gives at A and at B."""
    directory = FIXTURES / name
    source = DirectorySource(str(directory))
    shell = Shell(source, load(source), SHOW)
    last = load(source).end_offset or 0
    a, b = last // 3, last - 1
    data = shell.run(["diff", str(a), str(b)]).json()
    ref_a = Shell(source, load(source, upto=a), SHOW)
    ref_b = Shell(source, load(source, upto=b), SHOW)
    same = image_text(ref_a) == image_text(ref_b)
    assert (data["changes"] == []) == same
    for c in data["changes"]:
        path = c["path"].split("/")[1:]
        before, after = lookup(ref_a.session.root, path), lookup(ref_b.session.root, path)
        assert (before is None) == (c["kind"] == "added")
        assert (after is None) == (c["kind"] == "removed")


def test_at_refuses_offsets_beyond_damage() -> None:
    """Issue 7 item 1: with a CRC error at offset 15, ``at 20`` used to print "image as of
    offset 20 (last applied: offset 14)" and exit 0; it now says why and what can be."""
    from .conftest import run_cli

    bad = str(FIXTURES / "bad-crc")
    assert run_cli("-d", bad, "--strict", "at", "20").returncode == 1
    for words in (["at", "20"], ["--at", "20", "ls", "/"], ["diff", "10", "20"]):
        out = run_cli("-d", bad, *words)
        assert out.returncode == 1, words
        assert "offset 20 cannot be rebuilt: the data is damaged at offset 15" in out.stderr
        assert "up to 14" in out.stderr
        assert "image as of offset 20" not in out.stdout
    fine = run_cli("-d", bad, "at", "12")
    assert fine.returncode == 0 and "image as of offset 12" in fine.stdout
    assert run_cli("-d", bad, "--strict", "at", "12").returncode == 1  # the data has warnings
    # Older data that only time travel reads: its warnings come with the answer.
    shell = Shell(DirectorySource(bad), None, SHOW)
    r = shell.run(["at", "12"])
    assert r.code == 0 and r.warnings == []  # the latest load already reported them


def test_one_model_of_what_the_data_can_rebuild() -> None:
    """Issue 7 item 2: the load, time travel and ``records`` agree on where damage stops."""
    from mdshell.session import Session

    from .conftest import run_cli

    bad = str(FIXTURES / "bad-crc")
    session = Session(DirectorySource(bad))
    assert session.offset_range() == (0, 14) and session.reach() == 14
    stop = session.stopped_by()
    assert stop is not None and stop.code == "crc" and stop.offset == 15
    shell = Shell(session, opts=SHOW)
    r = shell.run(["at", "16"])
    assert r.code == 1 and "(offsets 0-14 can be rebuilt)" in r.errors[0]
    after = run_cli("-d", bad, "records", "--from", "20", "--limit", "1")
    assert after.returncode == 0 and "offset=20" in after.stdout
    assert "these records come after the damage: the image stops at offset 14" in after.stderr
    before = run_cli("-d", bad, "records", "--to", "5")
    assert "come after the damage" not in before.stderr
    clean = Session(DirectorySource(str(FIXTURES / "cluster-basic")))
    assert clean.stopped_by() is None
    assert clean.offset_range() == clean.source.offset_range()


# ---------------------------------------------------------------- copies missing files (issue 18)


def copy_log_dir(src: Path, dst: Path, drop: Callable[[str], bool],
                 meta: bool = True) -> Path:
    """A writable copy of a log dir's ``__cluster_metadata-0`` (and ``meta.properties`` when
    ``meta``) without the files ``drop`` names: a copy whose segments were not all copied."""
    md = dst / "__cluster_metadata-0"
    md.mkdir(parents=True)
    if meta and (src / "meta.properties").is_file():
        shutil.copyfile(src / "meta.properties", dst / "meta.properties")
    for f in sorted((src / "__cluster_metadata-0").iterdir()):
        if f.is_file() and not drop(f.name):
            shutil.copyfile(f, md / f.name)
    return dst


def no_log(name: str) -> bool:
    return name.endswith(".log")


def synth_dir(out: Path) -> Path:
    """A generated cluster with three snapshots and seven small segments."""
    from mdshell.synth.scenario import Scenario, generate

    generate(Scenario(history_changes=200, snapshot_at=["25%", "50%", "75%"],
                      segment_bytes=8000), str(out))
    return out


def snapshot_offsets(directory: Path) -> list[int]:
    src = DirectorySource(str(directory))
    return [c.end_offset - 1 for c in src.snapshots()]


def segment_bases(directory: Path) -> list[int]:
    return [s.base_offset for s in DirectorySource(str(directory)).segments()]


def prefix_image(directory: Path, offset: int, tmp: Path) -> list[str]:
    """The image of replaying only the full log's offsets <= ``offset``."""
    logs = sorted((directory / "__cluster_metadata-0").glob("*.log"))
    out = tmp / f"prefix-{offset}.log"
    prefix_file(logs, offset, out)
    return image_text(open_shell(out, secrets=True))


def check_snapshot_only(full: Path, tmp: Path, between: int) -> None:
    """Issue 18 item 1: with the snapshots but no ``.log``, an offset between two snapshots
    is refused naming them (it printed the older snapshot's image with exit 0); an offset
    exactly at a snapshot gives that snapshot's image, equal to replaying the full log."""
    from .conftest import cli

    copy = copy_log_dir(full, tmp / "copy", no_log)
    points = snapshot_offsets(copy)
    below = max(p for p in points if p < between)
    above = min(p for p in points if p > between)
    out = cli("-d", str(copy), "--at", str(between), "ls", "/image")
    assert out.code == 1 and out.out == ""
    lines = out.err.splitlines()
    assert len(lines) == 1, lines
    assert f"offset {between} cannot be rebuilt" in lines[0]
    assert f"{below} " in lines[0] + " " and f"{above}" in lines[0] and "snapshot" in lines[0]
    shell = open_shell(copy, secrets=True)
    r = shell.run(["at", str(between)])
    assert r.code == 1 and r.errors == [f"at: {lines[0].split('--at ', 1)[1]}"]
    assert shell.session.loaded is shell.session.latest
    d = shell.run(["diff", str(below), str(between)])
    assert d.code == 1 and f"offset {between} cannot be rebuilt" in d.errors[0]
    for p in (points[0], below, above):
        r = shell.run(["at", str(p)])
        assert r.code == 0, r.errors
        assert shell.session.loaded.image.provenance.offset == p
        assert image_text(shell) == prefix_image(full, p, tmp), f"at {p}"
    assert shell.run(["at", "earliest"]).code == 0
    assert shell.session.loaded.image.provenance.offset == points[0]


def test_snapshot_only_copy_refuses_offsets_between_snapshots(tmp_path: Path) -> None:
    full = synth_dir(tmp_path / "full")
    points = snapshot_offsets(full)
    check_snapshot_only(full, tmp_path, (points[0] + points[1]) // 2)


def test_snapshot_only_corpus_copy_refuses_offsets_between_snapshots(tmp_path: Path) -> None:
    need_corpus()
    check_snapshot_only(CORPUS / "IndusWargods__local-test-rig", tmp_path, 20000)


def iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def test_snapshot_only_copy_time_picks_the_newest_snapshot_before(tmp_path: Path) -> None:
    """``at TIME`` on a copy without a log: the newest snapshot whose last record was written
    at or before the time (it said "the log has no batches to date"); before every
    snapshot, a clear refusal."""
    from mdshell.source.batchscan import snapshot_points

    from .conftest import cli

    copy = copy_log_dir(synth_dir(tmp_path / "full"), tmp_path / "copy", no_log)
    points = snapshot_points(DirectorySource(str(copy / "__cluster_metadata-0")))
    assert len(points) == 3 and all(p.time_ms is not None for p in points)
    shell = open_shell(copy, secrets=True)
    for i, p in enumerate(points):
        assert p.time_ms is not None
        later = points[i + 1].time_ms if i + 1 < len(points) else None
        for when in (p.time_ms, p.time_ms + 1, (later or p.time_ms + 2000) - 1):
            r = shell.run(["at", iso(when)])
            assert r.code == 0, (iso(when), r.errors)
            assert shell.session.loaded.image.provenance.offset == p.offset, iso(when)
            assert "snapshot" in " ".join(r.lines)
    assert points[0].time_ms is not None
    early = iso(points[0].time_ms - 1)
    r = shell.run(["at", early])
    assert r.code == 1 and "before the oldest data" in r.errors[0]
    out = cli("-d", str(copy), "--at", iso(points[1].time_ms or 0), "cat", "/image/provenance")
    assert out.code == 0 and out.out.startswith(f"offset {points[1].offset},")


def test_missing_middle_segment_is_refused(tmp_path: Path) -> None:
    """A copy without one middle segment: offsets in it, and after it up to the next
    snapshot, cannot be rebuilt (``at`` printed the image before the gap with exit 0 and no
    word); before it and from the next snapshot on, images equal replaying the full log."""
    full = synth_dir(tmp_path / "full")
    bases, points = segment_bases(full), snapshot_offsets(full)
    # The first segment that starts after a snapshot, with a snapshot after its end.
    k = next(i for i, b in enumerate(bases[:-1])
             if any(p < b for p in points) and any(p >= bases[i + 1] for p in points)
             and not any(b - 1 <= p < bases[i + 1] for p in points))
    lo, hi = bases[k], bases[k + 1] - 1
    name = f"{lo:020d}.log"
    copy = copy_log_dir(full, tmp_path / "copy", lambda n: n == name)
    nxt = min(p for p in points if p > hi)
    shell = open_shell(copy, secrets=True)
    for bad in ((lo + hi) // 2, hi + 1, nxt - 1):
        r = shell.run(["at", str(bad)])
        assert r.code == 1, (bad, list(r.lines))
        assert f"offset {bad} cannot be rebuilt" in r.errors[0]
        assert f"{lo - 1}" in r.errors[0] and f"{nxt}" in r.errors[0], r.errors[0]
    for good in (lo - 1, nxt, nxt + 1):
        r = shell.run(["at", str(good)])
        assert r.code == 0, r.errors
        assert image_text(shell) == prefix_image(full, good, tmp_path), f"at {good}"


def test_log_starting_after_the_snapshots_is_refused_below_its_first_snapshot(
        tmp_path: Path) -> None:
    """Segments below a snapshot gone and the log starting later: offsets between the
    snapshot and the first one the log reaches are refused, naming both."""
    full = synth_dir(tmp_path / "full")
    bases, points = segment_bases(full), snapshot_offsets(full)
    start = next(b for b in bases if b > points[0] + 1 and any(p >= b for p in points))
    copy = copy_log_dir(full, tmp_path / "copy",
                        lambda n: n.endswith(".log") and int(n[:20]) < start)
    nxt = min(p for p in points if p >= start - 1)
    shell = open_shell(copy, secrets=True)
    for bad in (points[0] + 1, start, nxt - 1):
        r = shell.run(["at", str(bad)])
        assert r.code == 1 and f"offset {bad} cannot be rebuilt" in r.errors[0], bad
    for good in (points[0], nxt, nxt + 3):
        assert shell.run(["at", str(good)]).code == 0
        assert image_text(shell) == prefix_image(full, good, tmp_path), f"at {good}"


def flip_middle_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_damaged_snapshot_without_log_is_refused(tmp_path: Path) -> None:
    """A snapshot that cannot be used, with no log to go on from an older one: its offset is
    refused (the newest one answered the older snapshot's image as "latest", an older one
    answered the snapshot below it as its own offset, both with exit 0)."""
    copy = copy_log_dir(synth_dir(tmp_path / "full"), tmp_path / "copy", no_log)
    points = snapshot_offsets(copy)
    md = copy / "__cluster_metadata-0"
    for p in (points[-1], points[1]):
        flip_middle_byte(md / f"{p + 1:020d}-0000000001.checkpoint")
    shell = open_shell(copy, secrets=True)
    for bad in (points[-1], points[1]):
        r = shell.run(["at", str(bad)])
        assert r.code == 1, (bad, list(r.lines))
        assert f"offset {bad} cannot be rebuilt" in r.errors[0]
        assert f"{bad + 1:020d}-0000000001.checkpoint is not usable" in r.errors[0]
    r = shell.run(["at", str(points[0])])
    assert r.code == 0 and shell.session.loaded.image.provenance.offset == points[0]
