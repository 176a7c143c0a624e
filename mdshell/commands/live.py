"""Live mode in the shell: ``save DIR`` (``/live`` and the live ``/quorum`` are the session's)."""

from __future__ import annotations

import os

from .base import ArgParser, CommandError, Result, command
from .results import Text
from .shell import Shell


@command("save", "Write what live mode fetched as a __cluster_metadata-0 directory.",
         "save DIR", args=("",),
         details="The snapshot is written as <end offset>-<epoch>.checkpoint and the batches "
                 "after it as one .log segment, so that `mdshell -d DIR` and Kafka's own tools "
                 "(kafka-metadata-shell, kafka-dump-log) open it: a support bundle from a "
                 "cluster whose brokers are down. DIR must not exist or be empty.")
def _save(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("save", "save DIR")
    p.add_argument("dir")
    ns = p.parse_args(args)
    fetched = shell.session.source.fetched()
    if fetched is None:
        raise CommandError("only in live mode (-q): a directory or file source is already on "
                           "disk")
    target = ns.dir
    if not any(fetched.values()):
        raise CommandError("nothing was fetched (see /live: no access to the metadata log?); "
                           "nothing to save")
    written = save_files(target, fetched)
    return Result(value=Text([f"wrote {n} ({size} bytes)" for n, size in written],
                             {"directory": os.path.abspath(target),
                              "files": [{"name": n, "size": s} for n, s in written]}))


def save_files(target: str, files: dict[str, bytes]) -> list[tuple[str, int]]:
    if os.path.exists(target):
        if not os.path.isdir(target):
            raise CommandError(f"{target}: exists and is not a directory")
        if os.listdir(target):
            raise CommandError(f"{target}: not empty; give a new or empty directory")
    try:
        os.makedirs(target, exist_ok=True)
        out = []
        for name, data in sorted(files.items()):
            path = os.path.join(target, name)
            with open(path, "xb") as f:
                f.write(data)
            out.append((path, len(data)))
        return out
    except OSError as e:
        raise CommandError(f"{target}: cannot write ({e.strerror})") from None
