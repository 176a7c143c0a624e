"""Work that reads the whole image, done in a forked child so the UI thread keeps the GIL.

A worker thread that decodes 500k partitions holds the GIL in 1 ms slices; every time the
UI thread gives it up (each wait of Textual's event loop) it waits a slice to get it back,
so a key that takes a few hundred such waits takes a few hundred ms. A child made by
``fork`` sees the same image (copy-on-write, nothing is reloaded) and computes on the other
core; only its small, picklable result comes back through a pipe.

The child runs only ``fn`` over objects already in memory and leaves with ``os._exit``
(no atexit handlers, no buffers of the parent flushed twice). Where fork is not available
or not safe with threads (not Linux), or the child fails, ``fn`` runs here as before.
No textual here.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def usable() -> bool:
    """Fork with other threads running is sound on Linux for a child that only computes."""
    return sys.platform == "linux" and hasattr(os, "fork")


def in_child(fn: Callable[[], T]) -> T:
    """``fn()``, computed in a forked child when :func:`usable`, else here."""
    if not usable():
        return fn()
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return fn()
    if pid == 0:  # the child: compute, write, leave at once
        os.close(read_end)
        code = 1
        try:
            data = pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as inp:
        data = inp.read()  # blocks without the GIL
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or not data:
        return fn()  # the child failed: the same work here, as without a fork
    result: T = pickle.loads(data)
    return result
