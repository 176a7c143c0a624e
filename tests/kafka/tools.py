"""Kafka's own tools as the judge: ``MetadataShell`` and ``DumpLogSegments``, cached.

Each tool starts a JVM, so every output is kept under ``cache_root()/oracle``, keyed by tool,
the version of this code (``CODE_VERSION``), Kafka version and the SHA-256 of the file it
read: a warm cache starts no JVM at all, and a cache filled by other code is not read. Cold,
the JVMs run in parallel (one per core), with C1 only, the serial GC and an application
class-data archive made by the first run (about half the start-up time). ``DumpLogSegments``
takes many files per run; ``MetadataShell`` reads one.

Kafka's tools only ever read copies: ``MetadataShell`` locks the log dir of its file when a
``.lock`` is there, so each file is copied into a temporary directory first.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from . import jars

SHELL_MAIN = "org.apache.kafka.shell.MetadataShell"
# DumpLogSegments moved from core (Scala) to the tools module in Kafka 4.0.
DUMP_MAIN = {"3": "kafka.tools.DumpLogSegments", "4": "org.apache.kafka.tools.DumpLogSegments"}
# The newest metadata.version level each judge reads (3.7-IV4; 4.4-IV0 for 4.3.1).
MAX_LEVEL = {jars.KAFKA_37: 19, jars.KAFKA_4: 31}
# The oldest each reads: Kafka 4 dropped metadata.version below 3.3-IV3 (level 7).
MIN_LEVEL = {jars.KAFKA_37: 1, jars.KAFKA_4: 7}
NOT_LOADED = "offset -1, epoch -1"  # provenance of a shell that printed before loading
# What the interactive shell says when asked before its publisher was given an image
UNPUBLISHED = "org.apache.kafka.image.node.MetadataNode.print"
# The judges whose interactive shell shows the image (3.7.2's shows the empty image however
# long it waits: its lost races are only run again, in the one-command form)
TYPED = {jars.KAFKA_4}
SHELL_TRIES = 8  # MetadataShell may print before its loader published: bounded retries
# Kafka's shell also hangs now and then on files it reads fine on other runs (seen on a
# 607-byte 3.4 log with 3.7.2: 1 run in 4 never ends). A time-out is retried this many times
# and never kept, so one unlucky run cannot stick in the cache.
SHELL_TIMEOUT_TRIES = 3
# Seconds a run may take: a Kafka that cannot read a file hangs forever; big files take a
# few seconds, many more on a busy machine.
TIMEOUT, TIMEOUT_PER_MB = 20, 10
JVM_FLAGS = ["-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


@dataclass(frozen=True)
class Run:
    """One tool's verdict on one file: exit code, stdout, stderr (SLF4J noise removed)."""

    rc: int
    out: str
    err: str

    def to_json(self) -> str:
        return json.dumps({"rc": self.rc, "out": self.out, "err": self.err})

    @staticmethod
    def from_json(text: str) -> Run:
        d = json.loads(text)
        return Run(d["rc"], d["out"], d["err"])


def _code_version() -> str:
    """A hash of the code that runs Kafka's tools and reads their output (this module and the
    jar installer): part of every cache key, so a verdict stored by other code, one that read
    Kafka's output another way, is never reused. Any edit here changes it."""
    h = hashlib.sha256()
    for module in (__file__, jars.__file__):
        h.update(Path(module).read_bytes())
    return h.hexdigest()[:16]


CODE_VERSION = _code_version()


def oracle_dir() -> Path:
    return jars.cache_root() / "oracle"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def judge_for(level: int | None) -> str:
    """The Kafka that judges a file at this metadata.version: 3.7.x up to 19, else 4.x."""
    return jars.KAFKA_37 if level is not None and level <= MAX_LEVEL[jars.KAFKA_37] \
        else jars.KAFKA_4


def _cached(key: str) -> Run | None:
    path = oracle_dir() / f"{key}.json"
    return Run.from_json(path.read_text(encoding="utf-8")) if path.exists() else None


def _store(key: str, run: Run) -> Run:
    path = oracle_dir() / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.{id(run)}.tmp")
    tmp.write_text(run.to_json(), encoding="utf-8")
    os.replace(tmp, path)
    return run


