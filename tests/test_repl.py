"""The line shell: word splitting, completion, the prompt-toolkit session, scripted mode."""

from __future__ import annotations

import io
import re
import shlex
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mdshell.commands.base import REGISTRY, Command, Result
from mdshell.commands.results import Text
from mdshell.commands.shell import Shell
from mdshell.repl import (
    Word,
    complete,
    glob_escape,
    prompt_parts,
    quote_word,
    run_repl,
    run_script,
    short_path,
    short_source,
    split_line,
)
from mdshell.session import load
from mdshell.source import open_source
from mdshell.synth import ClusterBuilder

from .conftest import FIXTURES, run_cli

UP, CTRL_C, CTRL_D, CTRL_R = "\x1b[A", "\x03", "\x04", "\x12"


# ------------------------------------------------------------------ a tiny metadata directory


def tiny_dir(base: Path) -> Path:
    """A log dir written by the project's writer: a broker, two topics, and client quotas
    whose entity names need quoting (a space) and escaping (a glob character)."""
    b = ClusterBuilder(str(base), seed=7)
    b.bootstrap()
    b.register_broker(1)
    b.create_topic("orders")
    b.create_topic("payments")
    b.set_quota({"user": "alice smith"}, "producer_byte_rate", 1024.0)
    b.set_quota({"user": "a*b"}, "consumer_byte_rate", 2048.0)
    b.finish()
    return base


@pytest.fixture
def shell(tmp_path: Path) -> Shell:
    source = open_source(str(tiny_dir(tmp_path / "kafka-logs")))
    sh = Shell(source, load(source))
    sh.interactive = True
    return sh


# ------------------------------------------------------------------ word splitting


@pytest.mark.parametrize(("line", "words", "current"), [
    ("", [], Word()),
    ("ls", [], Word("ls", "ls")),
    ("ls ", ["ls"], Word()),
    ("ls /im", ["ls"], Word("/im", "/im")),
    ("cat a\\ b", ["cat"], Word("a\\ b", "a b")),
    ("cat 'a b", ["cat"], Word("'a b", "a b", "'")),
    ('cat "a\\"b', ["cat"], Word('"a\\"b', 'a"b', '"')),
    ("cat x/'y z'/w", ["cat"], Word("x/'y z'/w", "x/y z/w")),
    ("ls a\\\\*", ["ls"], Word("a\\\\*", "a\\*")),
])
def test_split_line_follows_shlex(line: str, words: list[str], current: Word) -> None:
    assert split_line(line) == (words, current)
    if current.raw and not current.quote:
        assert shlex.split(line)[-1] == current.value


@pytest.mark.parametrize(("value", "quote", "close", "text"), [
    ("/image/topics/", "", False, "/image/topics/"),
    ("user(alice smith)/", "", False, "user(alice\\ smith)/"),
    ("user(alice smith)/", "'", False, "'user(alice smith)/"),
    ("it's", "'", True, "it\\'s"),  # no ' inside single quotes: fall back to escapes
    ('say "hi"', '"', True, '"say \\"hi\\""'),
])
def test_quote_word_round_trips_through_shlex(value: str, quote: str, close: bool,
                                              text: str) -> None:
    assert quote_word(value, quote, close) == text
    if close or not quote:
        assert shlex.split(text) == [value]


def test_glob_escape_makes_names_literal() -> None:
    assert glob_escape("a*b?[c]{d}\\") == "a\\*b\\?\\[c\\]\\{d\\}\\\\"
    assert glob_escape("orders") == "orders"


# ------------------------------------------------------------------ completion


def _texts(shell: Shell, line: str) -> list[str]:
    return [c.text for c in complete(shell, line)]


def test_completes_command_names_with_summaries(shell: Shell) -> None:
    cands = complete(shell, "hi")
    assert [c.text for c in cands] == ["history "]
    assert cands[0].start == -2 and cands[0].meta == REGISTRY["history"].summary
    # Other modules keep registering commands: every one is offered.
    h = [c.text for c in complete(shell, "h")]
    assert h == [f"{name} " for name in sorted(REGISTRY) if name.startswith("h")]
    assert {"help ", "history "} <= set(h)
    assert _texts(shell, "") == [f"{name} " for name in sorted(REGISTRY)]
    assert _texts(shell, "nosuch ") == []


