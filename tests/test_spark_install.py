"""The ``kraft`` source as a PySpark user meets it: mdshell installed the two ways the docs say
(``pip install -e .`` of a clone, and a wheel) into a fresh environment, and a plain PySpark
job, with no register call and no mdshell setting, run from a directory outside the clone.

The environments are cheap: a venv without pip whose site-packages links the test
environment's third-party packages (pyspark, pyarrow...) but none of mdshell's files, then
mdshell installed into it by pip from a copy of the checkout (the clone itself is never
built in: a wheel build writes ``build/`` beside the sources). The copy leaves out the C
sources: the compiled pieces are optional and play no part here. Each job is one Spark JVM
(about 15 s on the 2-core project machine); building both installs about 10 s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from mdshell.source import open_source
from mdshell.source.logscan import iter_log

from .conftest import FIXTURES, ROOT

pytestmark = pytest.mark.spark

QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# Files of a checkout that make the project (README.md: the package's long description).
PROJECT_FILES = ("pyproject.toml", "setup.py", "README.md", "pyspark_kraft.py")
# Never linked into a fresh environment: mdshell's own files and the install tooling.
NOT_LINKED = ("__editable__", "mdshell", "pyspark_kraft", "_distutils_hack",
              "distutils-precedence.pth", "pip", "setuptools", "pkg_resources", "__pycache__")

# A user's job: no register call, no mdshell import, Spark's defaults (no pushdown setting).
JOB = f"""
import sys
from pyspark.sql import SparkSession

spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.extraJavaOptions", {QUICK_JVM!r}).getOrCreate())
try:
    good, bad = sys.argv[1], sys.argv[2]
    print("N", spark.read.format("kraft").load(good).count(), flush=True)
    fleet = spark.read.format("kraft").load([good, bad])
    print("W", fleet.where("warnings is not null").count(), fleet.count(),
          len(fleet.collect()), flush=True)
finally:
    spark.stop()
"""


def _checkout_copy(dest: Path) -> Path:
    dest.mkdir()
    for name in PROJECT_FILES:
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "mdshell", dest / "mdshell", ignore=shutil.ignore_patterns(
        "__pycache__", "*.pyc", "*.so", "*.c"))
    return dest


def _fresh_env(where: Path) -> Path:
    """A venv whose site-packages links every third-party package of this one; its Python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    ours = Path(sysconfig.get_paths()["purelib"])
    theirs = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip())
    for entry in ours.iterdir():
        if not entry.name.startswith(NOT_LINKED):
            (theirs / entry.name).symlink_to(entry)
    return python


def _pip(python: Path, *args: str) -> None:
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "-q", *args],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr


def _job(python: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME")}
    env.update(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python),
               SPARK_LOCAL_IP="127.0.0.1")
    good, bad = FIXTURES / "cluster-basic", FIXTURES / "bad-crc"
    return subprocess.run([str(python), "-c", JOB, str(good), str(bad)], capture_output=True,
                          text=True, timeout=600, cwd=cwd, env=env)


def _outside(tmp_path: Path) -> Path:
    """A working directory that is not the clone (where pyspark_kraft.py would be found)."""
    here = tmp_path / "elsewhere"
    here.mkdir()
    assert not (here / "pyspark_kraft.py").exists() and ROOT not in here.parents
    return here


def _records(name: str) -> int:
    return len(list(iter_log(open_source(str(FIXTURES / name)))))


def _reader_rows(*names: str) -> tuple[int, int]:
    """Rows and rows with warnings the source's reader gives, in this process."""
    from mdshell.spark.datasource import KraftReader
    from mdshell.spark.readopts import ReadOptions

    reader = KraftReader(ReadOptions(paths=[str(FIXTURES / n) for n in names]))
    rows = [r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]
    return len(rows), sum(r["warnings"] is not None for r in rows)


def _check_job(out: subprocess.CompletedProcess[str]) -> None:
    assert f"N {_records('cluster-basic')}\n" in out.stdout, out.stderr[-3000:]
    rows, warned = _reader_rows("cluster-basic", "bad-crc")
    assert f"W {warned} {rows} {rows}\n" in out.stdout and warned > 0, out.stdout
    # The damage is on the rows, never printed by the Python workers (three actions read it).
    assert "CRC mismatch" not in out.stderr, out.stderr[-3000:]


def test_a_job_outside_the_clone_finds_kraft_after_an_editable_install(tmp_path: Path) -> None:
    python = _fresh_env(tmp_path / "venv")
    _pip(python, "install", "--no-deps", "-e", str(_checkout_copy(tmp_path / "clone")))
    _check_job(_job(python, _outside(tmp_path)))


def test_a_job_outside_the_clone_finds_kraft_after_a_wheel_install(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                          str(wheels), str(_checkout_copy(tmp_path / "clone"))],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    python = _fresh_env(tmp_path / "venv")
    (wheel,) = wheels.glob("mdshell-*.whl")
    _pip(python, "install", "--no-deps", str(wheel))
    _check_job(_job(python, _outside(tmp_path)))
