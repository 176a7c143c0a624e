"""Time travel: the image as of any offset (``at``) and what changed between two (``diff``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from ..problems import Problem
from ..session import Loaded, unusable
from ..tree.node import Node, RenderOptions
from ..tree.paths import absolute, join, lookup, unescape
from ..tree.printer import tree_data
from . import results as res
from .base import ArgParser, CommandError, Result, UsageError, command
from .results import DiffEntry
from .shell import Shell

LATEST = ("latest", "end", "now")
EARLIEST = ("earliest", "start")


def is_position(text: str) -> bool:
    """True when ``text`` reads as an offset, a time, 'earliest' or 'latest'."""
    from ..source.batchscan import parse_time

    low = text.lower()
    if low in LATEST or low in EARLIEST or parse_time(text) is not None:
        return True
    try:
        int(text)
    except ValueError:
        return False
    return True


def parse_offset(shell: Shell, text: str) -> int | None:
    """An offset the data can rebuild, ``None`` for latest (see :func:`resolve`)."""
    return resolve(shell, text)[0]


def resolve(shell: Shell, text: str) -> tuple[int | None, str | None]:
    """An offset the data can rebuild (``None``: latest) and, for a time, how it was chosen.
    A time (ISO 8601, UTC without a zone) means the image just before the first record
    written after it (:func:`_offset_of_time`). Offsets the data cannot rebuild
    (:mod:`mdshell.session.rebuild`) are refused with the nearest ones that can be: the one
    rule of ``at``, ``diff``, ``--at`` and the TUI's time travel."""
    from ..source.batchscan import parse_time

    low = text.lower()
    if low in LATEST:
        return None, None
    session = shell.session
    can, end = session.rebuildable(), session.offset_range()[1]
    if low in EARLIEST:
        if can.first is None:
            raise CommandError("the log is empty")
        return _or_latest(can.first, end), None
    how = None
    ms = parse_time(text)
    if ms is not None:
        offset, how = _offset_of_time(shell, text, ms)
    else:
        try:
            offset = int(text)
        except ValueError:
            raise UsageError(f"{text!r} is not an offset (a number, a time such as "
                             "2025-01-16T04:00Z, 'earliest' or 'latest')") from None
    if offset < 0:
        raise UsageError(f"offset {offset}: offsets are 0 or more (a number, a time, "
                         "'earliest' or 'latest')")
    if can.first is None or end is None:
        raise CommandError("the log is empty: there is no offset to travel to")
    if offset > end:
        raise CommandError(_beyond_end(shell, offset, end, can.text()))
    if offset < can.first:
        raise CommandError(f"offset {offset} is before the oldest data (offsets {can.text()} "
                           f"can be rebuilt: the log before offset {can.first} was deleted "
                           "after a snapshot, or not copied)")
    if not can.covers(offset):
        raise CommandError(f"offset {offset} cannot be rebuilt: {can.why_not(offset)}")
    return _or_latest(offset, end), how


def _beyond_end(shell: Shell, offset: int, end: int, spans: str) -> str:
    """Why an offset after what the latest load reached cannot be rebuilt."""
    stop = shell.session.stopped_by()
    if stop is not None:
        return _beyond_damage(offset, stop, end, spans)
    lost = [c for c in shell.session.source.snapshots()
            if c.path in unusable(shell.session.latest) and c.end_offset - 1 >= offset]
    if lost:
        return (f"offset {offset} cannot be rebuilt: snapshot {lost[0].name} is not usable "
                f"and no log reaches past offset {end} (offsets {spans} can be rebuilt; see "
                "the warnings)")
    return (f"offset {offset} is after the end of the log (offsets {spans} can be "
            f"rebuilt){_as_epoch(offset)}")


# Epoch times Kafka's tools take (kafka-get-offsets --time): 2001-09-09 to 2286-11-20.
_EPOCH_MS = range(10**12, 10**13)
_EPOCH_S = range(10**9, 10**10)


def _as_epoch(offset: int) -> str:
    """For an offset far past the log that reads as a time in epoch milliseconds or
    seconds, what time that is and how to give it (empty otherwise)."""
    import datetime as dt

    if offset in _EPOCH_MS:
        when, unit = dt.datetime.fromtimestamp(offset / 1000, dt.UTC), "milliseconds"
        text = when.isoformat(timespec="milliseconds")
    elif offset in _EPOCH_S:
        when, unit = dt.datetime.fromtimestamp(offset, dt.UTC), "seconds"
        text = when.isoformat(timespec="seconds")
    else:
        return ""
    iso = text.replace("+00:00", "Z")
    return f"; if it is a time in epoch {unit}, give it in ISO 8601: {iso}"