def test_completes_paths_from_root_and_cwd(shell: Shell) -> None:
    assert _texts(shell, "ls /im") == ["/image/"]
    assert _texts(shell, "ls /image/t") == ["/image/topics/"]
    assert _texts(shell, "cat /image/prov") == ["/image/provenance "]  # a leaf ends the word
    shell.session.cwd = "/image/topics"
    assert _texts(shell, "ls byN") == ["byName/"]
    assert _texts(shell, "ls byName/") == ["byName/orders/", "byName/payments/"]
    assert _texts(shell, "tree ../fea") == ["../features/"]
    assert _texts(shell, "ls ..") == ["../"]


def test_completion_replaces_the_whole_word(shell: Shell) -> None:
    (cand,) = complete(shell, "ls /image/to")
    assert cand.start == -len("/image/to") and cand.display == "topics/"


def test_cd_completes_directories_only_and_one_argument(shell: Shell) -> None:
    assert _texts(shell, "cd /image/p") == ["/image/producerIds/"]  # not the provenance leaf
    assert _texts(shell, "cd /image /im") == []


def test_globs_and_unknown_directories_are_left_alone(shell: Shell) -> None:
    for line in ("ls /image/t*", "ls /image/{a,b", "ls /ima[", "ls /nosuch/x",
                 "ls /image/provenance/"):
        assert _texts(shell, line) == [], line


def test_names_needing_quotes_or_escapes_round_trip(shell: Shell) -> None:
    base = "/image/clientQuotas/"
    assert _texts(shell, f"ls {base}user(al") == [base + "user(alice\\ smith)/"]
    assert _texts(shell, f"ls '{base}user(al") == [f"'{base}user(alice smith)/"]
    assert _texts(shell, f'ls "{base}user(al') == [f'"{base}user(alice smith)/']
    # A * in a name is escaped for the path resolver (\*) and that backslash for the shell (\\).
    (text,) = _texts(shell, f"ls {base}user(a")[:1]
    assert text == base + "user(a\\\\*b)/"
    for typed in (f"ls {base}user(al", f"ls {base}user(a"):
        line = typed[: len(typed) - len(typed.split()[-1])] + _texts(shell, typed)[0]
        result = shell.run_line(line)
        assert result.errors == [] and len(list(result.lines)) == 1, line


def test_names_with_brackets_braces_and_slashes_complete_and_round_trip(
        tmp_path: Path) -> None:
    """A client id or user may hold ``[``, ``{`` or ``/``: typing its start (a ``[`` still
    open is no glob yet) completes it, escaped so that the line then reaches that node."""
    b = ClusterBuilder(str(tmp_path / "logs"), seed=3)
    b.bootstrap()
    for client in ("br[ack]", "{x,y}", "svc/orders"):
        b.set_quota({"client-id": client}, "request_percentage", 5.0)
    b.finish()
    source = open_source(str(tmp_path / "logs"))
    sh = Shell(source, load(source))
    base = "/image/clientQuotas/"
    for typed, name in (("clientId(br[", "clientId(br[ack])"), ("clientId({", "clientId({x,y})"),
                        ("clientId(svc", "clientId(svc/orders)")):
        (text,) = _texts(sh, f"ls {base}{typed}")
        result = sh.run_line(f"cat {text}request_percentage")
        assert result.errors == [] and list(result.lines) == ["5.0"], (typed, text)
        result = sh.run_line(f"ls {text}")
        assert result.errors == [] and list(result.lines) == ["request_percentage"], text
        assert name in {c.display[:-1] for c in complete(sh, f"ls {base}clientId(")}


def test_completes_options_and_man_arguments(shell: Shell) -> None:
    assert _texts(shell, "find /image -") == ["-name ", "-type ", "-maxdepth "]
    assert _texts(shell, "find -m") == ["-maxdepth "]
    assert _texts(shell, "man fi") == ["find "]
    assert _texts(shell, "man find ") == []


