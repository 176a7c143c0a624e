"""``nodes``: several nodes' directories of one cluster compared (``-d`` given once per node),
and the nodes ``diff --node`` reads."""

from __future__ import annotations

from ..session import Session
from . import results as r
from .base import ArgParser, Result, command
from .shell import Shell

USAGE = "nodes"


@command("nodes", "Compare the nodes' logs: where they part, what is committed, what Kafka "
         "will truncate.", USAGE,
         details="Give each node's directory with its own -d (its __cluster_metadata-0 or its "
                 "log dir): mdshell -d n1/ -d n2/ -d n3/ nodes. One row per node (its role in "
                 "quorum-state, log offsets, last epoch and where each epoch starts, checked "
                 "against leader-epoch-checkpoint, newest snapshot, files left by a "
                 "truncation), then the comparison, by offset and epoch (batch boundaries do "
                 "not matter; records are checked by CRC): where each pair of logs parts; the "
                 "log the quorum follows (Kafka's vote: newest last epoch, then greatest end "
                 "offset); up to which offset a majority of the voters (from the log) holds "
                 "it, the most that can have been committed (the high watermark is not on "
                 "disk); and, per node, the records the quorum's log lacks, which Kafka "
                 "truncates when the node rejoins. Exit code 1 when the nodes disagree on "
                 "anything committed (or inside one epoch), a copy's log is damaged (the "
                 "comparison stops there), or a node's offsets cannot be compared with the "
                 "quorum's log (held there only in a snapshot), 0 when they agree.",
         args=("",))
def nodes(shell: Shell, args: list[str]) -> Result:
    ArgParser("nodes", USAGE).parse_args(args)
    report = shell.session.node_report()
    return Result(value=r.Nodes(report), exit_code=0 if report.sound else 1)


def node_shells(shell: Shell, labels: list[str]) -> list[tuple[str, Shell]]:
    """A shell over each node named (its id, or ``#N``), the one already read reused."""
    group = shell.session.node_group()
    out = []
    for label in labels:
        node = group.node(label)
        if node is group.chosen:
            out.append((node.label, shell))
        else:
            session = Session(node.source, layout=shell.session.layout, lazy=True)
            session.nodes = group
            out.append((node.label, Shell(session, opts=shell.opts)))
    return out