def _quiet(err: str) -> str:
    return "".join(line for line in err.splitlines(keepends=True)
                   if not line.startswith(("SLF4J:", "log4j:WARN", "[warning][cds]")))


def _java(version: str, tool: str, main: str, args: Sequence[str], tmp: Path,
          timeout: int = TIMEOUT, typed: Typed | None = None) -> Run:
    """Run a Kafka main class, with the class-data archive of (version, tool) when made;
    ``typed``: its input typed once it has said it is ready (see :class:`Typed`).

    The JVM's temporary files go under ``tmp`` (removed by the caller): Kafka's shell makes a
    ``MetadataShell*`` directory in ``java.io.tmpdir`` and leaves it when it exits."""
    archive = _archive(version, tool)
    flags = [*JVM_FLAGS, f"-Djava.io.tmpdir={tmp}"]
    making = None
    if archive.exists():
        flags.append(f"-XX:SharedArchiveFile={archive}")
    else:
        archive.parent.mkdir(parents=True, exist_ok=True)
        making = archive.with_suffix(f".{os.getpid()}.{os.urandom(4).hex()}.tmp")
        flags.append(f"-XX:ArchiveClassesAtExit={making}")
    cmd = [jars.java(), *flags, "-cp", jars.classpath(version), main, *args]
    if typed is not None:
        return typed.run(cmd, timeout)
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        text = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return Run(-1, text, f"timed out after {timeout} s")
    if making is not None and making.exists():
        os.replace(making, archive)
    return Run(out.returncode, out.stdout, _quiet(out.stderr))


@dataclass(frozen=True)
class Typed:
    """Kafka's shell in its interactive form: ``text`` typed ``wait`` seconds after it
    printed ``ready``; its output is what it printed between its first prompt and its last.

    The one-command form prints as soon as the loader has applied the file, which can be
    before the shell's own publisher is given the image (MetadataLoader updates the applied
    offset, then initializes a publisher installed while it was catching up in a later
    event): on a busy machine it prints the empty image (``NOT_LOADED``). Typed after a
    wait, the command finds the image published; asked still too early, the interactive
    shell fails on the missing image and exits 1 (:func:`_unpublished`), and is run again
    with a longer wait."""

    text: str
    wait: float
    ready: str = "Starting..."
    prompt: str = ">> "

    def run(self, cmd: list[str], timeout: float) -> Run:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        out: list[str] = []
        err: list[str] = []
        seen = threading.Event()

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                out.append(line)
                if line.strip() == self.ready:
                    seen.set()
            seen.set()  # ended without it: nothing to wait for

        def drain() -> None:
            assert proc.stderr is not None
            err.append(proc.stderr.read())

        readers = [threading.Thread(target=pump, daemon=True),
                   threading.Thread(target=drain, daemon=True)]
        for t in readers:
            t.start()
        deadline = time.monotonic() + timeout
        try:
            if seen.wait(timeout) and proc.poll() is None:
                time.sleep(self.wait)
                assert proc.stdin is not None
                proc.stdin.write(self.text)
                proc.stdin.close()
            proc.wait(max(0.1, deadline - time.monotonic()))
        except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
            proc.kill()
            proc.wait()
            return Run(-1, "".join(out), f"timed out after {timeout} s")
        for t in readers:
            t.join(5)
        text = "".join(out)
        first, last = text.find(self.prompt), text.rfind(self.prompt)
        shown = text[first + len(self.prompt):last] if 0 <= first < last else text
        return Run(proc.returncode, shown, _quiet("".join(err)))


def _copy(files: Sequence[Path], tmp: Path) -> Path:
    """The files (one, or log segments to join) as one file under a scratch log dir."""
    md = tmp / "__cluster_metadata-0"
    md.mkdir(parents=True, exist_ok=True)
    target = md / files[-1].name
    with target.open("wb") as out:
        for f in files:
            out.write(f.read_bytes())
    return target