def test_prompt_toolkit_completer_api(shell: Shell) -> None:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from mdshell.repl import make_completer

    completer = make_completer(shell)
    got = list(completer.get_completions(Document("ls /image/topics/byName/o"),
                                         CompleteEvent(completion_requested=True)))
    assert [(c.text, c.start_position, c.display_text) for c in got] == [
        ("/image/topics/byName/orders/", -len("/image/topics/byName/o"), "orders/")]
    # The cursor position counts, not the end of the text.
    doc = Document("ls /im /image", cursor_position=len("ls /im"))
    assert [c.text for c in completer.get_completions(doc, CompleteEvent())] == ["/image/"]


def test_short_prompt_parts(shell: Shell) -> None:
    assert short_source(shell) == "kafka-logs"
    text = "".join(t for _, t in prompt_parts(shell))
    assert text == "mdshell:kafka-logs:/> "
    shell.session.cwd = "/image/topics"
    shell.session.set_loaded(load(shell.session.source, upto=2))  # time travel shows in the prompt
    assert "".join(t for _, t in prompt_parts(shell)) == "mdshell:kafka-logs@2:/image/topics> "
    assert short_path("/image/topics") == "/image/topics"
    long = "/image/topics/byName/" + "x" * 30 + "/0"
    assert short_path(long) == "…/" + "x" * 30 + "/0"
    assert len(short_path("/" + "y" * 80)) == 40


# ------------------------------------------------------------------ the REPL over a pipe


def _session(shell: Shell, prompts: list[str], history: Path) -> tuple[int, str, str]:
    """Run the REPL, typing ``prompts[i]`` at the i-th prompt (then Ctrl-D).

    Keys are sent when each prompt starts, as a person types them: keys already read by an
    earlier prompt would be replayed before prompt-toolkit has loaded the history.
    """
    from prompt_toolkit import PromptSession
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    out, err = io.StringIO(), io.StringIO()
    typed = iter(prompts)
    real_prompt = PromptSession.prompt
    with create_pipe_input() as inp, pytest.MonkeyPatch.context() as mp:
        def prompt(self: PromptSession[str], *args: object, **kw: object) -> str:
            inp.send_text(next(typed, CTRL_D))
            return real_prompt(self, *args, **kw)  # type: ignore[arg-type]

        mp.setattr(PromptSession, "prompt", prompt)
        # A prompt left waiting (a key that did not do its job) gets Ctrl-C, then Ctrl-D:
        # the test fails on its output instead of hanging.
        rescue = threading.Timer(5, inp.send_text, args=(CTRL_C,))
        rescue.start()
        try:
            rc = run_repl(shell, history_path=history, pt_input=inp, pt_output=DummyOutput(),
                          out=out, err=err)
        finally:
            rescue.cancel()
    return rc, out.getvalue(), err.getvalue()


def test_repl_runs_commands_and_exits_on_ctrl_d(shell: Shell, tmp_path: Path) -> None:
    rc, out, err = _session(shell, ["cd /image/topics\r", "pwd\r", "ls byName\r"],
                            tmp_path / "h")
    lines = out.splitlines()
    assert rc == 0 and err == ""
    prov = shell.session.loaded.image.provenance
    banner = (rf"mdshell \S+, .*kafka-logs/__cluster_metadata-0: image at offset {prov.offset} "
              rf"\(epoch {prov.epoch}, \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC\)\. "
              "'help' lists commands")
    assert re.match(banner, lines[0]), lines[0]
    assert lines[1:] == ["/image/topics", "orders  payments"]  # width 80: columns
    assert not hasattr(shell, "width")  # the width is the front end's, given to the renderer


def test_history_persists_across_sessions(shell: Shell, tmp_path: Path) -> None:
    path = tmp_path / "data" / "history"  # the directory does not exist yet
    _session(shell, ["pwd\r", "ls /image/topics\r"], path)
    assert "+ls /image/topics" in path.read_text()
    again = Shell(shell.session.source, shell.session.loaded)
    # Up recalls the last command; "pw" + Up searches by prefix.
    rc, out, _ = _session(again, [f"{UP}\r", f"pw{UP}\r", "history\r"], path)
    # The recalled "ls /image/topics" equals the last entry: not stored twice.
    assert rc == 0 and out.splitlines()[1:] == [
        "byId  byName", "/",
        "    1  pwd", "    2  ls /image/topics", "    3  pwd", "    4  history"]


