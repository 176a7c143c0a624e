"""The project's own contract: README quick start matches CI, lint and types are clean."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from .conftest import ROOT


def _quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    ")]


def test_readme_quick_start_is_two_commands_and_ci_runs_the_second() -> None:
    commands = _quick_start()
    assert len(commands) == 2
    install_run, install_test = commands
    assert "pip install" in install_run and "mdshell -d fixtures/" in install_run
    assert "pytest" in install_test
    printed = subprocess.run(["bash", str(ROOT / ".ci" / "run"), "--print"],
                             capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0 and printed.stdout.strip() == install_test
    fixture = install_run.split("mdshell -d ", 1)[1].split()[0]
    assert (ROOT / fixture).is_dir()


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(ROOT / ".venv" / "bin")) or shutil.which(
        name, path=str(sys.prefix) + "/bin") or shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


def test_ruff_is_clean() -> None:
    out = subprocess.run([_tool("ruff"), "check", "mdshell", "tests", "scripts", "bench"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_is_clean() -> None:
    out = subprocess.run([_tool("mypy")], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
