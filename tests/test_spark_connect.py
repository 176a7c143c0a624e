"""``sql`` on a Spark Connect server (``--spark-remote``, ``$SPARK_REMOTE``): one real server,
started from the pyspark package's own ``sbin/start-connect-server.sh`` on loopback (its Python
workers are this environment's, where mdshell is installed) and always stopped. mdshell itself
starts no JVM then: the one-shot runs have no Java at all, and no pyspark.

Expected values come from mdshell's in-process image, never from Spark. The server costs one
JVM for the module (about 20 s to start on the 2-core project machine); each one-shot run
about a second.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mdshell.session import load
from mdshell.source import open_source
from mdshell.source.logscan import iter_log

from .conftest import FIXTURES, run_cli

pytestmark = pytest.mark.spark

QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
BASIC = FIXTURES / "cluster-basic"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark Connect server on 127.0.0.1 (local[2]); its URL. Stopped whatever happens."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("Spark tests need Java 17+: install a JDK or set JAVA_HOME")
    import pyspark

    home = Path(pyspark.__file__).parent
    work = tmp_path_factory.mktemp("spark-connect")
    port = _free_port()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOG_DIR": str(work / "logs"),
           "SPARK_PID_DIR": str(work / "pids"), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable}
    env.pop("SPARK_REMOTE", None)
    cmd = [str(home / "sbin" / "start-connect-server.sh"), "--wait", "--master", "local[2]",
           "--conf", f"spark.connect.grpc.binding.port={port}",
           "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
           "--conf", "spark.ui.enabled=false", "--conf", f"spark.local.dir={work / 'tmp'}",
           "--conf", f"spark.driver.extraJavaOptions={QUICK_JVM}"]
    log = work / "server.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=work,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not _listening(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("the Spark Connect server did not start\n"
                            + log.read_text(errors="replace")[-3000:])
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def _no_java_env(**more: str) -> dict[str, str]:
    """An environment where a local Spark could not start (no java anywhere): what runs
    must be the server's. No cache either (so each process sends its tables to a session of
    its own) unless ``MDSHELL_CACHE`` is given."""
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not os.path.exists(os.path.join(d, "java")))
    cache = {"MDSHELL_NO_CACHE": "0"} if "MDSHELL_CACHE" in more else {"MDSHELL_NO_CACHE": "1"}
    return {"PATH": path, "JAVA_HOME": "/nonexistent", **cache, **more}


def _leaders(directory: Path, upto: int | None = None) -> dict[int, int]:
    image = load(open_source(str(directory)), upto=upto).image
    return dict(Counter(p.leader for t in image.topics_by_name.values()
                        for p in (t.partition(i) for i in t.partitions) if p))


def _documents(text: str) -> list[Any]:
    """The JSON documents one after the other in a line shell's output."""
    decoder, docs, i = json.JSONDecoder(), [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        doc, i = decoder.raw_decode(text, i)
        docs.append(doc)
    return docs


LEADERS = "select leader, count(*) as n from partitions group by leader order by leader"


def test_one_shot_sql_runs_on_the_server_without_java_here(server: str) -> None:
    out = run_cli("-d", str(BASIC), "--spark-remote", server, "-o", "json", "sql", LEADERS,
                  env=_no_java_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    assert {r["leader"]: r["n"] for r in json.loads(out.stdout)} == _leaders(BASIC)
    assert out.stderr == ""
    bad = run_cli("-d", str(BASIC), "--spark-remote", server, "sql", "select nope from topics",
                  env=_no_java_env(), timeout=120)
    assert bad.returncode == 1 and bad.stdout == ""
    assert bad.stderr.startswith("mdshell: sql: [UNRESOLVED_COLUMN") and \
        len(bad.stderr.strip().splitlines()) == 1, bad.stderr


@pytest.mark.parametrize("cache", [False, True])
def test_spark_remote_in_the_line_shell_follows_time_travel(server: str, cache: bool,
                                                            tmp_path: Path) -> None:
    """$SPARK_REMOTE, as PySpark users set it: a piped line shell queries, travels to an
    offset, queries again (the tables are sent again, for that image: to the process's own
    session without a cache, else to that image's own)."""
    at = 20
    script = f'sql "{LEADERS}"\nat {at}\nsql "{LEADERS}"\n'
    more = {"MDSHELL_CACHE": str(tmp_path / "cache")} if cache else {}
    out = run_cli("-d", str(BASIC), "-o", "json", stdin=script,
                  env=_no_java_env(SPARK_REMOTE=server, **more), timeout=120)
    assert out.returncode == 0, out.stderr
    answers = [d for d in _documents(out.stdout) if isinstance(d, list)]
    assert [{r["leader"]: r["n"] for r in a} for a in answers] == [
        _leaders(BASIC), _leaders(BASIC, at)], out.stdout
    assert _leaders(BASIC) != _leaders(BASIC, at)


def test_csv_and_parquet_of_a_remote_query_are_written_here(server: str,
                                                            tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    query = "select offset, type from records order by offset"
    want = [(r.offset, r.name) for r in iter_log(open_source(str(BASIC)))]
    where = tmp_path / "out.csv"
    out = run_cli("-d", str(BASIC), "--spark-remote", server, "sql", "--csv", str(where),
                  query, env=_no_java_env(), timeout=120)
    assert out.returncode == 0 and f"wrote {len(want)} rows" in out.stdout, out.stderr
    with open(where, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["offset", "type"] and [(int(o), t) for o, t in rows[1:]] == want
    folder = tmp_path / "out.parquet"
    out = run_cli("-d", str(BASIC), "--spark-remote", server, "sql", "--parquet", str(folder),
                  query, env=_no_java_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    table = pq.read_table(folder)
    assert list(zip(table.column("offset").to_pylist(), table.column("type").to_pylist(),
                    strict=True)) == want


def test_an_absent_server_is_one_line_within_seconds() -> None:
    url = f"sc://127.0.0.1:{_free_port()}"
    start = time.monotonic()
    out = run_cli("-d", str(BASIC), "--spark-remote", url, "sql", "select 1",
                  env=_no_java_env(), timeout=60)
    assert out.returncode == 1 and time.monotonic() - start < 20
    assert out.stderr == (f"mdshell: sql: no Spark Connect server answered at {url}: start one "
                          "(pyspark's sbin/start-connect-server.sh, docs/spark.md), or unset "
                          "SPARK_REMOTE / give another --spark-remote\n")
    usage = run_cli("-d", str(BASIC), "--spark-remote", "http://x", "sql", "select 1")
    assert usage.returncode == 2 and "not a Spark Connect URL (sc://HOST:PORT)" in usage.stderr
    both = run_cli("-d", str(BASIC), "--spark-remote", url, "--spark-master", "local[1]", "sql",
                   "select 1")
    assert both.returncode == 2 and "give one of them" in both.stderr
    code = ("import sys; sys.modules['grpc'] = None; from mdshell.cli import main; "
            f"sys.exit(main(['-d', {str(BASIC)!r}, '--spark-remote', {url!r}, 'sql', 'select 1']))")
    no_grpc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60, env={**os.environ, **_no_java_env()})
    assert no_grpc.returncode == 1 and no_grpc.stderr.startswith(
        "mdshell: sql: Spark queries need the spark extra, and grpcio is not installed: "), \
        no_grpc.stderr


@pytest.fixture
def remote_session(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                   ) -> Iterator[None]:
    """This process's mdshell session on the server (a local one of other tests is set
    aside and given back), with a cache directory of its own."""
    from mdshell.spark import session
    from mdshell.spark.settings import SETTINGS

    monkeypatch.setenv("MDSHELL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MDSHELL_NO_CACHE", raising=False)
    saved = session._SESSION, session._REMOTE
    session._SESSION = session._REMOTE = None
    SETTINGS.remote = server
    try:
        yield
    finally:
        session.stop()
        SETTINGS.remote = None
        session._SESSION, session._REMOTE = saved


def test_tui_sql_runs_on_the_server_and_esc_cancels(remote_session: None) -> None:
    """The TUI's command bar: ``:sql`` on the server lands in the table; a long query is
    cancelled with Esc (its operations interrupted by tag) and the next query answers."""
    import asyncio

    from textual.widgets import DataTable, Static

    from mdshell.tui.app import make_app
    from mdshell.tui.engine import Engine
    from tests.test_tui import ready, text_of, until

    from .test_spark import LONG_QUERY

    app = make_app(Engine.open(str(BASIC), None))

    async def drive() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await ready(pilot)
            await pilot.press("colon")
            bar = app.screen.query_one("#command")
            await pilot.pause()
            bar.value = f'sql "{LEADERS}"'
            await pilot.press("enter")
            table = app.screen.query_one("#sql-table", DataTable)
            await until(pilot, lambda: table.display and table.row_count > 0, "the sql table",
                        steps=2400)
            got = {int(table.get_row_at(i)[0]): int(table.get_row_at(i)[1])
                   for i in range(table.row_count)}
            assert got == _leaders(BASIC)
            status = app.screen.query_one("#sql-status", Static)
            bar.value = f'sql "{LONG_QUERY}"'
            await pilot.press("enter")
            await pilot.pause(3)
            await pilot.press("escape")
            await until(pilot, lambda: "cancelled" in text_of(status), "the cancel",
                        steps=2400)
            bar.focus()
            bar.value = 'sql "select count(*) as n from topics"'
            await pilot.press("enter")
            await until(pilot, lambda: table.display and table.row_count == 1,
                        "a query after the cancel", steps=2400)
            assert int(table.get_row_at(0)[0]) == len(
                load(open_source(str(BASIC))).image.topics_by_name)

    asyncio.run(drive())


def test_a_users_connect_job_reads_kraft_on_the_server(server: str) -> None:
    """A PySpark user's own Spark Connect job: the server's Python workers find the kraft
    source (mdshell installed there), with the server's defaults; a bad option is one line."""
    from pyspark.errors import AnalysisException
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    # As SparkSession.builder.remote(server).getOrCreate() makes one, except that the classic
    # session other tests started in this process is left alone rather than returned.
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # pyspark's own switch for a client
    spark: Any = RemoteSparkSession.builder.remote(server).create()
    try:
        n = spark.read.format("kraft").load(str(BASIC)).where("offset is not null").count()
        assert n == len(list(iter_log(open_source(str(BASIC)))))
        with pytest.raises(AnalysisException) as e:
            spark.read.format("kraft").option("tabel", "topics").load(str(BASIC)).count()
        assert "kraft: unknown option 'tabel' (known: table, " in str(e.value)
    finally:
        spark.stop()
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


def test_csv_of_a_remote_query_is_the_one_sparks_writer_writes(server: str,
                                                               tmp_path: Path) -> None:
    """``--csv`` on Spark Connect is written here, yet byte for byte what Spark's own CSV
    writer writes for the same rows (as a local Spark's ``--csv`` is): its quoting and
    backslash escapes, empty strings against nulls, its timestamp format, lists as JSON. The
    writer itself is the oracle: a user's Connect job writes the same query with it."""
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    query = ("select r.offset, r.time, r.payload, r.control, '' as empty, "
             "cast(null as string) as nothing, 'a\"b, c' as quoted, p.replicas "
             "from records r cross join (select replicas from partitions "
             "order by topic, partition limit 1) p order by r.offset")
    mine = tmp_path / "mine.csv"
    out = run_cli("-d", str(BASIC), "--spark-remote", server, "sql", "--csv", str(mine),
                  query, env=_no_java_env(), timeout=120)
    assert out.returncode == 0, out.stderr
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    spark: Any = RemoteSparkSession.builder.remote(server).create()
    try:
        spark.conf.set("spark.sql.session.timeZone", "UTC")  # as mdshell's sessions
        for table in ("records", "partitions"):
            spark.read.format("kraft").option("table", table).load(str(BASIC)) \
                .createOrReplaceTempView(table)
        spark.sql(f"select * except (replicas), to_json(replicas) as replicas from ({query})") \
            .coalesce(1).write.option("header", "true").csv(str(tmp_path / "spark"))
    finally:
        spark.stop()
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    [part] = (tmp_path / "spark").glob("part-*.csv")
    text = mine.read_text(encoding="utf-8")
    assert text == part.read_text(encoding="utf-8")
    assert '\\"' in text and ',"",,' in text and "T" in text.splitlines()[1].split(",")[1]


# ------------------------------------------------------------------ tables sent once


def _copy(tmp_path: Path) -> Path:
    """A directory of its own (an image no other test sent to the server)."""
    where = tmp_path / "cluster"
    shutil.copytree(BASIC, where)
    return where


def _image_session(directory: Path, server: str, upto: int | None = None) -> str:
    """The id of the image session a one-shot ``sql`` on ``directory`` uses (mdshell's own
    key for that image, first generation)."""
    from mdshell.spark.connectclient import ConnectURL
    from mdshell.spark.connectsessions import image_key, session_id
    from mdshell.spark.session import CONNECT_CONF, DEFAULT_CONF
    from mdshell.spark.tables import View

    source = open_source(str(directory))
    conf = {k: DEFAULT_CONF[k] for k in CONNECT_CONF}
    key = image_key(View(source, load(source, upto=upto), False), conf,
                    ConnectURL.parse(server))
    assert key is not None
    return session_id(key, 0)


def _replace_view(server: str, session: str, name: str, query: str) -> None:
    """Replace a temporary view of a session on the server, as another client could."""
    from mdshell.spark import connectwire as w
    from mdshell.spark.connectclient import ConnectClient, ConnectURL

    client = ConnectClient(ConnectURL.parse(server))
    try:
        client.execute(session, w.create_view(w.sql(query), name), str(uuid.uuid4()))
    finally:
        client.close()


def _answer(out: subprocess.CompletedProcess[str]) -> dict[int, int]:
    assert out.returncode == 0 and out.stderr == "", out.stderr
    return {r["leader"]: r["n"] for r in json.loads(out.stdout)}


def test_a_second_one_shot_queries_the_tables_the_first_sent(server: str,
                                                              tmp_path: Path) -> None:
    """The tables of an image are sent once: a later one-shot on the same files queries
    what the server holds (a view replaced there in between is what it answers from), and
    once the files change, the new image's tables are sent."""
    directory = _copy(tmp_path)
    env = _no_java_env(MDSHELL_CACHE=str(tmp_path / "cache"))
    cmd = ("-d", str(directory), "--spark-remote", server, "-o", "json", "sql", LEADERS)
    assert _answer(run_cli(*cmd, env=env, timeout=120)) == _leaders(directory)
    session = _image_session(directory, server)
    _replace_view(server, session, "partitions", "select 99 as leader")
    assert _answer(run_cli(*cmd, env=env, timeout=120)) == {99: 1}
    segment = next((directory / "__cluster_metadata-0").glob("*.log"))
    os.utime(segment, ns=(segment.stat().st_atime_ns, segment.stat().st_mtime_ns + 10**9))
    assert _answer(run_cli(*cmd, env=env, timeout=120)) == _leaders(directory)


def test_a_statement_that_changes_a_session_stays_in_the_process(server: str,
                                                                 tmp_path: Path) -> None:
    """A statement other than a read (here a view replacing a table) runs in the process's
    own session, and so do its later queries; the image's shared session is untouched."""
    directory = _copy(tmp_path)
    env = _no_java_env(MDSHELL_CACHE=str(tmp_path / "cache"))
    script = (f'sql "{LEADERS}"\n'
              'sql "create or replace temporary view partitions as select 7 as leader"\n'
              f'sql "{LEADERS}"\n')
    out = run_cli("-d", str(directory), "--spark-remote", server, "-o", "json", stdin=script,
                  env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    answers = [d for d in _documents(out.stdout) if isinstance(d, list)]
    assert [{r["leader"]: r["n"] for r in a} for a in (answers[0], answers[-1])] == [
        _leaders(directory), {7: 1}]
    again = run_cli("-d", str(directory), "--spark-remote", server, "-o", "json", "sql",
                    LEADERS, env=env, timeout=120)
    assert _answer(again) == _leaders(directory)


def test_a_closed_image_session_is_replaced(server: str, tmp_path: Path) -> None:
    """The server refuses a released session's id for good: the next one-shot sends the
    tables to the image's next session."""
    from mdshell.spark.connectclient import ConnectClient, ConnectURL

    directory = _copy(tmp_path)
    env = _no_java_env(MDSHELL_CACHE=str(tmp_path / "cache"))
    cmd = ("-d", str(directory), "--spark-remote", server, "-o", "json", "sql", LEADERS)
    assert _answer(run_cli(*cmd, env=env, timeout=120)) == _leaders(directory)
    client = ConnectClient(ConnectURL.parse(server))
    client.release(_image_session(directory, server))
    client.close()
    assert _answer(run_cli(*cmd, env=env, timeout=120)) == _leaders(directory)


def test_a_one_shot_on_the_server_imports_neither_pyspark_nor_pandas(server: str,
                                                                    tmp_path: Path) -> None:
    code = ("import sys, io, contextlib\n"
            "from mdshell.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    rc = main(['-d', {str(_copy(tmp_path))!r}, '--spark-remote', {server!r},\n"
            f"               'sql', {LEADERS!r}])\n"
            "print(rc, sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'pandas'}))\n")
    env = {**os.environ, **_no_java_env(MDSHELL_CACHE=str(tmp_path / "cache"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.stdout.split("\n")[0] == "0 []", out.stdout + out.stderr


def test_every_table_reads_back_as_built(remote_session: None) -> None:
    """Each table, sent to the server and read back whole, holds the rows mdshell built
    (types, nulls, lists, timestamps, empty tables), in the image's shared session."""
    from mdshell.spark import query, tables

    source = open_source(str(BASIC))
    view = tables.View(source, load(source), False)
    remote = query.get_session()
    for name in tables.TABLES:
        frame, _ = query.run(view, f"select * from {name}")
        got = query.collect(frame)
        want = tables.build(name, view)
        assert got.column_names == want.column_names, name
        key = repr
        assert sorted(map(key, got.to_pylist())) == sorted(map(key, want.to_pylist())), name
        assert frame.key is not None, name
    assert len({s for _, s in remote.sent}) == 1  # one session: the image's


def test_a_large_result_is_counted_and_csv_lists_are_json(server: str, tmp_path: Path) -> None:
    env = _no_java_env(MDSHELL_CACHE=str(tmp_path / "cache"))
    many = run_cli("-d", str(BASIC), "--spark-remote", server, "sql", "select id from range(10003)",
                   env=env, timeout=120)
    assert many.returncode == 0, many.stderr
    assert many.stdout.splitlines()[-1].startswith("(10003 rows; the first 10000 shown")
    where = tmp_path / "replicas.csv"
    out = run_cli("-d", str(BASIC), "--spark-remote", server, "sql", "--csv", str(where),
                  "select topic, partition, replicas from partitions order by topic, partition",
                  env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    image = load(open_source(str(BASIC))).image
    want = [[name, str(i), json.dumps(t.partition(i).replicas, separators=(",", ":"))]
            for name, t in sorted(image.topics_by_name.items()) for i in sorted(t.partitions)]
    with open(where, newline="") as f:
        assert list(csv.reader(f)) == [["topic", "partition", "replicas"], *want]
    typo = run_cli("-d", str(BASIC), "--spark-remote", server, "sql", "select * from partitons",
                   env=env, timeout=120)
    assert typo.returncode == 1 and typo.stderr.startswith(
        "mdshell: sql: [TABLE_OR_VIEW_NOT_FOUND] The table or view `partitons`")
    assert len(typo.stderr.strip().splitlines()) == 1


def test_older_images_of_a_growing_log_are_released(remote_session: None,
                                                    tmp_path: Path) -> None:
    """Each newer image of a directory (the log grew) gets a session of its own; the ones
    beyond the two most recent are released on the server."""
    from mdshell.spark import connectwire as w
    from mdshell.spark import query, tables
    from mdshell.spark.connectclient import ConnectError

    directory = _copy(tmp_path)
    segment = next((directory / "__cluster_metadata-0").glob("*.log"))
    remote = query.get_session()
    sessions = []
    for step in range(3):
        os.utime(segment, ns=(segment.stat().st_atime_ns, segment.stat().st_mtime_ns + 10**9))
        source = open_source(str(directory))
        frame, _ = query.run(tables.View(source, load(source), False), LEADERS)
        assert {r["leader"]: r["n"] for r in query.collect(frame).to_pylist()} == \
            _leaders(directory), step
        sessions.append(frame.session)
    assert len(set(sessions)) == 3
    with pytest.raises(ConnectError) as closed:
        remote.client.config(sessions[0], w.config_get_all("mdshell."))
    assert "SESSION_CLOSED" in closed.value.error_class
    for kept in sessions[1:]:
        assert "table.partitions" in remote.client.config(kept, w.config_get_all("mdshell."))


def test_tables_uploaded_as_artifacts_read_back(remote_session: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A table too large to go in the plan is uploaded first, in Arrow streams of its own
    (made small here: every table, a few rows a stream), and the view reads it whole."""
    from mdshell.spark import connectsessions, query, tables

    monkeypatch.setattr(connectsessions, "INLINE_BYTES", 0)
    monkeypatch.setattr(connectsessions, "CHUNK_BYTES", 1)
    monkeypatch.setattr(connectsessions, "CHUNK_ROWS", 5)
    from mdshell.spark import connectclient

    monkeypatch.setattr(connectclient, "ARTIFACT_CHUNK", 700)  # several requests a stream
    source = open_source(str(BASIC))
    view = tables.View(source, load(source), True)  # secrets shown: another image
    for name in ("partitions", "records"):
        frame, _ = query.run(view, f"select * from {name}")
        want = tables.build(name, view)
        assert want.num_rows > 10, name
        got = query.collect(frame)
        assert sorted(map(repr, got.to_pylist())) == sorted(map(repr, want.to_pylist())), name


def test_small_tables_are_queried_in_one_task_without_generated_code(
        remote_session: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session holding only small tables gets the small settings; a larger table sent to
    it brings Spark's own back (the answers are the same either way)."""
    from mdshell.spark import connectsessions, query, tables
    from mdshell.spark import connectwire as w

    directory = _copy(tmp_path)
    source = open_source(str(directory))
    view = tables.View(source, load(source), False)
    remote = query.get_session()

    def settings(session: str) -> dict[str, str]:
        return {k: v for prefix in ("spark.sql.codegen.", "spark.sql.shuffle.")
                for k, v in remote.client.config(session, w.config_get_all(prefix)).items()}

    frame, _ = query.run(view, "select count(*) as n from topics")
    assert query.collect(frame).to_pylist() == [{"n": len(load(source).image.topics_by_name)}]
    assert settings(frame.session) == {"factoryMode": "NO_CODEGEN", "wholeStage": "false",
                                       "partitions": "1"}
    monkeypatch.setattr(connectsessions, "SMALL_ROWS", 5)  # partitions is "large" now
    frame, _ = query.run(view, LEADERS)
    assert {r["leader"]: r["n"] for r in query.collect(frame).to_pylist()} == \
        _leaders(directory)
    assert settings(frame.session) == {"partitions": "8"}
