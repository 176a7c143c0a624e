"""``tui.forked.in_child``: work over the whole image runs in a forked child (so the UI
thread keeps the GIL) and returns exactly what it would have here."""

from __future__ import annotations

import os
import threading

import pytest

from mdshell.tui import forked

from .conftest import FIXTURES


@pytest.mark.skipif(not forked.usable(), reason="fork is used on Linux only")
def test_the_work_runs_in_another_process_and_its_result_comes_back() -> None:
    parent = os.getpid()
    assert forked.in_child(lambda: (os.getpid() != parent, [["a", "1"]] * 3)) == \
        (True, [["a", "1"]] * 3)


@pytest.mark.skipif(not forked.usable(), reason="fork is used on Linux only")
def test_a_child_that_fails_leaves_the_work_to_this_process() -> None:
    parent = os.getpid()

    def here_only() -> int:
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return 7

    assert forked.in_child(here_only) == 7


def test_the_tables_from_a_child_equal_those_made_here() -> None:
    """With another thread running (as Textual's are), the engine's Topics and Brokers
    tables come from the child and equal the ones computed in process."""
    from mdshell.tui import listrows
    from mdshell.tui.engine import Engine

    engine = Engine.open(str(FIXTURES / "cluster-basic"), None)
    engine.load()
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        got = engine.list_table(listrows.TOPICS)
    finally:
        stop.set()
        other.join()
    want = listrows.tables(engine.loaded.image, False)[listrows.TOPICS]
    assert got is not None
    assert (got.columns, got.rows, got.keys) == (want.columns, want.rows, want.keys)
    assert len(got.rows) == len(engine.loaded.image.topics_by_name) > 0
