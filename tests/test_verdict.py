"""Issue 18: every image carries one verdict on its soundness (complete / may be wrong because
of ... / incomplete because of ...), and every front end says it in the same words: `health`
(text and JSON), `--strict`, one-shot stderr, the REPL's prompt, the TUI's header and health
panel."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from textual.widgets import Static

from mdshell.image.verdict import judge
from mdshell.problems import Problem
from mdshell.repl import prompt_parts
from mdshell.tui.app import make_app
from mdshell.tui.engine import Engine
from mdshell.tui.health import HealthScreen
from mdshell.tui.overview import OverviewScreen

from .conftest import FIXTURES, cli, open_shell
from .test_tui import aio, health_lines, ready, text_of

MD = "__cluster_metadata-0"
WORDS = {"complete": "the image is complete ",
         "damaged": "the image may be wrong because of ",
         "incomplete": "the image is incomplete because of "}


def cut_mid_batch(tmp_path: Path, fixture: str = "cluster-basic") -> Path:
    """A copy of ``fixture`` whose .log ends in the middle of a batch past its snapshot (the
    data an operator copies while Kafka writes)."""
    d = shutil.copytree(FIXTURES / fixture, tmp_path / fixture)
    log = next((d / MD).glob("*.log"))
    data = log.read_bytes()
    pos, starts = 0, []
    while pos + 12 <= len(data):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    assert pos == len(data) and len(starts) > 4
    cut = starts[-2] + 30  # inside the last but one batch: its header and records cut off
    log.write_bytes(data[:cut])
    return d


CASES = [("cluster-basic", "complete"), ("bad-half-snapshot", "complete"),
         ("bad-empty-log", "complete"), ("bad-truncated-tail", "damaged"),
         ("bad-crc", "damaged"), ("bad-unknown-records", "damaged"),
         ("bad-log-gap", "incomplete"), ("cut", "damaged")]


@pytest.mark.parametrize(("name", "state"), CASES, ids=[c[0] for c in CASES])
def test_health_strict_json_and_stderr_agree(name: str, state: str, tmp_path: Path) -> None:
    d = str(cut_mid_batch(tmp_path) if name == "cut" else FIXTURES / name)
    sound = state == "complete"
    js = cli("-d", d, "-o", "json", "health")
    data = json.loads(js.out)
    verdict = data["verdict"]
    words = verdict["text"]
    assert verdict["state"] == state and verdict["sound"] is sound
    assert words.startswith(WORDS[state])
    check = data["checks"][0]
    assert (check["name"], check["summary"]) == ("data", words)
    assert check["status"] == ("ok" if sound else "fail")
    assert [i["message"] for i in check["items"]] == [p["message"] for p in verdict["problems"]]
    assert bool(verdict["problems"]) is not sound
    # The text says the same, and fails the same.
    text = cli("-d", d, "health")
    assert f"{'OK  ' if sound else 'FAIL'}  data: {words}" in text.out.splitlines()
    assert text.out.splitlines()[-1] == data["summary"]
    assert text.code == js.code and (sound or js.code == 1)
    # --strict fails exactly when the image is not sound.
    assert cli("-d", d, "--strict", "ls", "/").code == (0 if sound else 1)
    # One-shot: the verdict is said once after the warnings (nothing when sound).
    said = cli("-d", d, "ls", "/").err.splitlines()
    assert [line for line in said if words in line] == (
        [] if sound else [f"mdshell: warning: {words}"])
    assert not any("because of the damage above, the image is as of" in s for s in said)


def test_time_travel_is_sound_but_not_the_latest() -> None:
    """Before the damage, an older image is sound: health warns it is not the latest, and
    --strict judges the data read (damaged: exit 1)."""
    data = json.loads(cli("-d", str(FIXTURES / "bad-crc"), "--at", "10", "-o", "json",
                          "health").out)
    verdict = data["verdict"]
    assert (verdict["state"], verdict["at"], verdict["latest"]) == ("complete", 10, 14)
    assert verdict["badges"] == ["TIME TRAVEL"] and data["checks"][0]["status"] == "warn"
    assert verdict["text"] == ("the image is complete as of offset 10 (time travel: the "
                               "latest is offset 14)")
    assert cli("-d", str(FIXTURES / "bad-crc"), "--strict", "--at", "10", "ls", "/").code == 1
    clean = cli("-d", str(FIXTURES / "cluster-basic"), "--strict", "--at", "50", "ls", "/")
    assert clean.code == 0


def test_words_for_a_stale_live_view() -> None:
    verdict = judge([Problem("empty", "x.log: empty segment")], 41).viewed(
        None, 41, "controller 127.0.0.1:9093: connection refused")
    assert verdict.sound and verdict.status == "warn" and verdict.badges == ["LIVE STALE"]
    assert verdict.words() == ("the image is complete as of offset 41; it may be behind the "
                               "quorum: controller 127.0.0.1:9093: connection refused")
    refused = judge([Problem("degraded", "Fetch: not authorized")], -1)
    assert refused.badges == ["INCOMPLETE"] and refused.status == "fail"
    assert refused.words() == ("the image is incomplete because of a log that could not be "
                               "fetched; it is empty (no metadata record applied)")


def test_repl_prompt_shows_the_badge(tmp_path: Path) -> None:
    def prompt(target: str | Path) -> str:
        return "".join(text for _, text in prompt_parts(open_shell(target)))
    assert prompt(cut_mid_batch(tmp_path)) == "mdshell:cluster-basic[DAMAGED]:/> "
    assert prompt("bad-log-gap") == "mdshell:bad-log-gap[INCOMPLETE]:/> "
    assert prompt("bad-half-snapshot") == "mdshell:bad-half-snapshot:/> "


@aio
async def test_tui_says_what_health_says_on_a_log_cut_mid_batch(tmp_path: Path) -> None:
    """Item 4: `health` failed "data" while the TUI's health panel said green "healthy" and
    the truncation sat in a box below the fold at 80x24."""
    d = cut_mid_batch(tmp_path)
    health = cli("-d", str(d), "health").out.splitlines()
    data_line = next(line for line in health if line.startswith("FAIL  data: "))
    words = data_line.removeprefix("FAIL  data: ")
    async with make_app(Engine.open(str(d), None)).run_test(size=(80, 24)) as pilot:
        app = await ready(pilot)
        screen = app.screen
        assert isinstance(screen, OverviewScreen)
        bar = text_of(screen.query_one("StatusBar", Static))
        first = bar.splitlines()[0].split()
        assert first[:2] == ["mdshell", "DAMAGED"], bar  # the badge right after the name
        panel = screen.query_one("#health", Static)
        assert panel.border_title == f"Health: {health[-1]} · h for details"
        assert panel.has_class("fail") and not panel.has_class("ok")
        first = text_of(panel).splitlines()[0]
        assert " ".join(first.split()) == f"FAIL data: {words}"[:len(" ".join(first.split()))]
        assert " ".join(text_of(panel).split()).startswith(f"FAIL data: {words}")
        assert panel.region.y < 24 - 4  # on screen, at the top, not below the fold
        await pilot.press("h")
        await pilot.pause()
        assert isinstance(app.screen, HealthScreen)
        first_check = " ".join(health_lines(app)[0].split())
        assert first_check == " ".join(f"FAIL ▼ data: {words}".split())


@aio
async def test_tui_warnings_only_say_healthy_in_yellow() -> None:
    """Item 8: with warnings only, the TUI's title said "Health: 1 problem" in red while
    `health` says "healthy (1 warning)" and exits 0."""
    d = FIXTURES / "cluster-basic"
    last = cli("-d", str(d), "health").out.splitlines()[-1]
    assert last == "healthy (1 warning)"
    async with make_app(Engine.open(str(d), None)).run_test(size=(120, 40)) as pilot:
        app = await ready(pilot)
        panel = app.screen.query_one("#health", Static)
        assert panel.border_title == f"Health: {last} · h for details"
        assert panel.has_class("warn") and not panel.has_class("fail")
        bar = text_of(app.screen.query_one("StatusBar", Static))
        assert "DAMAGED" not in bar and "TIME TRAVEL" not in bar


def test_an_unknown_control_type_is_a_notice_and_the_image_stays_sound(tmp_path: Path) -> None:
    """A control record of a type mdshell does not know (a newer Kafka's) changes no image:
    the verdict stays complete, and a notice says the Kafka versions mdshell knows cannot
    read past it (raft's reader refuses an unknown control type)."""
    from .fuzz import build as b

    md = tmp_path / "__cluster_metadata-0"
    md.mkdir()
    (md / b.segment_name(0)).write_bytes(
        b.values_batch(0, [b.feature(), b.topic("orders"), b.partition(0)])
        + b.batch(3, [b.record(b"\x00\x00\x01", key=b"\x00\x00\x00\x09")], control=True)
        + b.values_batch(4, [b.noop()]))
    run = cli("-d", str(tmp_path), "-o", "json", "health")
    verdict = json.loads(run.out)["verdict"]
    assert verdict["state"] == "complete" and verdict["offset"] == 4
    assert "unknown control record type 9" in run.err and "cannot read past it" in run.err
