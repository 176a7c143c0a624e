"""Time travel: the image as of any offset (``at``) and what changed between two (``diff``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..session import Loaded
from ..tree.node import Node, RenderOptions
from ..tree.paths import absolute, join, lookup
from .base import ArgParser, CommandError, Result, command
from .navigate import tree_data
from .shell import Shell

LATEST = ("latest", "end", "now")
EARLIEST = ("earliest", "start")


def parse_offset(shell: Shell, text: str) -> int | None:
    """An offset the source can rebuild, ``None`` for latest; errors name the valid range."""
    first, last = shell.session.offset_range()
    if text.lower() in LATEST:
        return None
    if text.lower() in EARLIEST:
        if first is None:
            raise CommandError("the log is empty")
        return first
    try:
        offset = int(text)
    except ValueError:
        raise CommandError(f"{text!r} is not an offset (a number, 'earliest' or "
                           "'latest')") from None
    if first is None or last is None:
        raise CommandError("the log is empty: there is no offset to travel to")
    if offset > last:
        raise CommandError(f"offset {offset} is after the end of the log (offsets "
                           f"{first}-{last} can be rebuilt)")
    if offset < first:
        raise CommandError(f"offset {offset} is before the oldest data (offsets {first}-{last} "
                           "can be rebuilt: older records were deleted after a snapshot)")
    return None if offset == last else offset


def load_at(shell: Shell, offset: int | None) -> Loaded:
    return shell.session.load_at(offset)


@command("at", "Show the whole tree as of an offset ('at latest' goes back).",
         "at OFFSET|earliest|latest",
         details="Rebuilds the image from the newest snapshot at or before OFFSET plus the "
                 "log up to OFFSET. /local/atOffset shows where you are.")
def at(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("at", "at OFFSET|earliest|latest")
    p.add_argument("offset")
    ns = p.parse_args(args)
    offset = parse_offset(shell, ns.offset)
    moved = shell.set_loaded(load_at(shell, offset))
    prov = shell.loaded.image.provenance
    where = "latest" if offset is None else f"offset {offset}"
    text = [f"image as of {where} (last applied: offset {prov.offset}, epoch {prov.epoch})"]
    if moved is not None:
        text.append(f"the working directory did not exist then: now {moved}")
    return Result(text, {"at": offset, "cwd": shell.cwd, "provenance": {"offset": prov.offset,
                                                        "epoch": prov.epoch,
                                                        "timeMs": prov.time_ms}})


@dataclass
class Change:
    kind: str  # "added", "removed" or "changed"
    path: str
    before: Any = None
    after: Any = None
    before_text: str | None = None
    after_text: str | None = None
    secret: bool = False  # only redacted values differ


def diff_nodes(a: Node | None, b: Node | None, path: str,
               opts: RenderOptions) -> Iterator[Change]:
    """Differences between two trees, top-most added/removed nodes and changed leaves."""
    if a is None and b is None:
        return
    if a is None:
        assert b is not None
        yield Change("added", path, after=tree_data(b, opts), after_text=_text(b, opts))
        return
    if b is None:
        yield Change("removed", path, before=tree_data(a, opts), before_text=_text(a, opts))
        return
    if a.is_dir and b.is_dir:
        names = sorted(set(a.names()) | set(b.names()))
        for name in names:
            sub = path + name if path.endswith("/") else f"{path}/{name}"
            yield from diff_nodes(a.child(name), b.child(name), sub, opts)
        return
    if not a.is_dir and not b.is_dir:
        ka, kb = a.key(), b.key()
        if ka is not None and ka == kb:
            return
        if a.text(_REVEAL) == b.text(_REVEAL):
            return
        ta, tb = a.text(opts), b.text(opts)
        yield Change("changed", path, a.data(opts), b.data(opts), ta, tb, secret=ta == tb)
        return
    yield Change("changed", path, tree_data(a, opts), tree_data(b, opts), _text(a, opts),
                 _text(b, opts))


_REVEAL = RenderOptions(show_secrets=True)  # compare real values; print per the user's choice


def _text(node: Node, opts: RenderOptions) -> str | None:
    return node.text(opts) if not node.is_dir else None


def field_changes(before: Any, after: Any) -> list[str]:
    """``field: old -> new`` for dict-shaped leaves (brokers, partitions...)."""
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for k in sorted(set(before) | set(after), key=list({**before, **after}).index):
            if before.get(k) != after.get(k):
                out.append(f"{k}: {_short(before.get(k))} -> {_short(after.get(k))}")
        return out
    return [f"{_short(before)} -> {_short(after)}"]


def _short(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_short(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_short(x) for x in v) + "]"
    return str(v)


def _root(loaded: Loaded, shell: Shell) -> Node:
    return shell.session.root_of(loaded)


@command("diff", "Show what changed in the tree between two offsets.",
         "diff OFFSET_A OFFSET_B [PATH]",
         details="Offsets are numbers, 'earliest' or 'latest'. PATH (default /image) limits "
                 "the comparison. Added and removed nodes are shown at their top-most path; "
                 "changed leaves show the fields that differ.")
def diff(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("diff", "diff OFFSET_A OFFSET_B [PATH]")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("path", nargs="?", default="/image")
    ns = p.parse_args(args)
    oa, ob = parse_offset(shell, ns.a), parse_offset(shell, ns.b)
    comps = absolute(shell.cwd, ns.path)
    if not comps or comps[0] != "image":
        raise CommandError(f"{ns.path}: diff compares the image: give a path under /image")
    la, lb = load_at(shell, oa), load_at(shell, ob)
    na, nb = lookup(_root(la, shell), comps), lookup(_root(lb, shell), comps)
    if na is None and nb is None:
        raise CommandError(f"{join(comps)}: No such file or directory at either offset.")
    changes = list(diff_nodes(na, nb, join(comps), shell.opts))
    label_a = "latest" if oa is None else str(oa)
    label_b = "latest" if ob is None else str(ob)
    data = {"from": oa, "to": ob, "path": join(comps), "changes": [
        {"kind": c.kind, "path": c.path, "before": c.before, "after": c.after,
         "secret": c.secret} for c in changes]}
    return Result(_diff_lines(changes, label_a, label_b, la, lb), data)


def _diff_lines(changes: list[Change], a: str, b: str, la: Loaded,
                lb: Loaded) -> Iterator[str]:
    pa, pb = la.image.provenance, lb.image.provenance
    yield f"--- offset {a} (last applied {pa.offset})"
    yield f"+++ offset {b} (last applied {pb.offset})"
    if not changes:
        yield "no differences"
        return
    for c in changes:
        if c.kind == "added":
            yield f"+ {c.path}" + (f": {c.after_text}" if c.after_text is not None else "/")
        elif c.kind == "removed":
            yield f"- {c.path}" + (f": {c.before_text}" if c.before_text is not None else "/")
        elif c.secret:
            yield f"~ {c.path}"
            yield "    a secret value changed (--show-secrets shows it)"
        else:
            yield f"~ {c.path}"
            for line in field_changes(c.before, c.after):
                yield f"    {line}"
    counts = {k: sum(1 for c in changes if c.kind == k) for k in ("added", "removed", "changed")}
    yield f"{counts['added']} added, {counts['removed']} removed, {counts['changed']} changed"
