"""What an operator met trying the TUI on data it had not seen (long paths, small
terminals, ...), each driven by Pilot on fixtures or copies of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdshell.tui.app import make_app
from mdshell.tui.engine import Engine

from .conftest import FIXTURES
from .test_tui import aio, ready, until
from .test_tui_user import lines


@pytest.mark.parametrize(("size", "reveal"), [((80, 24), True), ((60, 16), False)])
@aio
async def test_the_header_keeps_offset_and_redaction_state_with_a_long_path(
        tmp_path: Path, size: tuple[int, int], reveal: bool) -> None:
    """Following (``--follow``) a directory with a long path wrapped the header past its
    three lines: the offset and "SECRETS SHOWN" were cut off at 80 columns. The path gives
    way, not the state."""
    where = tmp_path / "incident-2026-11-29-cluster-east" / "controller-node-1"
    where.parent.mkdir()
    where.symlink_to((FIXTURES / "security").resolve())  # read-only: a link, no copy
    app = make_app(Engine.open(str(where), None, reveal), follow=True)
    async with app.run_test(size=size) as pilot:
        app = await ready(pilot)
        await until(pilot, lambda: " ago" in " ".join(lines(app, 3)), "a read")
        head = " ".join(lines(app, 3))
        assert app.header is not None
        assert f"offset {app.header.offset} " in head, head
        assert ("SECRETS SHOWN" if reveal else "secrets redacted") in head, head
        if size[0] >= 80:  # what tells the sources apart stays when there is room
            assert "controller-node-1" in head, head
