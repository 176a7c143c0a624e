"""Spark: the sql command, the image tables and the ``kraft`` data source, on a real local
Spark (``local[2]``, one session for the whole run) and a real standalone cluster (a master and
two workers started from the pyspark package's own ``spark-class``).

Expected values always come from mdshell's in-process reader and image, never from Spark.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mdshell.commands import Shell
from mdshell.commands.logcmds import record_json
from mdshell.problems import Problem, SourceError
from mdshell.session import load
from mdshell.source import DirectorySource, open_source
from mdshell.source.logscan import iter_log
from mdshell.tree.node import RenderOptions

from .conftest import CORPUS, FIXTURES, ROOT, corpus_dirs, need_corpus

pytestmark = pytest.mark.spark

GOOD_FIXTURES = ["cluster-basic", "security", "elr", "controllers", "transactions",
                 "segments-snapshots", "codecs", "kraft-v1", "kafka37-snapshot"]
BAD_FIXTURES = ["bad-crc", "bad-truncated-tail", "bad-half-snapshot", "bad-unknown-records",
                "bad-log-gap", "bad-empty-log", "bad-no-metadata"]
# A spread of real directories for the sql command (the data source tests read all of them).
SQL_CORPUS = ["13LAckHEart__kafka", "ArpithaPrakash__Real-Time-Air-Quality-Prediction-with-"
              "Apache-Kafka", "userchic__MyMicroservices", "IndusWargods__local-test-rig",
              "greenlemonT__kafka-temp__3", "rjmfernandes__flink-on-prem"]


def _need_java() -> None:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("Spark tests need Java 17+: install a JDK (apt-get install "
                    "openjdk-17-jdk-headless) or set JAVA_HOME")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local[2] session for every Spark test of the run, logging to a file of its own."""
    _need_java()
    try:
        import pyspark  # noqa: F401
    except ImportError:
        pytest.fail("Spark tests need pyspark: pip install -e '.[test]'")
    from mdshell.spark import session
    from mdshell.spark.settings import SETTINGS

    saved = os.environ.get("MDSHELL_SPARK_LOG")
    os.environ["MDSHELL_SPARK_LOG"] = str(tmp_path_factory.mktemp("spark-log") / "spark.log")
    SETTINGS.master = "local[2]"
    SETTINGS.conf["spark.driver.extraJavaOptions"] = QUICK_JVM
    spark = session.get_session()
    yield spark
    session.stop()
    if saved is None:
        os.environ.pop("MDSHELL_SPARK_LOG", None)
    else:
        os.environ["MDSHELL_SPARK_LOG"] = saved


def _shell(path: Path, show_secrets: bool = False) -> Shell:
    return Shell(open_source(str(path)), opts=RenderOptions(show_secrets=show_secrets))


def _sql(shell: Shell, query: str) -> list[dict[str, Any]]:
    out = shell.run(["sql", query])
    assert out.code == 0, out.errors
    data = out.json()
    assert isinstance(data, list)
    return data


def _sql_dirs() -> list[Path]:
    dirs = [FIXTURES / f for f in GOOD_FIXTURES]
    if CORPUS.is_dir():
        dirs += [CORPUS / d for d in SQL_CORPUS if (CORPUS / d).is_dir()]
    return dirs


# ------------------------------------------------------------------ sql against the image


@pytest.mark.parametrize("path", _sql_dirs(), ids=lambda p: p.name)
def test_sql_counts_equal_the_image(spark: Any, path: Path) -> None:
    shell = _shell(path)
    image = shell.loaded.image
    parts = [t.partition(pid) for t in image.topics_by_name.values() for pid in t.partitions]
    assert _sql(shell, "select count(*) as n from topics") == [{"n": len(image.topics_by_name)}]
    per_broker = Counter(r for p in parts if p for r in p.replicas)
    got = _sql(shell, "select r as broker, count(*) as n from partitions "
                      "lateral view explode(replicas) t as r group by r")
    assert {x["broker"]: x["n"] for x in got} == dict(per_broker)
    leaders = Counter(p.leader for p in parts if p)
    got = _sql(shell, "select leader, count(*) as n from partitions group by leader")
    assert {x["leader"]: x["n"] for x in got} == dict(leaders)
    n_configs = sum(len(v) for v in image.configs.values())
    assert _sql(shell, "select count(*) as n from configs") == [{"n": n_configs}]
    assert _sql(shell, "select count(*) as n from brokers") == [{"n": len(image.brokers)}]


