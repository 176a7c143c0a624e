"""The third-party internals mdshell relies on are still there, with the shape it expects
(mdshell/tui/textual_compat.py, mdshell/spark/compat.py). A failure here after an upgrade of
textual or pyspark names what moved: fix the adapter, then raise the bound in pyproject.toml.
No Spark is started: Spark's and Arrow's jars are read as files."""

from __future__ import annotations

import asyncio
import contextvars
import importlib.metadata
import importlib.util
import inspect
import zipfile
from pathlib import Path

import pytest
from textual.app import App
from textual.screen import Screen

from mdshell.spark import compat
from mdshell.tui import textual_compat


def test_textual_keeps_active_app_and_css_update_counts() -> None:
    from textual import _context

    assert isinstance(_context.active_app, contextvars.ContextVar), \
        "textual._context.active_app is gone: fix textual_compat.mark_styled"
    seen: dict[str, object] = {}

    class Probe(App[None]):
        def on_mount(self) -> None:
            self._css_update_count += 3  # as if the app's CSS had been updated
            screen = Screen[None]()
            assert isinstance(getattr(screen, "_css_update_count", None), int), \
                "Screen._css_update_count is gone: fix textual_compat.mark_styled"
            textual_compat.mark_styled(screen)
            seen["screen"] = screen._css_update_count
            seen["app"] = self._css_update_count
            seen["before"] = textual_compat.exiting(self)
            self.exit()
            seen["after"] = textual_compat.exiting(self)

    async def run() -> None:
        async with Probe().run_test():
            pass

    asyncio.run(run())
    assert seen["screen"] == seen["app"] and isinstance(seen["app"], int)
    assert (seen["before"], seen["after"]) == (False, True), \
        "App._exit no longer says exit() was called: fix textual_compat.exiting"


def _pyspark() -> Path:
    pyspark = pytest.importorskip("pyspark")
    return Path(pyspark.__file__).parent


def test_pyspark_daemon_manager_and_zip_layout() -> None:
    package = _pyspark()
    import pyspark.daemon

    assert callable(pyspark.daemon.manager), "pyspark.daemon.manager is gone"
    assert not inspect.signature(pyspark.daemon.manager).parameters, \
        "pyspark.daemon.manager now takes arguments: fix compat.run_daemon_manager"
    archive = package.joinpath(*compat.ZIP_IN_PACKAGE)
    assert archive.is_file(), f"pyspark no longer ships {archive}: fix compat.installed_first"
    path = [str(archive), "/elsewhere"]
    compat.installed_first(path)
    assert path[0] == str(package.parent)


def _class_text(jars: Path, prefix: str, member: str) -> bytes:
    (jar,) = [j for j in jars.glob(f"{prefix}-*.jar") if j.name[len(prefix) + 1].isdigit()]
    with zipfile.ZipFile(jar) as z:
        return z.read(member)


def test_spark_still_reads_the_daemon_setting_and_arrows_properties() -> None:
    jars = _pyspark() / "jars"
    python_conf = _class_text(jars, "spark-core_2.13",
                              "org/apache/spark/internal/config/Python$.class")
    assert compat.DAEMON_KEY.encode() in python_conf, f"Spark no longer reads {compat.DAEMON_KEY}"
    bounds = _class_text(jars, "arrow-memory-core", "org/apache/arrow/memory/BoundsChecking.class")
    nulls = _class_text(jars, "arrow-vector", "org/apache/arrow/vector/NullCheckingForGet.class")
    unsafe, null_check = compat.ARROW_UNSAFE
    assert unsafe.encode() in bounds, f"Arrow no longer reads {unsafe}"
    assert null_check.encode() in nulls, f"Arrow no longer reads {null_check}"


def test_spark_still_has_the_interpreted_settings() -> None:
    """compat.INTERPRETED: Spark still declares its settings (an unknown spark.sql key would
    be taken and ignored), and still has the mode named."""
    conf = _class_text(_pyspark() / "jars", "spark-catalyst_2.13",
                       "org/apache/spark/sql/internal/SQLConf$.class")
    for key in compat.INTERPRETED:
        assert key.encode() in conf, f"Spark no longer has {key}: fix compat.INTERPRETED"
    assert b"NO_CODEGEN" in conf


