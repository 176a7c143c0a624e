"""The fast builders of the Spark tables give exactly what the shell's reader and image give.

No Spark here (only pyarrow): the ``records`` table of each file read by the fast path
(:mod:`mdshell.spark.fastlog`) against the same table built from the shell's reader, every
column and warning compared; the ``partitions`` table against the image partition by
partition. Data: the fixtures (damaged ones included), a spread of the corpus, and generated
directories (compressed batches, many-record batches, partitions changed after a snapshot).
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

from mdshell.image.names import LEADER_RECOVERY_STATES, name_of  # noqa: E402
from mdshell.problems import Problem, SourceError  # noqa: E402
from mdshell.session import load  # noqa: E402
from mdshell.source import DirectorySource, open_source  # noqa: E402
from mdshell.spark import fastlog, imagetables, recordtable, tables  # noqa: E402
from mdshell.wire.primitives import uuid_str  # noqa: E402

from .conftest import CORPUS, FIXTURES  # noqa: E402

pytestmark = pytest.mark.spark

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
    from mdshell.spark.recordtable import file_warnings  # the data source's own wording

    problems: list[Problem] = []
    source = "log" if f.role == "segment" else "snapshot"
    try:
        table = tables.records_table(list(tables.iter_file(f, problems)), show, source=source)
        return table, file_warnings(f, problems)
    except SourceError as e:
        return tables.records_table([], show), [*file_warnings(f, problems), str(e)]


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


def test_distinct_values_are_built_in_chunks_the_same(generated: list[Path]) -> None:
    """A snapshot's values (all distinct, a million on a large cluster) are turned into rows
    a chunk at a time, so their Python rows never all exist at once: the same table as in
    one go, and the file's records table reuses those rows (no copy through ``take``)."""
    f = next(x for x in tables.log_files(str(generated[2])) if x.role == "snapshot")
    fast = fastlog.read_file(f.directory, f.path, f.role, f.first, f.last)
    assert fast is not None and len(fast[4]) > 1000
    whole = tables.records_table(fast[4], False)
    chunked = recordtable._distinct_rows(fast[4], False, True, chunk=97)
    assert chunked.num_rows == whole.num_rows and chunked.equals(whole)
    assert chunked.column("payload").num_chunks > 10
    table = recordtable.fast_table(fast, "x", False, True, "snapshot")
    assert table.num_rows == whole.num_rows
    assert table.select(["type", "payload"]).equals(whole.select(["type", "payload"]))


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
        table = imagetables.partitions(tables.View(source, load(source)))
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
        if isinstance(source, DirectorySource):
            fast += recordtable._fast_log(source, False) is not None
    assert fast >= 10


def _batch_ranges(data: bytes) -> list[tuple[int, int, int]]:
    """(CRC start, CRC length, stored CRC) of each whole batch of a file, by the walker's
    one loop (a damaged tail ends the list)."""
    import struct

    out, pos = [], 0
    while pos + 61 <= len(data):
        length = struct.unpack_from(">i", data, pos + 8)[0]
        if length < 49 or pos + 12 + length > len(data):
            break
        out.append((pos + 21, length - 9, struct.unpack_from(">I", data, pos + 17)[0]))
        pos += 12 + length
    return out


