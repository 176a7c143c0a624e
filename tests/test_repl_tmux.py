"""The REPL in a real terminal (tmux): Tab completion, columns, cd/pwd, Up, colours, Ctrl-D."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .conftest import FIXTURES, ROOT
from .test_repl import tiny_dir

pytestmark = pytest.mark.tmux

TMUX = shutil.which("tmux")


@pytest.fixture(autouse=True)
def _tmux_present() -> None:
    """A missing tmux fails these tests (CI installs it): they must never silently skip."""
    if TMUX is None:
        pytest.fail("tmux is not installed: install it (Debian: apt-get install -y tmux)")


class Pane:
    """One tmux session on a private server socket, so a user's tmux is never touched."""

    def __init__(self, socket: str, command: str) -> None:
        self.socket = socket
        self.tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40", command)

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        # The server hands its environment to the program: no COLUMNS/LINES left by pytest.
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        res = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True,
                             timeout=10, check=True, env=env)
        return res.stdout

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "t", "-l", text)

    def screen(self, escapes: bool = False) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t", *(["-e"] if escapes else []))

    def wait(self, check: Callable[[str], bool], what: str, escapes: bool = False,
             timeout: float = 10) -> str:
        """Poll the screen until ``check`` holds (bounded; no fixed sleeps)."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen(escapes)
            if check(screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}; screen:\n{screen}")
            time.sleep(0.05)

    def wait_last(self, text: str) -> str:
        """Wait until the cursor line reads ``text`` (tmux drops trailing spaces)."""
        return self.wait(lambda s: s.rstrip("\n").split("\n")[-1].rstrip() == text.rstrip(),
                         repr(text))



@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    yield from _pane(tmp_path, tiny_dir(tmp_path / "logs"))


def _pane(tmp_path: Path, logs: Path) -> Iterator[Pane]:
    """mdshell --repl on ``logs`` in a tmux pane, killed afterwards."""
    env = {"MDSHELL_HISTORY": str(tmp_path / "history"), "TERM": "xterm-256color",
           "PYTHONPATH": str(ROOT)}
    mdshell = " ".join([
        "env -u NO_COLOR", *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
        shlex.quote(sys.executable), "-m", "mdshell", "-d", shlex.quote(str(logs)), "--repl"])
    # The wrapper shows the exit status on the screen (tmux's own dead-pane status proved
    # unreliable) and keeps the pane open until the server is killed.
    command = "sh -c " + shlex.quote(mdshell + '; echo "[exit $?]"; sleep 60')
    p = Pane(f"mdshell-test-{os.getpid()}-{os.urandom(3).hex()}", command)
    try:
        yield p
    finally:
        p.tmux("kill-server")


def test_repl_in_a_terminal(pane: Pane, tmp_path: Path) -> None:
    prompt = "mdshell:logs:/> "
    screen = pane.wait_last(prompt)
    assert screen.startswith("mdshell ") and "Ctrl-D exits" in screen

    pane.type("ls /im")
    pane.send("Tab")
    pane.wait_last(prompt + "ls /image/")
    pane.send("Enter")
    # 120 columns: the eleven children of /image fit on one row.
    pane.wait(lambda s: "acls  clientQuotas  cluster  configs" in s, "the ls columns")

    pane.type("cd /image/top")
    pane.send("Tab")
    pane.wait_last(prompt + "cd /image/topics/")
    pane.send("Enter")
    here = "mdshell:logs:/image/topics> "
    pane.wait_last(here)
    pane.type("pwd")
    pane.send("Enter")
    pane.wait(lambda s: s.count("\n/image/topics\n") == 1, "pwd output")

    pane.send("Up")
    pane.wait_last(here + "pwd")
    pane.send("Enter")
    pane.wait(lambda s: s.count("\n/image/topics\n") == 2, "the recalled pwd")

    pane.type("lss")
    pane.send("Enter")
    pane.wait(lambda s: "\x1b[31mmdshell: lss: unknown command; did you mean 'ls'?" in s,
              "a red error line", escapes=True)

    pane.wait_last(here)
    pane.send("C-d")
    pane.wait(lambda s: "\n[exit 0]\n" in s, "exit status 0 after Ctrl-D")
    saved = (tmp_path / "history").read_text()
    assert [line[1:] for line in saved.splitlines() if line.startswith("+")] == [
        "ls /image/", "cd /image/topics/", "pwd", "lss"]


def test_repl_says_a_load_warning_once(tmp_path: Path) -> None:
    """The load's warning is printed before the banner; `records`, reading the same empty
    segment, does not say it again."""
    warning = "empty segment (nothing written yet)"
    prompt = "mdshell:bad-empty-log:/> "
    for pane in _pane(tmp_path, FIXTURES / "bad-empty-log"):
        screen = pane.wait_last(prompt)
        assert screen.count(warning) == 1, screen
        for n in (1, 2):
            pane.type("records")
            pane.send("Enter")
            screen = pane.wait(lambda s, n=n: s.count(prompt.rstrip()) == n + 1,
                               f"records #{n} done")
            assert screen.count(warning) == 1, screen
        pane.send("C-d")
        pane.wait(lambda s: "\n[exit 0]\n" in s, "exit status 0 after Ctrl-D")
