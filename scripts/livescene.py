"""The overview of a real live quorum for ``scripts/screenshots.py --live``: three controllers
and a broker started from Kafka's jars (tests/kafka, as the live tests do), two topics made
through the broker, then the TUI on ``-q`` until its header shows LIVE with the lag."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any


def live_svg(size: tuple[int, int]) -> str:
    from tests.kafka import jars
    from tests.kafka.cluster import KraftCluster

    with tempfile.TemporaryDirectory(prefix="mdshell-live-shot-") as tmp, \
            KraftCluster(jars.KAFKA_4, Path(tmp)).running() as cluster:
        return _shot(cluster, size)


def _shot(cluster: Any, size: tuple[int, int]) -> str:
    """Two topics made through the broker, then the TUI on ``-q`` until it settles."""
    from textual._doc import take_svg_screenshot
    from textual.pilot import Pilot

    from mdshell.tui.app import make_app
    from mdshell.tui.engine import Engine
    from mdshell.tui.overview import OverviewScreen
    from tests.test_live import create_topic

    engine = Engine.open_live(cluster.bootstrap_controllers)
    try:
        for name, partitions in (("orders", 6), ("payments", 3)):
            create_topic(cluster, name, partitions)

        async def settle(pilot: Pilot[None]) -> None:
            app = pilot.app
            for _ in range(2400):  # the live load, the health checks, a live tick
                screen = app.screen
                if (isinstance(screen, OverviewScreen) and screen.overview is not None
                        and getattr(app, "checks", None) is not None):
                    break
                await pilot.pause(0.025)
            await pilot.pause(1.5)
            await pilot.wait_for_scheduled_animations()

        return take_svg_screenshot(app=make_app(engine), terminal_size=size, run_before=settle)
    finally:
        engine.close()
