"""The ``kraft`` source's planning without a JVM: its options (unknown ones and bad values
refused in one line), a user's schema (a subset of the columns, or one line), and the rule
for paths that name nothing readable (a row of warnings each, unless nothing at all is
readable: then the read fails). The same through Spark is in test_spark.py, -k "option or
schema or path"."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from mdshell.spark import tables
from mdshell.spark.datasource import FilePart, KraftDataSource, KraftReader, projection
from mdshell.spark.readopts import KNOWN, ReadOptions, parse

from .conftest import FIXTURES

GOOD = str(FIXTURES / "cluster-basic")
SEGMENT = str(FIXTURES / "cluster-basic" / "__cluster_metadata-0" / "00000000000000000000.log")


@pytest.mark.parametrize(("options", "said"), [
    ({"tabel": "topics"}, "kraft: unknown option 'tabel' (known: " + ", ".join(KNOWN) + ")"),
    ({"Table": "topics", "atx": "1", "zzz": "2"}, "kraft: unknown options 'atx', 'zzz'"),
    ({"payload": "maybe"}, "kraft: option payload: 'maybe' is not true or false"),
    ({"pushdown": "on"}, "kraft: option pushdown: 'on' is not true or false"),
    ({"at": "x"}, "kraft: option at: 'x' is not an offset (a number)"),
    ({"openCostInBytes": "big"}, "kraft: option openCostInBytes: 'big' is not a size"),
    ({"table": "nope"}, "kraft: unknown table 'nope' (known: acls, brokers"),
    ({"at": "5"}, "kraft: option at: the records table is the whole log, not an image; "),
])
def test_every_bad_option_is_refused_in_one_line(options: dict[str, str], said: str) -> None:
    with pytest.raises(ValueError) as e:
        KraftDataSource({k.lower(): v for k, v in options.items()})
    assert str(e.value).startswith(said) and "\n" not in str(e.value), str(e.value)


def test_options_are_read_whatever_their_case() -> None:
    got = parse({"SHOWSECRETS": "true", "maxpartitionbytes": "1m", "path": GOOD,
                 "paths": f'["{GOOD}"]'}, tables.TABLES)
    assert got.show_secrets and got.max_bytes == 1 << 20 and got.paths == [GOOD, GOOD]
    assert got.pushdown is None and parse({"pushdown": "false"}, tables.TABLES).pushdown is False


def _struct(*fields: tuple[str, Any, bool]) -> Any:
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(n, t, nullable) for n, t, nullable in fields])


def test_a_user_schema_is_a_subset_of_the_columns_or_one_line() -> None:
    from pyspark.sql.types import IntegerType, LongType, StringType

    got = projection(_struct(("TYPE", StringType(), True), ("offset", LongType(), True)),
                     "records")
    assert got is not None and got.names == ["TYPE", "offset"]
    assert [str(t) for t in got.types] == ["string", "int64"]
    for fields, said in (
            ([("offset", IntegerType(), True)], "offset is bigint, not int"),
            ([("nope", StringType(), True)], "no column 'nope'"),
            ([("offset", LongType(), False)], "offset cannot be NOT NULL"),
            ([("type", StringType(), True), ("Type", StringType(), True)], "named twice")):
        with pytest.raises(ValueError) as e:
            projection(_struct(*fields), "records")
        text = str(e.value)
        assert text.startswith("kraft: schema for table records: ") and said in text, text
        assert "\n" not in text and "(give some of its columns: directory, cluster_id" in text


def test_a_user_schema_reads_those_columns_only() -> None:
    from pyspark.sql.types import LongType, StringType

    schema = _struct(("type", StringType(), True), ("offset", LongType(), True))
    reader = KraftReader(ReadOptions(paths=[GOOD]), projection(schema, "records"))
    assert not reader.payload  # no payload column asked for: its JSON is not built
    batches = [b for p in reader.partitions() for b in reader.read(p)]
    full = KraftReader(ReadOptions(paths=[GOOD]))
    want = [(r["type"], r["offset"]) for p in full.partitions() for b in full.read(p)
            for r in b.to_pylist()]
    assert [(r["type"], r["offset"]) for b in batches for r in b.to_pylist()] == want
    assert all(b.schema.names == ["type", "offset"] for b in batches)


def _planned(*paths: str) -> list[FilePart]:
    reader = KraftReader(ReadOptions(paths=list(paths), table="topics"))
    return [part for pack in reader.partitions() for part in pack.parts]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("path", "said"), [
    ("missing", "missing: no such directory"),
    ("nothing-*", "nothing-*: no directory matches this glob"),
    (SEGMENT, "00000000000000000000.log: not a directory: the kraft source reads metadata "
     "directories"),
], ids=["missing", "glob", "segment"])
def test_a_bad_path_is_a_row_beside_good_ones_and_fails_alone(tmp_path: Path, path: str,
                                                              said: str) -> None:
    path = path if path.startswith("/") else str(tmp_path / path)
    parts = _planned(path, GOOD)
    errors = [p.error for p in parts if p.error is not None]
    assert len(parts) == 2 and len(errors) == 1 and said in errors[0], errors
    with pytest.raises(ValueError) as e:
        _planned(path)
    assert str(e.value).startswith("kraft: nothing to read: ") and said in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match=r"\(and 1 more paths\)"):
        _planned(path, str(tmp_path / "also-missing"))


def _records(*paths: str) -> list[dict[str, Any]]:
    reader = KraftReader(ReadOptions(paths=list(paths)))
    return [r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]


def test_a_directory_named_by_several_paths_is_read_once(tmp_path: Path) -> None:
    """The log dir, its __cluster_metadata-0, a glob, a trailing slash and a symlink all name
    one directory: its rows come once (Spark's file sources would read a file named twice
    twice; a node's log counted twice is never a fleet query's answer)."""
    link = tmp_path / "link"
    link.symlink_to(FIXTURES / "cluster-basic")
    once = _records(GOOD)
    assert once and all(r["offset"] is not None for r in once)
    named = [GOOD, GOOD + "/", GOOD + "/__cluster_metadata-0", str(FIXTURES / "cluster-b*"),
             str(link)]
    assert _records(*named) == once
    assert len(_planned(*named)) == 1
    missing = str(tmp_path / "nope")
    assert [p.directory for p in _planned(missing, missing, GOOD)].count(missing) == 1


def test_a_relative_path_is_the_drivers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative path is made absolute where the read is planned (the driver): an
    executor, running in a directory of its own, reads the same directory."""
    monkeypatch.chdir(FIXTURES)
    planned = _planned("cluster-basic", "bad-*")
    assert planned and all(os.path.isabs(p.directory) for p in planned), planned
    assert str(FIXTURES / "cluster-basic" / "__cluster_metadata-0") in {
        p.directory for p in planned}


def test_the_folder_of_a_fleet_says_to_give_a_glob(tmp_path: Path) -> None:
    """A folder holding clusters' directories is no metadata directory: the read says to
    give a glob (or the one directory it holds), in a load() path's words, not the CLI's -d."""
    with pytest.raises(ValueError) as e:
        _planned(str(FIXTURES))
    said = str(e.value)
    assert said.endswith(f": read them all with a glob, {FIXTURES}/*, or give one of them")
    assert " -d" not in said and "\n" not in said
    shutil.copytree(FIXTURES / "cluster-basic", tmp_path / "logs" / "node1")
    with pytest.raises(ValueError) as e:
        _planned(str(tmp_path / "logs"))
    assert " -d" not in str(e.value) and f": give {tmp_path / 'logs' / 'node1'}" in str(e.value)
