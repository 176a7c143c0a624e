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
import os
import re
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


def first_paint_tmux(d: Path, bytecode: bool = True) -> tuple[float, float, float, float,
                                                                float] | None:
    """(wall, CPU, shown, loading, loading CPU) seconds from starting the program in tmux:
    to the overview on screen (its CPU: the process's user+system time then, less swayed by
    other jobs than wall time); ``shown``: to the first screen of the program (the loading
    screen's first frame, drawn before Textual is imported, or the overview when the load
    was done sooner); ``loading``: to Textual's own loading screen (its seconds counter
    shown), with the CPU then (NaN: none was seen)."""
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
        shown = None
        loading, loading_cpu = float("nan"), float("nan")
        while time.perf_counter() - start < 60:
            screen = subprocess.run([tmux, "-L", sock, "capture-pane", "-p"],
                                    capture_output=True, text=True, env=env).stdout
            if shown is None and ("Reading " in screen or "mdshell: reading" in screen
                                  or "Brokers (" in screen):
                shown = time.perf_counter() - start
            if loading != loading and "Reading " in screen \
                    and re.search(r"\d\.\d s$", screen, re.MULTILINE):
                loading = time.perf_counter() - start
                loading_cpu = _cpu_of_child(shell_pid)
            if "Brokers (" in screen:
                wall = time.perf_counter() - start
                return wall, _cpu_of_child(shell_pid), shown or wall, loading, loading_cpu
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
    from mdshell.tui.engine import Engine
    from mdshell.tui.imagetree import ImageTree

    async def run() -> float:
        app = make_app(Engine.open(str(d), None))
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(pilot, lambda: app.loaded and app.checks is not None)
            topic = max(app.engine.loaded.image.topics_by_name.values(),
                        key=lambda t: len(t.partitions))
            path = f"/image/topics/byName/{topic.name}"
            await app.jump(path)
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


def key_while_loading(d: Path, presses: int = 20, sliced: bool = True) -> list[float]:
    """Seconds from a Down key to the tree's cursor moved, while a worker loads the log
    again and again (as ``at`` does); ``sliced``: the loader's compiled calls bounded, as
    the program bounds them once loaded (startup.py)."""
    from mdshell.session import load
    from mdshell.tui import startup
    from mdshell.tui.app import make_app
    from mdshell.tui.engine import Engine, quiet_gc
    from mdshell.tui.imagetree import ImageTree
    from mdshell.wire import decoding

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

            sys.setswitchinterval(startup.SWITCH_INTERVAL)  # as the program's start-up does
            was = decoding.set_slice(startup.SLICE if sliced else 0)
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
            decoding.set_slice(was)
            return times
    return asyncio.run(run())


