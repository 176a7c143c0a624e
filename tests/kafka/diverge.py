"""A real divergence of a KRaft quorum's logs, made as an incident makes it (issue 32).

The leader appends while its followers are frozen (SIGSTOP): ACLs and a topic config sent on
connections opened before the freeze (a controller answers a write only once a majority has
it, and one request per connection at a time, so each write has its own connection), plus
the controller's own NoOps every 500 ms. The leader is killed, the followers are resumed and
elect a new leader that writes at the same offsets in a newer epoch. The nodes' log dirs are
copied then (the forensic input), and the old leader is started again: Kafka truncates its
log and says where (``Truncated to offset N from Fetch response from leader M``, the raft
logger at INFO), the oracle of the tests.

Which node leads and which epochs are used change from run to run: they are read from
DescribeQuorum and from Kafka's logs, never assumed.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import socket
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from mdshell.source.quorum.client import Client
from mdshell.source.quorum.config import ClientConfig
from mdshell.source.quorum.discover import describe_quorum
from mdshell.source.quorum.errors import LiveError

from .cluster import KraftCluster, Node

TRUNCATED = re.compile(r"Truncated to offset (\d+) from Fetch response from leader (\d+)")
CREATE_ACLS, ALTER_CONFIGS, CREATE_TOPICS = 30, 44, 19
TOPIC, BROKER = 2, 4  # resource types (ACLs and configs agree on these two)
TOPIC_EXISTS = 36
FETCH_WAIT_S = 1.0  # a parked fetch's wait (500 ms), with room
LITERAL, ANY_HOST, ALLOW, READ = 3, "*", 3, 3


@dataclass
class Diverged:
    """One divergence: who led in which epoch, who took over, the copies made before the
    old leader came back, and where Kafka truncated it."""

    old_leader: int
    old_epoch: int
    new_leader: int
    new_epoch: int
    copies: dict[int, Path]  # node id -> its log dir, copied before the restart
    truncated_to: list[int] = field(default_factory=list)  # Kafka's lines, in order
    sent: list[str] = field(default_factory=list)  # what was sent while the others froze

    @property
    def truncation(self) -> int:
        """Where Kafka's follower ended up: the last truncation it logged."""
        return self.truncated_to[-1]


def _frame(payload: Any, correlation: int) -> bytes:
    header_type = payload.__header_schema__
    header = header_type(request_api_key=payload.__api_key__,
                         request_api_version=payload.__version__,
                         correlation_id=correlation, client_id="mdshell-diverge")
    buf = io.BytesIO()
    entity_writer(header_type)(buf, header)
    entity_writer(type(payload))(buf, payload)
    body = buf.getvalue()
    return struct.pack(">i", len(body)) + body


def _request(api_key: int, version: int, **kw: Any) -> Any:
    return load_request_schema(api_key, version)(**kw)


def _acl(principal: str) -> Any:
    from kio.schema.create_acls.v3.request import AclCreation

    return _request(CREATE_ACLS, 3, creations=(AclCreation(
        resource_type=TOPIC, resource_name="orders", resource_pattern_type=LITERAL,
        principal=principal, host=ANY_HOST, operation=READ, permission_type=ALLOW),))


def _config(topic: str, key: str, value: str) -> Any:
    from kio.schema.incremental_alter_configs.v1.request import (
        AlterableConfig,
        AlterConfigsResource,
    )

    return _request(ALTER_CONFIGS, 1, validate_only=False, resources=(AlterConfigsResource(
        resource_type=TOPIC, resource_name=topic,
        configs=(AlterableConfig(name=key, config_operation=0, value=value),)),))


def _topic(name: str) -> Any:
    from kio.schema.create_topics.v7.request import CreatableTopic

    return _request(CREATE_TOPICS, 7, validate_only=False, topics=(CreatableTopic(
        name=name, num_partitions=1, replication_factor=1, assignments=(), configs=()),))


class Writer:
    """Connections to one controller, opened now; each sends one request and is never
    read (the answer comes only once a majority holds the record, which may be never)."""

    def __init__(self, endpoint: str, count: int) -> None:
        host, port = endpoint.rsplit(":", 1)
        self.socks = [socket.create_connection((host, int(port)), timeout=5)
                      for _ in range(count)]
        self.used = 0

    def send(self, payload: Any) -> None:
        sock = self.socks[self.used]
        self.used += 1
        sock.sendall(_frame(payload, self.used))

    def close(self) -> None:
        for s in self.socks:
            with contextlib.suppress(OSError):
                s.close()


def call(endpoint: str, payload: Any, timeout: float = 30) -> Any:
    """Send one request and return its answer (a write answers once the quorum commits)."""
    host, port = endpoint.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(_frame(payload, 1))
        size = struct.unpack(">i", _read(s, 4))[0]
        body = _read(s, size)
    pos = _skip_tags(body, 4)  # past the correlation id and the header's tagged fields
    schema = load_response_schema(int(payload.__api_key__), int(payload.__version__))
    return entity_reader(schema)(body, pos)[0]


def _skip_tags(body: bytes, pos: int) -> int:
    count, pos = _uvarint(body, pos)
    for _ in range(count):
        _, pos = _uvarint(body, pos)
        size, pos = _uvarint(body, pos)
        pos += size
    return pos


