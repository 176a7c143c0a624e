"""SVG snapshots of the main screens (pytest-textual-snapshot); `--snapshot-update` renews
them after a deliberate change of the interface."""

from __future__ import annotations

from typing import Any

import pytest

from mdshell.tui.scenes import DAMAGED_SCENE, SCENES, SIZE, Scene, live_header_app

from .conftest import ROOT


@pytest.mark.parametrize("scene", SCENES, ids=[s.name for s in SCENES])
def test_screen(scene: Scene, snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert snap_compare(scene.app(), terminal_size=SIZE, run_before=scene.before())


def test_damaged_overview(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A log cut mid-batch: the header's DAMAGED badge and the health panel's failing data
    check, in `health`'s words, at the top of the overview."""
    monkeypatch.chdir(ROOT)
    scene = DAMAGED_SCENE
    assert snap_compare(scene.app(), terminal_size=SIZE, run_before=scene.before())


def test_live_header(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The live header's three states (caught up, behind, stopped) as the status bar draws
    them; the figures are fixed (a real quorum's test is in test_live.py)."""
    monkeypatch.chdir(ROOT)
    assert snap_compare(live_header_app(), terminal_size=(120, 14))
