"""The JSON form of every command result: ``json_value`` gives plain data, ``json_text``
writes it, and ``json_chunks`` streams the results that can be large (``tree`` and ``cat`` of
100k partitions) as text made piece by piece.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..tree.jsontext import dumps, string
from ..tree.printer import tree_data, tree_json
from . import results as r

if TYPE_CHECKING:
    from ..tree.node import Node


def json_value(value: Any) -> Any:
    """The JSON form of a result value: plain dicts, lists, strings and numbers (None:
    nothing to print)."""
    if value is None:
        return None
    render = _JSON.get(type(value))
    if render is None:
        raise TypeError(f"no JSON form for {type(value).__name__}")
    return render(value)


def _listing_json(v: r.Listing) -> Any:
    return ([{"path": f.path, "type": "file", "name": f.name} for f in v.files]
            + [{"path": d.path, "type": "directory", "children": d.children} for d in v.dirs])


def _diff_head(v: r.Diff) -> dict[str, Any]:
    head: dict[str, Any] = {"from": v.from_offset, "to": v.to_offset, "path": v.path}
    if v.from_node is not None:
        head.update(fromNode=v.from_node, toNode=v.to_node)
    return head


def _diff_json(v: r.Diff) -> Any:
    return {**_diff_head(v), "changes": [
        {"kind": c.kind, "path": c.path, **({} if c.topic is None else {"topicName": c.topic}),
         "before": c.before, "after": c.after, "secret": c.secret} for c in v.changes]}


def _moved_json(v: r.Moved) -> Any:
    return {"at": v.offset, "cwd": v.cwd, "provenance": {
        "offset": v.applied_offset, "epoch": v.applied_epoch, "timeMs": v.applied_time_ms}}


def health_item(check: Any, item: Any) -> dict[str, Any]:
    """One finding as an object: the check, its status, the line of text, and what it
    points at (broker, controller, topic and partition...) with its fields."""
    fields = getattr(item, "data", None) or {}
    return {"check": check.name, "status": check.status, "message": str(item), **fields}


def _health_json(v: r.Health) -> Any:
    from ..image.health import summary

    words, status = summary(v.checks)
    return {"ok": v.ok, "summary": words, "status": status,
            "verdict": None if v.verdict is None else v.verdict.to_json(), "checks": [
        {"name": c.name, "status": c.status, "summary": c.summary,
         "items": [health_item(c, it) for it in c.items]} for c in v.checks]}


def command_json(cmd: Any) -> dict[str, Any]:
    return {"name": cmd.name, "summary": cmd.summary, "usage": cmd.usage,
            "details": cmd.details, "shellOnly": cmd.shell_only, "options": list(cmd.options)}


def _text_json(v: r.Text) -> Any:
    return v.data() if callable(v.data) else v.data


_JSON: dict[type, Callable[[Any], Any]] = {
    r.Listing: _listing_json,
    r.Leaves: lambda v: [{"path": x.path, "value": x.node.data(v.opts)} for x in v.leaves],
    r.Tree: lambda v: [{"path": x.path, "tree": tree_data(x.node, v.opts)} for x in v.roots],
    r.Paths: lambda v: list(v.paths()),
    r.WorkingDir: lambda v: {"cwd": v.cwd},
    r.Moved: _moved_json,
    r.Records: lambda v: list(v.rows()),
    r.Batches: lambda v: list(v.rows()),
    r.Changes: lambda v: v.rows,
    r.Diff: _diff_json,
    r.Health: _health_json,
    r.Nodes: lambda v: v.report.to_json(),
    r.Help: lambda v: [command_json(c) for c in v.commands],
    r.Manual: lambda v: command_json(v.command),
    r.History: lambda v: [{"index": e.number, "command": e.command} for e in v.entries],
    r.Table: lambda v: list(v.rows) if isinstance(v.rows, r.RowStream) else v.rows,
    r.Fields: lambda v: v.data,
    r.Text: _text_json,
}


def json_text(data: object) -> str:
    """JSON that is valid UTF-8 whatever the data: a file name's undecodable bytes (held as
    lone surrogates) are written as ``\\udcXX`` escapes."""
    return dumps(data)


def json_chunks(value: Any) -> Iterator[str] | None:
    """The text of ``json_text(json_value(value))`` in pieces, made as they are written, for
    the results that can be large (``tree`` and ``cat`` of 100k partitions, tables, paths,
    records, listings, diffs: each row is written as it comes, never the whole list held);
    None: no such form (use :func:`json_value`)."""
    stream = _STREAMS.get(type(value))
    if stream is not None:
        return stream(value)
    if isinstance(value, r.Tree):
        opts = value.opts
        return _items_json(value.roots, "tree", lambda node: tree_json(node, opts, 2))
    if isinstance(value, r.Table) and isinstance(value.rows, r.RowStream):
        return value.rows.json_chunks()
    if isinstance(value, r.Leaves):
        opts = value.opts
        return _items_json(value.leaves, "value", lambda node: (node.data_json(opts, 2),))
    return None


def _listing_rows(v: r.Listing) -> Iterator[dict[str, Any]]:
    for f in v.files:
        yield {"path": f.path, "type": "file", "name": f.name}
    for d in v.dirs:
        yield {"path": d.path, "type": "directory", "children": d.children}


def _diff_chunks(v: r.Diff) -> Iterator[str]:
    head = dumps(_diff_head(v))
    yield head[:-2] + ',\n  "changes": '  # past its closing '\n}'
    yield from array_chunks(_diff_rows(v), 1)
    yield "\n}"


def _diff_rows(v: r.Diff) -> Iterator[dict[str, Any]]:
    for c in v.changes:
        yield {"kind": c.kind, "path": c.path,
               **({} if c.topic is None else {"topicName": c.topic}),
               "before": c.before, "after": c.after, "secret": c.secret}


def array_chunks(items: Iterable[Any], level: int = 0,
                 piece: Callable[[Any], str] | None = None) -> Iterator[str]:
    """``json.dumps(list(items), indent=2)`` placed ``level`` deep, ~256 kB at a time, each
    item's text made as it comes (``piece``: an item's text; default its ``dumps``)."""
    inner = level + 1
    pad = "\n" + "  " * inner
    out: list[str] = []
    size = 0
    sep = "[" + pad
    for item in items:
        text = dumps(item, inner) if piece is None else piece(item)
        out.append(sep)
        out.append(text)
        sep = "," + pad
        size += len(text) + inner * 2 + 2
        if size > r.CHUNK:
            yield "".join(out)
            out, size = [], 0
    out.append("[]" if sep[0] == "[" else "\n" + "  " * level + "]")
    yield "".join(out)


_STREAMS: dict[type, Callable[[Any], Iterator[str]]] = {
    r.Paths: lambda v: array_chunks(v.paths(), piece=string),
    r.Records: lambda v: array_chunks(v.rows()),
    r.Batches: lambda v: array_chunks(v.rows()),
    r.Listing: lambda v: array_chunks(_listing_rows(v)),
    r.Diff: _diff_chunks,
}


def _items_json(items: list[r.NodeAt], name: str,
                pieces: Callable[[Node], Iterable[str]]) -> Iterator[str]:
    """``[{"path": PATH, NAME: VALUE}, ...]``, each value given as pieces of JSON text,
    yielded ~256 kB at a time (``cat`` of 100k partitions is 100k small pieces, ``tree``
    a topic a piece)."""
    if not items:
        yield "[]"
        return
    out: list[str] = []
    size = 0
    sep = "[\n"
    for item in items:
        head = f'{sep}  {{\n    "path": {string(item.path)},\n    "{name}": '
        out.append(head)
        size += len(head)
        for piece in pieces(item.node):
            out.append(piece)
            size += len(piece)
            if size > r.CHUNK:
                yield "".join(out)
                out, size = [], 0
        out.append("\n  }")
        sep = ",\n"
    out.append("\n]")
    yield "".join(out)