def _uvarint(b: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = b[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _read(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def quorum_view(cluster: KraftCluster, nodes: list[Node]) -> tuple[int, int] | None:
    """(leader, epoch) as DescribeQuorum on these nodes says, None without an answer."""
    client = Client(",".join(n.endpoint for n in nodes), ClientConfig())
    try:
        q = describe_quorum(client)
        return q.leader_id, q.leader_epoch
    except LiveError:
        return None
    finally:
        client.close()


def wait_leader(cluster: KraftCluster, nodes: list[Node], above: int,
                timeout: float = 60) -> tuple[int, int]:
    """Until one of ``nodes`` leads an epoch above ``above``: (leader, epoch)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view = quorum_view(cluster, nodes)
        if view is not None and view[0] >= 0 and view[1] > above:
            return view
        time.sleep(0.2)
    raise RuntimeError(f"no new leader above epoch {above} within {timeout} s")


def copy_log_dirs(cluster: KraftCluster, target: Path) -> dict[int, Path]:
    """Each controller's log dir copied, the running ones paused for the copy (a batch is
    never caught half-written)."""
    running = [n for n in cluster.controllers if n.proc is not None]
    for n in running:
        cluster.pause(n)
    try:
        copies = {}
        for n in cluster.controllers:
            copies[n.node_id] = target / f"node{n.node_id}"
            shutil.copytree(n.home / "data", copies[n.node_id])
        return copies
    finally:
        for n in running:
            cluster.resume(n)


def truncations(node: Node, since: int) -> list[tuple[int, int]]:
    """(offset, leader) of each truncation line in the node's server.log past byte ``since``."""
    path = node.home / "server.log"
    if not path.exists():
        return []
    with path.open("rb") as f:
        f.seek(since)
        text = f.read().decode("utf-8", "replace")
    return [(int(m.group(1)), int(m.group(2))) for m in TRUNCATED.finditer(text)]


def log_size(node: Node) -> int:
    path = node.home / "server.log"
    return path.stat().st_size if path.exists() else 0


def diverge(cluster: KraftCluster, target: Path, tag: str, *, writes: int = 4,
            hold_s: float = 1.0) -> Diverged:
    """Make one divergence (see the module's doc) and copy the log dirs into ``target``.
    ``tag`` keeps the ACL principals and config values of each run apart; ``hold_s``: how
    long the leader goes on alone after the writes before it is killed (it resigns about 3 s
    after the freeze)."""
    view = quorum_view(cluster, cluster.controllers)
    assert view is not None, "the quorum has no leader"
    leader_id, epoch = view
    leader = cluster.node(leader_id)
    followers = [n for n in cluster.controllers if n is not leader]
    writer = Writer(leader.endpoint, writes + 1)
    sent = []
    try:
        for n in followers:
            cluster.pause(n)
        try:
            # A follower's fetch parked at the leader before the freeze is answered within
            # 500 ms (the leader's NoOp, or its wait): what it carries reaches the frozen
            # node's socket and is appended when it wakes. Writes go after that.
            time.sleep(FETCH_WAIT_S)
            for i in range(writes):
                principal = f"User:lost-{tag}-{i}"
                writer.send(_acl(principal))
                sent.append(f"ACL {principal}")
            writer.send(_config("orders", "retention.ms", f"{len(tag)}0000{writes}"))
            sent.append("retention.ms on orders")
            time.sleep(hold_s)  # the leader appends them, and NoOps every 500 ms
            cluster.stop_node(leader)
        finally:
            for n in followers:
                cluster.resume(n)
    finally:
        writer.close()
    new_leader, new_epoch = wait_leader(cluster, followers, epoch)
    new = cluster.node(new_leader)
    _committed_acl(new.endpoint, f"User:kept-{tag}")  # the two left commit it
    target.mkdir(parents=True, exist_ok=True)
    copies = copy_log_dirs(cluster, target)
    mark = log_size(leader)
    cluster.start_node(leader)
    found = _wait_truncation(leader, mark)
    cluster.wait_ready(timeout=90)
    return Diverged(leader_id, epoch, new_leader, new_epoch, copies,
                    [offset for offset, _ in found], sent)


def _committed_acl(endpoint: str, principal: str, timeout: float = 60) -> None:
    """An ACL written through ``endpoint`` and answered without error (the new leader's
    controller may refuse writes for a moment after its election: retried)."""
    deadline = time.monotonic() + timeout
    while True:
        code = -1
        with contextlib.suppress(OSError):
            code = int(call(endpoint, _acl(principal)).results[0].error_code)
        if code == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the ACL for {principal} was not committed (error {code})")
        time.sleep(0.3)


def _wait_truncation(node: Node, mark: int, timeout: float = 90) -> list[tuple[int, int]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = truncations(node, mark)
        if found:
            time.sleep(1)  # a second round of truncation follows at once if there is one
            return truncations(node, mark)
        time.sleep(0.2)
    raise RuntimeError(f"node {node.node_id} logged no truncation within {timeout} s")


def setup_topic(cluster: KraftCluster, timeout: float = 60) -> None:
    """The topic the configs go to, created through the controllers (retried until the
    brokers are unfenced: a topic needs one)."""
    deadline = time.monotonic() + timeout
    while True:
        view = quorum_view(cluster, cluster.controllers)
        if view is not None and view[0] >= 0:
            with contextlib.suppress(OSError):
                answer = call(cluster.node(view[0]).endpoint, _topic("orders"))
                code = int(answer.topics[0].error_code)
                if code in (0, TOPIC_EXISTS):
                    return
        if time.monotonic() > deadline:
            raise RuntimeError("the topic could not be created")
        time.sleep(0.5)
