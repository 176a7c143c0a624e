"""The overview read by a forked child while the program imports Textual.

Textual's import costs the start-up more than the load of most directories, and one Python
process does one thing at a time (a loading thread only takes turns with the import). A child
forked before the import loads the source on another core and hands back the overview (a few
rows: no image crosses the pipe), so the first screen paints with real data as soon as the
UI is up; the program then loads the image itself, in a worker, for everything else. No
textual here. POSIX only; live sources, ``--at`` and sources over MAX_BYTES load as before.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine import Engine
    from .rows import Overview

# Above this much to read (a load of about 0.3 s), the load is long enough for its progress
# bar to matter more than the start-up: the program loads in a thread as before, and the
# loading screen counts its bytes (the child's progress is not shown).
MAX_BYTES = 16_000_000


class Prefetch:
    """A child computing ``engine.overview()``: :meth:`result` waits for it."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd
        self._done = False

    def result(self) -> Overview | None:
        """The child's overview; None if it failed (the program then loads as usual)."""
        chunks = []
        try:
            while chunk := os.read(self.fd, 1 << 16):
                chunks.append(chunk)
        except OSError:  # closed under us: the user quit first
            return None
        finally:
            self.close()
        try:
            found = pickle.loads(b"".join(chunks)) if chunks else None
        except Exception:  # a child cut short: no overview, not an error
            return None
        from .rows import Overview

        return found if isinstance(found, Overview) else None

    def close(self) -> None:
        """Reap the child (killed if still at work: the user quit first)."""
        if self._done:
            return
        self._done = True
        with contextlib.suppress(OSError):
            os.close(self.fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def start(engine: Engine) -> Prefetch | None:
    """Fork a child that loads ``engine``'s source and writes its overview to a pipe. Call
    it before any thread exists (a fork copies only the calling thread)."""
    if not hasattr(os, "fork") or not engine.on_disk or engine.shell is not None:
        return None
    if engine.session.bytes_to_read() > MAX_BYTES:
        return None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.close(read)
            _quiet()
            engine.load()
            data = pickle.dumps(engine.overview(), protocol=pickle.HIGHEST_PROTOCOL)
            view = memoryview(data)
            while view:
                view = view[os.write(write, view):]
            code = 0
        finally:
            os._exit(code)  # no atexit handlers, no flushing of the parent's buffers
    os.close(write)
    return Prefetch(pid, read)


def _quiet() -> None:
    """The child leaves the terminal alone: its standard streams go to /dev/null, and the
    keys the user presses (Ctrl-C included) are the parent's business."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
