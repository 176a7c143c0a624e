"""Every key reaches its target, in the order typed, however fast.

Textual hands a key to the focused widget's own message queue and takes the next key at
once: a key the app binds (``F``) overtook one still on its way through the widgets (an
Enter selecting a search result), and a key typed while a screen was being switched went to
the screen being left (``h F xyz`` gave the Health screen without its filter; ``o`` then
``h F offsets`` turned follow on and off). The gate lets one key in at a time: the next is
queued until what the last one set off has settled (every message it caused on the screen
handled, the screen and the focus stable, nothing left to run after the next paint). While
the first load runs, keys wait for it (``hold``); only the quit keys pass.

No knowledge of screens here: the app asks :meth:`admit` for each key it reads and calls
:meth:`done` once it has handled it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import TYPE_CHECKING, Any

from .textual_compat import pending_callbacks

if TYPE_CHECKING:
    from textual.app import App
    from textual.dom import DOMNode
    from textual.events import Key

PASS_WHILE_HELD = frozenset({"q", "ctrl+q", "ctrl+c"})  # leave while loading
ROUNDS = 40  # settle rounds at most (each waits for every queue on the screen)
ROUND_TIMEOUT = 1.0  # seconds: a pump that does not answer is not waited for longer
NAP = 0.004  # seconds between rounds while a paint is due (after-refresh callbacks)


class KeyGate:
    """The queue of keys waiting for the previous one to settle."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.waiting: deque[Key] = deque()
        self.inflight: Key | None = None  # the key being handled (or released to be)
        self.held = False
        self._settling: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ the app's side

    def admit(self, key: Key) -> bool:
        """Whether to handle ``key`` now; False: it is queued and comes back later."""
        if key is self.inflight:
            return True  # released from the queue
        if self.held:
            if key.key in PASS_WHILE_HELD and not self.waiting:
                return True
            self.waiting.append(key)
            return False
        if self.inflight is not None or self.waiting:
            self.waiting.append(key)
            return False
        self.inflight = key
        return True

    def done(self, key: Key) -> None:
        """The app has handled ``key`` (or forwarded it): release the next once settled."""
        if key is not self.inflight:
            return
        if self._settling is None or self._settling.done():
            self._settling = asyncio.create_task(self._settle())

    def hold(self) -> None:
        """Queue every key until :meth:`release` (the first load)."""
        self.held = True

    def release(self) -> None:
        self.held = False
        if self.inflight is None:
            self._next()

    @property
    def busy(self) -> bool:
        return self.inflight is not None or bool(self.waiting)

    # ------------------------------------------------------------ settling

    async def _settle(self) -> None:
        try:
            for _ in range(ROUNDS):
                screen, focused = self.app.screen, self.app.focused
                await self._round(screen)
                if self.app.screen is screen and self.app.focused is focused \
                        and not self._pending(screen):
                    break
                if pending_callbacks(screen):
                    await asyncio.sleep(NAP)
        except Exception:  # the app is closing: nothing to release
            return
        finally:
            self.inflight = None
        if not self.held:
            self._next()

    async def _round(self, screen: DOMNode) -> None:
        """Wait until the app and every node of ``screen`` have handled what was queued for
        them when this round began."""
        nodes = [self.app, *screen.walk_children(with_self=True)]
        left = 0
        all_done = asyncio.Event()

        def one_done() -> None:
            nonlocal left
            left -= 1
            if left == 0:
                all_done.set()

        for node in nodes:
            if node.call_later(one_done):
                left += 1
        if left:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(all_done.wait(), ROUND_TIMEOUT)

    def _pending(self, screen: DOMNode) -> bool:
        """Whether something is still queued on the screen (or the app)."""
        if self.app.message_queue_size or pending_callbacks(screen):
            return True
        return any(n.message_queue_size for n in screen.walk_children(with_self=True))

    def _next(self) -> None:
        if self.waiting and self.app.is_running:
            key = self.waiting.popleft()
            self.inflight = key
            self.app.post_message(key)
