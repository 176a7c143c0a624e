"""The text form of every command result: the lines Kafka's shell (or kafka-dump-log) would
print, made lazily so that a ``tree`` of a million partitions streams. The one-line formats
(records, batches, history entries, table cells) are here too, for the views that reuse them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..tree.printer import tree_lines
from . import results as r
from .columns import layout


def text_lines(value: Any, width: int | None = None) -> Iterator[str]:
    """The text form of a result value (``width``: terminal columns for ``ls``; None: one
    name a line)."""
    if value is None:
        return iter(())
    if isinstance(value, r.Listing):
        return _listing_text(value, width)
    if isinstance(value, r.Help):
        return iter(_help_text(value, width))
    if isinstance(value, r.Manual):
        return iter(wrapped(list(_manual_text(value)), width))
    render = _TEXT.get(type(value))
    if render is None:
        raise TypeError(f"no text form for {type(value).__name__}")
    return render(value)


def _listing_text(v: r.Listing, width: int | None) -> Iterator[str]:
    yield from layout([f.name for f in v.files], width)
    intro = bool(v.files) or len(v.dirs) > 1
    first = not v.files
    for d in v.dirs:
        if intro:
            if not first:
                yield ""
            yield f"{d.name}:"
            first = False
        yield from layout(d.children, width)


def _leaves_text(v: r.Leaves) -> Iterator[str]:
    return (x.node.text(v.opts) for x in v.leaves)


def _tree_text(v: r.Tree) -> Iterator[str]:
    for x in v.roots:
        yield from tree_lines(x.node, v.opts)


def _cwd_text(v: r.WorkingDir) -> Iterator[str]:
    if v.show:
        yield v.cwd


def _moved_text(v: r.Moved) -> Iterator[str]:
    where = "latest" if v.offset is None else f"offset {v.offset}"
    yield (f"image as of {where} (last applied: offset {v.applied_offset}, "
           f"epoch {v.applied_epoch})")
    if v.asked is not None:
        yield (f"{v.asked} is offset "
               f"{v.applied_offset if v.offset is None else v.offset}: {v.how}")
    if v.moved_to is not None:
        yield f"the working directory did not exist then: now {v.moved_to}"


def _compact(data: Any) -> str:
    import json  # here, not at the top: a one-shot command in text does not need it

    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def record_line(j: dict[str, Any]) -> str:
    """``offset=.. epoch=.. time=.. [control ]Type(vN) {json}``, like kafka-dump-log."""
    kind = "control " if j["control"] else ""
    return (f"offset={j['offset']} epoch={j['epoch']} time={j['time']} "
            f"{kind}{j['type']}(v{j['version']}) {_compact(j['data'])}")


def _b(v: bool) -> str:
    return "true" if v else "false"


def batch_line(j: dict[str, Any]) -> str:
    """Kafka's DumpLogSegments.printBatchLevel, word for word."""
    horizon = ("OptionalLong.empty" if j["deleteHorizonMs"] is None
               else f"OptionalLong[{j['deleteHorizonMs']}]")
    return (f"baseOffset: {j['baseOffset']} lastOffset: {j['lastOffset']} count: {j['count']} "
            f"baseSequence: {j['baseSequence']} lastSequence: {j['lastSequence']} "
            f"producerId: {j['producerId']} producerEpoch: {j['producerEpoch']} "
            f"partitionLeaderEpoch: {j['partitionLeaderEpoch']} "
            f"isTransactional: {_b(j['isTransactional'])} isControl: {_b(j['isControl'])} "
            f"deleteHorizonMs: {horizon} position: {j['position']} "
            f"{j['timestampType']}: {j['maxTimestamp']} size: {j['size']} magic: {j['magic']} "
            f"compresscodec: {j['compressCodec']} crc: {j['crc']} isvalid: {_b(j['crcValid'])}")


def _batches_text(v: r.Batches) -> Iterator[str]:
    """A new file starts with ``Dumping FILE``, as kafka-dump-log prints it."""
    file = None
    for j in v.rows():
        if j["file"] != file:
            file = j["file"]
            yield f"Dumping {file}"
        yield batch_line(j)


def _partition_state(p: dict[str, Any]) -> str:
    return (f"leader={p['leader']} leaderEpoch={p['leaderEpoch']} isr={p['isr']} "
            f"replicas={p['replicas']} elr={p['elr']} lastKnownElr={p['lastKnownElr']} "
            f"partitionEpoch={p['partitionEpoch']}")


