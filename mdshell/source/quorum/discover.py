"""Learning the cluster: ApiVersions, DescribeCluster (EndpointType=2), DescribeQuorum.

Each step degrades rather than dies: what could not be learnt is kept as a one-line note.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ...wire.primitives import uuid_str
from . import errors as e
from .client import Client
from .connection import DESCRIBE_CLUSTER, DESCRIBE_QUORUM, Connection, UnsupportedApi
from .errors import LiveError, RetriableError
from .rpc import describe_cluster_request, describe_quorum_request, operations


@dataclass
class Replica:
    replica_id: int
    directory_id: str | None
    log_end_offset: int
    last_fetch_ms: int
    last_caught_up_ms: int


@dataclass
class QuorumView:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: list[Replica]
    observers: list[Replica]
    nodes: dict[int, list[tuple[str, str, int]]]  # id -> (listener, host, port), v2
    asked: str = ""  # the controller that answered
    at_ms: int = 0
    version: int = 0  # of the DescribeQuorum answer: v2 (Kafka 3.9+) has directory ids, nodes


@dataclass
class ClusterView:
    """What the controllers say about themselves (before any metadata is fetched)."""

    api_endpoint: str = ""
    api_versions: dict[int, tuple[int, int]] = field(default_factory=dict)
    finalized_features: dict[str, int] = field(default_factory=dict)
    cluster_id: str | None = None
    controller_id: int = -1
    controllers: dict[int, tuple[str, int]] = field(default_factory=dict)
    authorized_operations: list[str] | None = None
    quorum: QuorumView | None = None
    notes: list[str] = field(default_factory=list)


def learn(client: Client) -> ClusterView:
    view = ClusterView()
    conn = client.any_node(lambda c: c)
    view.api_endpoint = conn.endpoint
    view.api_versions = dict(conn.versions)
    resp = conn.api_versions
    view.finalized_features = {f.name: int(f.max_version_level)
                               for f in getattr(resp, "finalized_features", ())}
    _describe_cluster(client, view)
    try:
        view.quorum = describe_quorum(client, view)
    except LiveError as err:
        view.notes.append(str(err))
    return view


MV_3_7_IV0 = 15  # metadata.version feature level DescribeCluster needs on controllers


class NotLoadedYet(RetriableError):
    """A controller refused DescribeCluster because it has not loaded metadata.version yet."""


def _describe_cluster(client: Client, view: ClusterView) -> None:
    def ask(conn: Connection) -> Any:
        resp = conn.request(describe_cluster_request(conn.version(DESCRIBE_CLUSTER)))
        if int(resp.error_code) == e.UNSUPPORTED_VERSION:
            level = _metadata_level(conn.api_versions)
            epoch = int(getattr(conn.api_versions, "finalized_features_epoch", -1))
            if level is None or epoch < 0 or level >= MV_3_7_IV0:
                # Not an old cluster: this controller is still starting; ask another.
                raise NotLoadedYet(f"{conn.endpoint}: DescribeCluster refused (UNSUPPORTED_"
                                   "VERSION) before its metadata.version was loaded")
        return resp

    try:
        resp = client.any_node(ask, budget_s=min(5.0, client.config.request_timeout_ms / 1000))
    except UnsupportedApi as err:
        view.notes.append(f"{err}: the controller is older than Kafka 3.7, so the cluster id "
                          "and the controller list are unknown (upgrade the controllers to 3.7+ "
                          "for them); the metadata log is still read")
        return
    except LiveError as err:
        if not isinstance(err.__cause__, NotLoadedYet):
            raise
        view.notes.append("DescribeCluster: the controllers have not loaded the cluster's "
                          "metadata.version yet (they are starting), so the cluster id and the "
                          "controller list are unknown; the metadata log is still read")
        return
    code = int(resp.error_code)
    if code == e.MISMATCHED_ENDPOINT_TYPE:
        raise LiveError(f"{view.api_endpoint} {e.KIP919}")
    if code == e.UNSUPPORTED_VERSION:
        view.notes.append("DescribeCluster: the cluster's metadata.version is below 3.7-IV0, "
                          "which it needs on controllers (kafka-features upgrade --metadata 3.7 "
                          "or later), so the cluster id and the controller list are unknown; "
                          "the metadata log is still read")
        return
    if code == e.CLUSTER_AUTHORIZATION_FAILED:
        view.notes.append("DescribeCluster: not authorized; it needs the ALTER operation on "
                          "the CLUSTER resource (kafka-acls --add --allow-principal User:<you> "
                          "--operation Alter --cluster)")
        return
    if code != e.NONE:
        view.notes.append(f"DescribeCluster failed: {e.code_name(code)} "
                          f"{resp.error_message or ''}".rstrip())
        return
    view.cluster_id = resp.cluster_id
    view.controller_id = int(resp.controller_id)
    view.controllers = {int(b.broker_id): (b.host, int(b.port)) for b in resp.brokers}
    view.authorized_operations = operations(int(resp.cluster_authorized_operations))


def _metadata_level(api_versions: Any) -> int | None:
    """The finalized metadata.version level an ApiVersions answer carries, if any."""
    for f in getattr(api_versions, "finalized_features", ()):
        if f.name == "metadata.version":
            return int(f.max_version_level)
    return None


# How long the other controllers are given, once a leader answered, to say that they lead
# a newer epoch (loopback and LAN answers take milliseconds; a silent one costs this).
OTHERS_S = 1.0


def describe_quorum(client: Client, view: ClusterView | None = None) -> QuorumView:
    """DescribeQuorum from the leader of the newest epoch: the known leader first, then each
    controller ``-q`` gave until one answers as the leader; then the ones not asked yet, at
    once, for at most :data:`OTHERS_S` (the others DescribeCluster names are not asked:
    their advertised names may not resolve where mdshell runs). Raises
    :class:`LiveError` (one line) when no controller answers as the leader.

    A leader cut off from the other voters still answers as the leader of its epoch until
    it resigns (Kafka 3.7+'s check-quorum: about the fetch timeout; before 3.7 never, until
    a newer leader reaches it), while the others have elected a leader of a newer epoch. An
    epoch only grows, so the answer of the newest epoch is the quorum's."""
    prefer: list[tuple[str, int]] = []
    if view is not None and view.controller_id in view.controllers:
        prefer.append(view.controllers[view.controller_id])
    candidates = client.ordered(prefer)
    last = "no controller answered"
    for i, endpoint in enumerate(candidates):
        asked = f"{endpoint[0]}:{endpoint[1]}"
        try:
            resp = client.call(endpoint, _ask_quorum)
        except UnsupportedApi as err:
            raise LiveError(f"DescribeQuorum: {err}") from None
        except RetriableError as err:
            last = str(err)
            continue
        got = _leader_answer(resp, asked)
        if isinstance(got, str):
            last = got
            continue
        rest = [ep for ep in candidates[i + 1:] if client.healthy(ep)]
        return max([got, *_other_leaders(client, rest)], key=lambda q: q.leader_epoch)
    raise LiveError(f"DescribeQuorum: no leader found ({last})")