def _or_latest(offset: int, end: int | None) -> int | None:
    return None if offset == end else offset


def _offset_of_time(shell: Shell, text: str, ms: int) -> tuple[int, str]:
    """The image as of a time, by one rule (Kafka's offsetsForTimes): the newest offset that
    can be rebuilt before the first record stamped after ``ms``, walking the data in offset
    order (the snapshots below the log by the time of their last record, then the log's
    batches by their max timestamp). Every record in that image was stamped at or before
    ``ms``, even where a clock stepped back: a batch stamped earlier that comes after one
    stamped later is left out with it."""
    from ..source.batchscan import offset_at_time, snapshot_points
    from ..tree.javafmt import iso_zoned_utc

    source = shell.session.source
    can = shell.session.rebuildable()
    point = offset_at_time(source, ms)
    segments = source.segments()
    log_first = segments[0].base_offset if segments else None
    snaps = [p for p in snapshot_points(source) if p.time_ms is not None]
    cut, after = None, False  # the last offset allowed; a snapshot below the log is after
    for p in sorted(snaps, key=lambda p: p.offset):
        if log_first is not None and p.offset >= log_first:
            break  # the log's own times decide from there
        if p.time_ms is not None and p.time_ms > ms:
            after = True
            break
        cut = p.offset
    if not after and point.offset is not None:
        cut = point.offset
    newest = can.at_or_below(cut) if cut is not None else None
    if newest is not None:
        how = ("the last record before the first one written after that time"
               if newest == point.offset
               else "the newest snapshot before the first record written after that time"
               if newest in can.snapshots
               else "the newest offset the data can rebuild before the first record written "
                    "after that time")
        return newest, how
    if point.first_time is None and not snaps:
        raise CommandError(f"{text}: the log has no batches to date")
    times = [t for t in (point.first_time, *(p.time_ms for p in snaps)) if t is not None]
    raise CommandError(f"{text} is before the oldest data (written from "
                       f"{iso_zoned_utc(min(times))}; 'at earliest' shows the oldest image "
                       "there is)")


def load_at(shell: Shell, offset: int | None) -> Loaded:
    """The image as of ``offset``; refused when damage before it stops the replay, or the
    data read does not reach it (the image would claim an offset it does not reach)."""
    loaded = shell.session.load_at(offset)
    if offset is not None:
        stop = shell.session.damage_before(loaded, offset)
        if stop is not None:
            raise CommandError(_beyond_damage(offset, stop, loaded.image.provenance.offset))
        if loaded.end_offset is not None and loaded.end_offset < offset:
            known = {p.message for p in shell.session.latest.problems}
            why = next((f": {p.message}" for p in loaded.problems if p.message not in known), "")
            raise CommandError(f"offset {offset} cannot be rebuilt: the data read reaches "
                               f"offset {loaded.end_offset} only{why}")
    return loaded


def _beyond_damage(offset: int, stop: Problem, reach: int, spans: str | None = None) -> str:
    where = os.path.basename(stop.file or "?")
    span = f" (offsets {spans} can be rebuilt)" if spans is not None else ""
    return (f"offset {offset} cannot be rebuilt: the data is damaged at offset {stop.offset} "
            f"({where}), so the image stops at offset {reach}; travel to an offset up to "
            f"{reach}{span}; see the warnings")


@command("at", "Show the whole tree as of an offset or a time ('at latest' goes back).",
         "at OFFSET|TIME|earliest|latest", args=("=earliest|latest", ""),
         details="Rebuilds the image from the newest snapshot at or before OFFSET plus the "
                 "log up to OFFSET; an offset the data cannot rebuild (between snapshots "
                 "whose log is gone, after a missing segment) is refused, naming the "
                 "nearest that can be. TIME (ISO 8601: 2025-01-16T04:00Z, UTC without a "
                 "zone) means the image just before the first record written after it, in "
                 "log order (Kafka's offsetsForTimes rule; batch timestamps, or a "
                 "snapshot's last record below the log): every record in it was written at "
                 "or before TIME, even where a clock stepped back. /local/atOffset shows "
                 "where you are.")