def joined_sha(files: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for f in files:
        h.update(f.read_bytes())
    return h.hexdigest()


# ---------------------------------------------------------------- MetadataShell


def shell_key(version: str, files: Sequence[Path]) -> str:
    return f"shell/{CODE_VERSION}/{version}/{joined_sha(files)}"


def shell_tree(version: str, files: Sequence[Path], fresh: bool = False) -> Run:
    """``MetadataShell -s FILE tree /image`` of the file (log segments given together are
    joined into one file, as one log). A run whose provenance says it had not loaded yet, or
    that timed out, is retried; the result says so if it never did. ``fresh`` ignores a
    cached run (Kafka's load race: see ``forget``)."""
    key = shell_key(version, files)
    found = None if fresh else _cached(key)
    if found is not None and found.rc != -1:  # time-outs kept by older versions: try again
        return found
    with tempfile.TemporaryDirectory(prefix="mdshell-oracle-") as tmp:
        target = _copy(files, Path(tmp))
        timeouts, early = 0, int(fresh)  # a fresh run is one for a lost race: typed
        limit = TIMEOUT + TIMEOUT_PER_MB * target.stat().st_size // 1_000_000
        asked_early = False  # the last run was typed, and found no image yet
        for _ in range(SHELL_TRIES):
            typed = early > 0 and version in TYPED  # printed before its image was published
            if typed:
                run = _java(version, "shell", SHELL_MAIN, ["-s", str(target)], Path(tmp),
                            limit, Typed("tree /image\nexit\n", min(8.0, 0.5 * 2 ** early)))
            else:
                run = _java(version, "shell", SHELL_MAIN, ["-s", str(target), "tree", "/image"],
                            Path(tmp), limit)
            timeouts += run.rc == -1
            if run.rc == -1 and timeouts < SHELL_TIMEOUT_TRIES:
                continue  # Kafka's intermittent hang, or a busy machine
            asked_early = typed and _unpublished(run)
            if not asked_early and (run.rc != 0 or NOT_LOADED not in run.out):
                break
            early += 1
    if asked_early:
        run = Run(-1, run.out, "its image was never published while it ran")
    if run.rc == -1 or (run.rc == 0 and NOT_LOADED in run.out):
        return run  # never loaded or hung every time: not kept, the next run tries again
    return _store(key, run)


def _unpublished(run: Run) -> bool:
    """Whether a typed run was asked before the shell had an image at all: its command
    fails on the missing root (``MetadataNode.print`` on null) and the shell exits 1. (The
    one-command form of 3.7.2 fails so too, on files whose image it cannot print: that is
    its verdict.)"""
    return run.rc == 1 and UNPUBLISHED in run.err


def loaded(run: Run) -> bool:
    return run.rc == 0 and NOT_LOADED not in run.out


# ---------------------------------------------------------------- DumpLogSegments


def dump_key(version: str, path: Path) -> str:
    return f"dump/{CODE_VERSION}/{version}/{sha256(path)}-{path.name}"


def dump(version: str, paths: Sequence[Path]) -> dict[Path, Run]:
    """``DumpLogSegments --cluster-metadata-decoder`` of each file, many files per JVM.

    A file that makes the tool fail ends its run: its output so far and the error are its
    verdict, and the files after it run again."""
    result: dict[Path, Run] = {}
    todo = []
    for p in paths:
        found = _cached(dump_key(version, p))
        if found is None:
            todo.append(p)
        else:
            result[p] = found
    main = DUMP_MAIN[version.split(".")[0]]
    while todo:
        with tempfile.TemporaryDirectory(prefix="mdshell-oracle-") as tmp:
            copies = [_copy([p], Path(tmp) / str(i)) for i, p in enumerate(todo)]
            run = _java(version, "dump", main, ["--cluster-metadata-decoder", "--files",
                                                ",".join(map(str, copies))], Path(tmp))
        sections = _split_sections(run.out, copies)
        notes = _non_consecutive(run.err)
        done = 0
        for i, p in enumerate(todo):
            if i not in sections:
                break
            last = i == len(sections) - 1
            ok = run.rc == 0 or not last
            result[p] = Run(0 if ok else run.rc, sections[i],
                            notes.get(str(copies[i]), "") if ok else run.err)
            _store(dump_key(version, p), result[p])
            done = i + 1
        if done == 0:  # the tool failed before dumping anything: every file shares it
            for p in todo:
                result[p] = run
            break
        todo = todo[done:]
    return result


def _non_consecutive(err: str) -> dict[str, str]:
    """The tool's closing "Non-consecutive offsets in FILE" reports (on stderr), by file."""
    found: dict[str, str] = {}
    current = None
    for line in err.splitlines(keepends=True):
        if line.startswith("Non-consecutive offsets in "):
            current = line[len("Non-consecutive offsets in "):].strip()
            found[current] = line
        elif current is not None and line.startswith("  "):
            found[current] += line
        else:
            current = None
    return found


def _split_sections(out: str, copies: Sequence[Path]) -> dict[int, str]:
    index = {str(c): i for i, c in enumerate(copies)}
    sections: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in out.splitlines(keepends=True):
        if line.startswith("Dumping "):
            i = index.get(line[len("Dumping "):].strip())
            if i is not None:
                current = sections.setdefault(i, [])
                continue
        if current is not None:
            current.append(line)
    return {i: "".join(lines) for i, lines in sections.items()}


@dataclass(frozen=True)
class DumpedRecord:
    offset: int
    type: str  # metadata records: Kafka's MetadataRecordType name; control: its label
    control: bool


_RECORD = re.compile(r"^\| offset: (\d+) ")
_PAYLOAD_TYPE = re.compile(r' payload: \{"type":"([A-Z_]+)"')
_CONTROL = re.compile(r" (LeaderChange|SnapshotHeader|SnapshotFooter|KRaftVersion|KRaftVoters)"
                      r":? \{| controlType: (\w+)")


def parse_dump(text: str) -> tuple[list[DumpedRecord], list[str]]:
    """The records of one file's dump, and the lines reporting a problem (invalid batch,
    undecodable record, trailing bytes)."""
    records: list[DumpedRecord] = []
    problems: list[str] = []
    control = False
    for line in text.splitlines():
        if line.startswith("baseOffset: "):
            control = " isControl: true " in line
            if not line.rstrip().endswith("isvalid: true"):
                problems.append(line)
            continue
        m = _RECORD.match(line)
        if m is None:
            if line.startswith("Found ") and "invalid bytes" in line:
                problems.append(line)
            continue
        offset = int(m.group(1))
        if control:
            c = _CONTROL.search(line)
            kind = "?" if c is None else (c.group(1) or c.group(2))
        else:
            p = _PAYLOAD_TYPE.search(line)
            if p is None:
                problems.append(line)
                kind = "?"
            else:
                kind = p.group(1)
        records.append(DumpedRecord(offset, kind, control))
    return records, problems


# ---------------------------------------------------------------- many at once


def prefetch(shell_jobs: Iterable[tuple[str, Sequence[Path]]],
             dump_jobs: Iterable[tuple[str, Path]], workers: int | None = None) -> None:
    """Fill the cache for all these runs, ``workers`` JVMs at a time (one per core)."""
    shells = [(v, list(f)) for v, f in shell_jobs if _cached(shell_key(v, f)) is None]
    dumps: dict[str, list[Path]] = {}
    for v, p in dump_jobs:
        if _cached(dump_key(v, p)) is None and p not in dumps.setdefault(v, []):
            dumps[v].append(p)
    workers = workers or max(1, os.cpu_count() or 1)
    unique: dict[str, tuple[str, list[Path]]] = {}
    for v, files in sorted(shells, key=lambda j: -sum(f.stat().st_size for f in j[1])):
        unique.setdefault(shell_key(v, files), (v, files))
    # The first run of each tool and version makes its class-data archive: run it alone.
    for v in sorted({v for v, _ in unique.values()}):
        if not _archive(v, "shell").exists():
            first = next(k for k, (w, _) in unique.items() if w == v)
            shell_tree(*unique.pop(first))
    for v, ps in dumps.items():
        if not _archive(v, "dump").exists():
            dump(v, ps[:1])
            del ps[:1]
    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(dump, v, ps[i::workers])
                   for v, ps in dumps.items() for i in range(workers) if ps[i::workers]]
        futures += [pool.submit(shell_tree, v, files) for v, files in unique.values()]
        for f in futures:
            f.result()


def _archive(version: str, tool: str) -> Path:
    return oracle_dir() / "cds" / f"{version}-{tool}.jsa"


def clear_cache() -> None:
    """Forget every verdict (for measuring a cold run)."""
    shutil.rmtree(oracle_dir(), ignore_errors=True)
