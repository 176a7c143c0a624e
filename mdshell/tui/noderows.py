"""The Nodes screen's plain rows, made from the nodes' comparison (``Session.node_report``):
what each node is, the ranges worth opening, and what the whole says. State-free, no
textual: the engine calls :func:`nodes_view`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FAIL, WARN, OK, INFO = "fail", "warn", "ok", "info"


@dataclass
class NodeLine:
    """A node as its row and its bar on the offset axis show it."""

    label: str
    cells: list[str]  # node, role, offsets, last epoch, epochs, checkpoint, snapshot, state
    start: int | None
    end: int | None
    tail: int | None  # the first offset the quorum's log does not hold as this node does
    quorum: bool  # its log is the quorum's
    problems: list[str] = field(default_factory=list)


@dataclass
class Span:
    """A range of one node's log worth opening (Enter shows its records)."""

    node: str  # whose records these are
    first: int
    last: int
    what: str  # what the range is, in words
    kinds: str  # the records by kind, when counted
    status: str  # FAIL (Kafka truncates it, or it contradicts what is committed), WARN, INFO


@dataclass
class NodesView:
    """Everything the Nodes screen shows."""

    nodes: list[NodeLine]
    spans: list[Span]
    lines: list[tuple[str, str]]  # what the comparison says, each with its status
    committed: int | None
    quorum: str | None
    verdict: tuple[str, str]  # the last line and its status


COLUMNS = ["node", "role", "offsets", "last epoch", "epochs from offset",
           "leader-epoch-checkpoint", "snapshot", "quorum-state"]


def nodes_view(report: Any) -> NodesView:
    """The screen's rows of a :class:`mdshell.source.nodes.report.Report`."""
    tails = {t.node: t for t in report.tails}
    nodes = [_line(row, tails.get(row.label), row.label == report.quorum)
             for row in report.rows]
    return NodesView(nodes, _spans(report), _lines(report), report.committed, report.quorum,
                     _verdict(report))


def _line(row: Any, tail: Any, quorum: bool) -> NodeLine:
    from ..commands.textform import epochs_cell, quorum_state_cell, snapshot_cell

    epoch = "-" if row.last_epoch is None else str(row.last_epoch) + (
        " (led it)" if row.led_last_epoch else "")
    offsets = "-" if row.start is None or row.end is None else (
        str(row.start) if row.start == row.end else f"{row.start}-{row.end}")
    problems = list(row.problems)
    if row.truncated:
        problems.append("left by a truncation: " + ", ".join(row.truncated))
    return NodeLine(row.label, [row.label + (" *" if quorum else ""), row.role, offsets, epoch,
                                epochs_cell(row.epochs), row.checkpoint,
                                snapshot_cell(row.snapshot), quorum_state_cell(row.state)],
                    row.start, row.end, None if tail is None else tail.first, quorum, problems)


def _kinds(runs: list[Any]) -> str:
    return "; ".join(f"epoch {r.epoch}: " + ", ".join(f"{n} {k}" for k, n in
                                                      r.kinds.most_common()) for r in runs)


def _spans(report: Any) -> list[Span]:
    spans = []
    for t in report.tails:
        what = ("ahead of the quorum's log (Kafka truncates it only if the leader lacks "
                "it)" if t.ahead else
                "other records in the same epoch: Kafka keeps them" if t.kept
                else f"lost when node {t.node} rejoins: the quorum's snapshot replaces its log"
                if t.snapshot is not None
                else f"truncated to {t.first}{'' if t.exact else ' or below'} when node "
                     f"{t.node} rejoins")
        spans.append(Span(t.node, t.first, t.last, what, _kinds(t.runs), FAIL))
    if report.uncommitted is not None and report.quorum is not None:
        first, last, holders = report.uncommitted
        spans.append(Span(report.quorum, first, last,
                          f"not committed when copied (held by {holders})", "", WARN))
    for label, end, quorum_end in report.behind:
        if report.quorum is not None:
            spans.append(Span(report.quorum, end + 1, quorum_end,
                              f"node {label} is behind: it fetches these", "", INFO))
    return spans


def _lines(report: Any) -> list[tuple[str, str]]:
    voters = (", ".join(map(str, report.voters)) + f" ({report.voters_from}), a majority is "
              f"{report.majority}" if report.voters else report.voters_from)
    out = [(f"cluster {report.cluster_id or '(no cluster id)'}; voters {voters}", INFO)]
    if report.quorum is not None:
        out.append((f"the quorum's log is node {report.quorum}'s (*): {report.why}", INFO))
    if report.committed is not None:
        out.append((f"committed: {report.committed_words} (the high watermark is not on "
                    "disk)", OK))
    else:
        out.append(("committed: cannot be told (fewer than a majority of the voters given)",
                    WARN))
    for p in report.pairs:
        if p.diverged:
            out.append((f"nodes {p.a} and {p.b} part at offset {p.at} (epoch {p.epoch_a} on "
                        f"{p.a}, {p.epoch_b} on {p.b})", FAIL if p.kind == "content" else WARN))
    out += [(f"note: {n}", INFO) for n in report.notes]
    out += [(text, WARN) for text in report.unchecked]
    return out


def _verdict(report: Any) -> tuple[str, str]:
    if not report.agree:
        return "the nodes disagree on committed records: " + "; ".join(report.conflicts), FAIL
    if not report.sound:
        return ("the nodes agree on every committed record read; but " + report.caveat,
                WARN)
    return "the nodes agree on every committed record", OK


