"""Every reader of mdshell run on one input, each measured: what the worker process does.

An input (:class:`Case`) is a log dir whose ``__cluster_metadata-0`` holds one mutated file
(the other files as the seed has them). The readers are the stable doors of mdshell:

- ``d.*``: the one-shot CLI on the directory (``-d``): ``health -o json`` (the verdict),
  ``tree /image`` (the image), ``records``, and ``changes PATH`` both the one-shot way (a
  byte sieve picks the records to replay) and after a whole load (``--at latest``);
- ``s.*``: the same on the mutated file alone (``-s``);
- ``one.*``: ``-d`` on a directory holding only the mutated file (to compare with ``-s``);
- ``prefix.*``: ``-s`` on the mutated file cut where the load said the damage starts (the
  valid prefix: the image must be the same);
- ``spark``: Spark's fast log reader (``mdshell.spark.fastlog.read_file``, no JVM) on the
  mutated file, compared here with the shell's reader of that file.

The CLI runs in-process with ``--debug``, so that an exception escapes with its traceback
(an internal error) instead of becoming a line; a ``SourceError`` is the one-line failure a
user sees. Each run's CPU time and peak resident memory are measured.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import shutil
import time
import traceback
from dataclasses import dataclass
from typing import Any

MD = "__cluster_metadata-0"
# Errors a reader may end with on purpose (one line to the user, exit 1).
EXPECTED = ("SourceError", "LoadFailed", "CommandError")


@dataclass
class Case:
    """One input: the files of a log dir (paths relative to it), the one mutated, and a
    path for ``changes``."""

    id: int
    seed: str
    files: dict[str, bytes]
    target: str  # relative path of the mutated file
    changes: str | None = None  # a node of the undamaged image for ``changes``
    single: bool = True  # the log dir holds the target alone (``one.*`` would repeat ``d.*``)
    only: frozenset[str] | None = None  # the readers to run (None: every one)


@dataclass
class Run:
    """What one reader did."""

    reader: str
    rc: int | None = None
    out: str = ""
    err: str = ""
    exc: str | None = None  # "SourceError: ..." or an internal error's traceback
    internal: bool = False
    cpu: float = 0.0
    peak: int = 0  # peak RSS during the run, bytes above the RSS before it
    data: Any = None  # reader-specific structured result (the verdict, Spark's rows...)


def _rss() -> tuple[int, int]:
    rss = hwm = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    return rss, hwm


def _reset_peak() -> None:
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def note(reader: str) -> None:
    """Say on stderr which reader runs (the pool reads it back after a kill or a crash)."""
    os.write(2, f"@@ {reader}\n".encode())


def measured(reader: str, fn: Any, *args: Any) -> Run:
    note(reader)
    run = Run(reader)
    _reset_peak()
    before, _ = _rss()
    t0 = time.process_time()
    try:
        fn(run, *args)
    except MemoryError:
        run.exc, run.internal = "MemoryError", True
    except Exception as e:
        name = type(e).__name__
        if name in EXPECTED:
            run.exc = f"{name}: {e}"
        else:
            run.exc, run.internal = _where(e), True
    run.cpu = time.process_time() - t0
    run.peak = max(0, _rss()[1] - before)
    return run


def _where(e: BaseException) -> str:
    """An internal error: its type, message and the innermost frames in mdshell."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "/mdshell/" in f.filename]
    where = "; ".join(f"{f.filename.split('/mdshell/')[-1]}:{f.lineno} {f.name}"
                      for f in frames[-3:])
    return f"{type(e).__name__}: {str(e)[:300]} [{where}]"


def cli(run: Run, *argv: str, stdin: str | None = None) -> None:
    """``mdshell --debug ARGV`` in-process (as tests' ``cli`` helper runs it); ``stdin``:
    the lines a script pipes in (no command: mdshell reads commands from stdin)."""
    import sys

    from mdshell.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin
    try:
        sys.stdin = io.StringIO(stdin or "")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                run.rc = main(["--debug", *argv])
            except SystemExit as e:
                run.rc = e.code if isinstance(e.code, int) else 1
    finally:
        sys.stdin = old
        gc.unfreeze()
        run.out, run.err = out.getvalue(), err.getvalue()


def script(run: Run, *argv: str) -> None:
    """The line shell fed a script (``printf 'health\ntree /image\nhealth\n' | mdshell
    ARGV -o json``): the verdict before and after the whole image was read and shown."""
    cli(run, *argv, "-o", "json", stdin="health\ntree /image\nhealth\n")
    docs, dec, text, i = [], json.JSONDecoder(), run.out, 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        try:
            doc, i = dec.raw_decode(text, i)
        except ValueError:
            break
        docs.append(doc)
    states = [d["verdict"]["state"] for d in docs
              if isinstance(d, dict) and isinstance(d.get("verdict"), dict)]
    run.data = states if len(states) == 2 else None
    run.out = ""


def verdict_of(run: Run, *argv: str) -> None:
    """``health -o json``: the verdict (state, offset, problems' codes, files, offsets)."""
    cli(run, *argv, "-o", "json", "health")
    try:
        v = json.loads(run.out)["verdict"]
    except (ValueError, KeyError, TypeError):
        return
    run.data = {"state": v["state"], "offset": v["offset"],
                "problems": [(p["code"], os.path.basename(p["file"] or ""), p["offset"])
                             for p in v["problems"]]}
    run.out = ""


