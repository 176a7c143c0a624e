"""The real program in a real terminal (tmux): it opens on the overview, jumps from health to
the node at fault, and leaves the terminal as it found it.

tmux must be installed (CI installs it): without it this test fails rather than skips.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .conftest import CORPUS, FIXTURES, ROOT, need_corpus

pytestmark = pytest.mark.tmux

TMUX = shutil.which("tmux")


class Pane:
    """One tmux session on a private server socket (a user's tmux is never touched)."""

    def __init__(self, socket: str, command: str) -> None:
        self.socket = socket
        self.tmux("new-session", "-d", "-s", "t", "-x", "120", "-y", "40", command)

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        # The server passes its environment to the program: a COLUMNS/LINES left by the test
        # run (pytest plugins set them) would fix the app's size at 80x24.
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        return subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True,
                              text=True, timeout=10, check=True, env=env).stdout

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def wait(self, check: Callable[[str], bool], what: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if check(screen):
                return screen
            if time.monotonic() > deadline:
                size = self.tmux("display", "-p", "-t", "t", "#{window_width}x#{window_height}")
                pytest.fail(f"timed out waiting for {what} ({size.strip()}); screen:\n{screen}")
            time.sleep(0.1)


@pytest.fixture
def pane_factory() -> Iterator[Callable[[str], Pane]]:
    if TMUX is None:
        pytest.fail("tmux is not installed: install it (apt-get install -y tmux) to run the "
                    "terminal tests")
    socket = f"mdshell-tui-{uuid.uuid4().hex[:8]}"
    try:
        yield lambda command: Pane(socket, command)
    finally:
        subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True, timeout=10)


def test_real_program_in_tmux(pane_factory: Callable[[str], Pane]) -> None:
    d = FIXTURES / "health-offline"
    cmd = (f"cd {shlex.quote(str(ROOT))} && {shlex.quote(sys.executable)} -m mdshell -d "
           f"{shlex.quote(str(d))}; echo MDSHELL-EXIT=$?; sleep 30")
    pane = pane_factory(cmd)
    screen = pane.wait(lambda s: "Health: 1 check failed " in s and "secrets redacted" in s
                       and "q Quit" in s, "the overview")  # the footer shows the keys
    assert "FAIL  offline partitions: 1 of 3 partitions have no leader" in screen
    assert "69BetzZ3pKXy32A108FzNA" in screen
    pane.send("h")
    pane.wait(lambda s: "→ /image/topics/byName/orders/1" in s, "the health screen")
    time.sleep(0.3)
    pane.send("Enter")
    screen = pane.wait(lambda s: "none (OFFLINE)" in s, "the offline partition")
    assert "/image/topics/byName/orders/1" in screen
    pane.send("q")
    screen = pane.wait(lambda s: "MDSHELL-EXIT=" in s, "the program to exit")
    assert "MDSHELL-EXIT=0" in screen
    # The terminal is restored: the alternate screen is gone, the shell line is visible.
    assert "Health:" not in screen


def test_a_key_pressed_as_the_overview_paints(pane_factory: Callable[[str], Pane]) -> None:
    """The overview paints from the child's reading while the program loads the image itself;
    `t` pressed at once opens the tree (kept until the load is done, if it is not yet)."""
    need_corpus()
    d = CORPUS / "ArpithaPrakash__Real-Time-Air-Quality-Prediction-with-Apache-Kafka"
    cmd = (f"cd {shlex.quote(str(ROOT))} && {shlex.quote(sys.executable)} -m mdshell -d "
           f"{shlex.quote(str(d))}; echo MDSHELL-EXIT=$?; sleep 30")
    pane = pane_factory(cmd)
    pane.wait(lambda s: "Brokers (1)" in s, "the overview")
    pane.send("t")
    screen = pane.wait(lambda s: "▶ Controllers" in s and "All paths /" in s, "the tree")
    assert "vMU9WXlhQmGVG2yPKIhI9g" in screen
    pane.send("q")
    assert "MDSHELL-EXIT=0" in pane.wait(lambda s: "MDSHELL-EXIT=" in s, "the exit")


def _mdshell(d: object) -> str:
    return (f"cd {shlex.quote(str(ROOT))} && {shlex.quote(sys.executable)} -m mdshell -d "
            f"{shlex.quote(str(d))}; echo MDSHELL-EXIT=$?; sleep 30")


def _topics(screen: str) -> bool:
    """The Topics section is in the tree (marked ✗ once health finds a fault in it)."""
    return "▶ Topics" in screen or "▶ ✗ Topics" in screen


