"""House rules: the one-shot path stays light, and user data is never written."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .conftest import CORPUS, FIXTURES, ROOT, need_corpus, run_cli

HEAVY = ("textual", "prompt_toolkit", "pyspark")
# Each rule is checked on a generated fixture (always there) and on a small real directory
# (skipped when the corpus is absent).
SOURCES = ["fixture", "corpus"]


def _small_dir(which: str) -> Path:
    if which == "fixture":
        return FIXTURES / "cluster-basic"
    need_corpus()
    return CORPUS / "13LAckHEart__kafka"


@pytest.mark.parametrize("which", SOURCES)
@pytest.mark.parametrize("command", [["ls", "/image"], ["tree", "/image/cluster"],
                                     ["cat", "/image/provenance"], ["find", "/image"]])
def test_one_shot_imports_no_front_end(command: list[str], which: str) -> None:
    code = textwrap.dedent(f"""
        import sys, io, contextlib
        from mdshell.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            rc = main(["-d", {str(_small_dir(which))!r}, *{command!r}])
        heavy = [m for m in sys.modules if m.split(".")[0] in {HEAVY!r}]
        print(rc, heavy)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "0 []", out.stderr


# Imported only where they are needed, off the one-shot path (each costs a start-up 1-2 ms):
# JSON output and quorum-state, compressed batches, a mistyped command's suggestion, shutil
# (argparse imports it for the terminal width; zlib, bz2, lzma with it), health.
LAZY = ("json", "cramjam", "difflib", "shutil", "mdshell.image.health")


@pytest.mark.parametrize("which", SOURCES)
@pytest.mark.parametrize("command", [["ls", "/"], ["tree", "/image/cluster"],
                                     ["cat", "/image/provenance"]])
def test_one_shot_leaves_lazy_imports_alone(command: list[str], which: str) -> None:
    """Uncompressed data shown as text needs none of LAZY: moving one of them back to a
    module's top (where every start pays for it) fails here."""
    code = textwrap.dedent(f"""
        import sys, io, contextlib
        from mdshell.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            rc = main(["-d", {str(_small_dir(which))!r}, *{command!r}])
        lazy = [m for m in {LAZY!r} if m in sys.modules]
        print(rc, lazy)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "0 []", out.stderr


def test_library_imports_no_front_end() -> None:
    code = ("import sys, mdshell.session, mdshell.commands, mdshell.tree.image_tree;"
            f"print([m for m in sys.modules if m.split('.')[0] in {HEAVY!r}])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


@pytest.mark.parametrize("which", SOURCES)
def test_loading_never_writes_or_locks(tmp_path: Path, which: str) -> None:
    """Every file is opened read-only; nothing in the directory changes."""
    import builtins
    import shutil

    from mdshell.session import load
    from mdshell.source import DirectorySource

    src = _small_dir(which)
    copy = tmp_path / "copy"
    shutil.copytree(src, copy)
    (copy / ".lock").write_bytes(b"")
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in copy.rglob("*") if p.is_file()}
    modes: list[str] = []
    real_open = builtins.open

    def spy(file, mode="r", *a, **kw):  # type: ignore[no-untyped-def]
        modes.append(mode)
        return real_open(file, mode, *a, **kw)

    builtins.open = spy
    try:
        loaded = load(DirectorySource(str(copy)))
    finally:
        builtins.open = real_open
    assert loaded.image.topics_by_name
    assert modes and all(m in ("r", "rb") for m in modes)
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in copy.rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.parametrize("which", SOURCES)
def test_read_only_directory_loads(tmp_path: Path, which: str) -> None:
    """A directory we may read but not write (as for a copy owned by kafka) still loads."""
    import shutil

    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions")
    copy = tmp_path / "ro"
    shutil.copytree(_small_dir(which), copy)
    expected = run_cli("-d", str(_small_dir(which)), "cat", "/image/features/metadataVersion")
    for p in [copy, *copy.rglob("*")]:
        if p.is_dir():
            p.chmod(0o555)
    try:
        out = run_cli("-d", str(copy), "cat", "/image/features/metadataVersion")
        assert out.returncode == 0 and out.stdout == expected.stdout
        if which == "corpus":
            assert out.stdout.strip() == "3.5-IV2"
    finally:
        for p in [copy, *copy.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)
