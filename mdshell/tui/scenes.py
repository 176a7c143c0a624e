"""The main screens on fixture data, for SVG snapshot tests and the README's screenshots.

Paths are relative to the repository root (the caller changes to it), so the header shows the
same source on every machine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from textual.pilot import Pilot

from .app import MdshellApp, make_app
from .engine import Engine

SIZE = (120, 36)


@dataclass(frozen=True)
class Scene:
    name: str
    fixture: str  # under fixtures/
    keys: tuple[str, ...] = ()
    jump: str | None = None

    def app(self) -> MdshellApp:
        return make_app(Engine.open(f"fixtures/{self.fixture}", None))

    def before(self) -> Callable[[Pilot[None]], Awaitable[None]]:
        async def run(pilot: Pilot[None]) -> None:
            app = pilot.app
            assert isinstance(app, MdshellApp)
            await _until(pilot, lambda: app.loaded and app.checks is not None)
            if self.jump:
                app.jump(self.jump)
            await pilot.press(*self.keys)
            await pilot.pause(0.3)
            await pilot.wait_for_scheduled_animations()
        return run


SCENES = [
    Scene("overview", "health-fenced"),
    Scene("tree", "health-offline", jump="/image/topics/byName/orders"),
    Scene("health", "health-under-min-isr", keys=("h",)),
    Scene("history", "segments-snapshots", keys=("l", "left", "left", "left", "m",
                                                 "left", "left", "d")),
]


async def _until(pilot: Pilot[None], check: Callable[[], bool], steps: int = 400) -> None:
    for _ in range(steps):
        if check():
            return
        await pilot.pause(0.025)
    raise TimeoutError("the app did not finish loading")
