"""A persistent worker: reads cases on stdin, runs every reader on each, answers on stdout.

Started by :mod:`.pool` as ``python -m tests.fuzz.worker ROOT`` with ``MDSHELL_PURE`` set or
not (mdshell reads it once, at import: a worker is one way of reading for its whole life).
Frames are a 4-byte length and a pickle. The worker's stdout is kept for the frames (fd 1
then points at /dev/null, so nothing printed can corrupt them); stderr is a file the pool
reads back: each reader's name (``@@ reader``) before it runs, and the stacks of every
thread that ``faulthandler`` writes on SIGUSR1, which the pool sends before it kills a
worker that ran too long or grew too big.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import pickle
import resource
import signal
import struct
import sys
from typing import Any, BinaryIO

_LEN = struct.Struct(">I")


def send(out: BinaryIO, obj: Any) -> None:
    raw = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_LEN.pack(len(raw)) + raw)
    out.flush()


def recv(inp: BinaryIO) -> Any:
    head = inp.read(_LEN.size)
    if len(head) < _LEN.size:
        return None
    (n,) = _LEN.unpack(head)
    raw = inp.read(n)
    return pickle.loads(raw)


def main() -> int:
    root = sys.argv[1]
    out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    inp = sys.stdin.buffer
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    limit = int(os.environ.get("MDSHELL_FUZZ_AS", "0"))
    # Imported before the limit: what every case needs (the CLI, Spark's reader, numpy).
    import mdshell
    import mdshell.cli
    import mdshell.spark.fastlog
    from mdshell.wire import native

    from .readers import run_case

    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    send(out, {"ready": os.getpid(), "pure": native.PURE, "mdshell": mdshell.__file__,
               "cwalk": getattr(native.piece("_cwalk"), "__file__", None)})
    done = 0
    while True:
        case = recv(inp)
        if case is None:
            return 0
        os.write(2, f"@@ case {case.id}\n".encode())
        runs = run_case(case, root)
        # Each case as in processes of its own: the one-shot command freezes what it made
        # (a process exits next), which would stay for good in this one.
        gc.unfreeze()
        gc.collect()
        send(out, {"id": case.id, "runs": runs})
        done += 1
        if done % 50 == 0:
            # A one-shot command freezes what it loaded (gc.freeze, as mdshell's CLI does
            # before it exits); the cycles among it are left to a full collection that,
            # thousands of commands into one process, would not come soon enough.
            gc.collect()


if __name__ == "__main__":
    raise SystemExit(main())
