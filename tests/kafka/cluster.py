"""A real KRaft quorum on 127.0.0.1: three controllers and one broker from Kafka's own jars.

Each node is ``java kafka.Kafka node.properties`` in its own process group, formatted first
with Kafka's storage tool, listening on free loopback ports. :meth:`KraftCluster.stop` kills
every process group it started (the fixtures call it in ``finally``). Security variants are
given as extra properties per listener (see ``tests/test_live_*.py``).
"""

from __future__ import annotations

import base64
import contextlib
import os
import random
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mdshell.source.quorum.client import Client
from mdshell.source.quorum.config import ClientConfig
from mdshell.source.quorum.discover import describe_quorum
from mdshell.source.quorum.errors import LiveError

from . import jars

HEAP = "-Xmx384m"
JVM = [HEAP, "-Xms64m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:TieredStopAtLevel=1",
       "-Djava.awt.headless=true"]


def free_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on 127.0.0.1, below the kernel's ephemeral range.

    Kafka binds them seconds later; a port the kernel hands out (``bind`` to 0) may meanwhile
    become the local end of some outgoing connection on a busy machine, and the node then
    fails with "Address already in use". Ports below the ephemeral range are never handed
    out that way; each is checked free by binding it."""
    low = _ephemeral_low()
    rng = random.Random()
    socks: list[socket.socket] = []
    try:
        for _ in range(2000):
            if len(socks) == n:
                break
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", rng.randrange(10000, low)))
            except OSError:
                s.close()
                continue
            socks.append(s)
        else:
            raise RuntimeError(f"no {n} free ports found below {low}")
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768  # Linux's default
    return max(low, 12000)


def random_cluster_id() -> str:
    """As Kafka's Uuid.randomUuid: base64url, never starting with '-' (an option to tools)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def write_props(path: Path, props: dict[str, str]) -> None:
    lines = [f"{k}={v}" for k, v in props.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@dataclass
class Node:
    node_id: int
    role: str  # "controller" or "broker"
    port: int
    props: dict[str, str]
    home: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def metadata_dir(self) -> Path:
        return self.home / "data" / "__cluster_metadata-0"

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class KraftCluster:
    """Three static voters (ids 1-3) and, optionally, a broker (id 4)."""

    version: str
    workdir: Path
    controller_extra: dict[str, str] = field(default_factory=dict)
    broker_extra: dict[str, str] = field(default_factory=dict)
    controller_protocol: str = "PLAINTEXT"
    broker_protocol: str = "PLAINTEXT"
    with_broker: bool = True
    jaas: str | None = None  # a JAAS file for the JVMs (SASL), if any
    client_settings: ClientConfig | None = None  # how tests reach the controllers
    node_extra: dict[int, dict[str, str]] = field(default_factory=dict)  # per node id
    format_args: tuple[str, ...] = ()  # extra StorageTool arguments for controllers
    cluster_id: str = field(default_factory=random_cluster_id)
    nodes: list[Node] = field(default_factory=list)
    # A dynamic quorum (KIP-853, kraft.version 1): controller.quorum.bootstrap.servers and
    # every controller formatted with --initial-controllers (directory ids chosen here).
    dynamic: bool = False
    directory_ids: dict[int, str] = field(default_factory=dict)
    # A dynamic quorum begun as KIP-853's other way: node 1 formatted --standalone (the only
    # voter), nodes 2 and 3 --no-initial-controllers (observers until add-controller).
    standalone: bool = False
    node_format: dict[int, tuple[str, ...]] = field(default_factory=dict)  # per node id
    # Combined mode: ids 1-3 are process.roles=broker,controller, each with a BROKER
    # listener too (on broker_ports); no separate broker.
    combined: bool = False
    broker_ports: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ports = free_ports(7 if self.combined else 4)
        if self.combined:
            self.with_broker = False
            self.broker_ports = {i: ports[3 + i] for i in (1, 2, 3)}
        voters = ",".join(f"{i}@127.0.0.1:{ports[i - 1]}" for i in (1, 2, 3))
        quorum = {"controller.quorum.voters": voters}
        if self.dynamic or self.standalone:
            quorum = {"controller.quorum.bootstrap.servers":
                      ",".join(f"127.0.0.1:{ports[i - 1]}" for i in (1, 2, 3))}
        if self.standalone:
            self.node_format = {1: ("--standalone",), 2: ("--no-initial-controllers",),
                                3: ("--no-initial-controllers",)}
        elif self.dynamic:
            self.directory_ids = {i: random_cluster_id() for i in (1, 2, 3)}
            initial = ",".join(f"{i}@127.0.0.1:{ports[i - 1]}:{self.directory_ids[i]}"
                               for i in (1, 2, 3))
            self.format_args = (*self.format_args, "--initial-controllers", initial)
        common = {
            **quorum,
            "controller.listener.names": "CONTROLLER",
            "num.network.threads": "1",
            "num.io.threads": "2",
            "num.replica.fetchers": "1",
            "background.threads": "2",
            "log.cleaner.enable": "false",
            "controller.quorum.election.timeout.ms": "1000",
            "controller.quorum.fetch.timeout.ms": "2000",
        }
        for i in (1, 2, 3):
            props = {
                **common,
                "process.roles": "controller",
                "node.id": str(i),
                "listeners": f"CONTROLLER://127.0.0.1:{ports[i - 1]}",
                "listener.security.protocol.map": f"CONTROLLER:{self.controller_protocol}",
                **({"advertised.listeners": f"CONTROLLER://127.0.0.1:{ports[i - 1]}"}
                   if self.dynamic or self.standalone else {}),
                **(self._combined_props(i, ports[i - 1]) if self.combined else {}),
                **self.controller_extra,
                **self.node_extra.get(i, {}),
            }
            self.nodes.append(self._node(i, "controller", ports[i - 1], props))
        if self.with_broker:
            props = {
                **common,
                "process.roles": "broker",
                "node.id": "4",
                "listeners": f"BROKER://127.0.0.1:{ports[3]}",
                "advertised.listeners": f"BROKER://127.0.0.1:{ports[3]}",
                "inter.broker.listener.name": "BROKER",
                "listener.security.protocol.map":
                    f"CONTROLLER:{self.controller_protocol},BROKER:{self.broker_protocol}",
                "offsets.topic.replication.factor": "1",
                "transaction.state.log.replication.factor": "1",
                "transaction.state.log.min.isr": "1",
                "share.coordinator.state.topic.replication.factor": "1",
                "share.coordinator.state.topic.min.isr": "1",
                "group.initial.rebalance.delay.ms": "0",
                "num.partitions": "1",
                **self.broker_extra,
            }
            self.nodes.append(self._node(4, "broker", ports[3], props))

    def _combined_props(self, i: int, controller_port: int) -> dict[str, str]:
        broker = f"BROKER://127.0.0.1:{self.broker_ports[i]}"
        return {
            "process.roles": "broker,controller",
            "listeners": f"CONTROLLER://127.0.0.1:{controller_port},{broker}",
            "advertised.listeners": f"CONTROLLER://127.0.0.1:{controller_port},{broker}",
            "inter.broker.listener.name": "BROKER",
            "listener.security.protocol.map":
                f"CONTROLLER:{self.controller_protocol},BROKER:{self.broker_protocol}",
            "group.initial.rebalance.delay.ms": "0",
        }

    def _node(self, node_id: int, role: str, port: int, props: dict[str, str]) -> Node:
        home = self.workdir / f"node{node_id}"
        (home / "data").mkdir(parents=True, exist_ok=True)
        props["log.dirs"] = str(home / "data")
        return Node(node_id, role, port, props, home)

    # -- properties ------------------------------------------------------------------------

    @property
    def controllers(self) -> list[Node]:
        return [n for n in self.nodes if n.role == "controller"]

    @property
    def broker(self) -> Node:
        return next(n for n in self.nodes if n.role == "broker")

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(n.endpoint for n in self.controllers)

    def node(self, node_id: int) -> Node:
        return next(n for n in self.nodes if n.node_id == node_id)

    # -- lifecycle -------------------------------------------------------------------------

    def _java(self, main: str, *args: str, heap: str = "-Xmx256m") -> list[str]:
        # java.io.tmpdir under the cluster's work dir: what Kafka leaves there goes with it.
        cmd = [jars.java(), heap, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
               f"-Djava.io.tmpdir={self.workdir}"]
        if self.jaas:
            cmd.append(f"-Djava.security.auth.login.config={self.jaas}")
        return [*cmd, "-cp", jars.classpath(self.version), main, *args]

    def format(self, extra_args: tuple[str, ...] = ()) -> None:
        """Format every node with Kafka's storage tool (one JVM per node, in parallel)."""
        procs = []
        for n in self.nodes:
            path = n.home / "server.properties"
            write_props(path, n.props)
            args = ["format", "-t", self.cluster_id, "-c", str(path), "--ignore-formatted"]
            if n.role == "controller":
                args += [*extra_args, *self.node_format.get(n.node_id, ())]
            procs.append(subprocess.Popen(self._java("kafka.tools.StorageTool", *args),
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        for p in procs:
            out, _ = p.communicate(timeout=180)
            if p.returncode != 0:
                raise RuntimeError("kafka-storage format failed: " + out.decode()[-2000:])

    def start(self) -> None:
        self.format(self.format_args)
        if self.standalone:  # the storage tool chose them: as meta.properties says
            self.directory_ids = {n.node_id: _directory_id(n) for n in self.controllers}
        for n in self.nodes:
            self.start_node(n)
        self.wait_ready()

    def start_node(self, n: Node) -> None:
        log = open(n.home / "server.out", "ab")  # noqa: SIM115 (closed by the process end)
        cmd = [jars.java(), *JVM]
        if self.jaas:
            cmd.append(f"-Djava.security.auth.login.config={self.jaas}")
        cmd += _logging(n.home, self.version)
        cmd += ["-cp", jars.classpath(self.version) + _extra_classpath(self.version), "kafka.Kafka",
                str(n.home / "server.properties")]
        n.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True, cwd=n.home)
        log.close()

    def stop_node(self, n: Node, sig: int = signal.SIGKILL) -> None:
        if n.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(n.proc.pid, sig)
        try:
            n.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(n.proc.pid, signal.SIGKILL)
            n.proc.wait(timeout=30)
        n.proc = None

    def stop(self) -> None:
        for n in self.nodes:
            self.stop_node(n)

    def pause(self, n: Node, timeout: float = 10) -> None:
        """SIGSTOP the node, returning once the kernel shows every thread of it stopped:
        a group stop reaches each thread when it next runs, so a request sent just after
        the signal could still be answered."""
        assert n.proc is not None
        os.killpg(n.proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + timeout
        while not _all_stopped(n.proc.pid):
            if time.monotonic() > deadline:
                raise AssertionError(f"node {n.node_id} not stopped {timeout} s after SIGSTOP")
            time.sleep(0.01)

    def resume(self, n: Node) -> None:
        assert n.proc is not None
        os.killpg(n.proc.pid, signal.SIGCONT)

    @contextlib.contextmanager
    def running(self) -> Iterator[KraftCluster]:
        """Started, and stopped whatever happens (a start that fails half-way included);
        the tests fail, never skip, without Kafka's jars."""
        try:
            jars.jars(self.version)
        except jars.KafkaUnavailable as e:
            import pytest

            pytest.fail(str(e))
        try:
            self.start()
            yield self
        finally:
            self.stop()

    def wait_ready(self, timeout: float = 150.0) -> None:
        """Until every port accepts and the quorum has a leader (and the broker registered)."""
        deadline = time.monotonic() + timeout
        for n in self.nodes:
            while not _port_open(n.port):
                self._check_alive(n)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"node {n.node_id} did not open port {n.port}: "
                                       + self.tail(n))
                time.sleep(0.2)
        self.wait_for_leader(deadline)

    def client_config(self) -> ClientConfig:
        """How a client reaches the controller listener (overridden by secure variants)."""
        return self.client_settings or ClientConfig()

    def wait_for_leader(self, deadline: float) -> None:
        """Until DescribeQuorum names a leader with a high watermark (and the broker, if any,
        fetches as an observer)."""
        client = Client(self.bootstrap_controllers, self.client_config())
        try:
            while True:
                try:
                    q = describe_quorum(client)
                    if q.high_watermark > 0 and (not self.with_broker or any(
                            o.replica_id == 4 for o in q.observers)):
                        return
                except LiveError:
                    client.close()
                if time.monotonic() > deadline:
                    raise RuntimeError("the quorum did not elect a leader in time: "
                                       + self.tail(self.nodes[0]))
                time.sleep(0.3)
        finally:
            client.close()

    def quorum_tool(self, *args: str, config: Path | None = None) -> str:
        """``kafka-metadata-quorum --bootstrap-controller ... ARGS`` of this version: stdout."""
        extra = ["--command-config", str(config)] if config else []
        cmd = self._java("org.apache.kafka.tools.MetadataQuorumCommand", *extra,
                         "--bootstrap-controller", self.bootstrap_controllers, *args)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if out.returncode != 0:
            raise RuntimeError(f"kafka-metadata-quorum {' '.join(args)}: {out.stderr[-2000:]}")
        return out.stdout

    def leader_id(self) -> int:
        client = Client(self.bootstrap_controllers, self.client_config())
        try:
            return describe_quorum(client).leader_id
        finally:
            client.close()

    def _check_alive(self, n: Node) -> None:
        if n.proc is not None and n.proc.poll() is not None:
            raise RuntimeError(f"node {n.node_id} exited ({n.proc.returncode}): " + self.tail(n))

    def tail(self, n: Node, lines: int = 30) -> str:
        path = n.home / "server.out"
        if not path.exists():
            return "(no output)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def grant(cluster: KraftCluster, user: str, *operations: str) -> None:
    """ACLs on the CLUSTER resource with Kafka's own kafka-acls, straight to the controllers
    (--bootstrap-controller over the PLAINTEXT listener, where ANONYMOUS is a super user)."""
    ops = [a for op in operations for a in ("--operation", op)]
    cmd = cluster._java("org.apache.kafka.tools.AclCommand", "--bootstrap-controller",
                        cluster.bootstrap_controllers, "--add", "--allow-principal",
                        f"User:{user}", *ops, "--cluster")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"kafka-acls for {user}: {out.stdout[-1000:]}{out.stderr[-1000:]}")


def _directory_id(n: Node) -> str:
    for line in (n.home / "data" / "meta.properties").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "directory.id":
            return value.strip()
    raise RuntimeError(f"node {n.node_id}: no directory.id in meta.properties")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        try:
            s.connect(("127.0.0.1", port))
            return True
        except OSError:
            return False


_LOG4J2 = """status = warn
appender.f.type = File
appender.f.name = F
appender.f.fileName = ${sys:kafka.logs.dir}/server.log
appender.f.layout.type = PatternLayout
appender.f.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.f.ref = F
logger.raft.name = org.apache.kafka.raft
logger.raft.level = INFO
"""
_BINDING = "log4j-slf4j-impl-2.25.4.jar"


def _binding_dir() -> Path:
    return jars.cache_root() / "kafka-extra"


def _extra_classpath(version: str) -> str:
    """Kafka 4's slf4j binding (shipped only in its tarball), so a failed test shows logs."""
    if version.startswith("3."):
        return ""
    target = _binding_dir()
    if not (target / _BINDING).exists():
        import shutil

        mvn = shutil.which("mvn")
        if mvn is None:
            return ""
        subprocess.run([mvn, "-q", "-B", "dependency:copy", "-Dartifact=org.apache.logging."
                        "log4j:log4j-slf4j-impl:2.25.4", f"-DoutputDirectory={target}"],
                       capture_output=True, timeout=300, check=False)
    return os.pathsep + str(target / _BINDING) if (target / _BINDING).exists() else ""


def _logging(home: Path, version: str) -> list[str]:
    if version.startswith("3."):
        return []
    conf = home / "log4j2.properties"
    conf.write_text(_LOG4J2, encoding="utf-8")
    return [f"-Dlog4j2.configurationFile={conf}", f"-Dkafka.logs.dir={home}"]


def _all_stopped(pid: int) -> bool:
    """Every thread of the process stopped (state T in /proc; a thread that has exited
    meanwhile does not count)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                state = f.read().rpartition(")")[2].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state not in ("T", "t"):
            return False
    return True