def test_filter_then_copy_in_tmux(pane_factory: Callable[[str], Pane]) -> None:
    """F + typing narrows the tree's sections key by key and Esc shows them all again; y
    copies the focused path by OSC 52, which tmux (set-clipboard on) keeps as a buffer."""
    pane = pane_factory(_mdshell(FIXTURES / "cluster-basic"))
    pane.tmux("set", "-g", "set-clipboard", "on")
    pane.wait(lambda s: "Brokers (3)" in s, "the overview")
    pane.send("t")
    pane.wait(lambda s: "▶ Controllers" in s and _topics(s), "the tree")
    pane.send("F")
    pane.wait(lambda s: "filter sections:" in s, "the filter bar")
    pane.send("c", "o", "n")
    screen = pane.wait(lambda s: "2 of 13" in s, "the sections holding 'con'")
    assert "▶ Configs" in screen and not _topics(screen) and "▶ Brokers" not in screen
    pane.send("Escape")
    pane.wait(lambda s: _topics(s) and "▶ Brokers" in s and "filter sections" not in s,
              "every section back")
    pane.send("y")
    pane.wait(lambda s: "copied path: /image/cluster/controllers" in s, "the confirmation")
    assert pane.tmux("show-buffer") == "/image/cluster/controllers"
    pane.send("q")
    assert "MDSHELL-EXIT=0" in pane.wait(lambda s: "MDSHELL-EXIT=" in s, "the exit")


def test_f_follows_a_growing_directory_in_tmux(
        pane_factory: Callable[[str], Pane], tmp_path: Path) -> None:
    """f on a copy of cluster-basic cut short: the batches appended next (the rest of the
    real log) show in the header without a key, and FOLLOWING says so."""
    from mdshell.tui.engine import Engine

    from .test_tui_features import _cut_log

    d, log, rest = _cut_log(tmp_path, 6)
    start, end = (Engine.open(str(p), None) for p in (d, FIXTURES / "cluster-basic"))
    for e in (start, end):
        e.load()
    pane = pane_factory(_mdshell(d))
    pane.wait(lambda s: f"offset {start.header().offset} " in s, "the overview")
    pane.send("f")
    pane.wait(lambda s: "● FOLLOWING" in s, "following")
    with log.open("ab") as f:
        f.write(rest)
    pane.wait(lambda s: f"offset {end.header().offset} " in s and "● FOLLOWING" in s,
              "the appends followed", timeout=10)
    pane.send("q")
    assert "MDSHELL-EXIT=0" in pane.wait(lambda s: "MDSHELL-EXIT=" in s, "the exit")


def test_a_burst_of_keys_in_a_real_terminal(pane_factory: Callable[[str], Pane]) -> None:
    """Keys sent in one burst, as a script (or a fast typist) sends them: `h F xyz` gives
    the Health screen filtered by "xyz"; `o` then `h F offsets` never turns follow on (the
    f's of "offsets" ran as commands when the filter was not open yet)."""
    pane = pane_factory(_mdshell(FIXTURES / "cluster-basic"))
    pane.wait(lambda s: "Brokers (3)" in s, "the overview")
    pane.send("h", "F", "x", "y", "z")
    screen = pane.wait(lambda s: "filter checks:" in s and "xyz" in s, "health filtered")
    assert "FOLLOWING" not in screen
    pane.send("Escape")  # alone: ESC then a letter at once is Alt+letter to a terminal
    pane.wait(lambda s: "filter checks:" not in s, "the filter closed")
    pane.send("o")
    pane.wait(lambda s: "Brokers (3)" in s, "the overview again")
    pane.send("h", "F", *"offsets")
    screen = pane.wait(lambda s: "filter checks:" in s and "offsets" in s,
                       "health filtered by offsets")
    time.sleep(0.5)
    screen = pane.screen()
    assert "FOLLOWING" not in screen and "following" not in screen, screen
    pane.send("Escape")
    pane.wait(lambda s: "filter checks:" not in s, "the filter closed")
    pane.send("q")
    assert "MDSHELL-EXIT=0" in pane.wait(lambda s: "MDSHELL-EXIT=" in s, "the exit")


def test_the_terminal_is_as_found_after_quitting_at_the_first_frame(
        pane_factory: Callable[[str], Pane]) -> None:
    """q typed at once, while the loading screen's first frame shows (drawn before Textual
    is imported, keys not echoed over it): the program quits, the shell's screen is back
    and keys are echoed again."""
    pane = pane_factory("bash --norc")
    pane.wait(lambda s: "$" in s or "#" in s, "the shell")
    pane.send(f"cd {shlex.quote(str(ROOT))} && {shlex.quote(sys.executable)} -m mdshell -d "
              f"{shlex.quote(str(FIXTURES / 'cluster-basic'))}; echo MDSHELL-EXIT=$?", "Enter")
    pane.send("q")
    # the typed command line holds "MDSHELL-EXIT=$?": wait for the number
    pane.wait(lambda s: re.search(r"MDSHELL-EXIT=\d", s) is not None, "the program to exit")
    pane.send("stty -a | grep -o -- ' -*echo ' | head -1; echo typed-back", "Enter")
    screen = pane.wait(lambda s: "\ntyped-back" in s, "the shell's answer")
    assert " echo " in screen and " -echo " not in screen
    assert "MDSHELL-EXIT=0" in screen
