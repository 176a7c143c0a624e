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

from .conftest import CORPUS, FIXTURES, ROOT, corpus_dirs, need_corpus, run_cli

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


@pytest.fixture
def spark(_spark: Any) -> Any:
    """The session, active in this thread as every mdshell query makes it
    (``session.get_session``): a test that reads with it directly plans as a user's job."""
    from mdshell.spark import session

    return session.get_session()


@pytest.fixture(scope="session")
def _spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
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
    image = shell.session.loaded.image
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
    records = list(iter_log(shell.session.source))
    assert _sql(shell, "select count(*) as n from records") == [{"n": len(records)}]
    changes = [r for r in records if not r.control and r.key in (3, 5)]
    got = _sql(shell, "select count(*) as n from partition_changes where origin = 'log'")
    assert got == [{"n": len(changes)}]
    # after `at`, the tables show the image at that offset
    first_change = min(r.offset for r in records if r.name == "PartitionChangeRecord")
    assert shell.run(["at", str(first_change - 1)]).code == 0
    topics = len(shell.session.loaded.image.topics_by_name)
    assert _sql(shell, "select count(*) as n from topics") == [{"n": topics}]
    got = _sql(shell, "select count(*) as n from partition_changes where origin = 'log'")
    assert got == [{"n": len([r for r in changes if r.offset <= first_change - 1])}]


def test_time_travel_keeps_one_scratch_copy_per_table(spark: Any) -> None:
    """Moving in time rebuilds a table: its previous scratch Parquet goes (a long session
    would otherwise fill the scratch folder until exit)."""
    from mdshell.spark import query

    shell = _shell(FIXTURES / "cluster-basic")
    ends = [r.offset for r in iter_log(shell.session.source)]
    for at in (ends[len(ends) // 3], ends[len(ends) // 2], ends[-1]):
        assert shell.run(["at", str(at)]).code == 0
        assert _sql(shell, "select count(*) as n from topics")[0]["n"] >= 0
    assert query._SCRATCH is not None
    kept = [p.name for p in Path(query._SCRATCH).iterdir() if p.name.startswith("topics-")]
    assert len(kept) == 1, kept
    assert _sql(shell, "select count(*) as n from topics") == [
        {"n": len(shell.session.loaded.image.topics_by_name)}]


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
    import csv as csvmod

    rows = list(csvmod.DictReader(csv.open(newline="")))
    image = shell.session.loaded.image
    want = {(t.name, pid): p.replicas for t in image.topics_by_name.values()
            for pid, p in ((i, t.partition(i)) for i in t.partitions) if p}
    assert out.json()["rows"] == len(rows) == len(want)
    assert list(rows[0])[:3] == ["topic", "topic_id", "partition"]
    # written by Spark's writer: lists as JSON text, every row as the image has it
    assert {(r["topic"], int(r["partition"])): json.loads(r["replicas"]) for r in rows} == want
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".mdshell-csv-")]
    pq = tmp_path / "pq"
    out = shell.run(["sql", "--parquet", str(pq), "select * from topics"])
    assert out.code == 0 and out.json()["rows"] == len(shell.session.loaded.image.topics_by_name)
    back = spark.read.parquet(str(pq)).count()
    assert back == len(shell.session.loaded.image.topics_by_name)


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
        "mdshell: sql: [TABLE_OR_VIEW_NOT_FOUND] The table or view `nope` cannot be found. "
        "Verify the spelling and correctness of the schema and catalog."]
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
    image = _shell(path).session.loaded.image
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
            assert [str(c.label).strip() for c in table.columns.values()] == ["leader", "n"]
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
            bar.value = f'sql "{LONG_QUERY}"'
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
            # Spark is free again (local[2]: the query's tasks held both slots).
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
    assert "source" in {c["name"] for c in data["records"]["columns"]}
    assert "option('snapshots', 'true')" in data["records"]["description"]