def test_arrow_to_spark_schema_keeps_its_keyword() -> None:
    _pyspark()
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    assert "prefer_timestamp_ntz" in inspect.signature(from_arrow_schema).parameters
    struct = compat.arrow_to_spark(pa.schema([("a", pa.int64()), ("t", pa.string())]))
    assert struct.simpleString() == "struct<a:bigint,t:string>"


def test_data_source_planning_workers_call_reader_from_main() -> None:
    """compat.filters_pushed finds the planning worker by its ``_main`` frame: both workers
    still call ``reader(`` there, and the one without pushdown still holds the setting in a
    local of that name (tests/test_spark.py -k never_breaks checks the result in Spark)."""
    import ast

    workers = _pyspark() / "sql" / "worker"
    for name, flag in ((compat.PUSHDOWN_WORKER, None),
                       (compat.PLAN_WORKER, compat.PLAN_WORKER_FLAG)):
        tree = ast.parse((workers / name).read_text())
        (main,) = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "_main"]
        calls = [n for n in ast.walk(main) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute) and n.func.attr == "reader"]
        assert calls, f"{name}: _main no longer calls reader(): fix compat.filters_pushed"
        if flag is not None:
            assigned = {t.id for n in ast.walk(main) if isinstance(n, ast.Assign)
                        for t in n.targets if isinstance(t, ast.Name)}
            assert flag in assigned, f"{name}: no local {flag}: fix compat.filters_pushed"


def test_upper_bounds_where_internals_are_used() -> None:
    """pyproject bounds textual and pyspark, and the installed versions are inside them."""
    text = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert '"textual>=8.2,<9"' in text
    assert text.count('"pyspark[sql,connect]>=4.0,<4.4"') == 2
    assert importlib.metadata.version("textual").split(".")[0] == "8"
    if importlib.util.find_spec("pyspark") is not None:
        assert importlib.metadata.version("pyspark").startswith(("4.0.", "4.1.", "4.2.", "4.3."))


def test_spark_connect_fields_are_the_protocols() -> None:
    """Every message, field and enum value mdshell's own Spark Connect client encodes by
    hand (mdshell/spark/connectwire.py) has the number the protocol gives it, as pyspark's
    generated classes declare it."""
    _pyspark()
    from pyspark.sql.connect.proto import base_pb2

    from mdshell.spark import connectwire as w

    pool = base_pb2.DESCRIPTOR.pool
    wrong = []
    for message, numbers in w.FIELDS.items():
        descriptor = pool.FindMessageTypeByName(f"spark.connect.{message}")
        for name, number in numbers.items():
            field = descriptor.fields_by_name.get(name)
            if field is None or field.number != number:
                wrong.append(f"{message}.{name} = {number}: the protocol says "
                             f"{field.number if field else 'no such field'}")
    for enum, values in w.ENUMS.items():
        message, _, name = enum.rpartition(".")
        descriptor = pool.FindMessageTypeByName(f"spark.connect.{message}").enum_types_by_name[name]
        for value, number in values.items():
            if descriptor.values_by_name[value].number != number:
                wrong.append(f"{enum}.{value} = {number}")
    service = base_pb2.DESCRIPTOR.services_by_name["SparkConnectService"]
    assert f"/{service.full_name}/" == w.SERVICE
    assert not wrong, "fix mdshell/spark/connectwire.py:\n" + "\n".join(wrong)


def test_arrow_converts_without_importing_pandas_once_told() -> None:
    """compat.arrow_without_pandas: pyarrow still decides once per process whether pandas is
    there; after it, building arrays imports no pandas, and to_pandas still works."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from mdshell.spark.compat import arrow_without_pandas\n"
            "arrow_without_pandas()\n"
            "import numpy as np, pyarrow as pa\n"
            "pa.array([1, None]); pa.array(np.arange(3)); pa.Table.from_pydict({'a': [1]})\n"
            "before = 'pandas' in sys.modules\n"
            "frame = pa.table({'a': [1, 2]}).to_pandas()\n"
            "print(before, type(frame).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.split() == ["False", "DataFrame"], out.stderr