def test_ctrl_r_finds_and_enter_runs(shell: Shell, tmp_path: Path) -> None:
    path = tmp_path / "h"
    _session(shell, ["ls /image/topics\r", "pwd\r"], path)
    again = Shell(shell.session.source, shell.session.loaded)
    rc, out, _ = _session(again, [f"{CTRL_R}topics\r"], path)
    assert rc == 0 and out.splitlines()[1:] == ["byId  byName"]


def test_ctrl_c_cancels_the_line(shell: Shell, tmp_path: Path) -> None:
    rc, out, _ = _session(shell, [f"ls /image{CTRL_C}", "pwd\r"], tmp_path / "h")
    assert rc == 0 and out.splitlines()[1:] == ["/"]


def test_errors_suggest_and_the_shell_goes_on(shell: Shell, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(sh: Shell, args: list[str]) -> Result:
        raise RuntimeError("kaput")

    def lazy_boom(sh: Shell, args: list[str]) -> Result:
        def lines():  # type: ignore[no-untyped-def]
            yield "first"
            raise KeyError("deep")
        return Result(value=Text(lines()))

    monkeypatch.setitem(REGISTRY, "boom", Command("boom", "fails", "boom", boom))
    monkeypatch.setitem(REGISTRY, "lazyboom", Command("lazyboom", "fails", "lazyboom", lazy_boom))
    keys = ["fnd /", "boom", "lazyboom", "cat /image", "man lss", "pwd"]
    rc, out, err = _session(shell, [k + "\r" for k in keys], tmp_path / "h")
    assert rc == 0
    assert out.splitlines()[1:] == ["first", "/"]
    assert err.splitlines() == [
        "mdshell: fnd: unknown command; did you mean 'find'?",
        "mdshell: internal error: RuntimeError: kaput",
        "mdshell: internal error: KeyError: 'deep'",
        "mdshell: cat: /image: Is a directory (use ls or tree)",
        "mdshell: man: lss: unknown command; did you mean 'ls'?",
    ]


def test_ctrl_c_interrupts_a_command_and_the_shell_goes_on(
        shell: Shell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def endless(sh: Shell, args: list[str]) -> Result:
        def lines():  # type: ignore[no-untyped-def]
            yield "row 1"
            raise KeyboardInterrupt  # what SIGINT does in the middle of the output
        return Result(value=Text(lines()))

    monkeypatch.setitem(REGISTRY, "endless", Command("endless", "prints", "endless", endless))
    rc, out, err = _session(shell, ["endless\r", "pwd\r"], tmp_path / "h")
    assert rc == 0 and out.splitlines()[1:] == ["row 1", "", "/"]
    assert err == "mdshell: interrupted\n"


def test_exit_and_quit_leave(shell: Shell, tmp_path: Path) -> None:
    for word in ("exit", "quit"):
        rc, out, _ = _session(shell, [f"{word}\r", "pwd\r"], tmp_path / "h")
        assert rc == 0 and out.splitlines()[1:] == []


def test_history_is_private_and_a_line_with_a_space_first_is_not_kept(
        shell: Shell, tmp_path: Path) -> None:
    """The history file is the user's alone (0600, its new directory 0700), and a line typed
    with a space first (bash's ignorespace: the way to run a line holding a secret) is
    neither saved nor recalled."""
    path = tmp_path / "data" / "history"
    rc, out, _ = _session(shell, ["pwd\r", " cat /image/hunter2-secret\r", "history\r"], path)
    assert rc == 0
    assert "hunter2" not in path.read_text()
    assert out.splitlines()[-2:] == ["    1  pwd", "    2  history"]
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    _, out, _ = _session(shell, [f"{UP}{UP}\r"], path)
    assert "hunter2" not in out


def test_unwritable_history_warns_once_and_keeps_memory(shell: Shell, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    path = blocker / "history"  # its "directory" is a file: every write fails
    rc, out, err = _session(shell, ["pwd\r", "pwd \r", "history\r"], path)
    assert rc == 0
    assert err.count("mdshell: warning: cannot write the history file") == 1
    assert "session only" in err
    assert out.splitlines()[-3:] == ["    1  pwd", "    2  pwd ", "    3  history"]


def test_error_lines_are_red_on_a_colour_terminal(shell: Shell, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from mdshell.repl import _error_printer

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    master, slave = os.openpty()
    with open(slave, "w") as tty:
        _error_printer(tty)("oops")
        tty.flush()
        raw = os.read(master, 1000).decode()
    os.close(master)
    assert "oops" in raw and "\x1b[" in raw and "31" in raw
    plain = io.StringIO()
    _error_printer(plain)("oops")
    assert plain.getvalue() == "mdshell: oops\n"  # the one style of error lines


# ------------------------------------------------------------------ scripted mode


def test_script_errors_name_their_line(shell: Shell) -> None:
    out, err = io.StringIO(), io.StringIO()
    script = "# a comment\npwd\ncd /image/topics\n\nls nosuch\nhistory 2\nexit\npwd\n"
    code = run_script(shell, io.StringIO(script), out, err)
    assert code == 1
    assert out.getvalue().splitlines() == ["/", "    3  ls nosuch", "    4  history 2"]
    assert err.getvalue() == "mdshell: line 5: ls: nosuch: No such file or directory.\n"


def test_piped_stdin_runs_as_a_script(tmp_path: Path) -> None:
    d = tiny_dir(tmp_path / "logs")
    res = run_cli("-d", str(d), stdin="ls /image/topics/byName\nfnd\n")
    assert res.returncode == 2
    assert res.stdout.splitlines() == ["orders", "payments"]  # no terminal: one per line
    assert res.stderr.splitlines() == [
        "mdshell: line 2: fnd: unknown command; did you mean 'find'?"]


class _Kafka:
    """Standard input of a piped line shell over a copy of cluster-basic whose log was cut
    short: after the first line, the rest of the log is appended, as a running controller
    appends to its own directory between two commands."""

    def __init__(self, tmp_path: Path, lines: list[str]) -> None:
        self.dir = tmp_path / "cluster"
        shutil.copytree(FIXTURES / "cluster-basic", self.dir)
        self.log = next((self.dir / "__cluster_metadata-0").glob("*.log"))
        data = self.log.read_bytes()
        ends, pos = [], 0
        while pos + 12 <= len(data):
            pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
            ends.append(pos)
        cut = ends[-5]  # four batches short
        self.log.write_bytes(data[:cut])
        self.rest, self.lines = data[cut:], lines

    def isatty(self) -> bool:
        return False

    def __iter__(self) -> Iterator[str]:
        yield self.lines[0]
        with self.log.open("ab") as f:
            f.write(self.rest)
        yield from self.lines[1:]


@pytest.mark.parametrize("follow", [True, False])
def test_follow_reads_the_appends_before_each_command(tmp_path: Path, follow: bool,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """-d DIR --follow in the line shell: each command first reads what was appended since
    (as -q's sees the newest committed image); without --follow the image stays as loaded."""
    from mdshell.cli import main

    full = run_cli("-d", str(FIXTURES / "cluster-basic"), "cat", "/image/provenance").stdout
    stdin = _Kafka(tmp_path, ["cat /image/provenance\n", "cat /image/provenance\n"])
    monkeypatch.setattr(sys, "stdin", stdin)
    args = ["-d", str(stdin.dir), *(["--follow"] if follow else [])]
    assert main(args) == 0
    before, after = capsys.readouterr().out.splitlines()
    assert before != full.strip()
    assert (after == full.strip()) is follow


@pytest.mark.parametrize("args", [["ls", "/"], ["-s", "X.checkpoint"]])
def test_follow_wants_a_directory_and_no_command(tmp_path: Path, args: list[str]) -> None:
    """--follow follows between commands, a directory: with one command or -s it is a usage
    error in one line (exit 2)."""
    d = tiny_dir(tmp_path / "logs")
    where = args if args[0] == "-s" else ["-d", str(d), *args]
    res = run_cli("--follow", *where)
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.splitlines()) == 1 and "--follow" in res.stderr
