"""What the readers owe each input, and the findings when they do not deliver.

The rules (each finding names the class of issue 31 it belongs to):

- **Bounded** (classes 1, 2, 3). Every reader of a case together finishes within the CPU
  bound of the pool (a worker past it is a *hang*: class 1, or class 3 when its stack is in
  a search that grows with the bytes) and the resident-memory bound (class 2 when a
  compressed payload was hit, else class 1: a loop that allocates). A reader that finishes
  must stay linear: CPU within ``CPU_FIXED + CPU_PER_BYTE * bytes`` and peak memory within
  ``MEM_FIXED + MEM_PER_BYTE * bytes`` (class 3 / 2).
- **No internal error** (class 4): every exception a file's bytes can cause is a named
  problem; an exception that escapes the CLI (run with ``--debug``), the library load or
  Spark's reader is a finding, with where it was raised. A worker that dies (an abort, a
  sanitizer report) is one too (``crash``).
- **Compiled and pure agree** (class 5): the same exit code, stdout, stderr and structured
  result from every reader, whether the compiled pieces are used or ``MDSHELL_PURE=1``.
- **Whole batches** (class 6): when the load of one file (``-s``) stops at a damaged batch
  (CRC, truncation, records that do not decode) at byte P, its image equals the image of the
  file cut at byte P (the valid prefix), offset included.
- **Readers agree** (class 7), by Kafka's rules (one framing, one replay). Kafka reads a
  metadata batch with raft's ``RecordsIterator`` (the log, snapshots, its shell): the CRC
  checked, ``count`` records each framed as ``0 < length <= batch size``, a timestamp delta
  of 0, an offset delta read and ignored (a batch's records are numbered from its base
  offset), no key on a data record (a control record's key there and not empty), a value
  there and not empty, a header count of 0; int32 varints of at most 5 bytes. A batch is
  taken whole or refused whole. So:
  ``records`` and the load read the same batches of a file: the first batch that stops
  ``records`` (``iter_log``) is the one that stops the load, with the same code, offset
  and byte;
  ``-s FILE`` and ``-d`` on a directory holding that file alone replay the same batches of a
  segment: the same image, offset and stopping damage (``-d`` may add that the log does not
  start at offset 0); for a snapshot, ``-d`` uses it exactly when ``-s`` finds it whole;
  a one-shot ``changes`` (records picked by the byte sieve) prints what ``changes`` prints
  after a whole load (``--at latest``); Spark's fast reader, when it takes a file, gives the
  rows of the shell's reader and takes no file the shell's reader warns about.
- **The verdict tells** (``verdict``): ``health`` gives the verdict the image has once
  every record of it was read (``tree /image`` in the line shell, then ``health``); damage
  a reader can always detect (a CRC that does not match, a batch cut short, garbage after
  the last batch) that changes the image makes the verdict not complete; a damaged verdict
  names the damaged file or an offset.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from typing import Any

from .pool import Killed
from .readers import Run

CPU_FIXED = 2.0  # seconds, per reader
CPU_PER_BYTE = 20e-6  # seconds per input byte (clean inputs read at ~1 µs a byte)
MEM_FIXED = 192 << 20
MEM_PER_BYTE = 64
STOPS = {"crc", "truncated", "corrupt"}
CLASSES = {
    "1": "loops that make no progress",
    "2": "decompression without a bound",
    "3": "work that grows faster than the bytes",
    "4": "internal errors",
    "5": "int64 overflow; compiled and pure paths disagree",
    "6": "a half-applied batch",
    "7": "readers that disagree",
    "verdict": "a verdict that does not tell",
    "crash": "a worker that died",
}


@dataclass(frozen=True)
class Finding:
    cls: str  # a key of CLASSES
    kind: str  # short, stable: what went wrong ("hang", "internal", "d-vs-s image"...)
    reader: str  # which reader (and mode)
    detail: str

    def key(self) -> tuple[str, str, str]:
        """What makes two findings the same bug (for grouping)."""
        return self.cls, self.kind, self.reader.split("/")[0]


Results = dict[str, Run] | Killed


def judge(target: str, tags: frozenset[str], size: int, results: dict[str, Results],
          baseline: dict[str, dict[str, Run]] | None) -> list[Finding]:
    """The findings of one case whose mutated file is ``target`` (``size`` bytes):
    ``results`` maps a mode (compiled, pure...) to its runs by reader, or to why its worker
    gave none; ``baseline`` the same for the unmutated seed."""
    out: list[Finding] = []
    done: dict[str, dict[str, Run]] = {}
    for mode, res in results.items():
        if isinstance(res, Killed):
            out.append(_killed(mode, res, tags))
        else:
            done[mode] = res
            out += _bounds(mode, res, tags, size)
            out += _internal(mode, res)
    modes = sorted(done)
    for a, b in itertools.pairwise(modes):
        out += _same(a, done[a], b, done[b])
    for mode in modes[:1]:  # the rules below judge the readers, not the build
        runs = done[mode]
        out += _prefix(mode, runs)
        out += _records_vs_load(mode, runs)
        out += _file_vs_directory(mode, runs, ".checkpoint" in target)
        out += _changes(mode, runs)
        out += _spark(mode, runs)
        out += _verdict(mode, runs, tags, baseline.get(mode) if baseline else None)
    if "overflow" in tags:  # offsets near the int64 edge: what goes wrong is class 5's
        out = [replace(f, cls="5", kind=f"{f.kind} (offsets past int64)")
               if f.cls in ("4", "6", "7", "verdict") else f for f in out]
    return out


def _killed(mode: str, k: Killed, tags: frozenset[str]) -> Finding:
    where = _stack_where(k.stack)
    if k.why == "time":
        cls = ("3" if "true_end" in k.stack else
               "2" if "decompress" in k.stack or "compressed" in tags else "1")
        return Finding(cls, "hang", f"{k.reader}/{mode}",
                       f"killed after {k.cpu:.1f} s CPU (rss {k.rss >> 20} MiB) in {where}")
    if k.why == "memory":
        cls = "2" if "compressed" in tags or "decompress" in k.stack else "1"
        return Finding(cls, "memory", f"{k.reader}/{mode}",
                       f"killed at {k.rss >> 20} MiB resident in {where}")
    sanitizer = re.search(r"(AddressSanitizer|runtime error|LeakSanitizer)[^\n]*", k.stack)
    if sanitizer:
        return Finding("crash", "sanitizer", f"{k.reader}/{mode}", sanitizer.group(0)[:300])
    cls = "2" if "bomb" in tags or "memory allocation" in k.stack else "crash"
    return Finding(cls, "died", f"{k.reader}/{mode}", f"{k.why}: {k.stack[-600:]}")


def _stack_where(stack: str) -> str:
    """The innermost mdshell frames of a faulthandler dump of the main thread."""
    block = stack.split("Thread 0x")
    main = next((b for b in block if "most recent call first" in b and "mdshell" in b),
                stack)
    frames = re.findall(r'File "[^"]*/mdshell/([^"]+)", line (\d+) in (\w+)', main)
    return "; ".join(f"{f}:{n} {fn}" for f, n, fn in frames[:3]) or "(no mdshell frame)"


def _bounds(mode: str, runs: dict[str, Run], tags: frozenset[str],
            size: int) -> list[Finding]:
    """Readers past the linear bounds: one finding for time and one for memory per case
    (the first reader past it named, the others counted)."""
    slow = [r for r in runs.values() if r.cpu > CPU_FIXED + CPU_PER_BYTE * size]
    big = [r for r in runs.values() if r.peak > MEM_FIXED + MEM_PER_BYTE * size]
    out = []
    if slow:
        r = max(slow, key=lambda r: r.cpu)
        out.append(Finding("3", "slow", f"{r.reader}/{mode}",
                           f"{r.cpu:.2f} s CPU for {size} bytes ({len(slow)} readers past "
                           f"{CPU_FIXED} s + {CPU_PER_BYTE * 1e6:.0f} µs a byte)"))
    if big:
        r = max(big, key=lambda r: r.peak)
        cls = "2" if "compressed" in tags else "1"
        out.append(Finding(cls, "memory", f"{r.reader}/{mode}",
                           f"peak {r.peak >> 20} MiB above the start for {size} bytes "
                           f"({len(big)} readers past {MEM_FIXED >> 20} MiB + "
                           f"{MEM_PER_BYTE} bytes a byte)"))
    return out


def _internal(mode: str, runs: dict[str, Run]) -> list[Finding]:
    """One finding per distinct internal error of a case (the readers that met it named)."""
    seen: dict[str, list[str]] = {}
    for r in runs.values():
        if r.internal:
            what = r.exc or ""
        elif "internal error" in r.err or "Traceback" in r.err:
            what = r.err.strip().splitlines()[-1][-300:]
        else:
            continue
        seen.setdefault(what, []).append(r.reader)
    return [Finding("4", "internal", f"{readers[0]}/{mode}",
                    f"{what} (readers: {', '.join(readers)})")
            for what, readers in seen.items()]


def _same(a: str, ra: dict[str, Run], b: str, rb: dict[str, Run]) -> list[Finding]:
    out = []
    for name in sorted(set(ra) | set(rb)):
        x, y = ra.get(name), rb.get(name)
        if x is None or y is None:
            out.append(Finding("5", "ran", name, f"ran only in {a if x else b}"))
            continue
        for what in ("rc", "out", "err", "exc", "data"):
            u, v = getattr(x, what), getattr(y, what)
            if what == "exc" and u and v:
                u, v = u.split(" [")[0], v.split(" [")[0]
            if u != v:
                out.append(Finding("5", f"{what} differs", name,
                                   f"{a}: {_show(u)} | {b}: {_show(v)}"))
                break
    return out


def _show(v: Any) -> str:
    text = repr(v) if not isinstance(v, str) else v
    return text if len(text) < 400 else _diff_hint(text)


def _diff_hint(text: str) -> str:
    return text[:200] + f" ...({len(text)} chars)"


def _first_diff(a: str, b: str) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb, strict=False)):
        if x != y:
            return f"line {i + 1}: {x.strip()[:150]!r} vs {y.strip()[:150]!r}"
    return f"{len(la)} vs {len(lb)} lines"


def _prefix(mode: str, runs: dict[str, Run]) -> list[Finding]:
    cut, whole = runs.get("prefix.tree"), runs.get("s.tree")
    stop = runs.get("s.stop")
    if cut is None or whole is None or stop is None or cut.exc or whole.exc:
        return []
    out = []
    if cut.out != whole.out:
        out.append(Finding("6", "not the valid prefix", f"s.tree/{mode}",
                           f"stopped by {stop.data}: the image differs from the file cut "
                           f"there: {_first_diff(whole.out, cut.out)}"))
    a, b = runs.get("s.health"), runs.get("prefix.health")
    if a and b and a.data and b.data and a.data["offset"] != b.data["offset"]:
        out.append(Finding("6", "offset past the valid prefix", f"s.health/{mode}",
                           f"stopped by {stop.data}: offset {a.data['offset']}, the file cut "
                           f"there gives {b.data['offset']}"))
    return out


def _records_vs_load(mode: str, runs: dict[str, Run]) -> list[Finding]:
    """``records`` and the load read a file through one stream and one decoding: they stop
    at the same batch (code, offset and byte), so ``records`` lists only what the load read
    (offsets alone cannot tell: a metadata transaction left open holds records the image
    does not apply yet, and a snapshot's or a damaged segment's batches repeat offsets)."""
    stop, scan = runs.get("s.stop"), runs.get("s.logscan")
    if not stop or not scan or stop.exc or scan.exc or scan.data is None:
        return []
    load_stop = stop.data and (stop.data[0], stop.data[2], stop.data[1])
    scan_stop = scan.data["stop"] and tuple(scan.data["stop"])
    if load_stop != scan_stop:
        return [Finding("7", "records vs load: where reading stops", f"s.logscan/{mode}",
                        f"the load stops at {load_stop}, records at {scan_stop} "
                        "(code, offset, byte)")]
    return []


_DAMAGE = {"crc", "truncated", "corrupt", "header", "gap", "epoch", "overlap"}


def _stops(v: dict[str, Any]) -> list[tuple[str, int | None]]:
    return sorted({(c, off) for c, _, off in v["problems"] if c in _DAMAGE},
                  key=repr)


def _file_vs_directory(mode: str, runs: dict[str, Run], snapshot: bool) -> list[Finding]:
    s_h, s_t = runs.get("s.health"), runs.get("s.tree")
    d_h = runs.get("one.health") or runs.get("d.health")
    d_t = runs.get("one.tree") or runs.get("d.tree")
    if not (s_h and s_t and d_h and d_t) or s_h.exc or d_h.exc or not s_h.data \
            or not d_h.data:
        return []
    out = []
    if snapshot:
        used, stop = runs.get("one.load"), runs.get("s.stop")
        if not used or not used.data or not stop or stop.exc:
            return out
        if stop.data is not None:
            out.append(Finding("7", "-d vs -s: a damaged snapshot used", f"one.load/{mode}",
                               f"-s stops at {stop.data} in the snapshot, -d uses it"))
        elif _no_provenance(s_t.out) != _no_provenance(d_t.out):
            out.append(Finding("7", "-d vs -s: a snapshot's image", f"one.tree/{mode}",
                               "-d uses the snapshot -s reads whole, and shows another "
                               "image: " + _first_diff(s_t.out, d_t.out)))
        return out
    if s_t.out != d_t.out and not d_t.exc:
        out.append(Finding("7", "-d vs -s: image", f"one.tree/{mode}",
                           _first_diff(s_t.out, d_t.out)))
    elif s_h.data["offset"] != d_h.data["offset"]:
        out.append(Finding("7", "-d vs -s: offset", f"one.health/{mode}",
                           f"-s {s_h.data['offset']}, -d {d_h.data['offset']}"))
    if _stops(s_h.data) != _stops(d_h.data):
        out.append(Finding("7", "-d vs -s: damage", f"one.health/{mode}",
                           f"-s {_stops(s_h.data)}, -d {_stops(d_h.data)}"))
    return out


def _no_provenance(text: str) -> str:
    return re.sub(r"provenance:\n( .*\n)*", "", text)


def _changes(mode: str, runs: dict[str, Run]) -> list[Finding]:
    a, b = runs.get("d.changes"), runs.get("d.changes-full")
    if not a or not b or a.exc or b.exc:
        return []
    if a.out != b.out or a.rc != b.rc:
        return [Finding("7", "changes: sieve vs whole load", f"d.changes/{mode}",
                        f"rc {a.rc} vs {b.rc}: {_first_diff(a.out, b.out)}")]
    return []


def _spark(mode: str, runs: dict[str, Run]) -> list[Finding]:
    r = runs.get("spark")
    if not r or r.exc or not r.data:
        return []
    return [Finding("7", "spark vs shell", f"spark/{mode}", "; ".join(r.data))]


def _verdict(mode: str, runs: dict[str, Run], tags: frozenset[str],
             baseline: dict[str, Run] | None) -> list[Finding]:
    out = []
    for tag in ("d", "s"):
        h, t = runs.get(f"{tag}.health"), runs.get(f"{tag}.tree")
        if not h or not t or not h.data:
            continue
        seen = runs.get(f"{tag}.script")
        if seen and seen.data and (h.data["state"] != seen.data[-1]):
            out.append(Finding("verdict", "verdict changes once the image is read",
                               f"{tag}.script/{mode}",
                               f"health says {h.data['state']}; after tree /image the "
                               f"verdict is {seen.data[-1]}"))
        if h.data["state"] == "damaged" and not any(
                f or (off is not None and off >= 0) for _, f, off in h.data["problems"]):
            out.append(Finding("verdict", "unnamed damage", f"{tag}.health/{mode}",
                               f"no problem names a file or an offset: {h.data['problems']}"))
        if "detectable" not in tags or baseline is None:
            continue
        base = baseline.get(f"{tag}.tree")
        if base is not None and t.out != base.out and h.data["state"] == "complete":
            out.append(Finding("verdict", "silent damage", f"{tag}.health/{mode}",
                               "the image changed and the verdict is complete: "
                               + _first_diff(base.out, t.out)))
    return out
