"""Benchmark of the full-screen interface: first paint, expanding a big topic, key latency.

Usage: python bench/tui.py [--runs N] [--out bench/out] [--at-scale 500k]

Targets (issue 9): first paint of the overview ≤ 1.0 s on the 100k-partition directory and
≤ 0.5 s on the largest corpus directory; expanding a 10k-partition topic ≤ 0.3 s; a key press
answered within 100 ms while a load runs.

- "first paint (in process)": from creating the app (the source opened, Textual already
  imported) until the overview is laid out with its data, headless (``run_test``).
- "first paint (process, tmux)": from starting ``python -m mdshell -d DIR`` in a 120x40 tmux
  pane until the overview's brokers panel shows in ``capture-pane`` (interpreter start-up,
  imports and terminal set-up included; polled every 10 ms). Skipped without tmux.
- "expand": from expanding the topic's tree node until its children are laid out and the
  screen has refreshed.
- "key while loading": with a worker thread rebuilding the image at the middle of the log,
  the time from a Down key to the tree cursor having moved (each of 20 presses).
- ``--at-scale 500k`` (issue 22, targets: the search box open ≤ 0.3 s, every key answered
  ≤ 100 ms): on a generated directory (5,000 topics of 100 partitions, bench/load.py's
  GENERATED), first paint, the search index ready, ``/`` open with results, keys typed in
  the search box and in the Topics filter, j/k in the tree (before and while the Topics
  table is built in its worker), the Topics table, ``r`` with nothing new.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from load import CORPUS, LARGEST, generate  # noqa: E402

BIG_TOPIC = ["--topics", "2", "--brokers", "30", "--controllers", "3",
             "--partitions-per-topic", "10000", "--rf", "3", "--history-changes", "200",
             "--snapshot-at", "setup", "--log-from", "snapshot", "--seed", "7"]


def big_topic_dir(out: Path) -> Path:
    target = out / "gen-10k-topic"
    if not (target / "__cluster_metadata-0").is_dir():
        subprocess.run([sys.executable, "-m", "mdshell.synth", "--out", str(target),
                        *BIG_TOPIC], check=True, cwd=ROOT)
    return target


async def _until(pilot, check, limit: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.perf_counter() + limit
    while not check():
        if time.perf_counter() > deadline:
            raise SystemExit(f"timed out after {limit:.0f} s")
        await pilot.pause(0.002)


def _painted(app: Any) -> bool:
    """The overview is laid out with its data (what "first paint" waits for)."""
    from mdshell.tui.overview import OverviewScreen

    return (isinstance(app.screen, OverviewScreen) and app.screen.overview is not None
            and app.screen.query_one("#brokers").region.height > 0)


def first_paint(d: Path) -> float:
    from mdshell.tui.app import make_app
    from mdshell.tui.engine import Engine

    async def run() -> float:
        start = time.perf_counter()
        app = make_app(Engine.open(str(d), None))
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(pilot, lambda: _painted(app))
            return time.perf_counter() - start  # the overview is laid out with its data
    return asyncio.run(run())


def first_paint_tmux(d: Path, bytecode: bool = True) -> tuple[float, float] | None:
    """(wall, CPU) seconds from starting the program in tmux to the overview on screen; CPU
    is the process's user+system time then, its reaped children's included (less swayed by
    other jobs than wall time)."""
    tmux = shutil.which("tmux")
    if tmux is None:
        return None
    sock = f"bench-{uuid.uuid4().hex[:6]}"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    cmd = f"cd {ROOT} && {sys.executable} -m mdshell -d {d}; sleep 5"
    try:
        start = time.perf_counter()
        subprocess.run([tmux, "-L", sock, "new-session", "-d", "-x", "120", "-y", "40", cmd],
                       check=True, env=env)
        shell_pid = subprocess.run([tmux, "-L", sock, "display", "-p", "#{pane_pid}"],
                                   capture_output=True, text=True, env=env).stdout.strip()
        while time.perf_counter() - start < 60:
            screen = subprocess.run([tmux, "-L", sock, "capture-pane", "-p"],
                                    capture_output=True, text=True, env=env).stdout
            if "Brokers (" in screen:
                wall = time.perf_counter() - start
                return wall, _cpu_of_child(shell_pid)
            time.sleep(0.01)
        raise SystemExit("tmux: the overview never showed")
    finally:
        subprocess.run([tmux, "-L", sock, "kill-server"], capture_output=True)


def _cpu_of_child(shell_pid: str) -> float:
    """User+system seconds of the python process the pane's shell started, with those of
    its children it has reaped (the child that reads the overview at start)."""
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{shell_pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
            return sum(int(f) for f in fields[11:15]) / tick
    return float("nan")


def expand(d: Path) -> float:
    from mdshell.tui.app import make_app
    from mdshell.tui.browser import ImageTree
    from mdshell.tui.engine import Engine

    async def run() -> float:
        app = make_app(Engine.open(str(d), None))
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(pilot, lambda: app.loaded and app.checks is not None)
            topic = max(app.engine.loaded.image.topics_by_name.values(),
                        key=lambda t: len(t.partitions))
            path = f"/image/topics/byName/{topic.name}"
            app.jump(path)
            await _until(pilot, lambda: bool(app.screen.query(ImageTree))
                         and app.screen.query_one(ImageTree).cursor_node is not None
                         and app.screen.query_one(ImageTree).cursor_node.data == path)
            await pilot.pause(0.3)
            tree = app.screen.query_one(ImageTree)
            node = tree.cursor_node
            assert node is not None
            start = time.perf_counter()
            node.expand()
            await _until(pilot, lambda: len(node.children) > 0)
            await pilot.pause()
            return time.perf_counter() - start
    return asyncio.run(run())


def key_while_loading(d: Path, presses: int = 20) -> list[float]:
    from mdshell.session import load
    from mdshell.tui.app import make_app
    from mdshell.tui.browser import ImageTree
    from mdshell.tui.engine import Engine, quiet_gc

    async def run() -> list[float]:
        app = make_app(Engine.open(str(d), None))
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(pilot, lambda: app.loaded and app.checks is not None)
            await pilot.press("t")
            await _until(pilot, lambda: bool(app.screen.query(ImageTree)))
            tree = app.screen.query_one(ImageTree)
            first, last = app.engine.session.source.offset_range()
            middle = ((first or 0) + (last or 0)) // 2
            loading = {"on": True}

            def busy() -> None:  # a long load in a thread, as `at` runs it
                while loading["on"]:
                    quiet_gc(lambda: load(app.engine.session.source, upto=middle))

            app.run_worker(busy, thread=True)
            await pilot.pause(0.2)
            times = []
            for i in range(presses):
                before = tree.cursor_line
                start = time.perf_counter()
                # As the terminal driver delivers a key (Pilot's press() also waits for the
                # whole app to go idle, which is not what a user waits for).
                app.simulate_key("down" if i % 2 == 0 else "up")
                await _until(pilot, lambda b=before: tree.cursor_line != b)
                times.append(time.perf_counter() - start)
            loading["on"] = False
            return times
    return asyncio.run(run())


def at_scale(d: Path, presses: int = 20) -> dict[str, list[float]]:
    """Issue 22's figures on a big directory, one app run: first paint (in process), the
    search index ready, ``/`` open with results, a key typed in the search box answered,
    j/k in the tree, a key typed in the Topics filter (F), the Topics table built (in its
    worker) and ``r`` with nothing new. Keys are delivered as the terminal driver does
    (``simulate_key``) and timed until their effect is in the app's state."""
    from mdshell.tui.app import make_app
    from mdshell.tui.browser import ImageTree
    from mdshell.tui.engine import Engine
    from mdshell.tui.search import SearchScreen

    out: dict[str, list[float]] = {}

    def note(name: str, seconds: float) -> None:
        out.setdefault(name, []).append(seconds)
        print(f"  {name}: {seconds * 1000:.0f} ms", file=sys.stderr, flush=True)
        used = getattr(timed, "cpu", None)
        if used is not None:  # a key: its CPU too
            cpu.setdefault(f"CPU: {name}", []).append(used)
            timed.cpu = None  # type: ignore[attr-defined]

    cpu: dict[str, list[float]] = {}

    async def timed(pilot, key: str, done) -> float:  # type: ignore[no-untyped-def]
        """Wall seconds until ``done()``; the process's CPU seconds meanwhile go to ``cpu``
        under the key's figure (all threads: the UI's own when no worker runs)."""
        start, used = time.perf_counter(), time.process_time()
        pilot.app.simulate_key(key)
        await _until(pilot, done)
        timed.cpu = time.process_time() - used  # type: ignore[attr-defined]
        return time.perf_counter() - start

    async def run() -> None:
        start = time.perf_counter()
        app = make_app(Engine.open(str(d), None))
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(pilot, lambda: _painted(app))
            note("first paint (in process)", time.perf_counter() - start)
            await _until(pilot, lambda: app.loaded, limit=300)
            note("image loaded", time.perf_counter() - start)
            # As the program's start-up does (startup.py; not active in-process): threads
            # switch every 1 ms, and what the load built is frozen out of the GC's walks.
            sys.setswitchinterval(0.001)
            gc.freeze()
            await _until(pilot, lambda: app.search_index is not None, limit=300)
            note("search index ready (worker)", time.perf_counter() - start)
            # The same worker then makes the timeline and the Topics/Brokers tables: the
            # keys below are timed once it is done (keys while such work runs: see the
            # "while the Topics table is built" figure).
            await _until(pilot, lambda: app.engine._list_cache[0] is not None, limit=300)
            note("timeline and Topics/Brokers tables made (same worker)",
                 time.perf_counter() - start)
            await pilot.pause(0.5)
            note("/ opens the box with results", await timed(
                pilot, "slash", lambda: isinstance(app.screen, SearchScreen)
                and app.screen.query_one("#results").option_count > 0))
            typed = ""
            for ch in "topic-4217":
                typed += ch
                note("a key typed in the search box", await timed(
                    pilot, ch, lambda t=typed: app.screen._last[0] == t))
            await pilot.press("escape", "t")
            await _until(pilot, lambda: bool(app.screen.query(ImageTree)))
            tree = app.screen.query_one(ImageTree)
            await pilot.pause(0.3)
            for i in range(presses):
                before = tree.cursor_line
                note("j/k in the tree", await timed(
                    pilot, "j" if i % 2 == 0 else "k", lambda b=before: tree.cursor_line != b))
            topics = "/image/topics/byName"
            app.jump(f"{topics}/topic-0001")
            await _until(pilot, lambda: tree.cursor_node is not None
                         and (tree.cursor_node.data or "").startswith(f"{topics}/"))
            await pilot.pause(0.3)
            note("F opens the filter", await timed(
                pilot, "F", lambda: app.screen.focused is not None
                and app.screen.focused.id == "filter-input"))
            typed = ""
            for ch in "42":
                typed += ch
                note("a key typed in the Topics filter (5,000 names)", await timed(
                    pilot, ch, lambda t=typed: tree.filters.get(topics) == t))
            await pilot.press("escape")
            await pilot.pause(0.3)
            said = len(app._notifications)
            note("r with nothing new (notification shown)", await timed(
                pilot, "r", lambda: len(app._notifications) > said))
            began = time.perf_counter()
            app.jump(topics)
            table = app.screen.query_one("#view-table")
            await _until(pilot, lambda: table.row_count > 0 and table.display, limit=300)
            note("Topics node: its table shown (made already)",
                 time.perf_counter() - began)
            building = {"on": True}

            def busy() -> None:  # the Topics table's work as the engine does it, again
                while building["on"]:
                    app.engine._list_cache = (None, {})
                    app.engine.list_table(topics)

            app.run_worker(busy, thread=True)
            await pilot.pause(0.2)
            for i in range(presses):
                before = tree.cursor_line
                note("j/k in the tree while the Topics table is built", await timed(
                    pilot, "j" if i % 2 == 0 else "k", lambda b=before: tree.cursor_line != b))
            building["on"] = False
    asyncio.run(run())
    return out | cpu