def _changes_text(v: r.Changes) -> Iterator[str]:
    from ..tree.javafmt import iso_zoned_utc

    if not v.rows:
        read = f" {v.read}" if v.read else ""
        yield (f"no record touched {v.target}{read}: it shows what an image holds before "
               "any record (Kafka's default)")
        return
    for e in v.rows:
        where = (f"offset={e['offset']}" if e["offset"] is not None
                 else f"snapshot={e['origin']}")
        time = iso_zoned_utc(e["timestamp"]) if e["timestamp"] is not None else "?"
        yield (f"{where} epoch={e['epoch']} time={time} {e['type']}(v{e['version']}) "
               f"{_compact(set_fields(e['type'], e['data']))}")
        if "after" in e:
            yield f"    -> {_partition_state(e['after'])}"
    n = len(v.rows)
    yield f"{n} record{'' if n == 1 else 's'}"


def set_fields(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """The fields a record sets, for ``changes``' text: its tagged fields at their default
    (null, or -2 for no change of leader) are left out; the JSON keeps every field, as
    ``records`` does."""
    from ..wire.records import METADATA

    msg = next((m for m in METADATA.values() if m.name == kind), None)
    if msg is None:
        return data
    unset = {f.key: f.default_value() for f in msg.fields if f.tag is not None}
    return {k: v for k, v in data.items() if k not in unset or v != unset[k]}


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
    """Values as Kafka prints them: ``true``/``false``/``null``, lists in brackets."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_short(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_short(x) for x in v) + "]"
    return str(v)


def _label(offset: int | None) -> str:
    return "latest" if offset is None else str(offset)


def _node(label: str | None) -> str:
    return "" if label is None else f"node {label}, "


def _diff_text(v: r.Diff) -> Iterator[str]:
    yield (f"--- {_node(v.from_node)}offset {_label(v.from_offset)} (last applied "
           f"{v.from_applied})")
    yield f"+++ {_node(v.to_node)}offset {_label(v.to_offset)} (last applied {v.to_applied})"
    counts = {"added": 0, "removed": 0, "changed": 0}
    for c in v.changes:  # printed as they are found
        counts[c.kind] += 1
        name = "" if c.topic is None else f" (topic {c.topic})"
        if c.kind == "added":
            yield f"+ {c.path}" + (f"{name}: {c.after_text}" if c.after_text is not None
                                   else f"/{name}")
        elif c.kind == "removed":
            yield f"- {c.path}" + (f"{name}: {c.before_text}" if c.before_text is not None
                                   else f"/{name}")
        elif c.secret:
            yield f"~ {c.path}{name}"
            yield "    a secret value changed (--show-secrets shows it)"
        else:
            yield f"~ {c.path}{name}"
            for line in field_changes(c.before, c.after):
                yield f"    {line}"
    if not any(counts.values()):
        yield "no differences"
        return
    yield f"{counts['added']} added, {counts['removed']} removed, {counts['changed']} changed"


EPOCHS_SHOWN = 4  # the newest epochs a node's row lists (JSON has them all)


def _nodes_text(v: r.Nodes) -> Iterator[str]:
    """``nodes``: a row per node, then where the logs part and what it means."""
    rep = v.report
    voters = ("voters " + ", ".join(map(str, rep.voters)) + f" ({rep.voters_from}), a "
              f"majority is {rep.majority}" if rep.voters else f"voters {rep.voters_from}")
    yield f"cluster {rep.cluster_id or '(no cluster id)'}: {len(rep.rows)} " \
          f"node{'s' if len(rep.rows) != 1 else ''} given; {voters}"
    cells = [[row.label, row.role,
              _span(row.start, row.end),
              "-" if row.last_epoch is None else f"{row.last_epoch}"
              + (" (led it)" if row.led_last_epoch else ""),
              epochs_cell(row.epochs), row.checkpoint, snapshot_cell(row.snapshot),
              quorum_state_cell(row.state)]
             for row in rep.rows]
    yield from table_lines(["node", "role", "offsets", "last epoch", "epochs from offset",
                            "leader-epoch-checkpoint", "snapshot", "quorum-state"], cells)
    for row in rep.rows:
        for problem in row.problems:
            yield f"node {row.label}: {problem}"
        if row.truncated:
            yield (f"node {row.label}: left by a truncation (past its log's end, offset "
                   f"{row.end}): " + ", ".join(row.truncated))
        old = row.old_snapshots
        if old:
            ends = f"offset {old[0]}" if len(old) == 1 else f"offsets {old[0]}-{old[-1]}"
            yield (f"node {row.label}: {len(old)} older snapshot{'s' if len(old) > 1 else ''} "
                   f"being deleted (ending at {ends}): Kafka keeps the newest")
    for note in rep.notes:
        yield f"note: {note}"
    if len(rep.rows) < 2:
        yield "one node given: give every node's directory (-d DIR -d DIR ...) to compare them"
    else:
        yield ""
        yield "where the logs part (by offset and epoch; records below checked by CRC):"
        for p in rep.pairs:
            yield f"  nodes {p.a} and {p.b}: {_pair_text(p)}"
    yield ""
    if rep.quorum is not None:
        yield f"the quorum's log is node {rep.quorum}'s: {rep.why}"
    if rep.committed is not None:
        yield (f"committed: {rep.committed_words} (the high watermark is not on disk); that "
               f"image: --node {rep.quorum} --at {rep.committed}")
    else:
        yield ("committed: cannot be told: fewer than a majority of the voters' directories "
               "given (or the voters are unknown)")
    if rep.uncommitted is not None:
        first, last, holders = rep.uncommitted
        yield (f"not committed when copied: node {rep.quorum}'s {_offsets(first, last)}, "
               f"held by {holders} voter{'s' if holders != 1 else ''}"
               + (" given" if rep.missing else "") + ", fewer than a majority")
    for label, end, quorum_end in rep.behind:
        snap = rep.sent_snapshot.get(label)
        held = (f"its log ends at offset {end}, the quorum's at" if end >= 0 else
                "it holds no record (a log never written, or wiped); the quorum's log ends "
                "at offset")
        then = (f"Kafka sends it the snapshot {snap}, then the rest" if snap
                else "it fetches the rest")
        yield f"node {label} is behind: {held} {quorum_end} ({then})"
    for t in rep.tails:
        if t.ahead:
            yield (f"node {t.node} is ahead of the quorum's log: it holds its "
                   f"{_offsets(t.first, t.last)}, past that log's end in the epochs it holds "
                   "(copies taken at other times, or records of a leader not given?); Kafka "
                   f"truncates them when node {t.node} rejoins only if the leader's log lacks "
                   "them then")
        elif t.kept:
            yield (f"node {t.node} holds other records than the quorum's log at "
                   f"{_offsets(t.first, t.last)} in the same epoch: Kafka will not truncate "
                   "them")
        else:
            lacks = (f"the quorum's log lacks its {_offsets(t.first, t.last)}"
                     + ("" if t.exact else f" (maybe more: the logs part at or before offset "
                        f"{t.first})") + (f", shown by {t.by}" if t.by else "")
                     + (f" (held by {t.holders} voters)" if t.holders > 1 else ""))
            if t.snapshot is not None:
                yield (f"node {t.node}'s log is replaced by the quorum's snapshot {t.snapshot} "
                       f"when it rejoins (Kafka sends it the snapshot, not records): {lacks}")
            else:
                yield (f"node {t.node} is truncated to offset {t.first}"
                       + ("" if t.exact else " or below") + f" when it rejoins: {lacks}")
        for run in t.runs:
            kinds = ", ".join(f"{n} {k}" for k, n in run.kinds.most_common())
            yield f"  {_offsets(run.first, run.last)}, epoch {run.epoch}: {kinds}"
    yield from rep.unchecked
    if rep.agree:
        yield "the nodes agree on every committed record" + (
            "" if rep.sound else f" read; but {rep.caveat} (see above)")
    else:
        yield "the nodes disagree on committed records: " + "; ".join(rep.conflicts)


def _span(first: int | None, last: int | None) -> str:
    if first is None or last is None or last < first:
        return "-"
    return str(first) if first == last else f"{first}-{last}"


def snapshot_cell(name: str | None) -> str:
    """A snapshot file as the offsets it holds: ``to 126, epoch 2``."""
    if name is None:
        return "-"
    try:
        return f"to {int(name[:20]) - 1}, epoch {int(name[21:31])}"
    except ValueError:
        return name


def _offsets(first: int, last: int) -> str:
    return f"offset {first}" if first == last else f"offsets {first}-{last}"


def epochs_cell(epochs: list[tuple[int, int]]) -> str:
    shown = ", ".join(f"{e}@{o}" for e, o in epochs[-EPOCHS_SHOWN:])
    more = len(epochs) - EPOCHS_SHOWN
    return (f"({more} more) " if more > 0 else "") + (shown or "-")


def quorum_state_cell(state: dict[str, Any] | None) -> str:
    if state is None:
        return "-"
    def shown(key: str) -> str:  # a field quorum-state lacks or garbles: "?"
        value = state.get(key) if state is not None else None
        return "?" if value is None else str(value)

    out = f"leader {shown('leader')}, epoch {shown('epoch')}"
    voted = state.get("voted")
    return out + (f", voted {voted}" if voted is not None and voted >= 0 else "")


def _pair_text(p: Any) -> str:
    from ..source.nodes.compare import APART, CONTENT, EPOCH

    if p.kind == EPOCH:
        return (f"part at offset {p.at} (epoch {p.epoch_a} on node {p.a}, {p.epoch_b} on "
                f"node {p.b}); alike before it")
    if p.kind == CONTENT:
        return (f"part at offset {p.at} inside epoch {p.epoch_a}: {p.why}; alike before it")
    if p.kind == APART:
        return "no offset in common to compare"
    ends = f"node {p.a} ends at {p.end_a}, node {p.b} at {p.end_b}"
    return (f"alike to offset {p.agree_to}" + (" (both end there)" if p.end_a == p.end_b
                                                else f" ({ends})"))


MARK = {"ok": "OK  ", "warn": "WARN", "fail": "FAIL", "info": "INFO"}


def _health_text(v: r.Health) -> Iterator[str]:
    from ..image.health import summary

    for c in v.checks:
        yield f"{MARK.get(c.status, c.status)}  {c.name}: {c.summary}"
        shown = c.items if v.limit is None else c.items[:v.limit]
        for item in shown:
            yield f"        {item}"
        if len(shown) < len(c.items):
            yield f"        ... {len(c.items) - len(shown)} more (health --all)"
    yield summary(v.checks)[0]


def _help_text(v: r.Help, width: int | None) -> list[str]:
    head = "Commands ('man CMD' for details; paths take globs: * ? [a-z] {a,b}):"
    rows = [(c.name, c.summary + (" (interactive only)" if c.shell_only and not v.interactive
                                   else "")) for c in v.commands]
    return [*wrapped([head], width), *command_rows(rows, width)]


def command_rows(rows: Sequence[tuple[str, str]], width: int | None) -> list[str]:
    """``  name  summary`` lines, the summaries aligned; with ``width`` (a terminal's
    columns) a summary too long for it goes on under its own start, cut between words."""
    names = max(len(name) for name, _ in rows)
    indent = " " * (names + 4)
    out: list[str] = []
    for name, summary in rows:
        out += wrapped([f"  {name:<{names}}  {summary}"], width, indent)
    return out


def wrapped(lines: Sequence[str], width: int | None, indent: str = "") -> list[str]:
    """``lines`` cut between words to fit ``width`` (None: as they are), each one's
    continuation starting with ``indent``."""
    if width is None or width <= len(indent) + 20:
        return list(lines)
    import textwrap

    out: list[str] = []
    for line in lines:
        out += textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False,
                             break_on_hyphens=False, drop_whitespace=True) or [""]
    return out


def _manual_text(v: r.Manual) -> Iterator[str]:
    cmd = v.command
    yield from cmd.help_text().rstrip("\n").split("\n")
    if cmd.options:
        yield from ["", "options: " + " ".join(cmd.options)]
    if cmd.shell_only:
        yield from ["", "Only in the interactive shell (mdshell --repl, or commands piped on "
                    "stdin)."]


def history_line(number: int, command: str) -> str:
    """Kafka's ``% 5d  %s``."""
    return f"{number: 5d}  {command}"


def _history_text(v: r.History) -> Iterator[str]:
    return (history_line(e.number, e.command) for e in v.entries)


NONE = "-"


def cell(v: object) -> str:
    """A table cell: None as ``-``, booleans as Kafka writes them, lists as ``a,b``."""
    if v is None:
        return NONE
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ",".join(map(str, v)) if v else NONE
    return str(v)


def table_lines(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """Columns left-aligned to their widest cell, two spaces apart, no trailing blanks."""
    cells = [[str(c) for c in columns]] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
            for r in cells]


def _table_text(v: r.Table) -> Iterator[str]:
    if not v.cells and v.note:
        return iter((v.note,))
    if not v.cells and not v.header_when_empty:
        return iter(())
    if isinstance(v.rows, r.RowStream):
        return v.rows.text_lines(v.columns) if v.cells else iter(table_lines(v.columns, ()))
    return iter(table_lines(v.columns, v.cells))


def _fields_text(v: r.Fields) -> Iterator[str]:
    width = max(len(k) for k, _ in v.pairs) + 2
    return (f"{k + ':':<{width}}{cell(x)}" for k, x in v.pairs)


_TEXT: dict[type, Callable[[Any], Iterator[str]]] = {
    r.Leaves: _leaves_text, r.Tree: _tree_text, r.Paths: lambda v: v.paths(),
    r.WorkingDir: _cwd_text, r.Moved: _moved_text,
    r.Records: lambda v: (record_line(j) for j in v.rows()), r.Batches: _batches_text,
    r.Changes: _changes_text, r.Diff: _diff_text, r.Health: _health_text,
    r.Nodes: _nodes_text,
    r.Manual: _manual_text, r.History: _history_text, r.Table: _table_text,
    r.Fields: _fields_text, r.Text: lambda v: iter(v.lines),
}
