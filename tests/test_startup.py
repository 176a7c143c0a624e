"""The TUI's start-up changes (mdshell/tui/startup.py) are made, and undone on every way out:
a source that cannot be opened, a load that fails, an exception; MDSHELL_PLAIN_START=1 makes
none of them."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mdshell.tui import run_tui, startup
from mdshell.tui.app import make_app
from mdshell.tui.engine import Engine
from mdshell.tui.loading import ErrorScreen
from mdshell.wire import decoding

from .conftest import FIXTURES
from .test_tui import SIZE, aio, until

DEFAULT = 0.005  # CPython's switch interval


@pytest.fixture(autouse=True)
def process_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with the GC on and the default interval, and leaves them so."""
    monkeypatch.delenv(startup.PLAIN_START, raising=False)
    gc.enable()
    sys.setswitchinterval(DEFAULT)
    assert decoding.SLICE == 0  # one-shot commands decode a batch in one call
    yield
    gc.enable()
    sys.setswitchinterval(DEFAULT)
    assert decoding.SLICE == 0


def test_a_source_that_cannot_be_opened_leaves_the_gc_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_tui(str(tmp_path / "missing"), None) == 1
    assert "mdshell:" in capsys.readouterr().err
    assert gc.isenabled()
    assert sys.getswitchinterval() == DEFAULT


@aio
async def test_a_load_that_fails_leaves_the_gc_on_and_the_interval_restored() -> None:
    with startup.started() as st:
        assert not gc.isenabled()
        engine = Engine.open(str(FIXTURES / "health-offline"), None)
        st.start_load(engine)  # a loading thread, before the app (no child process)
        app = make_app(engine, at="999999")
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: isinstance(pilot.app.screen, ErrorScreen), "the error")
            assert sys.getswitchinterval() == startup.SWITCH_INTERVAL  # made while up
            assert not gc.isenabled()  # a failed load does not turn it back on
            assert decoding.SLICE == 0  # nor bounds the loader
            await pilot.press("q")
        assert app.fatal is not None
    assert gc.isenabled()
    assert sys.getswitchinterval() == DEFAULT


@aio
async def test_a_load_that_works_turns_the_gc_back_on_at_once() -> None:
    with startup.started():
        app = make_app(Engine.open(str(FIXTURES / "cluster-basic"), None))
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.loaded, "the load")
            assert gc.isenabled()
            # Keys are answered from now on: the loader's compiled calls are bounded.
            assert decoding.SLICE == startup.SLICE
            await pilot.press("q")
    assert gc.isenabled()
    assert sys.getswitchinterval() == DEFAULT
    assert decoding.SLICE == 0


def test_an_exception_undoes_the_changes() -> None:
    with pytest.raises(KeyboardInterrupt), startup.started() as st:
        st.ui_up()
        raise KeyboardInterrupt
    assert gc.isenabled()
    assert sys.getswitchinterval() == DEFAULT


def test_a_gc_off_before_the_start_stays_off() -> None:
    gc.disable()
    with startup.started() as st:
        st.loaded()
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_plain_start_makes_none_of_the_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(startup.PLAIN_START, "1")
    engine = Engine.open(str(FIXTURES / "cluster-basic"), None)
    with startup.started() as st:
        assert gc.isenabled()
        st.start_load(engine)
        assert engine._early is None  # no loading thread either: the app loads in its worker
        st.ui_up()
        assert sys.getswitchinterval() == DEFAULT
        st.loaded()
        assert decoding.SLICE == 0