def at(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("at", "at OFFSET|TIME|earliest|latest")
    p.add_argument("offset")
    ns = p.parse_args(args)
    offset, how = resolve(shell, ns.offset)
    session = shell.session
    moved = session.set_loaded(load_at(shell, offset))
    prov = session.loaded.image.provenance
    asked = ns.offset if how is not None else None
    # Problems of the data read for this offset that the latest load did not meet (older
    # snapshots, segments below the newest one).
    known = {p.message for p in session.latest.problems}
    fresh = [p.message for p in session.loaded.problems if p.message not in known]
    return Result(warnings=fresh, value=res.Moved(offset, session.cwd, prov.offset, prov.epoch,
                                                  prov.time_ms, asked, how, moved))


# id(ident a), id(ident b) -> (ident a, ident b, the path diffed, its changes): the same pair
# of image objects under another path (a topic under byId and byName) is diffed once.
DiffMemo = dict[tuple[int, int], tuple[object, object, str, list[DiffEntry]]]


def diff_nodes(a: Node | None, b: Node | None, path: str,
               opts: RenderOptions, memo: DiffMemo | None = None) -> Iterator[DiffEntry]:
    """Differences between two trees, top-most added/removed nodes and changed leaves."""
    if memo is None:
        memo = {}
    if a is None and b is None:
        return
    if a is None:
        assert b is not None
        yield DiffEntry("added", path, after=tree_data(b, opts), after_text=_text(b, opts))
        return
    if b is None:
        yield DiffEntry("removed", path, before=tree_data(a, opts), before_text=_text(a, opts))
        return
    same, other = a.ident(), b.ident()
    if same is not None and same is other:
        return  # images share what did not change
    if a.is_dir and b.is_dir and same is not None and other is not None:
        seen = memo.get((id(same), id(other)))
        if seen is not None and seen[0] is same and seen[1] is other:
            done = len(seen[2])
            for c in seen[3]:
                yield c._replace(path=path + c.path[done:])
            return
        found: list[DiffEntry] = []
        memo[(id(same), id(other))] = (same, other, path, found)
        for c in _diff_dirs(a, b, path, opts, memo):
            found.append(c)
            yield c
        return
    if a.is_dir and b.is_dir:
        yield from _diff_dirs(a, b, path, opts, memo)
        return
    if not a.is_dir and not b.is_dir:
        ka, kb = a.key(), b.key()
        if ka is not None and ka == kb:
            return
        if a.text(_REVEAL) == b.text(_REVEAL):
            return
        ta, tb = a.text(opts), b.text(opts)
        yield DiffEntry("changed", path, a.data(opts), b.data(opts), ta, tb, secret=ta == tb)
        return
    yield DiffEntry("changed", path, tree_data(a, opts), tree_data(b, opts), _text(a, opts),
                 _text(b, opts))


def _diff_dirs(a: Node, b: Node, path: str, opts: RenderOptions,
               memo: DiffMemo) -> Iterator[DiffEntry]:
    changed = a.changed_names(b)  # known cheaply: no need to look at every child
    names = sorted(set(a.names()) | set(b.names())) if changed is None else sorted(changed)
    for name in names:
        same = a.child_ident(name) if changed is None else None
        if same is not None and same is b.child_ident(name):
            continue  # shared by both images: unchanged
        ca, cb = a.child(name), b.child(name)
        sub = path + name if path.endswith("/") else f"{path}/{name}"
        yield from diff_nodes(ca, cb, sub, opts, memo)


_REVEAL = RenderOptions(show_secrets=True)  # compare real values; print per the user's choice


def _text(node: Node, opts: RenderOptions) -> str | None:
    return node.text(opts) if not node.is_dir else None


def _root(loaded: Loaded, shell: Shell) -> Node:
    return shell.session.root_of(loaded)


def _exact(shell: Shell, path: str) -> list[str]:
    """The names of the node ``path`` names: ``diff`` takes no glob, and a ``\\`` before a
    character (``*``, ``[``, ``/`` in a name) is undone, as ``ls`` and ``cat`` read it."""
    return [unescape(c) for c in absolute(shell.session.cwd_pattern, path)]


@command("diff", "Show what changed in the tree between two offsets or times.",
         "diff OFFSET_A OFFSET_B [PATH]",
         args=("=earliest|latest", "=earliest|latest", "path", ""),
         details="OFFSET_A and OFFSET_B are offsets, times (ISO 8601, as `at` reads them: "
                 "2025-01-16T04:00Z is the image just before the first record written after "
                 "it), 'earliest' or 'latest'. PATH (default /image) limits the comparison. "
                 "Added and removed nodes are shown at their top-most path; changed leaves "
                 "show the fields that differ. With several nodes' directories (-d once per "
                 "node): diff --node A --node B [--at OFFSET|TIME] [PATH] compares two nodes' "
                 "images, at their ends or both at one offset.",
         options=("--node", "--at"))
def diff(shell: Shell, args: list[str]) -> Result:
    if "--node" in args:
        return _node_diff(shell, args)
    p = ArgParser("diff", "diff OFFSET_A OFFSET_B [PATH]")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("path", nargs="?", default="/image")
    ns = p.parse_args(args)
    oa, ob = parse_offset(shell, ns.a), parse_offset(shell, ns.b)
    comps = _exact(shell, ns.path)
    if not comps or comps[0] != "image":
        raise CommandError(f"{ns.path}: diff compares the image: give a path under /image")
    la, lb = load_at(shell, oa), load_at(shell, ob)
    na, nb = lookup(_root(la, shell), comps), lookup(_root(lb, shell), comps)
    if na is None and nb is None:
        raise CommandError(f"{join(comps)}: No such file or directory at either offset.")
    return Result(value=res.Diff(oa, ob, join(comps), la.image.provenance.offset,
                                 lb.image.provenance.offset,
                                 _Changes(na, nb, join(comps), shell.opts, la, lb)))


NODE_USAGE = "diff --node A --node B [--at OFFSET|TIME] [PATH]"


def _node_diff(shell: Shell, args: list[str]) -> Result:
    """Two nodes' images (``-d`` once per node), at their ends or both at one offset."""
    from .nodescmd import node_shells

    p = ArgParser("diff", NODE_USAGE)
    p.add_argument("--node", action="append", required=True)
    p.add_argument("--at")
    p.add_argument("path", nargs="?", default="/image")
    ns = p.parse_args(args)
    if len(ns.node) != 2:
        raise UsageError(f"diff: give --node twice, the two nodes to compare (usage: "
                         f"{NODE_USAGE})")
    (name_a, sa), (name_b, sb) = node_shells(shell, ns.node)
    oa = parse_offset(sa, ns.at) if ns.at is not None else None
    ob = parse_offset(sb, ns.at) if ns.at is not None else None
    comps = _exact(shell, ns.path)
    if not comps or comps[0] != "image":
        raise CommandError(f"{ns.path}: diff compares the image: give a path under /image")
    la, lb = load_at(sa, oa), load_at(sb, ob)
    na, nb = lookup(_root(la, sa), comps), lookup(_root(lb, sb), comps)
    if na is None and nb is None:
        raise CommandError(f"{join(comps)}: No such file or directory on either node.")
    return Result(value=res.Diff(oa, ob, join(comps), la.image.provenance.offset,
                                 lb.image.provenance.offset,
                                 _Changes(na, nb, join(comps), shell.opts, la, lb),
                                 name_a, name_b))


class _Changes(Iterable[DiffEntry]):
    """The changes between two trees, found as they are printed (text or JSON), never all
    held: iterating again finds them again."""

    def __init__(self, a: Node | None, b: Node | None, path: str, opts: RenderOptions,
                 la: Loaded, lb: Loaded) -> None:
        self.a, self.b, self.path, self.opts, self.la, self.lb = a, b, path, opts, la, lb

    def __iter__(self) -> Iterator[DiffEntry]:
        for c in diff_nodes(self.a, self.b, self.path, self.opts):
            yield c._replace(topic=_topic_name(c.path, self.la, self.lb))


def _topic_name(path: str, la: Loaded, lb: Loaded) -> str | None:
    """The topic's name for a path under ``/image/topics/byId/<id>``, else None."""
    from ..wire.primitives import uuid_from_str

    parts = path.split("/")
    if len(parts) < 5 or parts[1:4] != ["image", "topics", "byId"]:
        return None
    try:
        tid = uuid_from_str(parts[4])
    except ValueError:
        return None
    topic = lb.image.topics_by_id.get(tid) or la.image.topics_by_id.get(tid)
    return None if topic is None else topic.name