def at_scale(d: Path, presses: int = 20) -> dict[str, list[float]]:
    """Issue 34's figures on a big directory, one app run, in process: first paint, health
    known, the search index and the Topics/Brokers tables made (background workers); then
    each key delivered as the terminal driver does (``simulate_key``) and timed until its
    effect is on screen, the panes it updates included (the detail pane showing the node
    under the cursor, rendered): the first ``t``, ``j``/``k`` over topics, ``/`` and keys
    typed in the search box, Enter to the jump's target, ``F`` and keys typed in the Topics
    filter, Esc back to the topic, ``r`` with nothing new, keys while the tables are made
    again and again in the background."""
    from mdshell.tui.app import make_app
    from mdshell.tui.browser import BrowserScreen
    from mdshell.tui.detail import DetailPane
    from mdshell.tui.engine import Engine
    from mdshell.tui.imagetree import ImageTree
    from mdshell.tui.search import SearchScreen

    out: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    ui: dict[str, list[float]] = {}

    def note(name: str, seconds: float, used: float | None = None,
             own: float | None = None) -> None:
        out.setdefault(name, []).append(seconds)
        print(f"  {name}: {seconds * 1000:.0f} ms", file=sys.stderr, flush=True)
        if used is not None:
            cpu.setdefault(f"CPU: {name}", []).append(used)
        if own is not None:
            ui.setdefault(f"UI thread CPU: {name}", []).append(own)

    async def timed(pilot, name: str, key: str, done) -> None:  # type: ignore[no-untyped-def]
        """Wall seconds until ``done()``; the process's CPU seconds meanwhile (all threads:
        the UI's own when no worker runs) and the UI thread's own (the app and this loop
        run on it: what the key cost, whatever a worker did meanwhile)."""
        start, used, own = time.perf_counter(), time.process_time(), time.thread_time()
        app, before = pilot.app, pilot.app.last_key
        app.simulate_key(key)
        # Done: the effect on screen, and all the key set off settled (the key gate would
        # let the next key in), so that no part of its work is counted in the next key's.
        await _until(pilot, lambda: app.last_key != before and done() and not app.keys.busy)
        note(name, time.perf_counter() - start, time.process_time() - used,
             time.thread_time() - own)

    async def run() -> None:
        start = time.perf_counter()
        app = make_app(Engine.open(str(d), None))
        async with app.run_test(size=(120, 40)) as pilot:
            await _until(pilot, lambda: _painted(app))
            note("first paint (in process)", time.perf_counter() - start)
            sys.setswitchinterval(0.001)  # as the program's start-up does (startup.py)
            await _until(pilot, lambda: app.checks is not None, limit=300)
            note("health known (worker), from start", time.perf_counter() - start)
            await _until(pilot, lambda: app.search_index is not None, limit=300)
            note("search index ready (worker), from start", time.perf_counter() - start)
            await _until(pilot, lambda: app.engine._list_cache[0] is not None, limit=300)
            note("Topics/Brokers tables made (worker), from start",
                 time.perf_counter() - start)
            await pilot.pause(0.5)

            def tree() -> ImageTree | None:
                found = app.screen.query(ImageTree) if isinstance(app.screen, BrowserScreen) \
                    else []
                return found.first() if found else None

            def pane_shows(path: str | None) -> bool:
                """The detail pane shows ``path``, drawn (its view's body or table)."""
                if path is None or not isinstance(app.screen, BrowserScreen):
                    return False
                detail = app.screen.query_one(DetailPane)
                return detail.path == path and "view" in detail._rendered

            def cursor() -> str | None:
                t = tree()
                node = t.cursor_node if t is not None else None
                return node.data if node is not None else None

            await timed(pilot, "first t (the tree, its first node in the pane)", "t",
                        lambda: pane_shows(cursor()))
            topics = "/image/topics/byName"
            await app.jump(f"{topics}/topic-0001")
            await _until(pilot, lambda: pane_shows(f"{topics}/topic-0001"))
            await pilot.pause(0.3)
            for i in range(presses):
                before = cursor()
                await timed(pilot, "j/k over topics, the detail pane drawn",
                            "j" if i % 2 == 0 else "k",
                            lambda b=before: cursor() != b and pane_shows(cursor()))
            await timed(pilot, "/ opens the box with results", "slash",
                        lambda: isinstance(app.screen, SearchScreen)
                        and app.screen.query_one("#results").option_count > 0)
            typed = ""
            for ch in "topic-4242":
                typed += ch
                await timed(pilot, "a key typed in the search box", ch,
                            lambda t=typed: app.screen._last[0] == t)
            target = f"{topics}/topic-4242"
            await timed(pilot, "Enter: the jump to topic-4242, its pane drawn", "enter",
                        lambda: cursor() == target and pane_shows(target))
            await pilot.pause(0.3)
            await timed(pilot, "F opens the filter", "F",
                        lambda: app.screen.focused is not None
                        and app.screen.focused.id == "filter-input")
            typed = ""
            for ch in "42":
                typed += ch
                await timed(pilot, "a key typed in the Topics filter (5,000 names)", ch,
                            lambda t=typed: (tree() is not None
                                             and tree().filters.get(topics) == t))
            await timed(pilot, "Esc: the filter cleared, the cursor back on topic-4242",
                        "escape", lambda: cursor() == target and not tree().filters)
            await pilot.pause(0.3)
            began = time.perf_counter()
            await app.jump(topics)
            await _until(pilot, lambda: bool(app.screen.query("#view-table"))
                         and app.screen.query_one("#view-table").row_count > 0, limit=300)
            note("Topics node: its table shown (made already)", time.perf_counter() - began)
            await app.jump(target)
            await pilot.pause(0.3)
            said = len(app._notifications)
            # (A re-read publishes a new image even when nothing is new: the tables are
            # made again for it when next shown.)
            await timed(pilot, "r with nothing new (notification shown)", "r",
                        lambda: len(app._notifications) > said)
            await pilot.pause(0.3)
            await app.jump(topics)
            await _until(pilot, lambda: app.screen.query_one("#view-table").row_count > 0,
                         limit=300)
            building = {"on": True}

            def busy() -> None:  # the tables' work as the background does it, again
                while building["on"]:
                    app.engine._list_cache = (None, {}, [])
                    app.engine.list_tables(app.background.pause)

            app.run_worker(busy, thread=True)
            await pilot.pause(0.2)
            await app.jump(f"{topics}/topic-0001")
            await _until(pilot, lambda: pane_shows(f"{topics}/topic-0001"))
            for i in range(presses):
                before = cursor()
                await timed(pilot, "j/k while the tables are made again (pane drawn)",
                            "j" if i % 2 == 0 else "k",
                            lambda b=before: cursor() != b and pane_shows(cursor()))
            building["on"] = False
    asyncio.run(run())
    return out | cpu | ui


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
    cpu("health checks", eng.checks)
    cpu("Topics and Brokers tables (one pass)", lambda: eng.list_table("/image/topics/byName"))
    cpu("a page of the Topics filter ('42')",
        lambda: eng.page("/image/topics/byName", 0, 300, "42"))
    cpu("r with nothing new", eng.reread)
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--only-keys", action="store_true", help="only the key-latency figure")
    p.add_argument("--start", metavar="SIZE", help="only the start in tmux (bytecode cached) "
                   "on a generated directory, e.g. 500k: first frame, Textual's loading "
                   "screen, the overview, wall and CPU")
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
    if ns.start:
        big = generate(out, ns.start)
        runs = [t for t in (first_paint_tmux(big) for _ in range(ns.runs)) if t]
        names = ["overview", "CPU to the overview", "first frame", "Textual's loading screen",
                 "CPU to Textual's loading screen"]
        for i, name in enumerate(names):
            values = sorted(t[i] * 1000 for t in runs)
            print(f"{name:34s} " + " ".join(f"{v:4.0f}" for v in values) + " ms  (median "
                  f"{statistics.median(values):.0f})")
        print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
        return
    if ns.only_keys:
        for size in ("100k", "500k"):
            for sliced in (False, True):
                keys = key_while_loading(generate(out, size), sliced=sliced)
                print(f"{size}, the loader's calls {'bounded' if sliced else 'whole'}: "
                      f"median {statistics.median(keys) * 1000:.0f} ms, "
                      f"max {max(keys) * 1000:.0f} ms")
        return
    dirs = [("100k partitions", generate(out, "100k"), "1.0 s"),
            ("500k partitions", generate(out, "500k"), "1.5 s")]
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
                report(f"  first screen (loading or overview), {label} ({how})",
                       [t[2] for t in tm if t], "0.2 s")
                seen = [t for t in tm if t and t[3] == t[3]]
                if seen:
                    report(f"  Textual's loading screen, {label} ({how})",
                           [t[3] for t in seen], "-")
                    report(f"  CPU to Textual's loading screen, {label} ({how})",
                           [t[4] for t in seen], "-")
    big = big_topic_dir(out)
    report("expand a 10k-partition topic", [expand(big) for _ in range(ns.runs)], "0.3 s")
    keys = key_while_loading(dirs[-2][1])
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