def test_missing_java_or_pyspark_is_one_clear_line(tmp_path: Path) -> None:
    from .conftest import run_cli

    fixture = str(FIXTURES / "cluster-basic")
    env = {"PATH": str(tmp_path), "JAVA_HOME": ""}
    out = run_cli("-d", fixture, "sql", "select 1", env=env)
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "mdshell: sql: Spark needs Java 17 or later and none was found: install a JDK (e.g. "
        "apt-get install openjdk-17-jre-headless) or set JAVA_HOME"]
    code = ("import sys; sys.modules['pyspark'] = None; from mdshell.cli import main; "
            f"sys.exit(main(['-d', {fixture!r}, 'sql', 'select 1']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert out.returncode == 1
    assert out.stderr.strip() == (
        "mdshell: sql: Spark queries need the spark extra, and pyspark is not installed: "
        "pip install "
        "'mdshell[spark]' (in a clone of mdshell: pip install -e '.[spark]'); Spark also needs "
        "Java 17 or later")


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
    """--spark-master and spark.* settings alone import nothing of Spark (a script of
    commands, where they apply: with one command other than sql they are refused)."""
    code = ("import sys, io, contextlib\nfrom mdshell.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['-d', {str(FIXTURES / 'cluster-basic')!r}, '--spark-master', "
            "'local[1]'])\n"
            "print(rc, [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'pyarrow')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=ROOT, input="ls /image\n")
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
def fleet_rows(_spark: Any) -> list[dict[str, Any]]:
    """Every fixture and corpus directory read once through the data source (a list of
    paths and, for the corpus, a glob)."""
    from mdshell.spark import session

    spark = session.get_session()
    paths = [str(FIXTURES / f) for f in GOOD_FIXTURES + BAD_FIXTURES]
    if corpus_dirs():
        paths.append(str(CORPUS / "*"))
    df = spark.read.format("kraft").option("snapshots", "true").load(paths)
    t = df.selectExpr("directory", "cluster_id", "file", "source", "offset", "epoch", "timestamp",
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
    one_each = spark.read.format("kraft").option("maxPartitionBytes", 1) \
        .option("snapshots", "true").load(str(CORPUS / "*"))
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
        if problems:  # the shell's "later segments are not applied": read here (see below)
            # A job has no --strict: the shell's advice to use it is left out of the rows.
            out[os.path.basename(f.path)] = [
                p.message.replace(", or use --strict to fail on it", "")
                if p.code != "stopped" else
                f"{os.path.basename(f.path)}: the rest of this file after the damage is not "
                "read; the next segment is still read, from its base offset (the shell's "
                "image stops at this damage)" for p in problems]
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


def test_the_sessions_file_packing_settings_are_the_sources_defaults(spark: Any) -> None:
    """spark.sql.files.maxPartitionBytes and openCostInBytes of the session (read when the
    source is registered) pack its files as they pack Spark's own file sources."""
    from mdshell.spark.datasource import register
    from mdshell.spark.tables import log_files

    dirs = [str(FIXTURES / f) for f in GOOD_FIXTURES]
    files = sum(len(log_files(d)) for d in dirs)

    def tasks(**options: str) -> int:
        return int(spark.read.format("kraft").options(snapshots="true", **options)
                   .load(dirs).rdd.getNumPartitions())

    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    saved = [spark.conf.get(k) for k in keys]
    assert tasks() == 1 < files  # Spark's defaults: the fixtures' few KiB in one task
    try:
        spark.conf.set(keys[0], "1b")
        register(spark)
        assert tasks() == files
        spark.conf.set(keys[0], "64m")
        spark.conf.set(keys[1], "64m")  # each file counts 64 MiB more than its size
        register(spark)
        assert tasks() == files
    finally:
        for k, v in zip(keys, saved, strict=True):
            spark.conf.set(k, v)
        register(spark)


def _one_line(text: str) -> bool:
    """Spark's message of an error is one line, then its SQLSTATE line."""
    return len([ln for ln in text.strip().splitlines()
                if not ln.strip().startswith("SQLSTATE:")]) == 1


@pytest.mark.parametrize(("options", "schema", "said"), [
    ({"table": "partitions", "at": "x"}, None,
     "kraft: option at: 'x' is not an offset (a number)"),
    ({"maxPartitionBytes": "lots"}, None, "kraft: option maxPartitionBytes: 'lots' is not a "
     "size in bytes (e.g. 134217728 or 128m)"),
    ({"table": "nope"}, None, "kraft: unknown table 'nope' (known: "),
    ({"tabel": "topics"}, None, "kraft: unknown option 'tabel' (known: table, at, "),
    ({"payload": "maybe"}, None, "kraft: option payload: 'maybe' is not true or false"),
    ({}, "offset int", "kraft: schema for table records: offset is bigint, not int (give "),
    ({"table": "topics"}, "name string, nope long", "kraft: schema for table topics: no "
     "column 'nope' (give some of its columns: directory, cluster_id, warnings, name, "),
], ids=["at", "bytes", "table", "unknown", "flag", "schema-type", "schema-column"])
def test_an_option_error_is_one_line_in_a_users_job(spark: Any, options: dict[str, str],
                                                    schema: str | None, said: str) -> None:
    """A bad option or schema reaches a PySpark job as Spark's AnalysisException whose first
    line is the source's message, not a Python traceback from a planning worker, and no
    task runs (no executor's Java stack)."""
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as e:
        reader = spark.read.format("kraft").options(**options)
        if schema is not None:
            reader = reader.schema(schema)
        reader.load(str(FIXTURES / "cluster-basic")).count()
    text = str(e.value)
    assert "Traceback" not in text and "File " not in text, text
    assert said in text.splitlines()[0] and _one_line(text), text


def test_a_write_or_a_stream_is_refused_in_one_line(spark: Any, tmp_path: Path) -> None:
    """The source only reads, and only as a batch: a write into it, or a streaming query on
    it, fails with the source's line (was a Python traceback from the worker)."""
    from pyspark.errors import AnalysisException, PySparkException

    from mdshell.spark.datasource import NO_STREAM, READ_ONLY

    with pytest.raises(AnalysisException) as e:
        spark.range(1).write.format("kraft").mode("append").save(str(tmp_path / "out"))
    text = str(e.value)
    assert READ_ONLY in text.splitlines()[0] and _one_line(text), text
    assert not (tmp_path / "out").exists()
    query = spark.readStream.format("kraft").load(str(FIXTURES / "cluster-basic")) \
        .writeStream.format("noop").start()
    try:
        with pytest.raises(PySparkException) as e:
            query.awaitTermination(120)
    finally:
        query.stop()
    text = str(e.value)
    assert NO_STREAM in text.splitlines()[0] and "Traceback" not in text, text


def test_a_user_schema_gives_those_columns(spark: Any) -> None:
    d = str(FIXTURES / "cluster-basic")
    got = spark.read.format("kraft").schema("TYPE string, offset long").load(d)
    assert got.columns == ["TYPE", "offset"]
    want = spark.read.format("kraft").load(d).select("type", "offset")
    assert sorted(map(tuple, got.collect())) == sorted(map(tuple, want.collect()))


def test_missing_directory_is_a_warning_row(spark: Any, tmp_path: Path) -> None:
    missing = str(tmp_path / "nope")
    rows = spark.read.format("kraft").load([missing, str(FIXTURES / "cluster-basic")]) \
        .where("warnings is not null").collect()
    assert len(rows) == 1 and rows[0]["directory"] == missing and rows[0]["offset"] is None
    assert "no such directory" in rows[0]["warnings"][0]


@pytest.mark.parametrize("path", ["nope", "nothing-*", "segment"])
def test_a_read_of_nothing_at_all_fails_in_one_line(spark: Any, tmp_path: Path,
                                                    path: str) -> None:
    """A missing path, a glob matching no directory, a .log file: alone, the read fails
    (beside a good directory each is a row of warnings: test_spark_source_unit.py)."""
    from pyspark.errors import AnalysisException

    seg = FIXTURES / "cluster-basic" / "__cluster_metadata-0" / "00000000000000000000.log"
    given = str(seg) if path == "segment" else str(tmp_path / path)
    with pytest.raises(AnalysisException) as e:
        spark.read.format("kraft").load(given).count()
    text = str(e.value)
    assert _one_line(text) and "kraft: nothing to read: " in text, text


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
    """Records in the batches of every segment (the data source's default: the log), from
    the batch headers alone (an
    independent count: no record is decoded)."""
    from mdshell.source.loginfo import scan_segment
    from mdshell.spark.tables import log_files

    return sum(scan_segment("", Path(f.path).read_bytes(), 0).records
               for f in log_files(str(directory)) if f.role == "segment")


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


def test_the_fleet_example_says_a_bad_path_in_one_line(tmp_path: Path) -> None:
    """spark-submit of examples/fleet.py over a path that names nothing: exit 1 and the
    source's line, not a Python traceback with py4j's frames; no path at all: usage, 2."""
    import pyspark

    submit = str(Path(pyspark.__file__).parent / "bin" / "spark-submit")
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    env.pop("SPARK_REMOTE", None)
    missing = tmp_path / "copies" / "*"
    for args, code, line in (([str(missing)], 1, "fleet.py: [PYTHON_DATA_SOURCE_ERROR] "),
                             ([], 2, "usage: fleet.py PATHS")):
        run = subprocess.run(
            [submit, "--master", "local[1]", "--conf", "spark.ui.enabled=false",
             "--conf", f"spark.driver.extraJavaOptions={QUICK_JVM}",
             str(ROOT / "examples" / "fleet.py"), *args],
            capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
        # spark-submit passes the script's stderr on to its own stdout
        text = run.stdout + run.stderr
        assert run.returncode == code, text[-3000:]
        assert "Traceback" not in text, text[-3000:]
        said = [ln for ln in text.splitlines() if line in ln]
        assert len(said) == 1, text[-3000:]
        assert code == 2 or f"kraft: nothing to read: {missing}: no directory" in said[0]


# ------------------------------------------------------------------ what a Spark user hits


def _flipped_covered_copy(tmp_path: Path) -> Path:
    """segments-snapshots with one byte flipped in its first segment, which a newer snapshot
    covers: the image loads clean, the log does not read clean."""
    dst = tmp_path / "flipped"
    shutil.copytree(FIXTURES / "segments-snapshots", dst)
    seg = dst / "__cluster_metadata-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0xFF
    seg.write_bytes(bytes(data))
    assert not load(open_source(str(dst))).problems
    return dst


def test_sql_warnings_of_the_records_table_reach_the_verdict(
        spark: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """The records table's own reading warns (CRC mismatch): once on stderr, exit 1 under
    --strict, on the result (which the TUI shows) even for a table built by an earlier query."""
    from mdshell.cli import main

    d = str(_flipped_covered_copy(tmp_path))
    want = len(list(iter_log(open_source(d))))
    capfd.readouterr()
    rc = main(["-d", d, "--strict", "-o", "json", "sql", "select count(*) as n from records"])
    out = capfd.readouterr()
    assert rc == 1 and json.loads(out.out) == [{"n": want}]
    assert out.err.count("CRC mismatch") == 1, out.err
    rc = main(["-d", d, "sql", "select count(*) as n from records"])
    out = capfd.readouterr()
    assert rc == 0 and out.err.count("CRC mismatch") == 1, out.err
    shell = _shell(Path(d))
    first = shell.run(["sql", "select count(*) from records"])
    again = shell.run(["sql", "select max(offset) from records"])  # the table is reused
    for r in (first, again):
        assert r.code == 0 and any("CRC mismatch" in w for w in r.warnings), r.warnings


def test_unreachable_master_is_one_line_within_seconds(tmp_path: Path) -> None:
    """Nothing listens at the master's port: one line naming it, well before Spark's own
    minute of retries, and no stack."""
    port = _free_port()
    env = {**os.environ, "MDSHELL_SPARK_LOG": str(tmp_path / "spark.log")}
    started = time.monotonic()
    out = run_cli("-d", str(FIXTURES / "cluster-basic"), "--spark-master",
                  f"spark://127.0.0.1:{port}", "sql", "select 1", env=env)
    assert time.monotonic() - started < 15
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.splitlines() == [
        f"mdshell: sql: no Spark master answered at spark://127.0.0.1:{port}: start it, or "
        "give "
        "another --spark-master URL ($MDSHELL_SPARK_MASTER)"]


def test_bad_crc_warnings_say_what_the_data_source_did(spark: Any) -> None:
    """bad-crc: the shell stops at the damaged segment, the data source reads the next one;
    its rows say so instead of "later segments ... are not applied"."""
    d = FIXTURES / "bad-crc"
    rows = spark.read.format("kraft").load(str(d)).selectExpr("file", "warnings").collect()
    warned = {r["file"]: list(r["warnings"]) for r in rows if r["warnings"]}
    assert list(warned) == ["00000000000000000000.log"]
    text = " ".join(warned["00000000000000000000.log"])
    assert "not applied" not in text and "CRC mismatch" in text and "--strict" not in text
    assert "the next segment is still read, from its base offset" in text
    assert any(r["file"] == "00000000000000000021.log" for r in rows)


def test_data_source_at_past_the_end_follows_the_shells_rule(spark: Any) -> None:
    """`at` past a directory's end: the shell's message on that directory's row (the other
    directory gives its image), and an error when no directory has that offset."""
    basic, snaps = FIXTURES / "cluster-basic", FIXTURES / "segments-snapshots"
    last = open_source(str(snaps)).offset_range()[1]
    assert last is not None and open_source(str(basic)).offset_range()[1] > last + 1
    rows = spark.read.format("kraft").option("table", "topics").option("at", last + 1) \
        .load([str(basic), str(snaps)]).collect()
    warned = [r for r in rows if r["warnings"]]
    assert len(warned) == 1 and warned[0]["name"] is None
    assert warned[0]["directory"].startswith(str(snaps))
    said = list(warned[0]["warnings"])
    assert said == [f"offset {last + 1} is after the end of the log (offsets 0-{last} can be "
                    "rebuilt)"]
    # the shell's own words for the same offset
    err = subprocess.run([sys.executable, "-m", "mdshell", "-d", str(snaps), "--at",
                          str(last + 1), "ls"], capture_output=True, text=True).stderr
    assert said[0] in err
    n_topics = len(load(open_source(str(basic)), upto=last + 1).image.topics_by_name)
    assert len([r for r in rows if r["directory"].startswith(str(basic))]) == n_topics
    with pytest.raises(Exception, match="offset 99999999 is after the end of the log"):
        spark.read.format("kraft").option("table", "topics").option("at", 99999999) \
            .load([str(basic), str(snaps)]).collect()


def test_data_source_records_are_the_log_unless_snapshots_are_asked(spark: Any) -> None:
    """By default the data source's records are the shell's records table (the log); with
    .option("snapshots", "true") each snapshot's records are added, marked by ``source``."""
    d = FIXTURES / "segments-snapshots"
    source = open_source(str(d))
    log = len(list(iter_log(source)))
    snaps = sum(len(list(iter_log(source, snapshot=cp))) for cp in source.layout.checkpoints)
    assert log and snaps
    plain = spark.read.format("kraft").load(str(d))
    assert plain.count() == log == _sql(_shell(d), "select count(*) as n from records")[0]["n"]
    got = {r["source"]: r["n"] for r in spark.read.format("kraft").option("snapshots", "true")
           .load(str(d)).groupBy("source").count().withColumnRenamed("count", "n").collect()}
    assert got == {"log": log, "snapshot": snaps}
    assert _sql(_shell(d), "select distinct source from records") == [{"source": "log"}]


# Hours on two cores, in one job that Spark interrupts at once: a range checks its task's
# interrupt flag every batch of rows. (A cross join of two ranges is a nested loop join that
# checks it only every 1000 outer rows, 3e8 comparisons: a cancelled job ends at once, but
# its tasks ran on for minutes here, holding both local[2] slots.)
LONG_QUERY = ("select count(*) from range(0, 1000000000000, 1, 2) "
              "where sha2(cast(id as string), 256) = ''")


def _cancel_pane(tmp_path: Path, args: str) -> tuple[Any, Path]:
    """mdshell in a tmux pane on local[2], its Spark event log in ``events`` (a job's start
    is flushed there: the moment to press Ctrl-C)."""
    import shlex

    from .test_repl_tmux import TMUX, Pane

    if TMUX is None:
        pytest.fail("tmux is not installed: install it (Debian: apt-get install -y tmux)")
    events = tmp_path / "events"
    events.mkdir()
    conf = tmp_path / "spark.properties"
    conf.write_text(f"spark.eventLog.enabled=true\nspark.eventLog.dir=file://{events}\n"
                    "spark.eventLog.compress=false\nspark.eventLog.rolling.enabled=false\n"
                    f"spark.driver.extraJavaOptions={QUICK_JVM}\n")
    env = {"MDSHELL_SPARK_LOG": str(tmp_path / "spark.log"), "PYTHONPATH": str(ROOT),
           "MDSHELL_HISTORY": str(tmp_path / "history"), "TERM": "xterm-256color"}
    line = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()),
                     shlex.quote(sys.executable), "-m", "mdshell", "-d",
                     str(FIXTURES / "cluster-basic"), "--spark-master", "'local[2]'",
                     "--config", str(conf), args])
    pane = Pane(f"mdshell-spark-{os.getpid()}-{os.urandom(3).hex()}",
                "sh -c " + shlex.quote("trap : INT; " + line  # sh outlives the Ctrl-C
                                       + '; echo "[exit $?]"; sleep 120'))
    return pane, events


def _events(events: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in events.rglob("*") if p.is_file())


def _task_ends(events: Path, job: int) -> list[str]:
    """The end reasons of the tasks of one job, from the event log (a task's end is flushed
    there with the next job's start or the application's end)."""
    log = [json.loads(x) for x in _events(events).splitlines() if x.startswith("{")]
    stages = {s for e in log if e["Event"] == "SparkListenerJobStart" and e["Job ID"] == job
              for s in e["Stage IDs"]}
    started = sum(1 for e in log if e["Event"] == "SparkListenerTaskStart"
                  and e["Stage ID"] in stages)
    ends = [e["Task End Reason"]["Reason"] for e in log
            if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] in stages]
    assert started == len(ends), (started, ends)  # every task that started has stopped
    return ends


def _until(check: Any, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_ctrl_c_cancels_a_one_shot_query(tmp_path: Path) -> None:
    """Ctrl-C in a terminal during a one-shot sql: one line, exit 130, no Java stack; the
    query's tasks were killed."""
    pane, events = _cancel_pane(tmp_path, shlex_quote(["sql", LONG_QUERY]))
    try:
        _until(lambda: "SparkListenerJobStart" in _events(events), "the query's job", 120)
        time.sleep(1)
        pane.send("C-c")
        screen = pane.wait(lambda s: "[exit " in s, "the exit", timeout=30)
        lines = [x.replace("^C", "") for x in screen.splitlines() if x.strip()]
        assert lines == ["mdshell: query cancelled", "[exit 130]"], screen  # ^C: its echo
        _until(lambda: "SparkListenerApplicationEnd" in _events(events), "Spark's stop", 30)
        assert set(_task_ends(events, 0)) == {"TaskKilled"}
    finally:
        pane.tmux("kill-server")


def test_ctrl_c_in_the_repl_cancels_and_the_next_command_answers(tmp_path: Path) -> None:
    """Ctrl-C during sql in the REPL: "query cancelled", the job ends in Spark (its tasks
    stopped), and the next query answers at once (local[2]: the cancelled tasks held both
    slots)."""
    pane, events = _cancel_pane(tmp_path, "--repl")
    try:
        pane.wait(lambda s: s.rstrip().endswith("/>"), "the prompt", timeout=30)
        pane.type(f'sql "{LONG_QUERY}"')
        pane.send("Enter")
        _until(lambda: "SparkListenerJobStart" in _events(events), "the query's job", 120)
        time.sleep(1)
        pane.send("C-c")
        pane.wait(lambda s: "query cancelled" in s, "the cancel", timeout=30)
        assert "SparkListenerJobEnd" in _events(events)  # waited for the job to stop
        pane.type('sql "select count(*) as n from topics"')
        pane.send("Enter")
        screen = pane.wait(lambda s: "(1 row)" in s, "the next query", timeout=30)
        assert set(_task_ends(events, 0)) == {"TaskKilled"}
        assert "Traceback" not in screen and "at org." not in screen
        pane.type("exit")
        pane.send("Enter")
        pane.wait(lambda s: "[exit 0]" in s, "exit", timeout=20)
    finally:
        pane.tmux("kill-server")


def shlex_quote(words: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(w) for w in words)


def test_a_big_result_is_limited_before_it_reaches_the_driver(spark: Any, tmp_path: Path
                                                              ) -> None:
    """A result is collected up to 10,000 rows, and the count says how many there are; the
    files hold them all."""
    shell = _shell(FIXTURES / "cluster-basic")
    out = shell.run(["sql", "select id from range(10050)"])
    lines = list(out.lines)
    assert out.code == 0 and len(lines) == 2 + 10000 + 1
    assert lines[-1] == ("(10050 rows; the first 10000 shown: --csv FILE or --parquet DIR "
                         "writes them all)")
    assert len(out.json()) == 10000 and any("10050 rows" in w for w in out.warnings)
    f = tmp_path / "all.csv"
    out = shell.run(["sql", "--csv", str(f), "select id from range(10050)"])
    assert out.json()["rows"] == 10050
    assert sorted(map(int, f.read_text().split()[1:])) == list(range(10050))


def test_driver_memory_is_a_config_setting(tmp_path: Path) -> None:
    """spark.driver.memory in --config's properties sizes the driver JVM's heap."""
    code = ("from mdshell.spark.settings import configure\n"
            "from mdshell.spark.session import get_session\n"
            "configure('local[1]', {'spark.driver.memory': '600m', "
            f"'spark.driver.extraJavaOptions': {QUICK_JVM!r}}})\n"
            "rt = get_session().sparkContext._jvm.java.lang.Runtime.getRuntime()\n"
            "print(rt.maxMemory())\n")
    env = {**os.environ, "MDSHELL_SPARK_LOG": str(tmp_path / "spark.log"),
           "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=180, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert 400 << 20 < int(run.stdout.split()[-1]) <= 600 << 20


def test_a_file_path_gets_data_source_advice_not_the_clis(spark: Any) -> None:
    seg = FIXTURES / "cluster-basic" / "__cluster_metadata-0" / "00000000000000000000.log"
    rows = spark.read.format("kraft").load([str(seg), str(FIXTURES / "cluster-basic")]) \
        .where("warnings is not null").collect()
    assert len(rows) == 1 and rows[0]["offset"] is None
    said = rows[0]["warnings"][0]
    assert "-s FILE" not in said and "the kraft source reads metadata directories" in said


# ------------------------------------------------------------------ pushdown, URIs, discovery

PUSHED_TYPE = "PartitionChangeRecord"


def _explained(df: Any) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain("formatted")
    return out.getvalue()


def _files_read(df: Any) -> int:
    """With maxPartitionBytes 1 each Spark partition is one file read whole."""
    return int(df.rdd.getNumPartitions())


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.select("directory", "file", "offset", "type",
                                              "topic_id", "payload").collect())


def test_pushdown_type_filter_is_pushed_and_reads_fewer_files(spark: Any) -> None:
    """A fleet query with where type = ...: the filter is pushed (explain says so), no snapshot
    is read (a snapshot never holds that type), the rows are those Spark's own filter gives."""
    paths = [str(FIXTURES / f) for f in GOOD_FIXTURES + BAD_FIXTURES]
    if corpus_dirs():
        paths.append(str(CORPUS / "*"))
    def base() -> Any:  # a reader's option() changes the reader itself
        return (spark.read.format("kraft").option("snapshots", "true")
                .option("maxPartitionBytes", 1))

    where = f"type = '{PUSHED_TYPE}'"
    pushed = base().load(paths).where(where)
    plain = base().option("pushdown", "false").load(paths).where(where)
    plan = _explained(pushed)
    assert f"EqualTo(type,{PUSHED_TYPE})" in plan, plan
    assert "EqualTo(type" not in _explained(plain)
    got, want = _rows(pushed), _rows(plain)
    assert got == want and len(got) > 10
    n_pushed, n_plain = _files_read(pushed), _files_read(plain)
    print(f"\nfiles read: {n_plain} without pushdown, {n_pushed} with; rows {len(got)}")
    assert n_pushed < n_plain


def test_pushdown_directory_file_offset_and_topic_skip_what_cannot_match(spark: Any) -> None:
    d = FIXTURES / "segments-snapshots"
    where_dir = str(DirectorySource(str(d)).layout.directory)
    def base() -> Any:  # a reader's option() changes the reader itself
        return spark.read.format("kraft").option("maxPartitionBytes", 1)

    paths = [str(d), str(FIXTURES / "cluster-basic")]
    segs = DirectorySource(str(d)).layout.segments
    assert len(segs) > 1
    low = segs[1].base_offset
    topic = base().load(str(d)).where("topic_id is not null").first()["topic_id"]
    for where, fewer in (
            (f"directory = '{where_dir}' and offset >= {low}", True),
            (f"file = '{os.path.basename(segs[0].path)}'", True),
            (f"offset < {low} and topic_id = '{topic}'", True),
            (f"offset between 3 and {low + 2}", False)):
        pushed = base().load(paths).where(where)
        plain = base().option("pushdown", "false").load(paths).where(where)
        assert _rows(pushed) == _rows(plain), where
        plan = _explained(pushed)
        assert "PushedFilters: [" in plan, (where, plan)
        if fewer:
            assert _files_read(pushed) < _files_read(plain), where


def test_pushdown_never_breaks_a_session_without_the_setting(spark: Any) -> None:
    """Without spark.sql.python.filterPushdown.enabled (a plain spark-submit), the source as a
    user registers it reads with Spark's own filtering; asking for pushdown says, in one line,
    what to set. With the setting and no option, filters are taken."""
    from pyspark.errors import AnalysisException

    from mdshell.spark.datasource import KraftDataSource

    d = str(FIXTURES / "cluster-basic")
    where = f"type = '{PUSHED_TYPE}'"
    n = sum(r.name == PUSHED_TYPE for r in iter_log(open_source(d)))
    spark.dataSource.register(KraftDataSource)
    try:
        assert f"EqualTo(type,{PUSHED_TYPE})" in _explained(
            spark.read.format("kraft").load(d).where(where))
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
        df = spark.read.format("kraft").load(d).where(where)
        assert df.count() == n and "EqualTo(type" not in _explained(df)
        with pytest.raises(AnalysisException) as e:
            spark.read.format("kraft").option("pushdown", "true").load(d).count()
        text = str(e.value)
        assert _one_line(text), text
        assert ("kraft: option pushdown: true needs the session setting "
                "spark.sql.python.filterPushdown.enabled=true") in text
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
        from mdshell.spark.session import _register

        _register(spark)


def test_like_on_directory_prunes_directories_before_reading(spark: Any) -> None:
    """``directory like '%segments-snap%'`` (Spark makes it a substring filter) and
    ``like '/prefix%'`` are pushed and only the matching directories' files are read."""
    paths = [str(FIXTURES / f) for f in ("cluster-basic", "segments-snapshots", "security")]
    def base() -> Any:  # a reader's option() changes the reader itself
        return spark.read.format("kraft").option("maxPartitionBytes", 1)

    for where, taken in (("directory like '%segments-snap%'", "StringContains(directory,"),
                         (f"directory like '{FIXTURES}/seg%'", "StringStartsWith(directory,")):
        pushed = base().load(paths).where(where)
        plain = base().option("pushdown", "false").load(paths).where(where)
        assert _rows(pushed) == _rows(plain) and _rows(pushed), where
        assert taken in _explained(pushed), where
        one = base().option("pushdown", "false").load(str(FIXTURES / "segments-snapshots"))
        assert _files_read(pushed) == _files_read(one) < _files_read(plain), where


def test_file_uris_read_like_paths_and_other_stores_are_one_line(spark: Any) -> None:
    d = FIXTURES / "segments-snapshots"
    n = spark.read.format("kraft").load(str(d)).count()
    assert spark.read.format("kraft").load(d.as_uri()).count() == n
    assert spark.read.format("kraft").load(f"file://{FIXTURES}/segments-snap*").count() == n
    with pytest.raises(Exception, match=r"ftp:// paths are not read"):
        spark.read.format("kraft").load("ftp://host/kafka/*").count()


def _moto_server(tmp_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """moto's standalone S3 server on loopback (moto[server] in this Python, or in the folder
    $MDSHELL_MOTO_PATH names), and its endpoint."""
    import importlib.util

    extra = os.environ.get("MDSHELL_MOTO_PATH")
    if importlib.util.find_spec("moto") is None and not extra:
        pytest.skip("an S3 server for this test needs moto[server] (pip install "
                    "'moto[server]', or MDSHELL_MOTO_PATH=a folder holding it)")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": extra} if extra else dict(os.environ)
    log = tmp_path / "moto.log"
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            env=env)
    try:
        _wait_for(lambda: _listening(port), 60, "moto server", [proc], [log])
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, f"http://127.0.0.1:{port}"


def test_a_fleet_in_s3_reads_like_local_copies(tmp_path: Path) -> None:
    """Two fixture copies in a real S3-speaking server (moto, on loopback) read with one
    load("s3a://bucket/copies/*") in a plain PySpark job: the same records and topics as
    the local directories, rows naming the s3a:// directory."""
    _need_java()
    import pyarrow.fs as pafs

    proc, endpoint = _moto_server(tmp_path)
    try:
        aws = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}
        fs = pafs.S3FileSystem(endpoint_override=endpoint, access_key="testing",
                               secret_key="testing", region="us-east-1",
                               allow_bucket_creation=True)
        fs.create_dir("bucket")
        names = {"segs": "segments-snapshots", "basic": "cluster-basic"}
        for name, fixture in names.items():
            pafs.copy_files(str(FIXTURES / fixture), f"bucket/copies/{name}",
                            destination_filesystem=fs)
        code = (
            "import json, sys\n"
            "from pyspark.sql import SparkSession\n"
            "spark = (SparkSession.builder.master('local[2]')\n"
            "         .config('spark.ui.enabled', 'false')\n"
            f"         .config('spark.driver.extraJavaOptions', {QUICK_JVM!r}).getOrCreate())\n"
            "r = spark.read.format('kraft').load('s3a://bucket/copies/*')\n"
            "n = {x['directory']: x['count'] for x in r.groupBy('directory').count().collect()}\n"
            "w = [x['warnings'] for x in r.where('warnings is not null').collect()]\n"
            "t = spark.read.format('kraft').option('table', 'topics')"
            ".load('s3a://bucket/copies/*')\n"
            "topics = sorted([x['directory'], x['name']] for x in t.collect())\n"
            "print('OUT', json.dumps([n, w, topics]))\n"
            "spark.stop()\n")
        env = {**os.environ, **aws, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable,
               "SPARK_LOCAL_IP": "127.0.0.1"}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=600, cwd=tmp_path, env=env)
        line = next((x for x in out.stdout.splitlines() if x.startswith("OUT ")), None)
        assert line, out.stderr[-3000:]
        counts, warnings, topics = json.loads(line[4:])
        meta = "__cluster_metadata-0"
        want = {f"s3a://bucket/copies/{name}/{meta}": len(list(iter_log(open_source(
            str(FIXTURES / fixture))))) for name, fixture in names.items()}
        assert counts == want and warnings == []
        assert topics == sorted([f"s3a://bucket/copies/{name}/{meta}", t] for name, fixture
                                in names.items() for t in load(open_source(
                                    str(FIXTURES / fixture))).image.topics_by_name)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
