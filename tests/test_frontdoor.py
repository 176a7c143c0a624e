"""The front door (issue 35): help without a source, options that would be ignored, exit
statuses of scripts, a reader that goes away, and the words a newcomer reads first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mdshell.commands import REGISTRY

from .conftest import FIXTURES, ROOT, cli, run_cli

BASIC = str(FIXTURES / "cluster-basic")


# ---------------------------------------------------------------- help (item 1)


def _help_commands(text: str) -> list[str]:
    """The command names of ``mdshell --help``'s commands section."""
    section = text.split("\ncommands (", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in section.splitlines()[2:]]


def _documented_commands() -> set[str]:
    """Every command docs/commands.md's Commands table names (a row may name several:
    ``cd [PATH]``, ``pwd``)."""
    text = (ROOT / "docs" / "commands.md").read_text()
    section = text.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    names: set[str] = set()
    for row in rows:
        first = row.split(" | ")[0]
        names.update(m.split()[0] for m in re.findall(r"`([^`]+)`", first))
    return names - {"CMD"}


def test_help_lists_every_command_one_line_each() -> None:
    out = cli("--help")
    assert out.code == 0
    assert _help_commands(out.out) == sorted(REGISTRY)
    section = out.out.split("\ncommands (", 1)[1].split("\n\n", 1)[0]
    for line in section.splitlines()[2:]:
        name = line.split()[0]
        assert REGISTRY[name].summary in line


def test_help_and_commands_md_name_the_same_commands() -> None:
    assert _documented_commands() == set(REGISTRY) == set(_help_commands(cli("--help").out))


@pytest.mark.parametrize("words", [["help"], ["help", "health"], ["man", "diff"],
                                   ["health", "--help"], ["records", "--help"]])
def test_help_needs_no_source(words: list[str]) -> None:
    out = cli(*words)
    assert out.code == 0, out.err
    assert out.err == ""
    name = words[-1] if words[0] in ("help", "man") and len(words) > 1 else words[0]
    first = out.out.splitlines()[0]
    assert first.startswith("Commands (" if words == ["help"] else f"{name}: ")


def test_help_without_source_keeps_its_usage_errors() -> None:
    out = cli("help", "nosuch")
    assert out.code == 2 and "not a command" in out.err
    assert cli("man").code == 2
    # Any other command still needs a source.
    out = cli("ls")
    assert out.code == 2 and "no metadata source" in out.err


# ---------------------------------------------------------------- options (item 2)


@pytest.mark.parametrize(("args", "words"), [
    (["-d", BASIC, "--config", "/nonexistent", "ls", "/image"], "--config is for -q"),
    (["-s", str(FIXTURES / "cluster-basic/bootstrap.checkpoint"), "--config",
      str(ROOT / "pyproject.toml"), "topics"], "--config is for -q"),
    (["-d", BASIC, "--spark-master", "local[1]", "health"], "--spark-master is for sql"),
    (["-d", BASIC, "--repl", "ls"], "--repl opens the line shell"),
])
def test_options_that_would_be_ignored_are_refused(args: list[str], words: str) -> None:
    out = cli(*args)
    assert out.code == 2 and out.out == ""
    assert out.err.startswith(f"mdshell: {words}") and len(out.err.splitlines()) == 1


def test_config_that_cannot_be_read_is_an_error(tmp_path: Path) -> None:
    out = run_cli("-d", BASIC, "--config", str(tmp_path / "none.properties"),
                  stdin="ls /image/topics\n")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == f"mdshell: --config {tmp_path / 'none.properties'}: no such file\n"
    props = tmp_path / "spark.properties"
    props.write_text("spark.driver.memory=1g\n")
    ok = run_cli("-d", BASIC, "--config", str(props), stdin="ls /image/topics\n")
    assert ok.returncode == 0 and ok.stdout.split() == ["byId", "byName"], ok.stderr


@pytest.mark.parametrize(("option", "said"), [(["-o", "json"], "-o json"),
                                              (["--layout", "4.x"], "--layout 4.x"),
                                              (["--strict"], "--strict")])
def test_full_screen_refuses_what_it_would_ignore(option: list[str], said: str) -> None:
    """On a terminal without a command the full-screen interface would open: an output
    option it does not use is refused before it starts."""
    primary, secondary = os.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "mdshell", "-d", BASIC, *option],
                              stdin=secondary, stdout=secondary, stderr=subprocess.PIPE,
                              text=True, timeout=60, cwd=ROOT)
    finally:
        os.close(primary)
        os.close(secondary)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"mdshell: {said} applies to commands and the line shell")


# ---------------------------------------------------------------- scripts (items 8, 12)


@pytest.mark.parametrize(("script", "code"), [
    ("ls /nosuch\nfoo\nhealth\n", 2),   # usage error over failures
    ("foo\nls /nosuch\n", 2),           # whatever the order
    ("ls /nosuch\npwd\n", 1),           # a failure, then success
    ("pwd\nhealth\n", 1),               # health fails on this fixture
    ("pwd\nls /image\n", 0),
])
def test_a_script_exits_with_its_worst_line(script: str, code: int) -> None:
    out = run_cli("-d", str(FIXTURES / "health-offline"), stdin=script)
    assert out.returncode == code, out.stderr


def _reader_leaves(args: list[str], first: str, later: str) -> subprocess.CompletedProcess[str]:
    """Run mdshell with ``first`` on stdin, read one line of its output and close the pipe,
    then send ``later``: what it does when its reader went away."""
    proc = subprocess.Popen([sys.executable, "-m", "mdshell", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(first)
    proc.stdin.flush()
    assert proc.stdout.readline()
    proc.stdout.close()
    proc.stdin.write(later)
    proc.stdin.close()
    err = proc.stderr.read()
    return subprocess.CompletedProcess(args, proc.wait(timeout=60), "", err)


def test_a_reader_that_goes_away_ends_a_script_quietly() -> None:
    done = _reader_leaves(["-d", BASIC], "ls /image\n", "tree /image\nls /image\n" * 3)
    assert done.returncode == 0 and done.stderr == ""


def test_a_reader_that_goes_away_ends_one_command_quietly() -> None:
    proc = subprocess.run(f"{sys.executable} -m mdshell -d {BASIC} records | head -1",
                          shell=True, capture_output=True, text=True, cwd=ROOT, timeout=60,
                          executable="/bin/bash")
    assert proc.stdout.count("\n") == 1 and proc.stderr == ""
    piped = subprocess.run(f"set -o pipefail; {sys.executable} -m mdshell -d {BASIC} records "
                           "| head -1 >/dev/null", shell=True, capture_output=True, text=True,
                           cwd=ROOT, timeout=60, executable="/bin/bash")
    assert piped.returncode == 0 and piped.stderr == ""
