"""Shared test helpers: the real corpus (skipped when absent), running the CLI (in-process with
:func:`cli`, in a fresh interpreter with :func:`run_cli`) and opening a shell on a directory or
file (:func:`open_shell`)."""

from __future__ import annotations

import contextlib
import gc
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from mdshell.commands import Shell

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MDSHELL_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"
GOLDEN = SHARED / "golden"
FIXTURES = ROOT / "fixtures"


def corpus_dirs() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.iterdir() if (p / "__cluster_metadata-0").is_dir())


def corpus_ids() -> list[str]:
    return [p.name for p in corpus_dirs()] or ["no-corpus"]


def need_corpus() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is absent ({CORPUS})")


def _in_corpus(value: object) -> bool:
    """A parameter naming a corpus directory or a file in one (a path, or a directory's name)."""
    if isinstance(value, Path | str) and str(value).startswith(f"{CORPUS}{os.sep}"):
        return True
    return isinstance(value, str) and value in {p.name for p in corpus_dirs()}


@pytest.hookimpl(tryfirst=True)  # before -m deselects by markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``corpus`` tier: a test parametrised over the corpus (one case per directory or
    file) gets the marker here, so a parametrisation anywhere joins the tier without a mark
    of its own; tests that loop over the whole corpus inside are marked where they are."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and any(_in_corpus(v) for v in callspec.params.values()):
            item.add_marker(pytest.mark.corpus)


@dataclass(frozen=True)
class CliRun:
    """What one command line did: its exit code and everything it printed."""

    code: int
    out: str
    err: str


def cli(*args: str) -> CliRun:
    """``mdshell ARGS`` in-process (fast): ``mdshell.cli.main`` with stdout and stderr
    captured; a usage error's ``SystemExit`` becomes its exit code. Any other exception is
    left to fail the test with its traceback."""
    from mdshell.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    gc.unfreeze()  # a one-shot command freezes its image for the cyclic GC: not the suite's
    return CliRun(code, out.getvalue(), err.getvalue())


def open_shell(target: str | Path, *, secrets: bool = False, layout: str = "3.7") -> Shell:
    """A shell over a session on ``target``: a fixture's name, or a path (a directory, or one
    snapshot / log file as with ``-s``), loaded as the command line loads it."""
    from mdshell.commands import Shell
    from mdshell.session import Session
    from mdshell.tree.node import RenderOptions

    path = FIXTURES / target if isinstance(target, str) and "/" not in target else Path(target)
    session = (Session.open(file=str(path), layout=layout) if path.is_file()
               else Session.open(directory=str(path), layout=layout))
    return Shell(session, opts=RenderOptions(show_secrets=secrets))


def run_cli(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``python -m mdshell ARGS`` in a fresh interpreter (start-up, imports, stdin and
    the environment as a user has them) and capture text output."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "mdshell", *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, env=full_env,
                          cwd=ROOT)


def three_brokers(directory: Path, seed: int) -> Any:
    """A ``ClusterBuilder`` writing to ``directory`` at metadata.version 21: a controller
    leader, the bootstrap records, brokers 0-2 registered and unfenced."""
    from mdshell.synth import ClusterBuilder

    b = ClusterBuilder(str(directory), seed=seed, metadata_version=21)
    b.elect_controller_leader()
    b.bootstrap()
    for i in range(3):
        b.register_broker(i)
        b.unfence_broker(i)
    return b


def batches_of(path: Path) -> list[Any]:
    """Every batch of a well-formed file, parsed with the wire layer."""
    from mdshell.wire.batch import parse_header

    data = path.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        b = parse_header(data, pos)
        out.append(b)
        pos += b.size
    return out


ORACLE_MODULES = {"test_oracle.py", "test_oracle_corpus.py"}


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start fetching Kafka's verdicts in the background when oracle tests will run."""
    if session.config.option.collectonly:
        return
    if any(item.path.name in ORACLE_MODULES for item in session.items):
        from .kafka import background

        background.start()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from .kafka import background

    background.stop()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from .kafka import background

    line = background.report()
    if line:
        terminalreporter.write_line(line)
