"""``sql`` on a Spark Connect server (``--spark-remote``, ``$SPARK_REMOTE``): one real server,
started from the pyspark package's own ``sbin/start-connect-server.sh`` on loopback (its Python
workers are this environment's, where mdshell is installed) and always stopped. mdshell itself
starts no JVM then: the one-shot runs have no Java at all.

Expected values come from mdshell's in-process image, never from Spark. The server costs one
JVM for the module (about 20 s to start on the 2-core project machine); each one-shot run
about 2 s.
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
    must be the server's."""
    path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not os.path.exists(os.path.join(d, "java")))
    return {"PATH": path, "JAVA_HOME": "/nonexistent", "MDSHELL_NO_CACHE": "1", **more}


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


def test_spark_remote_in_the_line_shell_follows_time_travel(server: str) -> None:
    """$SPARK_REMOTE, as PySpark users set it: a piped line shell queries, travels to an
    offset, queries again (the tables are sent again, for that image)."""
    at = 20
    script = f'sql "{LEADERS}"\nat {at}\nsql "{LEADERS}"\n'
    out = run_cli("-d", str(BASIC), "-o", "json", stdin=script,
                  env=_no_java_env(SPARK_REMOTE=server), timeout=120)
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


@pytest.fixture
def remote_session(server: str) -> Iterator[None]:
    """This process's mdshell session on the server (a local one of other tests is set
    aside and given back)."""
    from mdshell.spark import session
    from mdshell.spark.settings import SETTINGS

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

    from mdshell.spark.compat import connect_session, end_connect_mode

    spark: Any = connect_session(server, {})
    try:
        n = spark.read.format("kraft").load(str(BASIC)).where("offset is not null").count()
        assert n == len(list(iter_log(open_source(str(BASIC)))))
        with pytest.raises(AnalysisException) as e:
            spark.read.format("kraft").option("tabel", "topics").load(str(BASIC)).count()
        assert "kraft: unknown option 'tabel' (known: table, " in str(e.value)
    finally:
        spark.stop()
        end_connect_mode()