def test_many_crcs_at_once_equal_one_by_one(generated: list[Path],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Every batch CRC of the fixtures, corpus spread and generated logs, computed together
    (also with every run of one length done the vector way), equals crc32c one by one and
    the CRC Kafka stored (bad-crc's damaged batch aside)."""
    np = pytest.importorskip("numpy")
    from mdshell.spark import crcs
    from mdshell.wire.crc import crc32c

    checked = mismatched = 0
    for together in (crcs._TOGETHER, 2):
        monkeypatch.setattr(crcs, "_TOGETHER", together)
        for d in [*_dirs(), *generated]:
            for path in sorted(d.glob("**/*.log")) + sorted(d.glob("**/*.checkpoint")):
                data = path.read_bytes()
                ranges = _batch_ranges(data)
                if not ranges:
                    continue
                starts, sizes, stored = (np.array(x) for x in zip(*ranges, strict=True))
                got = crcs.crcs(data, starts, sizes)
                assert got.tolist() == [crc32c(data[s:s + n]) for s, n, _ in ranges], path
                checked += len(ranges)
                mismatched += int((got != stored).sum())
    assert checked > 2000 and mismatched == 2  # bad-crc's flipped CRC, in each pass


def test_many_crcs_where_ranges_differ_in_a_few_bytes_and_end_the_buffer() -> None:
    """Ranges of one length that differ in a few bytes (the quiet log's case), one of them
    ending the buffer (its tail is not read as a whole word), among other lengths."""
    np = pytest.importorskip("numpy")
    from mdshell.spark import crcs
    from mdshell.wire.crc import crc32c

    rng = np.random.default_rng(7)
    for width in (9, 51, 64, 77):
        n = crcs._TOGETHER + 100
        block = np.tile(rng.integers(0, 256, width, dtype=np.uint8), (n, 1))
        block[:, width // 2] = rng.integers(0, 256, n)
        block[rng.integers(0, n, 50), -1] = 0xAB
        data = block.tobytes() + bytes(rng.integers(0, 256, 300, dtype=np.uint8))
        starts = np.arange(n) * width
        sizes = np.full(n, width)
        starts = np.append(starts, [len(data) - width, 7])
        sizes = np.append(sizes, [width, 300])
        want = [crc32c(data[s:s + k]) for s, k in zip(starts.tolist(), sizes.tolist(),
                                                       strict=True)]
        assert crcs.crcs(data, starts, sizes).tolist() == want, width


def _reader_passes_clean(directory: str, last: int) -> bool:
    """What the shell's reader says passing into the next segment, on whole files."""
    stream = DirectorySource(directory).log_stream(last + 1, last)
    return not list(stream) and not stream.problems


def test_next_segment_is_judged_on_its_first_batch_as_on_the_whole_file(
        generated: list[Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The fast path reads only the head of the next segment; the answer is the reader's on
    the whole file, also when the first batch is longer than the head read first, and when
    that batch is damaged (a copy with a byte flipped in it)."""
    src = generated[0] / "__cluster_metadata-0"
    damaged = tmp_path / "__cluster_metadata-0"
    damaged.mkdir()
    for i, p in enumerate(sorted(src.iterdir())):
        data = bytearray(p.read_bytes())
        if i == 1:  # the second segment
            data[40] ^= 0xFF
        (damaged / p.name).write_bytes(bytes(data))
    assert not _reader_passes_clean(str(damaged), tables.log_files(str(damaged))[0].last or 0)
    seen = 0
    for head in (fastlog._FirstBatches._HEAD, 16):
        monkeypatch.setattr(fastlog._FirstBatches, "_HEAD", head)
        for d in [*_dirs(), *generated, damaged.parent]:
            try:
                files = tables.log_files(tables.identify(str(d))[0])
            except SourceError:
                continue
            for f in files:
                if f.role == "segment" and f.last is not None:
                    assert (fastlog._later_clean(f.directory, f.last)
                            == _reader_passes_clean(f.directory, f.last)), f.path
                    seen += 1
    assert seen >= 10


def test_batch_starts_equal_the_walkers_one_by_one(generated: list[Path]) -> None:
    """The start of every batch (found by runs of one length where batches repeat one),
    as following lengths one by one finds them; a file cut anywhere is unclean."""
    runs = 0
    for d in [*_dirs(), *generated]:
        for path in sorted(d.glob("**/*.log")) + sorted(d.glob("**/*.checkpoint")):
            data = path.read_bytes()
            ranges = _batch_ranges(data)
            whole = bool(ranges) and ranges[-1][0] + ranges[-1][1] == len(data)
            for cut in (len(data), len(data) - 1, len(data) - 30):
                if cut <= 0:
                    continue
                try:
                    got: Any = fastlog._starts(data[:cut]).tolist()
                except fastlog._Unclean:
                    got = None
                want = [s - 21 for s, _, _ in ranges] if whole and cut == len(data) else None
                assert got == want, (path, cut)
            runs += sum(a[1] == b[1] for a, b in itertools.pairwise(ranges))
    assert runs > 1000  # batches following one of the same length: the run path is taken


@pytest.mark.parametrize("field,at,value", [
    ("epoch-last", 12, 7),  # the last batch's epoch rises on a data batch: a damaged field
    ("epoch-middle", 12, 7),
    ("base", 0, 1 << 56),
    ("magic", 16, 3),
])
def test_header_damage_is_read_as_the_reader_reads_it(tmp_path: Path, field: str, at: int,
                                                      value: int) -> None:
    """A header field outside the CRC damaged (the reader skips that batch): the fast path
    gives the reader's rows and warnings, per file and for the whole log."""
    import shutil
    import struct

    from mdshell.source.logscan import iter_log

    d = tmp_path / "cluster-basic"
    shutil.copytree(FIXTURES / "cluster-basic", d)
    seg = d / "__cluster_metadata-0" / "00000000000000000000.log"
    buf = bytearray(seg.read_bytes())
    starts = [s - 21 for s, _, _ in _batch_ranges(bytes(buf))]
    pos = starts[-1] if field == "epoch-last" else starts[len(starts) // 2]
    struct.pack_into({0: ">q", 12: ">i", 16: ">b"}[at], buf, pos + at, value)
    seg.write_bytes(bytes(buf))
    _check_records(d)
    source = open_source(str(d))
    got = tables.log_records(tables.View(source, load(source)))
    assert got.equals(tables.records_table(iter_log(open_source(str(d))), False))
    problems: list[Problem] = []
    list(iter_log(open_source(str(d)), problems=problems))
    assert [p.code for p in problems] == ["header"]


def test_partition_changes_built_in_chunks_are_the_same(generated: list[Path],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """partition_changes turns its rows into Arrow every CHUNK_ROWS rows (a million-partition
    snapshot's rows never all exist as Python lists): the same table as in one go."""
    from mdshell.spark import changes

    d = str(generated[2])
    source = open_source(d)
    view = tables.View(source, load(source))
    whole = changes.partition_changes(view)
    monkeypatch.setattr(changes, "CHUNK_ROWS", 97)
    chunked = changes.partition_changes(tables.View(source, load(source)))
    assert whole.num_rows > 1000 and chunked.equals(whole)
    assert chunked.column("offset").num_chunks > 10
