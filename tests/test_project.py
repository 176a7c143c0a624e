"""The project's own contract: README quick start matches CI, its examples print what they
say, every link of README and docs/ resolves, lint and types are clean."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, cli, run_cli


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


def test_readme_first_command_opens_the_interface_and_exits_0_without_a_terminal() -> None:
    """The quick start's first command takes no mdshell command: on a terminal it opens the
    full-screen interface; with stdin not a terminal it reads no command and exits 0."""
    install_run = _quick_start()[0]
    args = shlex.split(install_run.rsplit("&&", 1)[1])
    assert args[0].endswith("/mdshell") and args[1:] == ["-d", "fixtures/cluster-basic"]
    done = run_cli(*args[1:], stdin="")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def _readme_examples() -> list[tuple[list[str], str]]:
    """(arguments, printed text) of each `$ mdshell ...` line of the README run on a bundled
    fixture, with the lines that follow it in its code block."""
    examples: list[tuple[list[str], str]] = []
    blocks = (ROOT / "README.md").read_text().split("```")[1::2]
    for block in blocks:
        for chunk in block.split("\n$ ")[1:] if block.startswith("\n$ ") else []:
            command, _, printed = chunk.partition("\n")
            args = shlex.split(command)
            if args[0] == "mdshell" and any(a.startswith("fixtures/") for a in args):
                examples.append((args[1:], printed))
    return examples


def test_readme_examples_print_what_the_readme_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    examples = _readme_examples()
    assert len(examples) >= 5
    monkeypatch.chdir(ROOT)
    for args, printed in examples:
        run = cli(*args)
        assert run.err + run.out == printed, f"mdshell {' '.join(args)}"


def _anchors(path: Path) -> set[str]:
    """GitHub's anchors of a markdown file's headings."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}


def test_every_relative_link_of_readme_and_docs_resolves() -> None:
    """Files and headings named by the links of README.md and docs/*.md exist (docs/design.md
    included: the README and docs link it)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert {"commands", "live", "spark", "performance", "fidelity", "internals", "design"} <= {
        p.stem for p in pages}, "a docs page the README links is missing"
    broken = []
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            name, _, anchor = target.partition("#")
            dest = (page.parent / name).resolve() if name else page
            if not dest.exists() or (anchor and anchor not in _anchors(dest)):
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


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