def test_sql_records_and_history_follow_the_log(spark: Any) -> None:
    shell = _shell(FIXTURES / "cluster-basic")
    records = list(iter_log(shell.source))
    assert _sql(shell, "select count(*) as n from records") == [{"n": len(records)}]
    changes = [r for r in records if not r.control and r.key in (3, 5)]
    got = _sql(shell, "select count(*) as n from partition_changes where origin = 'log'")
    assert got == [{"n": len(changes)}]
    # after `at`, the tables show the image at that offset
    first_change = min(r.offset for r in records if r.name == "PartitionChangeRecord")
    assert shell.run(["at", str(first_change - 1)]).code == 0
    topics = len(shell.loaded.image.topics_by_name)
    assert _sql(shell, "select count(*) as n from topics") == [{"n": topics}]
    got = _sql(shell, "select count(*) as n from partition_changes where origin = 'log'")
    assert got == [{"n": len([r for r in changes if r.offset <= first_change - 1])}]


def test_time_travel_keeps_one_scratch_copy_per_table(spark: Any) -> None:
    """Moving in time rebuilds a table: its previous scratch Parquet goes (a long session
    would otherwise fill the scratch folder until exit)."""
    from mdshell.spark import query

    shell = _shell(FIXTURES / "cluster-basic")
    ends = [r.offset for r in iter_log(shell.source)]
    for at in (ends[len(ends) // 3], ends[len(ends) // 2], ends[-1]):
        assert shell.run(["at", str(at)]).code == 0
        assert _sql(shell, "select count(*) as n from topics")[0]["n"] >= 0
    assert query._SCRATCH is not None
    kept = [p.name for p in Path(query._SCRATCH).iterdir() if p.name.startswith("topics-")]
    assert len(kept) == 1, kept
    assert _sql(shell, "select count(*) as n from topics") == [
        {"n": len(shell.loaded.image.topics_by_name)}]


def test_sql_redacts_secrets_unless_asked(spark: Any) -> None:
    hidden = _sql(_shell(FIXTURES / "security"), "select * from scram_users")
    shown = _sql(_shell(FIXTURES / "security", show_secrets=True), "select * from scram_users")
    assert hidden and all(r["salt"] == "[redacted]" for r in hidden)
    assert all(r["salt"] != "[redacted]" and len(r["salt"]) >= 8 for r in shown)
    tokens = _sql(_shell(FIXTURES / "security"), "select * from tokens")
    # The record holds no HMAC: nothing in a token is secret (as in the tree and `records`).
    assert tokens and all(r["owner"].startswith("User:") for r in tokens)
    assert not any("[redacted]" in str(v) for r in tokens for v in r.values())
    payloads = _sql(_shell(FIXTURES / "security"),
                    "select payload from records where type = 'UserScramCredentialRecord'")
    assert payloads and all('"salt":"[redacted]"' in r["payload"] for r in payloads)


def test_sql_error_is_one_line(spark: Any) -> None:
    shell = _shell(FIXTURES / "cluster-basic")
    bad = shell.run(["sql", "select nope from topics"])
    assert bad.code == 1 and len(bad.errors) == 1
    assert bad.errors[0].startswith("sql: [UNRESOLVED_COLUMN")
    assert "\n" not in bad.errors[0] and "at org.apache" not in bad.errors[0]
    parse = shell.run(["sql", "selec 1"])
    assert parse.code == 1 and "PARSE_SYNTAX_ERROR" in parse.errors[0]


def test_sql_writes_csv_and_parquet(spark: Any, tmp_path: Path) -> None:
    shell = _shell(FIXTURES / "cluster-basic")
    csv = tmp_path / "p.csv"
    out = shell.run(["sql", "--csv", str(csv), "select * from partitions order by topic, "
                     "partition"])
    assert out.code == 0
    lines = csv.read_text().splitlines()
    n = sum(len(t.partitions) for t in shell.loaded.image.topics_by_name.values())
    assert len(lines) == n + 1 and lines[0].startswith('"topic","topic_id","partition"')
    pq = tmp_path / "pq"
    out = shell.run(["sql", "--parquet", str(pq), "select * from topics"])
    assert out.code == 0 and out.json()["rows"] == len(shell.loaded.image.topics_by_name)
    back = spark.read.parquet(str(pq)).count()
    assert back == len(shell.loaded.image.topics_by_name)


def test_cli_sql_one_shot_json_and_quiet_terminal(spark: Any,
                                                  capfd: pytest.CaptureFixture[str]) -> None:
    """The command line's one-shot path (in this process, so on the running session): the
    result on stdout, nothing else on the terminal; the JVM wrote to its log file instead."""
    from mdshell.cli import main

    fixture = str(FIXTURES / "cluster-basic")
    capfd.readouterr()
    rc = main(["-d", fixture, "-o", "json", "sql", "select name from topics order by name"])
    out = capfd.readouterr()
    assert rc == 0, out.err
    names = sorted(load(open_source(fixture)).image.topics_by_name)
    assert [r["name"] for r in json.loads(out.out)] == names
    assert out.err == ""
    rc = main(["-d", fixture, "sql", "select * from nope"])
    out = capfd.readouterr()
    assert rc == 1 and out.out == ""
    assert out.err.splitlines() == [
        "sql: [TABLE_OR_VIEW_NOT_FOUND] The table or view `nope` cannot be found. Verify the "
        "spelling and correctness of the schema and catalog."]
    log = Path(os.environ["MDSHELL_SPARK_LOG"]).read_text(errors="replace")
    assert "log4j" in log and "TABLE_OR_VIEW_NOT_FOUND" in log


def test_tui_sql_is_a_table_with_progress_and_esc_cancels(spark: Any) -> None:
    """The TUI's command bar (Pilot): sql runs in a worker and lands in a DataTable whose rows
    are the in-process image's; a long query shows its tasks and Esc cancels it, while the
    tree keeps answering keys."""
    import asyncio

    from textual.widgets import DataTable, Static

    from mdshell.tui.app import make_app
    from mdshell.tui.browser import ImageTree
    from mdshell.tui.engine import Engine
    from tests.test_tui import browser_tree, ready, text_of, until

    path = FIXTURES / "cluster-basic"
    image = _shell(path).loaded.image
    leaders = Counter(p.leader for t in image.topics_by_name.values()
                      for p in (t.partition(i) for i in t.partitions) if p)
    app = make_app(Engine.open(str(path), None))

    async def drive() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await ready(pilot)
            await pilot.press("colon")
            tree: ImageTree = await browser_tree(pilot)
            bar = app.screen.query_one("#command")
            await pilot.pause()
            bar.value = ('sql "select leader, count(*) as n from partitions group by leader '
                         'order by leader"')
            await pilot.press("enter")
            table = app.screen.query_one("#sql-table", DataTable)
            await until(pilot, lambda: table.display and table.row_count > 0, "the sql table",
                        steps=2400)
            got = {int(table.get_row_at(i)[0]): int(table.get_row_at(i)[1])
                   for i in range(table.row_count)}
            assert got == dict(leaders)
            assert [str(c.label) for c in table.columns.values()] == ["leader", "n"]
            status = app.screen.query_one("#sql-status", Static)
            assert f"{len(leaders)} rows" in text_of(status)
            # A click on a header sorts by that column, as numbers; again: the other way.
            first = next(iter(table.columns.values())).get_render_width(table)
            for _ in range(2):
                await pilot.click("#sql-table", offset=(first + 1, 0))
                await pilot.pause()
            counts = [int(table.get_row_at(i)[1]) for i in range(table.row_count)]
            assert counts == sorted(leaders.values(), reverse=True)
            # A query that runs for minutes: progress shows, the tree answers, Esc stops it.
            bar.focus()  # the clicks focused the table
            bar.value = ('sql "select count(*) from range(200000) a cross join range(200000) b'
                         ' where a.id + b.id = -1"')
            await pilot.press("enter")
            await until(pilot, lambda: "tasks" in text_of(status), "task progress", steps=2400)
            tree.focus()
            line = tree.cursor_line
            await pilot.press("down")
            await until(pilot, lambda: tree.cursor_line == line + 1, "a key while it runs")
            await pilot.press("escape")
            await until(pilot, lambda: "cancelled" in text_of(status), "the cancel",
                        steps=2400)
            await pilot.pause(1.2)  # no progress tick comes back over it
            assert "cancelled" in text_of(status) and not table.display
            assert not app.screen.query_one("#sql-progress").display
            # Spark is free again (local[2]: the cross join's tasks held both slots).
            bar.focus()
            bar.value = 'sql "select count(*) as n from topics"'
            await pilot.press("enter")
            await until(pilot, lambda: table.display and table.row_count == 1,
                        "a query after the cancel", steps=2400)
            assert int(table.get_row_at(0)[0]) == len(image.topics_by_name)

    asyncio.run(drive())


def test_sql_screen_snapshot(spark: Any, snap_compare: Any,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """SVG snapshot of the sql result screen (the README's scene): a real query on the local
    Spark, its table focused; the query time comes from the scene's steady clock."""
    from mdshell.tui.scenes import SIZE, SQL_SCENE

    monkeypatch.chdir(ROOT)
    assert snap_compare(SQL_SCENE.app(), terminal_size=SIZE, run_before=SQL_SCENE.before())


def test_local_workers_use_the_installed_pyspark_not_its_zip(spark: Any) -> None:
    """A local session's Python workers import pyspark from the install (cached bytecode),
    not from the zip archive Spark puts first on their path; the zip is still there."""
    import pyspark

    def where(_: Any) -> Iterator[tuple[str, list[str]]]:
        import sys

        import pyspark

        yield pyspark.__file__, list(sys.path)

    (file, path), = spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()
    assert file == pyspark.__file__ and ".zip" not in file
    assert any(p.endswith("pyspark.zip") for p in path)


def test_daemon_puts_an_installed_pyspark_before_its_own_zip_only(tmp_path: Path) -> None:
    from mdshell.spark.daemon import installed_first

    package = tmp_path / "site" / "pyspark"
    (package / "python" / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    zipped = str(package / "python" / "lib" / "pyspark.zip")
    path = ["/cwd", zipped, "/other"]
    installed_first(path)
    assert path == ["/cwd", str(tmp_path / "site"), zipped, "/other"]
    elsewhere = ["/opt/spark/python/lib/pyspark.zip", "/site"]  # a Spark distribution's
    installed_first(elsewhere)
    assert elsewhere == ["/opt/spark/python/lib/pyspark.zip", "/site"]


def test_tables_lists_every_table() -> None:
    from .conftest import run_cli

    out = run_cli("-d", str(FIXTURES / "cluster-basic"), "-o", "json", "tables")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for name in ("records", "topics", "partitions", "brokers", "controllers", "endpoints",
                 "features", "configs", "acls", "quotas", "scram_users", "tokens",
                 "partition_changes", "voters"):
        assert data[name]["columns"], name
    assert {c["name"] for c in data["endpoints"]["columns"]} == {
        "node", "kind", "listener", "host", "port", "protocol"}


def test_missing_java_or_pyspark_is_one_clear_line(tmp_path: Path) -> None:
    from .conftest import run_cli

    fixture = str(FIXTURES / "cluster-basic")
    env = {"PATH": str(tmp_path), "JAVA_HOME": ""}
    out = run_cli("-d", fixture, "sql", "select 1", env=env)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "sql: Spark needs Java 17 or later and none was found: install a JDK (e.g. apt-get "
        "install openjdk-17-jre-headless) or set JAVA_HOME"]
    code = ("import sys; sys.modules['pyspark'] = None; from mdshell.cli import main; "
            f"sys.exit(main(['-d', {fixture!r}, 'sql', 'select 1']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert out.returncode == 1
    assert out.stderr.strip() == ("sql: Spark queries need pyspark, which is not installed: "
                                  "pip install 'mdshell[spark]'")


def test_only_local_sessions_get_the_worker_daemon_and_arrow_options() -> None:
    """A local session's workers and JVM are ours to tune; a cluster's are not. The user's
    settings win either way."""
    pytest.importorskip("pyspark")
    from pyspark import SparkConf

    from mdshell.spark.session import DAEMON_KEY, LOCAL_JVM, _conf
    from mdshell.spark.settings import SparkSettings

    key = "spark.driver.defaultJavaOptions"
    local = _conf(SparkConf(loadDefaults=False), SparkSettings("local[2]"), "-Xshare:auto")
    assert local.get(DAEMON_KEY) == "mdshell.spark.daemon"
    assert local.get(key) == f"-Xshare:auto {LOCAL_JVM}"
    cluster = _conf(SparkConf(loadDefaults=False), SparkSettings("spark://h:7077"), None)
    assert cluster.get(DAEMON_KEY) is None and cluster.get(key) is None
    mine = SparkSettings("local[2]", {DAEMON_KEY: "pyspark.daemon", key: "-Dx=1"})
    theirs = _conf(SparkConf(loadDefaults=False), mine, None)
    assert theirs.get(DAEMON_KEY) == "pyspark.daemon"
    assert theirs.get(key) == f"{LOCAL_JVM} -Dx=1"


def test_spark_options_do_not_start_spark() -> None:
    """--spark-master and spark.* settings alone import nothing of Spark."""
    code = ("import sys, io, contextlib\nfrom mdshell.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['-d', {str(FIXTURES / 'cluster-basic')!r}, '--spark-master', "
            "'local[1]', 'ls', '/image'])\n"
            "print(rc, [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pyarrow')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert out.stdout.strip() == "0 []", out.stderr


# ------------------------------------------------------------------ the kraft data source


def _expected_records(directory: Path) -> list[tuple[Any, ...]]:
    """What the in-process reader decodes (as ``records`` reads it): the whole log, then each
    snapshot; as (file path, offset, epoch, timestamp, type, version, payload JSON)."""
    out: list[tuple[Any, ...]] = []
    try:
        source = DirectorySource(str(directory))
    except SourceError:
        return out  # the data source gives one warning row (see below)
    where = source.layout.directory
    problems: list[Problem] = []
    log = list(iter_log(source, problems=problems))
    streams: list[Any] = [log] + [iter_log(source, snapshot=cp)
                                  for cp in source.layout.checkpoints]
    # One difference, on purpose: the shell stops at a damaged segment ("later segments are
    # not applied"); the data source reads each segment on its own, so the segments after
    # one are still read, as the log from their base offset.
    stopped = [p.file for p in problems if p.code == "stopped"]
    if stopped:
        segs = source.layout.segments
        after = next(i for i, seg in enumerate(segs) if seg.path == stopped[0]) + 1
        for i in range(after, len(segs)):
            last = segs[i + 1].base_offset - 1 if i + 1 < len(segs) else None
            streams.append(iter_log(source, first=segs[i].base_offset, last=last))
    for records in streams:
        for r in records:
            j = record_json(r, False)
            out.append((f"{where}/{r.file}", r.offset, r.epoch, r.timestamp, r.name, r.version,
                        json.dumps(j["data"], separators=(",", ":"), ensure_ascii=False)))
    return out


# Short-lived test JVMs start faster with the C1 compiler only (less CPU on 2 shared cores).
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
ALL_DIRS = [FIXTURES / f for f in GOOD_FIXTURES + BAD_FIXTURES] + corpus_dirs()


@pytest.fixture(scope="module")
def fleet_rows(spark: Any) -> list[dict[str, Any]]:
    """Every fixture and corpus directory read once through the data source (a list of
    paths and, for the corpus, a glob)."""
    paths = [str(FIXTURES / f) for f in GOOD_FIXTURES + BAD_FIXTURES]
    if corpus_dirs():
        paths.append(str(CORPUS / "*"))
    df = spark.read.format("kraft").load(paths)
    t = df.selectExpr("directory", "cluster_id", "file", "offset", "epoch", "timestamp",
                      "type", "version", "payload", "warnings").toArrow()
    cols = {name: t.column(name).to_pylist() for name in t.column_names}
    return [dict(zip(cols, row, strict=True)) for row in zip(*cols.values(), strict=True)]


def test_data_source_returns_the_records_of_the_reader_row_for_row(
        fleet_rows: list[dict[str, Any]]) -> None:
    expected = [row for d in ALL_DIRS for row in _expected_records(d)]
    got = [(f"{r['directory']}/{r['file']}", r["offset"], r["epoch"], r["timestamp"],
            r["type"], r["version"], r["payload"]) for r in fleet_rows if r["offset"] is not None]
    assert sorted(got) == sorted(expected)
    assert len(got) > 500000 or not corpus_dirs()
    # the segment after bad-crc's damaged one is read (see _expected_records)
    assert any(r["file"] == "00000000000000000021.log" and "bad-crc" in r["directory"]
               for r in fleet_rows)


def test_data_source_partitions_per_file_and_glob(spark: Any,
                                                  fleet_rows: list[dict[str, Any]]) -> None:
    need_corpus()
    from mdshell.spark.tables import log_files

    files = sum(len(log_files(str(d))) for d in corpus_dirs())
    one_each = spark.read.format("kraft").option("maxPartitionBytes", 1).load(str(CORPUS / "*"))
    assert one_each.rdd.getNumPartitions() == files  # planned, not read
    # by default small files are packed, Spark's way: the corpus's few MiB fill a few tasks
    packed = spark.read.format("kraft").load(str(CORPUS / "*")).rdd.getNumPartitions()
    assert 2 <= packed < files / 10
    got = {r["directory"]: r["cluster_id"] for r in fleet_rows}
    for d in corpus_dirs():
        props = (d / "meta.properties").read_text()
        cid = next(x.split("=", 1)[1] for x in props.splitlines() if x.startswith("cluster.id="))
        # an empty cluster.id falls back to quorum-state's
        assert got[str(d / "__cluster_metadata-0")] == cid or not cid


def _file_warnings(directory: Path) -> dict[str | None, list[str]]:
    """The reader's warnings per file (None: the directory cannot be read at all)."""
    from mdshell.spark.tables import iter_file, log_files

    out: dict[str | None, list[str]] = {}
    try:
        files = log_files(str(directory))
    except SourceError as e:
        return {None: [str(e)]}
    for f in files:
        problems: list[Problem] = []
        for _ in iter_file(f, problems):
            pass
        if problems:
            out[os.path.basename(f.path)] = [p.message for p in problems]
    return out


@pytest.mark.parametrize("name", BAD_FIXTURES)
def test_damaged_files_give_warnings_not_failures(fleet_rows: list[dict[str, Any]],
                                                  name: str) -> None:
    d = str(FIXTURES / name)
    got = {r["file"]: r["warnings"] for r in fleet_rows
           if r["warnings"] and (r["directory"] + "/").startswith(d + "/")}
    assert got == _file_warnings(FIXTURES / name)


def test_damaged_fixtures_do_warn(fleet_rows: list[dict[str, Any]]) -> None:
    """The fixtures above exercise something: CRC and truncation warnings arrive as rows."""
    text = " ".join(w for r in fleet_rows for w in r["warnings"] or [])
    assert "CRC mismatch" in text and "incomplete" in text and "no metadata log" in text


def test_missing_directory_is_a_warning_row(spark: Any, tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    rows = spark.read.format("kraft").load([missing, str(FIXTURES / "cluster-basic")]) \
        .where("warnings is not null").collect()
    assert len(rows) == 1 and rows[0]["directory"] == missing and rows[0]["offset"] is None
    assert "no such directory" in rows[0]["warnings"][0]


@pytest.mark.parametrize("table", ["topics", "partitions", "brokers", "configs", "endpoints"])
def test_data_source_image_tables_at_end_and_at_offset(spark: Any, table: str) -> None:
    from mdshell.spark.tables import View, build

    d = FIXTURES / "cluster-basic"
    source = open_source(str(d))
    for at in (None, 20):
        reader = spark.read.format("kraft").option("table", table)
        if at is not None:
            reader = reader.option("at", at)
        got = reader.load(str(d)).drop("directory", "cluster_id", "warnings").toArrow()
        want = build(table, View(source, load(source, upto=at)))
        assert got.to_pylist() == want.to_pylist(), (table, at)


# ------------------------------------------------------------------ a real standalone cluster


def _record_count(directory: Path) -> int:
    """Records in the batches of every segment and snapshot, from the batch headers alone (an
    independent count: no record is decoded)."""
    from mdshell.source.loginfo import scan_segment
    from mdshell.spark.tables import log_files

    return sum(scan_segment("", Path(f.path).read_bytes(), 0).records
               for f in log_files(str(directory)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(predicate: Any, timeout: float, what: str, procs: list[subprocess.Popen[bytes]],
              logs: list[Path]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            break
        time.sleep(0.5)
    tails = "\n".join(f"--- {log}\n" + log.read_text(errors="replace")[-2000:] for log in logs)
    pytest.fail(f"the standalone Spark cluster did not come up ({what})\n{tails}")


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A master and two workers, separate processes on 127.0.0.1; always stopped."""
    _need_java()
    import pyspark

    home = Path(pyspark.__file__).parent
    spark_class = str(home / "bin" / "spark-class")
    work = tmp_path_factory.mktemp("spark-standalone")
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "SPARK_WORKER_DIR": str(work / "work"),
           "SPARK_DAEMON_JAVA_OPTS": QUICK_JVM}
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    commands = [[spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(_free_port())]]
    for _ in range(2):
        commands.append([spark_class, "org.apache.spark.deploy.worker.Worker", "--host",
                         "127.0.0.1", "--webui-port", str(_free_port()), "--cores", "1",
                         "--memory", "1g", url])
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    try:
        for i, cmd in enumerate(commands):
            log = work / f"{'master' if i == 0 else f'worker{i}'}.log"
            logs.append(log)
            with open(log, "wb") as f:
                procs.append(subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env,
                                              stdin=subprocess.DEVNULL,
                                              start_new_session=True))
            if i == 0:
                _wait_for(lambda: "Starting Spark master" in logs[0].read_text(errors="ignore")
                          and _listening(port), 90, "master", procs, logs)
        _wait_for(lambda: logs[0].read_text(errors="ignore").count("Registering worker") >= 2,
                  90, "two workers registered", procs, logs)
        yield url, logs[0]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, 15)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.wait(timeout=10)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_fleet_query_on_a_standalone_cluster(standalone: tuple[str, Path],
                                             tmp_path: Path) -> None:
    """spark-submit of the README's fleet example over every corpus directory at once."""
    need_corpus()
    import pyspark

    url, master_log = standalone
    submit = str(Path(pyspark.__file__).parent / "bin" / "spark-submit")
    out = tmp_path / "fleet.json"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run(
        [submit, "--master", url, "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.pyspark.python={sys.executable}", "--conf",
         "spark.driver.host=127.0.0.1", "--conf", "spark.executor.memory=768m",
         "--conf", f"spark.driver.extraJavaOptions={QUICK_JVM}",
         "--conf", f"spark.executor.extraJavaOptions={QUICK_JVM}",
         str(ROOT / "examples" / "fleet.py"), str(CORPUS / "*"), str(out)],
        capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    report = {r["directory"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert len(report) == len(corpus_dirs())
    master = master_log.read_text(errors="replace")
    assert "Registering app mdshell-fleet" in master  # it ran on the cluster
    assert master.count("Launching executor") >= 2 or master.count("executor") >= 2
    for d in corpus_dirs():
        r = report[str(d / "__cluster_metadata-0")]
        image = load(open_source(str(d))).image
        assert r["records"] == _record_count(d)
        assert r["partitions"] == sum(len(t.partitions) for t in image.topics_by_name.values())
        assert r["topics"] == sum(1 for t in image.topics_by_name.values() if t.partitions)