def cpu_at_scale(d: Path) -> list[tuple[str, float]]:
    """CPU seconds of the work behind those keys, without the UI (less swayed by other jobs
    than wall time): the load, the search index, the Topics and Brokers tables, a page of
    the Topics filter, ``r`` with nothing new."""
    from mdshell.tui.engine import Engine

    eng = Engine.open(str(d), None)
    out = []

    def cpu(label: str, work) -> None:  # type: ignore[no-untyped-def]
        start = time.process_time()
        work()
        out.append((label, time.process_time() - start))

    cpu("load", eng.load)
    cpu("search index", eng.search_index)
    cpu("Topics and Brokers tables (one pass)", lambda: eng.list_table("/image/topics/byName"))
    cpu("a page of the Topics filter ('42')",
        lambda: eng.page("/image/topics/byName", 0, 300, "42"))
    cpu("r with nothing new", eng.reread)
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--only-keys", action="store_true", help="only the key-latency figure")
    p.add_argument("--at-scale", metavar="SIZE", help="issue 22's figures on a generated "
                   "directory: first paint, search open, key latency (e.g. 500k)")
    p.add_argument("--out", default=str(ROOT / "bench" / "out"))
    ns = p.parse_args()
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str, str]] = []

    def report(label: str, values: list[float], target: str) -> None:
        best, median = min(values), statistics.median(values)
        rows.append((label, f"{best:.2f} s / {median:.2f} s", target))
        print(f"{label:56s} best {best:6.3f} s  median {median:6.3f} s  (target {target})",
              file=sys.stderr)

    if ns.at_scale:
        big = generate(out, ns.at_scale)
        figures: dict[str, list[float]] = {}
        for _ in range(ns.runs):
            for k, v in at_scale(big).items():
                figures.setdefault(k, []).extend(v)
        lines = ["| measurement | best / median / max | target |", "|---|---|---|"]
        for k, v in figures.items():
            lines.append(f"| {k} | {min(v) * 1000:.0f} / {statistics.median(v) * 1000:.0f}"
                         f" / {max(v) * 1000:.0f} ms | |")
        for label, seconds in cpu_at_scale(big):
            lines.append(f"| CPU: {label} | {seconds * 1000:.0f} ms | |")
        lines.append(f"| (load average at the end) | {os.getloadavg()[0]:.1f} on "
                     f"{os.cpu_count()} cores | |")
        print("\n".join(lines))
        return
    if ns.only_keys:
        keys = key_while_loading(generate(out, "100k"))
        print(f"median {statistics.median(keys) * 1000:.0f} ms, max {max(keys) * 1000:.0f} ms")
        return
    dirs = [("100k partitions", generate(out, "100k"), "1.0 s")]
    if CORPUS.is_dir():
        dirs.insert(0, ("largest corpus dir", CORPUS / LARGEST, "0.5 s"))
    for label, d, target in dirs:
        report(f"first paint, {label} (in process)",
               [first_paint(d) for _ in range(ns.runs)], target)
        for bytecode in (True, False):
            how = "bytecode cached" if bytecode else "PYTHONDONTWRITEBYTECODE=1"
            tm = [first_paint_tmux(d, bytecode) for _ in range(ns.runs)]
            if all(t is not None for t in tm):
                report(f"first paint, {label} (process in tmux, {how})",
                       [t[0] for t in tm if t], target)
                report(f"  CPU to first paint, {label} ({how})", [t[1] for t in tm if t],
                       target)
    big = big_topic_dir(out)
    report("expand a 10k-partition topic", [expand(big) for _ in range(ns.runs)], "0.3 s")
    keys = key_while_loading(dirs[-1][1])
    rows.append(("key press while a load runs (100k, 20 presses)",
                 f"median {statistics.median(keys) * 1000:.0f} ms / max "
                 f"{max(keys) * 1000:.0f} ms", "100 ms"))
    print(f"key while loading: median {statistics.median(keys) * 1000:.0f} ms, max "
          f"{max(keys) * 1000:.0f} ms", file=sys.stderr)
    rows.append(("(load average during the run)", f"{os.getloadavg()[0]:.1f} on "
                 f"{os.cpu_count()} cores", "-"))
    lines = ["| measurement | best / median | target |", "|---|---|---|"]
    lines += [f"| {a} | {b} | ≤ {c} |" for a, b, c in rows]
    text = "\n".join(lines) + "\n"
    (out / "tui.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
