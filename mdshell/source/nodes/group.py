"""The nodes' directories given together (``-d`` more than once): opened, named by node id,
and checked to be one cluster's.

A node's id and cluster id come from ``meta.properties`` in its log dir (or the cluster id
from ``quorum-state`` version 0); a copy of ``__cluster_metadata-0`` alone has neither, and
is named by its place on the command line (``#2``). Two directories are refused as one
cluster when their cluster ids differ, or when the batches at offset 0 of their logs (the
records the cluster was bootstrapped with) differ in one epoch over the same offsets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ...problems import Problem, SourceError
from ...wire.batch import LOG_OVERHEAD, MIN_BATCH_LENGTH, parse_header
from ..directory import DirectorySource
from ..localfiles import read_properties, read_quorum_state
from ..walker import MAX_BATCH_LENGTH
from .files import read_epoch_checkpoint
from .scan import LogScan, scan_log


@dataclass
class NodeDir:
    """One node's directory and what its small files say."""

    path: str  # as given
    source: DirectorySource
    position: int  # 1-based, on the command line
    node_id: int | None = None
    cluster_id: str | None = None
    cluster_from: str | None = None  # "meta.properties" or "quorum-state"
    state: dict[str, Any] | None = None  # quorum-state
    checkpoint: list[tuple[int, int]] | None = None  # leader-epoch-checkpoint
    notes: list[str] = field(default_factory=list)  # what its files say that is odd

    @property
    def label(self) -> str:
        """How the node is named: its id, else its place on the command line."""
        return str(self.node_id) if self.node_id is not None else f"#{self.position}"

    @property
    def directory(self) -> str:
        return self.source.layout.directory

    @property
    def leftovers(self) -> list[str]:
        """Files Kafka leaves while deleting or truncating (``.deleted``, ``.swap``,
        ``.cleaned``, ``.checkpoint.deleted``): signs of a truncation or a cleanup."""
        layout = self.source.layout
        names = [os.path.basename(p) for p, _ in layout.ignored]
        names += [c.name for c in layout.ignored_checkpoints if c.state == "deleted"]
        return sorted(n for n in names if n.endswith((".deleted", ".swap", ".cleaned")))

    @cached_property
    def scan(self) -> LogScan:
        return scan_log(self.source)

    def state_int(self, key: str) -> int | None:
        value = (self.state or {}).get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None


def open_node(path: str, position: int, *, eager: bool = False) -> NodeDir:
    """One directory (:class:`SourceError` when it is not a metadata directory); ``eager``
    as the source's (``--strict``)."""
    source = DirectorySource(path, eager=eager)
    node = NodeDir(path, source, position)
    problems: list[Problem] = []
    node.state = read_quorum_state(source.layout.directory, problems)
    if source.layout.log_dir:
        props = read_properties(os.path.join(source.layout.log_dir, "meta.properties"),
                                problems) or {}
        node.node_id = _int(props.get("node.id", props.get("broker.id")))
        if props.get("cluster.id"):
            node.cluster_id, node.cluster_from = props["cluster.id"], "meta.properties"
    if node.cluster_id is None and isinstance((node.state or {}).get("clusterId"), str) \
            and node.state and node.state["clusterId"]:
        node.cluster_id, node.cluster_from = node.state["clusterId"], "quorum-state"
    node.notes.extend(p.message for p in problems)
    node.checkpoint = read_epoch_checkpoint(source.layout.directory, node.notes)
    return node


class NodeGroup:
    """The nodes given, in command-line order; ``chosen`` is the one every other command
    reads (``--node``, else the node whose log the quorum would follow)."""

    def __init__(self, nodes: list[NodeDir]) -> None:
        self.nodes = nodes
        self.chosen: NodeDir = nodes[0]
        self.picked = False  # True when --node chose it
        self.notes: list[str] = []  # what could not be checked

    def node(self, label: str) -> NodeDir:
        """The node named ``label`` (an id, or ``#N``); :class:`SourceError` naming the
        nodes given when there is none."""
        for n in self.nodes:
            if n.label == label or (label.lstrip("#").isdigit() and label.startswith("#")
                                    and n.position == int(label[1:])):
                return n
        known = ", ".join(n.label for n in self.nodes)
        raise SourceError(f"--node {label}: no such node among the directories given "
                          f"(nodes: {known})")

    def choose(self, node: NodeDir, picked: bool) -> NodeDir:
        """Make ``node`` the one the other commands read (``picked``: by --node)."""
        self.chosen, self.picked = node, picked
        return node