def first_stop(run: Run, path: str) -> None:
    """Where the load of one file (``-s``) says reading stopped: ``(code, position)`` of
    the first problem that stops it (crc, truncated, corrupt), or None."""
    from mdshell.problems import STOPS
    from mdshell.session import load
    from mdshell.source import open_source

    loaded = load(open_source(file=path))
    stops = [(p.code, p.position, p.offset) for p in loaded.problems
             if p.code in STOPS and p.position is not None]
    run.data = stops[0] if stops else None


def snapshot_used(run: Run, directory: str) -> None:
    """The library load of a directory: the snapshot it used (None: none)."""
    from mdshell.session import load
    from mdshell.source import open_source

    loaded = load(open_source(directory=directory))
    run.data = loaded.snapshot.name if loaded.snapshot else None


def log_scan(run: Run, path: str) -> None:
    """What ``records`` reads of one file (``iter_log``): the first problem that stops it
    ``(code, offset)`` (None: none), and the offsets of the metadata records it lists."""
    from mdshell.problems import STOPS, Problem
    from mdshell.source import open_source
    from mdshell.source.logscan import iter_log

    problems: list[Problem] = []
    offsets = [r.offset for r in iter_log(open_source(file=path), problems=problems)
               if not r.control]
    stops = [(p.code, p.offset, p.position) for p in problems if p.code in STOPS]
    run.data = {"stop": stops[0] if stops else None, "offsets": offsets}


def spark_rows(run: Run, directory: str, target: str) -> None:
    """Spark's fast reader on the mutated file against the shell's reader of it: None when
    the fast reader declined (the shell's reader is then used: nothing to compare), else
    the differences (empty: they agree)."""
    from mdshell.problems import Problem
    from mdshell.spark import fastlog
    from mdshell.spark.logfiles import iter_file, log_files

    files = [f for f in log_files(directory) if os.path.basename(f.path) == target]
    if not files:
        run.data = None
        return
    f = files[0]
    fast = fastlog.read_file(f.directory, f.path, f.role, f.first, f.last)
    if fast is None:
        run.data = None
        return
    offs, epochs, stamps, index, distinct, _ = fast
    got = []
    for o, e, t, i in zip(offs.tolist(), epochs.tolist(), stamps.tolist(), index.tolist(),
                          strict=True):
        d = distinct[i]
        got.append((o, e, t, d.control, d.key, d.version, repr(d.value)))
    problems: list[Problem] = []
    want = [(r.offset, r.epoch, r.timestamp, r.control, r.key, r.version, repr(r.value))
            for r in iter_file(f, problems)]
    diffs = []
    if problems:
        diffs.append(f"the fast reader took a file the shell's reader warns about: "
                     f"{problems[0].code}: {problems[0].message[:200]}")
    if got != want:
        n = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
                 min(len(got), len(want)))
        diffs.append(f"rows differ from row {n}: fast {got[n:n + 1]} shell {want[n:n + 1]} "
                     f"({len(got)} vs {len(want)} rows)")
    run.data = diffs


def run_case(case: Case, root: str) -> list[Run]:
    """Every reader on ``case`` (those of ``case.only``), in a fresh directory under
    ``root``."""
    base = os.path.join(root, f"c{case.id}")
    shutil.rmtree(base, ignore_errors=True)
    log = os.path.join(base, "log")
    for rel, data in case.files.items():
        path = os.path.join(log, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    target = os.path.join(log, case.target)
    name = os.path.basename(target)
    runs: list[Run] = []

    def m(reader: str, fn: Any, *args: str) -> Run | None:
        if case.only is not None and reader not in case.only:
            return None
        run = measured(reader, fn, *args)
        runs.append(run)
        return run

    try:
        _readers(m, case, base, log, target, name)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for r in runs:
        r.out = r.out.replace(base, "$CASE")
        r.err = r.err.replace(base, "$CASE")
        if r.exc:
            r.exc = r.exc.replace(base, "$CASE")
    return runs


def _readers(m: Any, case: Case, base: str, log: str, target: str, name: str) -> None:
    for tag, source in (("d", ["-d", log]), ("s", ["-s", target])):
        m(f"{tag}.health", verdict_of, *source)
        m(f"{tag}.script", script, *source)
        m(f"{tag}.tree", cli, *source, "tree", "/image")
        m(f"{tag}.records", cli, *source, "records")
    if case.changes:
        m("d.changes", cli, "-d", log, "changes", case.changes)
        m("d.changes-full", cli, "-d", log, "--at", "latest", "changes", case.changes)
    if not case.single:
        one = os.path.join(base, "one", MD)
        os.makedirs(one)
        shutil.copyfile(target, os.path.join(one, name))
        m("one.load", snapshot_used, os.path.dirname(one))
        m("one.health", verdict_of, "-d", os.path.dirname(one))
        m("one.tree", cli, "-d", os.path.dirname(one), "tree", "/image")
    stop = m("s.stop", first_stop, target)
    m("s.logscan", log_scan, target)
    if stop is not None and isinstance(stop.data, tuple) and stop.data[1]:
        cut = os.path.join(base, "prefix", name)
        os.makedirs(os.path.dirname(cut))
        with open(target, "rb") as f, open(cut, "wb") as g:
            g.write(f.read(stop.data[1]))
        m("prefix.health", verdict_of, "-s", cut)
        m("prefix.tree", cli, "-s", cut, "tree", "/image")
    m("spark", spark_rows, os.path.dirname(target), name)
