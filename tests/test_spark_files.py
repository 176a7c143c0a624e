"""The files a Spark session keeps beside mdshell: its per-process log and the class archive
(no Spark is started here; pyspark is imported only for its version and jars folder)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mdshell.spark import settings

pytestmark = pytest.mark.spark


def test_each_process_logs_to_its_own_file_and_old_logs_go(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("MDSHELL_CACHE", raising=False)
    monkeypatch.delenv(settings.LOG_ENV, raising=False)
    path = settings.log_path()
    assert path == str(tmp_path / "mdshell" / "spark" / f"spark-{os.getpid()}.log")
    folder = tmp_path / "mdshell" / "spark"
    folder.mkdir(parents=True)
    for i in range(14):
        log = folder / f"spark-{1000 + i}.log"
        log.write_text("x")
        os.utime(log, (time.time() - 100 + i, time.time() - 100 + i))
    (folder / "notes.txt").write_text("kept")
    settings.prune_logs(keep=10)
    left = sorted(p.name for p in folder.iterdir())
    assert left == ["notes.txt"] + [f"spark-{1000 + i}.log" for i in range(4, 14)]
    monkeypatch.setenv(settings.LOG_ENV, str(tmp_path / "one.log"))
    assert settings.log_path() == str(tmp_path / "one.log")


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _archive_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``spark.classarchive`` with its cache under ``tmp_path`` and the archive on."""
    pytest.importorskip("pyspark")
    from mdshell.spark import classarchive

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("MDSHELL_CACHE", raising=False)
    monkeypatch.delenv(settings.CDS_ENV, raising=False)
    if classarchive._key() is None:
        pytest.skip("no java here")
    return classarchive


def test_class_archive_is_written_once_and_promoted_when_its_jvm_is_gone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    classarchive = _archive_module(tmp_path, monkeypatch)
    first = classarchive.plan()
    assert first.options.startswith("-XX:ArchiveClassesAtExit=") and first.pidfile
    part = first.options.split("=", 1)[1]
    # while its JVM runs (here: this process), nobody else writes one nor uses the part
    first.started(os.getpid())
    Path(part).write_bytes(b"archive")
    assert classarchive.plan().options == ""
    assert Path(part).exists()
    # once that JVM is gone, the part becomes the archive every later start maps
    first.started(_dead_pid())
    later = classarchive.plan()
    archive = tmp_path / "mdshell" / "spark-cds" / f"{classarchive._key()}.jsa"
    assert later.options == f"-XX:SharedArchiveFile={archive} -Xshare:auto"
    assert archive.read_bytes() == b"archive" and not Path(part).exists()
    assert sorted(p.name for p in archive.parent.iterdir()) == [archive.name]
    monkeypatch.setenv(settings.CDS_ENV, "0")
    assert classarchive.plan().options == ""


def test_a_jvm_that_wrote_nothing_leaves_nothing(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    classarchive = _archive_module(tmp_path, monkeypatch)
    first = classarchive.plan()
    first.started(_dead_pid())  # it died before writing (killed, say)
    again = classarchive.plan()  # the claim is cleared and this start writes instead
    assert again.options.startswith("-XX:ArchiveClassesAtExit=")
    folder = tmp_path / "mdshell" / "spark-cds"
    assert [p.suffix for p in folder.iterdir()] == [".pid"]