def _other_leaders(client: Client, endpoints: list[tuple[str, int]]) -> list[QuorumView]:
    """The answers of ``endpoints`` (asked at once, for at most :data:`OTHERS_S`) that come
    from a leader; what fails or says otherwise is passed over (a leader answered already)."""
    out = []
    for ep, resp in client.ask_each(endpoints, _ask_quorum, OTHERS_S):
        try:
            got = _leader_answer(resp, f"{ep[0]}:{ep[1]}")
        except LiveError:
            continue
        if not isinstance(got, str):
            out.append(got)
    return out


def _leader_answer(resp: Any, asked: str) -> QuorumView | str:
    """A DescribeQuorum answer as the quorum's view, or why it is not one (a follower's
    NOT_LEADER_OR_FOLLOWER, an error code). Raises :class:`LiveError` when not authorized."""
    code = int(resp.error_code)
    if code == e.CLUSTER_AUTHORIZATION_FAILED:
        raise LiveError("DescribeQuorum: not authorized; it needs DESCRIBE on the CLUSTER "
                        "resource (kafka-acls --add --allow-principal User:<you> "
                        "--operation Describe --cluster)")
    if code != e.NONE or not resp.topics or not resp.topics[0].partitions:
        return f"{asked}: DescribeQuorum failed ({e.code_name(code)})"
    part = resp.topics[0].partitions[0]
    pcode = int(part.error_code)
    if pcode == e.NOT_LEADER_OR_FOLLOWER:
        return f"{asked}: not the leader"
    if pcode != e.NONE:
        return f"{asked}: DescribeQuorum failed ({e.code_name(pcode)})"
    return QuorumView(
        int(part.leader_id), int(part.leader_epoch), int(part.high_watermark),
        [_replica(r) for r in part.current_voters], [_replica(r) for r in part.observers],
        {int(n.node_id): [(li.name, li.host, int(li.port)) for li in n.listeners]
         for n in getattr(resp, "nodes", ())}, asked, int(time.time() * 1000),
        int(resp.__version__))


def _ask_quorum(conn: Connection) -> Any:
    return conn.request(describe_quorum_request(conn.version(DESCRIBE_QUORUM)))


def _replica(r: Any) -> Replica:
    dir_id = getattr(r, "replica_directory_id", None)
    return Replica(int(r.replica_id), None if dir_id is None or dir_id.int == 0
                   else uuid_str(dir_id.bytes),  # Kafka's form: base64, as meta.properties
                   int(r.log_end_offset), int(getattr(r, "last_fetch_timestamp", -1)),
                   int(getattr(r, "last_caught_up_timestamp", -1)))
