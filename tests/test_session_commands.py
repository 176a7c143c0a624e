"""help, man, history and exit; where the history lives; the one-shot path stays light."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mdshell.commands.base import REGISTRY, Command, Result
from mdshell.commands.session import ExitShell
from mdshell.commands.shell import Shell
from mdshell.repl import history as hist
from mdshell.session import load
from mdshell.source import open_source

from .conftest import ROOT, run_cli
from .test_repl import tiny_dir


@pytest.fixture
def shell(tmp_path: Path) -> Shell:
    source = open_source(str(tiny_dir(tmp_path / "logs")))
    return Shell(source, load(source))


def test_help_lists_every_registered_command_aligned(shell: Shell,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # A command registered later by another module shows up too.
    monkeypatch.setitem(REGISTRY, "zz-later", Command("zz-later", "Added later.", "zz-later",
                                                      lambda s, a: Result()))
    lines = list(shell.run(["help"]).lines)
    rows = lines[1:]
    assert [r.split()[0] for r in rows] == sorted(REGISTRY)
    width = max(len(n) for n in REGISTRY)
    for row, name in zip(rows, sorted(REGISTRY), strict=True):
        assert row.startswith(f"  {name.ljust(width)}  {REGISTRY[name].summary}")
    # Shell-only commands are marked in one-shot mode, not in the shell.
    assert any(r.endswith("(interactive only)") for r in rows if r.split()[0] == "cd")
    shell.interactive = True
    assert not any("(interactive only)" in r for r in shell.run(["help"]).lines)


def test_help_json_and_usage(shell: Shell) -> None:
    data = shell.run(["help"]).json()
    assert {d["name"] for d in data} == set(REGISTRY)
    find = next(d for d in data if d["name"] == "find")
    assert find["options"] == ["-name", "-type", "-maxdepth"] and find["shellOnly"] is False
    res = shell.run(["help", "me"])
    assert res.code == 2 and "unrecognized arguments: me" in res.errors[0]


def test_man_shows_help_text_and_options(shell: Shell) -> None:
    lines = list(shell.run(["man", "find"]).lines)
    assert lines[0] == f"find: {REGISTRY['find'].summary}"
    assert f"usage: {REGISTRY['find'].usage}" in lines
    assert lines[-1] == "options: -name -type -maxdepth"
    hist_lines = list(shell.run(["man", "history"]).lines)
    assert hist_lines[-1].startswith("Only in the interactive shell")


def test_man_unknown_command_suggests_the_closest(shell: Shell) -> None:
    res = shell.run(["man", "hist"])
    assert res.code == 2 and res.errors == ["man: hist: unknown command; did you mean 'history'?"]
    res = shell.run(["man", "qqqqqq"])
    assert res.errors == ["man: qqqqqq: unknown command; type 'help' for the list of commands"]
    res = shell.run(["man"])
    assert res.code == 2 and "man: the following arguments are required: CMD" in res.errors[0]


def test_history_shows_the_last_n_like_kafka(shell: Shell) -> None:
    shell.interactive = True
    res = shell.run(["history"])
    assert res.code == 1 and res.errors == ["history: no command history in this session"]
    entries = [f"cmd{i}" for i in range(1, 13)]
    hist.attach(shell, lambda: entries)
    assert list(shell.run(["history", "2"]).lines) == ["   11  cmd11", "   12  cmd12"]
    assert len(list(shell.run(["history"]).lines)) == 12
    assert list(shell.run(["history", "-3"]).lines) == []
    assert shell.run(["history", "2"]).json() == [{"index": 11, "command": "cmd11"},
                                                {"index": 12, "command": "cmd12"}]
    assert "invalid int value: 'x'" in shell.run(["history", "x"]).errors[0]


def test_numbered_matches_javas_format() -> None:
    assert hist.numbered(["ls"]) == ["    1  ls"]
    # Java's "% 5d": a space flag, so wide numbers still get a leading space.
    assert hist.numbered(["a"] * 100000, 1) == [" 100000  a"]


def test_shell_only_commands_refuse_one_shot(shell: Shell) -> None:
    for words in (["history"], ["exit"]):
        res = shell.run(words)
        assert res.code == 2 and "only available in the interactive shell" in res.errors[0]


def test_exit_asks_the_front_end_to_leave(shell: Shell) -> None:
    shell.interactive = True
    with pytest.raises(ExitShell):
        shell.run(["exit"])
    assert shell.run(["exit", "now"]).code == 2


@pytest.mark.parametrize(("env", "expected"), [
    ({"MDSHELL_HISTORY": "/x/h", "XDG_DATA_HOME": "/data"}, "/x/h"),
    ({"XDG_DATA_HOME": "/data"}, "/data/mdshell/history"),
    ({"XDG_DATA_HOME": "relative"}, "~/.local/share/mdshell/history"),  # invalid per XDG
    ({}, "~/.local/share/mdshell/history"),
])
def test_history_path(env: dict[str, str], expected: str) -> None:
    assert hist.history_path(env) == Path(expected).expanduser()


def test_help_and_man_work_one_shot_without_prompt_toolkit(tmp_path: Path) -> None:
    d = tiny_dir(tmp_path / "logs")
    res = run_cli("-d", str(d), "man", "ls")
    assert res.returncode == 0 and res.stdout.startswith("ls: ")
    code = textwrap.dedent(f"""
        import sys, io, contextlib
        from mdshell.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            codes = [main(["-d", {str(d)!r}, *words])
                     for words in (["ls", "/"], ["help"], ["man", "history"])]
        print(codes, sorted({{m.split(".")[0] for m in sys.modules}} & {{"prompt_toolkit"}}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "[0, 0, 0] []", out.stderr
