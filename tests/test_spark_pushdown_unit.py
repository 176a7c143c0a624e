"""The ``kraft`` source's filter pushdown without Spark: which filters it takes, the files it
rules out and the rows it keeps (the Spark side is in test_spark.py, -k pushdown)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from mdshell.spark.datasource import local_path
from mdshell.spark.pushdown import ANY_TABLE, RECORD_COLUMNS, Pushed


# Stand-ins with the shape of pyspark.sql.datasource's filters (matched by class name).
@dataclass(frozen=True)
class EqualTo:
    attribute: tuple[str, ...]
    value: Any


@dataclass(frozen=True)
class In:
    attribute: tuple[str, ...]
    value: tuple[Any, ...]


@dataclass(frozen=True)
class GreaterThan:
    attribute: tuple[str, ...]
    value: Any


@dataclass(frozen=True)
class LessThanOrEqual:
    attribute: tuple[str, ...]
    value: Any


@dataclass(frozen=True)
class StringStartsWith:
    attribute: tuple[str, ...]
    value: Any


@dataclass(frozen=True)
class StringEndsWith:
    attribute: tuple[str, ...]
    value: Any


@dataclass(frozen=True)
class StringContains:
    attribute: tuple[str, ...]
    value: Any


def test_takes_key_columns_and_offset_ranges_and_returns_the_rest() -> None:
    p = Pushed()
    fs = [EqualTo(("type",), "PartitionChangeRecord"), GreaterThan(("offset",), 9),
          LessThanOrEqual(("offset",), 20), StringStartsWith(("type",), "P"),
          StringStartsWith(("payload",), "{"), StringStartsWith(("offset",), "1"),
          EqualTo(("payload",), "{}"), EqualTo(("offset",), "5"), EqualTo(("a", "b"), 1)]
    rest = p.take(fs, RECORD_COLUMNS)
    assert rest == fs[4:]
    assert (p.low, p.high) == (10, 20) and p.allowed == {"type": {"PartitionChangeRecord"}}
    assert p.patterns == {"type": [("StringStartsWith", "P")]}
    image = Pushed()
    assert image.take([EqualTo(("type",), "x"), In(("directory",), ("/a", "/b"))],
                      ANY_TABLE) == [EqualTo(("type",), "x")]


def test_files_ruled_out_only_when_no_row_can_match() -> None:
    p = Pushed()
    p.take([GreaterThan(("offset",), 99), LessThanOrEqual(("offset",), 200)], RECORD_COLUMNS)
    assert not p.keeps_file("a.log", "segment", 0, 99)
    assert p.keeps_file("b.log", "segment", 100, 150)
    assert p.keeps_file("c.log", "segment", 150, None)
    assert not p.keeps_file("d.log", "segment", 201, None)
    assert p.keeps_file("s.checkpoint", "snapshot", 0, None)  # offsets inside the file
    t = Pushed()
    t.take([In(("type",), ("PartitionChangeRecord", "NoOpRecord"))], RECORD_COLUMNS)
    assert not t.keeps_file("s.checkpoint", "snapshot", 0, None)
    assert t.keeps_file("a.log", "segment", 0, None)
    t.take([EqualTo(("file",), "a.log")], RECORD_COLUMNS)
    assert not t.keeps_file("b.log", "segment", 0, None)
    u = Pushed()
    u.take([In(("type",), ("PartitionChangeRecord", "PartitionRecord"))], RECORD_COLUMNS)
    assert u.keeps_file("s.checkpoint", "snapshot", 0, None)


def test_rows_kept_follow_sql_null_rules() -> None:
    batch = pa.RecordBatch.from_pydict({
        "offset": pa.array([1, 5, None, 9], pa.int64()),
        "type": pa.array(["A", "B", None, "A"]),
        "directory": pa.array(["/d"] * 4)})
    p = Pushed()
    p.take([EqualTo(("type",), "A")], RECORD_COLUMNS)
    assert p.filter(batch).column("offset").to_pylist() == [1, 9]
    p.take([LessThanOrEqual(("offset",), 5)], RECORD_COLUMNS)
    assert p.filter(batch).column("offset").to_pylist() == [1]
    q = Pushed()
    q.take([GreaterThan(("offset",), 0)], RECORD_COLUMNS)
    assert q.filter(batch).column("offset").to_pylist() == [1, 5, 9]  # null offset dropped
    assert Pushed().filter(batch).num_rows == 4


def test_like_patterns_on_directories_rule_them_out_and_keep_sqls_rows() -> None:
    """Prefixes, suffixes and substrings (what Spark makes of ``like``) on directory and
    cluster_id decide which directories are read; on rows, a null matches nothing."""
    p = Pushed()
    assert p.take([StringContains(("directory",), "cluster-a"),
                   StringEndsWith(("directory",), "__cluster_metadata-0"),
                   StringStartsWith(("cluster_id",), "abc")], ANY_TABLE) == []
    assert p.keeps("directory", "/copies/cluster-a/data/__cluster_metadata-0")
    assert not p.keeps("directory", "/copies/cluster-b/data/__cluster_metadata-0")
    assert not p.keeps("directory", "/copies/cluster-a/data")
    assert p.keeps("cluster_id", "abcdef") and not p.keeps("cluster_id", "xabc")
    assert not p.keeps("cluster_id", None)
    batch = pa.RecordBatch.from_pydict({
        "directory": pa.array(["/c/cluster-a/__cluster_metadata-0",
                               "/c/cluster-b/__cluster_metadata-0",
                               "/c/cluster-a/__cluster_metadata-0"]),
        "cluster_id": pa.array(["abc1", "abc2", None])})
    assert p.filter(batch).column("cluster_id").to_pylist() == ["abc1"]


def test_file_uris_are_local_paths_and_other_stores_one_line() -> None:
    assert local_path("file:///data/a%20b/*") == "/data/a b/*"
    assert local_path("file:/data/x") == "/data/x"
    assert local_path("file://localhost/data/x") == "/data/x"
    assert local_path("/plain/path") == "/plain/path"
    for uri in ("s3a://bucket/kafka/*", "hdfs://nn:8020/copies"):
        assert local_path(uri) == uri  # read through pyarrow's filesystems
    for uri in ("ftp://host/kafka", "webdav://host/x"):
        with pytest.raises(ValueError, match=r"paths are not read \(known: file://") as e:
            local_path(uri)
        assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="this host only"):
        local_path("file://otherhost/data")


def test_records_of_a_pushed_type_are_those_of_the_whole_file() -> None:
    """A type pushed into the file reader (fast path and the shell's reader for damaged
    files) gives exactly the rows a filter over all rows gives."""
    from mdshell.problems import SourceError
    from mdshell.spark.tables import file_records, log_files

    from .conftest import FIXTURES, corpus_dirs

    dirs = [p for p in sorted(FIXTURES.iterdir()) if p.is_dir()] + corpus_dirs()[:8]
    checked = 0
    for d in dirs:
        try:
            files = log_files(str(d))
        except SourceError:
            continue
        for f in files:
            whole = pa.concat_tables([t for t, _ in file_records(f, False)])
            types = frozenset(t for t in whole.column("type").to_pylist()[:3] if t)
            if not types:
                continue
            got = pa.concat_tables([t for t, _ in file_records(f, False, types=types)])
            want = whole.filter(pc.is_in(whole.column("type"),
                                         value_set=pa.array(sorted(types))))
            assert got.equals(want), f.path
            checked += 1
    assert checked > 20
