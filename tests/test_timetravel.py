"""Time travel: ``at O`` must equal replaying only the log's offsets <= O."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdshell.commands import Shell
from mdshell.commands.navigate import tree_lines
from mdshell.session import load
from mdshell.source import DirectorySource, FileSource
from mdshell.source.walker import iter_batches
from mdshell.tree.node import RenderOptions
from mdshell.tree.paths import lookup
from mdshell.wire import rewrite

from .conftest import CORPUS, need_corpus

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
    directory = CORPUS / name
    logs = sorted((directory / "__cluster_metadata-0").glob("*.log"))
    source = DirectorySource(str(directory))
    shell = Shell(source, load(source), SHOW)
    checked = 0
    for offset in _offsets(directory):
        result = shell.run(["at", str(offset)])
        assert result.code == 0, result.errors
        prefix = tmp_path / f"prefix-{offset}.log"
        prefix_file(logs, offset, prefix)
        ref_source = FileSource(str(prefix))
        ref = Shell(ref_source, load(ref_source), SHOW)
        assert image_text(shell) == image_text(ref), f"offset {offset}"
        checked += 1
    assert checked >= 5
    assert shell.run(["at", "latest"]).code == 0
    assert shell.loaded is shell.latest


def test_at_rejects_offsets_outside_the_log() -> None:
    need_corpus()
    source = DirectorySource(str(CORPUS / "13LAckHEart__kafka"))
    shell = Shell(source, load(source), SHOW)
    for bad, words in (("99999", "after the end"), ("abc", "not an offset")):
        r = shell.run(["at", bad])
        assert r.code == 1 and words in r.errors[0]
    # the corpus directory whose first segment is gone: only snapshots reach back
    gone = DirectorySource(str(CORPUS / "qkrckstjq__spring-kafka__2"))
    shell2 = Shell(gone, load(gone), SHOW)
    r = shell2.run(["at", "10"])
    assert r.code == 1 and "before the oldest data" in r.errors[0]


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
    data = shell.run(["diff", "100", "latest", "/image/topics"]).data
    kinds = {(c["kind"], c["path"]) for c in data["changes"]}
    assert ("added", "/image/topics/byName/test") in kinds