def open_group(paths: list[str], *, eager: bool = False) -> NodeGroup:
    """The directories, refused in one line (:class:`SourceError`) when one cannot be read,
    one is given twice, or they are not one cluster's."""
    nodes = [_open(p, i + 1, len(paths), eager) for i, p in enumerate(paths)]
    seen: dict[str, NodeDir] = {}
    for n in nodes:
        same = seen.get(os.path.realpath(n.directory))
        if same is not None:
            raise SourceError(f"{n.path}: node {n.label} is given twice ({same.path} too); give "
                              "each node's directory once")
        seen[os.path.realpath(n.directory)] = n
    group = NodeGroup(nodes)
    _check_cluster(group)
    labels: dict[str, NodeDir] = {}
    for n in nodes:
        other = labels.setdefault(n.label, n)
        if other is not n:
            shown = (n.cluster_id is not None and n.cluster_id == other.cluster_id
                     and _first_batch(n) is not None and _first_batch(n) == _first_batch(other))
            raise SourceError(f"{n.path}: node {n.label} is given twice ({other.path} is node "
                              f"{n.label} too, by its meta.properties); give each node's "
                              "directory once" + ("" if shown else " (or, if they are not "
                                                  "copies of one node, they are two clusters' "
                                                  "nodes: nothing shows they are one cluster's)"))
    return group


def _open(path: str, position: int, count: int, eager: bool) -> NodeDir:
    """One of ``count`` directories; when it cannot be read, the one-line error says the
    others can still be compared without it (a node whose disk was wiped holds no log)."""
    try:
        return open_node(path, position, eager=eager)
    except SourceError as e:
        if count < 2:
            raise
        raise SourceError(f"{e} (-d number {position} of {count}: leave it out to compare "
                          "the others)") from e


def _check_cluster(group: NodeGroup) -> None:
    """Refused: cluster ids that differ, or logs that begin otherwise (:func:`_check_heads`)."""
    nodes = group.nodes
    known = [n for n in nodes if n.cluster_id is not None]
    for n in known[1:]:
        first = known[0]
        if n.cluster_id != first.cluster_id:
            where = (f"their {n.cluster_from}" if n.cluster_from == first.cluster_from
                     else f"its {n.cluster_from} and the other's {first.cluster_from}")
            raise SourceError(
                f"{n.path} (node {n.label}) is of cluster {n.cluster_id} but {first.path} "
                f"(node {first.label}) of cluster {first.cluster_id}, by {where}: give the "
                "directories of one cluster's nodes")
    if len(nodes) > 1:
        _check_heads(group)


def _check_heads(group: NodeGroup) -> None:
    """The batches at offset 0 compared. Every node of one cluster holds the batch its first
    leader wrote there, byte for byte (followers append the leader's batches as they are;
    one leader per epoch): two spanning the same offsets in one epoch with other bytes (CRC)
    are other clusters' (cluster ids repeat: a Docker image's default, or none at all). Of
    other epochs nothing can be told (a first leader whose batch was truncated), nor of
    other spans (the records are compared by ``nodes``). A node with no cluster id and no
    log from offset 0 is noted as not checked."""
    heads = {n.position: _first_batch(n) for n in group.nodes}
    by_span: dict[tuple[int, int], NodeDir] = {}
    for n in group.nodes:
        head = heads[n.position]
        if head is None:
            if n.cluster_id is None:
                group.notes.append(f"node {n.label} has no cluster id (no meta.properties) "
                                   "and no log from offset 0: not checked to be of this "
                                   "cluster")
            continue
        ref = by_span.setdefault(head[:2], n)
        if heads[ref.position] != head and _differ(n, ref):
            ids = (f" (cluster.id {n.cluster_id} for both: a default many clusters share?)"
                   if n.cluster_id is not None and n.cluster_id == ref.cluster_id else "")
            raise SourceError(
                f"{n.path} (node {n.label}) and {ref.path} (node {ref.label}) begin with other "
                f"records at offset 0 in one leader epoch (the records a cluster is "
                f"bootstrapped with){ids}: they are not one cluster's nodes")


def _first_batch(n: NodeDir) -> tuple[int, int, int] | None:
    """(leader epoch, last offset, CRC) of the log's batch at offset 0, read alone (the
    log is scanned only by what needs it); None: the log does not start there, or that
    batch is not whole (its CRC does not match)."""
    segments = n.source.segments()
    if not segments or segments[0].base_offset != 0:
        return None
    path = segments[0].path
    head = n.source.file_head(path, LOG_OVERHEAD)
    if head is None or len(head) < LOG_OVERHEAD:
        return None
    length = int.from_bytes(head[8:12], "big", signed=True)
    if not MIN_BATCH_LENGTH <= length <= MAX_BATCH_LENGTH:
        return None
    data = n.source.file_head(path, LOG_OVERHEAD + length)
    if data is None or len(data) < LOG_OVERHEAD + length:
        return None
    b = parse_header(data, 0)
    if b.base_offset != 0 or not b.crc_ok():
        return None
    return b.epoch, b.last_offset, b.crc


def _differ(a: NodeDir, b: NodeDir) -> bool:
    """Their batches at offset 0 differ as the loader reads them (both read whole)."""
    x, y = _scanned_first(a), _scanned_first(b)
    return x is not None and y is not None and x != y


def _scanned_first(n: NodeDir) -> tuple[int, int, int] | None:
    """:func:`_first_batch` as the log's scan reads it: None also when the loader stops at
    that batch (its records do not read), so a damaged batch is never another cluster's."""
    scan = n.scan
    if not len(scan) or scan.bases[0] != 0:
        return None
    return scan.epochs[0], scan.lasts[0], scan.crcs[0]


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
