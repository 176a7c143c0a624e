"""Time travel: ``at O`` must equal replaying only the log's offsets <= O."""

from __future__ import annotations

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
    node = lookup(shell.root, ["image"])
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
    assert shell.loaded is shell.latest


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
        before, after = lookup(ref_a.root, path), lookup(ref_b.root, path)
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
