"""The fast builders of the Spark tables give exactly what the shell's reader and image give.

No Spark here (only pyarrow): the ``records`` table of each file read by the fast path
(:mod:`mdshell.spark.fastlog`) against the same table built from the shell's reader, every
column and warning compared; the ``partitions`` table against the image partition by
partition. Data: the fixtures (damaged ones included), a spread of the corpus, and generated
directories (compressed batches, many-record batches, partitions changed after a snapshot).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

from mdshell.image.names import LEADER_RECOVERY_STATES, name_of  # noqa: E402
from mdshell.problems import Problem, SourceError  # noqa: E402
from mdshell.session import load  # noqa: E402
from mdshell.source import open_source  # noqa: E402
from mdshell.spark import fastlog, tables  # noqa: E402
from mdshell.wire.primitives import uuid_str  # noqa: E402

from .conftest import CORPUS, FIXTURES  # noqa: E402

# Two real directories (the Spark tests compare every corpus directory through the source).
CORPUS_SPREAD = ["13LAckHEart__kafka", "rjmfernandes__flink-on-prem"]


def _dirs() -> list[Path]:
    dirs = sorted(p for p in FIXTURES.iterdir() if p.is_dir())
    return dirs + [CORPUS / d for d in CORPUS_SPREAD if (CORPUS / d).is_dir()]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Small generated directories: compressed log batches, a compressed snapshot, many
    one-record batches and partitions changed after the snapshot."""
    out = []
    for name, args in [
        ("quiet", ["--history-changes", "60", "--noops-per-change", "20",
                   "--segment-bytes", "20000"]),
        ("compressed", ["--history-changes", "40", "--compression", "gzip,lz4,zstd,snappy",
                        "--snapshot-at", "setup", "--snapshot-compression", "zstd"]),
        ("snapshot", ["--topics", "20", "--partitions-per-topic", "50", "--history-changes",
                      "200", "--snapshot-at", "setup", "--log-from", "snapshot"]),
    ]:
        target = tmp_path_factory.mktemp("gen") / name
        subprocess.run([sys.executable, "-m", "mdshell.synth", "--out", str(target),
                        "--seed", "5", *args], check=True, capture_output=True)
        out.append(target)
    return out


def _reader_table(f: tables.LogFile, show: bool) -> tuple[Any, list[str]]:
    """The records table as the shell's reader gives it (the path before the fast one)."""
    problems: list[Problem] = []
    try:
        table = tables.records_table(list(tables.iter_file(f, problems)), show)
        return table, [p.message for p in problems]
    except SourceError as e:
        return tables.records_table([], show), [*(p.message for p in problems), str(e)]


def _check_records(directory: Path) -> tuple[int, int]:
    """Compare every file of a directory; ``(files read fast, files read the shell's way)``."""
    try:
        files = tables.log_files(tables.identify(str(directory))[0])
    except SourceError:
        return 0, 0
    fast = slow = 0
    shows = (False, True) if directory.parent == FIXTURES else (False,)
    for f in files:
        for show in shows:
            chunks = list(tables.file_records(f, show, chunk=1000))
            got = pa.concat_tables([t for t, _ in chunks])
            warnings = [w for _, ws in chunks for w in ws]
            want, want_warnings = _reader_table(f, show)
            assert got.equals(want), f"{f.path} (show_secrets={show})"
            assert warnings == want_warnings, f.path
        if fastlog.read_file(f.directory, f.path, f.role, f.first, f.last) is None:
            slow += 1
        else:
            fast += 1
    return fast, slow


def test_fast_records_equal_the_reader_on_fixtures_and_corpus() -> None:
    counts = {d.name: _check_records(d) for d in _dirs()}
    assert sum(f for f, _ in counts.values()) > 30  # the fast path is the common one
    # damaged files are read the shell's way (and give the same rows and warnings)
    assert counts["bad-crc"][1] >= 1 and counts["bad-truncated-tail"][1] >= 1


def test_fast_records_equal_the_reader_on_generated_logs(generated: list[Path]) -> None:
    for d in generated:
        fast, slow = _check_records(d)
        assert fast >= 1 and slow == 0, d


def test_damaged_copy_falls_back_with_the_readers_warning(tmp_path: Path,
                                                          generated: list[Path]) -> None:
    """A flipped byte in the middle of a clean segment: no fast rows, the reader's."""
    src = generated[0] / "__cluster_metadata-0"
    dst = tmp_path / "__cluster_metadata-0"
    dst.mkdir()
    for p in src.iterdir():
        data = bytearray(p.read_bytes())
        if p.name == "00000000000000000000.log":
            data[len(data) // 2] ^= 0xFF
        (dst / p.name).write_bytes(bytes(data))
    f = tables.log_files(str(dst))[0]
    assert fastlog.read_file(f.directory, f.path, f.role, f.first, f.last) is None
    assert _check_records(dst)[1] >= 1
    assert any("CRC mismatch" in w for _, ws in tables.file_records(f, False) for w in ws)


def _partition_rows(directory: Path) -> list[dict[str, Any]]:
    """The image's partitions one by one (what the table must hold)."""
    loaded = load(open_source(str(directory)))
    rows = []
    for name, t in sorted(loaded.image.topics_by_name.items()):
        for pid in sorted(t.partitions):
            p = t.partition(pid)
            if p is None:
                continue
            rows.append({
                "topic": name, "topic_id": uuid_str(t.id), "partition": pid,
                "leader": p.leader, "leader_epoch": p.leader_epoch,
                "partition_epoch": p.partition_epoch, "replicas": p.replicas, "isr": p.isr,
                "elr": p.elr, "last_known_elr": p.last_known_elr,
                "adding_replicas": p.adding_replicas, "removing_replicas": p.removing_replicas,
                "leader_recovery_state": name_of(LEADER_RECOVERY_STATES,
                                                 p.leader_recovery_state),
                "directories": [uuid_str(d) for d in p.directories]})
    return rows


def test_partitions_table_equals_the_image(generated: list[Path]) -> None:
    total = 0
    for d in [*_dirs(), *generated]:
        try:
            source = open_source(str(d))
        except SourceError:
            continue
        table = tables.partitions(tables.View(source, load(source)))
        want = _partition_rows(d)
        assert table.to_pylist() == want, d
        total += len(want)
    assert total > 1000


def test_shell_records_table_equals_the_reader(generated: list[Path]) -> None:
    """``sql`` in the shell: the whole log's table (fast when every segment is clean and they
    follow on) is the reader's, damaged directories included."""
    from mdshell.source.logscan import iter_log

    fast = 0
    for d in [*_dirs(), *generated]:
        try:
            source = open_source(str(d))
        except SourceError:
            continue
        got = tables.log_records(tables.View(source, load(source)))
        want = tables.records_table(iter_log(open_source(str(d))), False)
        assert got.equals(want), d
        if isinstance(source, tables.DirectorySource):
            fast += tables._fast_log(source, False) is not None
    assert fast >= 10
