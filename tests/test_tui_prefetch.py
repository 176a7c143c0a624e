"""The overview a forked child reads at start (mdshell/tui/prefetch.py). Each fork happens in
a fresh interpreter, before any thread exists, as the program does it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from mdshell.tui.engine import Engine
from mdshell.tui.prefetch import start

from .conftest import CORPUS, FIXTURES, ROOT, need_corpus

LARGEST = "ArpithaPrakash__Real-Time-Air-Quality-Prediction-with-Apache-Kafka"


def _fresh(code: str) -> list[str]:
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_the_childs_overview_is_the_programs_own() -> None:
    """Fixtures (a damaged one among them) and the largest corpus directory: the child's
    overview equals the one the program computes after its own load; the child is reaped."""
    need_corpus()
    dirs = [FIXTURES / n for n in ("health-offline", "security", "bad-crc")] + [CORPUS / LARGEST]
    out = _fresh(f"""
        import os
        from mdshell.tui.engine import Engine
        from mdshell.tui.prefetch import start
        for d in {[str(d) for d in dirs]!r}:
            engine = Engine.open(d, None)
            prefetch = start(engine)
            got = prefetch.result()
            engine.load()
            want = engine.overview()
            try:
                os.waitpid(prefetch.pid, os.WNOHANG)
                reaped = False
            except ChildProcessError:
                reaped = True
            print(got == want, reaped, want.partitions, len(want.warnings))
    """)
    assert len(out) == len(dirs)
    for line in out:
        same, reaped, partitions, _ = line.split()
        assert same == "True" and reaped == "True" and int(partitions) > 0, out
    assert int(out[2].split()[3]) > 0  # bad-crc: its warnings came across too


def test_a_child_cut_short_gives_no_overview() -> None:
    """Killed before it wrote (the program then loads by itself, as without a child)."""
    out = _fresh(f"""
        import os, signal
        from mdshell.tui.engine import Engine
        from mdshell.tui.prefetch import start
        prefetch = start(Engine.open({str(FIXTURES / "cluster-basic")!r}, None))
        os.kill(prefetch.pid, signal.SIGKILL)
        print(prefetch.result())
    """)
    assert out == ["None"]


def test_no_child_where_it_cannot_help(monkeypatch: pytest.MonkeyPatch) -> None:
    """Live sources, a source already loaded, and one over MAX_BYTES load as before."""
    from mdshell.tui import prefetch

    assert start(Engine.open_live("127.0.0.1:1")) is None
    loaded = Engine.open(str(FIXTURES / "cluster-basic"), None)
    loaded.load()
    assert start(loaded) is None
    monkeypatch.setattr(prefetch, "MAX_BYTES", 100)  # cluster-basic holds more than that
    assert start(Engine.open(str(FIXTURES / "cluster-basic"), None)) is None
