"""Live mode on a real Kafka 4.4 quorum as issue 21 ran it: 3 nodes in combined mode
(broker,controller), a dynamic quorum (--initial-controllers). Frozen nodes, voter changes,
and Kafka's own ``kafka-metadata-quorum describe`` forms.

A frozen JVM still completes TCP handshakes (the kernel does) and then never answers: the
client must give each endpoint a few seconds, not the request timeout; a follower whose leader
froze must say its view is stale within seconds and follow the leader the others elect. Every
test resumes (SIGCONT) what it froze, in ``finally``; the module's one cluster is stopped
(SIGKILL) at the end whatever happens.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mdshell.commands import Shell
from mdshell.session import load
from mdshell.source.live import LiveSource
from mdshell.source.quorum.client import Client
from mdshell.source.quorum.config import ClientConfig
from mdshell.source.quorum.discover import describe_quorum
from mdshell.source.quorum.errors import LiveError
from mdshell.tree.node import RenderOptions
from tests.conftest import run_cli
from tests.kafka import jars
from tests.kafka.cluster import KraftCluster, Node, free_ports, grant
from tests.kafka.proxy import Proxy, Recorder
from tests.kafka.soak import SNAPSHOT_OFTEN, Soak

pytestmark = pytest.mark.live

VERSION = jars.KAFKA_44  # the newest: combined mode, dynamic quorum, as issue 21 ran it
# Bounds that tell the behaviours apart on a busy 2-core CI machine, not the targets: the old
# code waited out the 30 s request timeout in each case. The targets (a one-shot within 3 s
# when any controller answers, stale shown within 3 s of the leader freezing, the new leader
# followed within 2 s of its election) are measured and reported (docs/live.md), each test
# printing its figure.
ONE_SHOT_S = 10.0
NOTICE_S = 10.0
FOLLOW_S = 10.0


SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
# As issue 21's cluster: SCRAM-SHA-256 on a SASL_PLAINTEXT controller listener, the
# StandardAuthorizer. bob is a super user; carol has Describe and Alter on the cluster, not
# ClusterAction. The quorum itself and the tests' own tools use the PLAINTEXT listeners
# (ANONYMOUS, a super user).
SECURE = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS;User:bob",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256",
    "listener.name.sasl.scram-sha-256.sasl.jaas.config": f"{SCRAM} required;",
}
IDLE_MS = 4000  # connections.max.idle.ms: the controllers close idle connections soon
USERS = ("--add-scram", "SCRAM-SHA-256=[name=bob,password=bob-secret]",
         "--add-scram", "SCRAM-SHA-256=[name=carol,password=carol-secret]")


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    """Snapshots every second (the soak downloads them mid-follow), a SASL listener, idle
    connections closed after IDLE_MS."""
    cluster = KraftCluster(VERSION, tmp_path_factory.mktemp("kraft-failover"),
                           controller_extra={**SNAPSHOT_OFTEN, **SECURE,
                                             "connections.max.idle.ms": str(IDLE_MS)},
                           format_args=USERS,
                           dynamic=True, combined=True)
    sasl = dict(zip((1, 2, 3), free_ports(3), strict=True))
    for n in cluster.controllers:
        listener = f",SASL://127.0.0.1:{sasl[n.node_id]}"
        n.props["listeners"] += listener
        n.props["advertised.listeners"] += listener
        n.props["listener.security.protocol.map"] += ",SASL:SASL_PLAINTEXT"
        n.props["controller.listener.names"] = "CONTROLLER,SASL"
    with cluster.running():  # SIGKILL also stops a node left paused
        grant(cluster, "carol", "Describe", "Alter")
        yield cluster


def sasl_endpoints(cluster: KraftCluster) -> str:
    """The SASL_PLAINTEXT controller listeners (SCRAM-SHA-256)."""
    return ",".join(n.props["listeners"].split("SASL://")[1] for n in cluster.controllers)


@contextlib.contextmanager
def frozen(cluster: KraftCluster, node: Node) -> Iterator[float]:
    """``node`` SIGSTOPped (yields when), SIGCONTed and the quorum settled afterwards."""
    cluster.pause(node)
    try:
        yield time.monotonic()
    finally:
        cluster.resume(node)
        cluster.wait_ready(timeout=60)


def timed_one_shot(bootstrap: str) -> float:
    t0 = time.monotonic()
    source = LiveSource(bootstrap)
    try:
        loaded = load(source)
        elapsed = time.monotonic() - t0
        assert loaded.image.metadata_version is not None
    finally:
        source.close()
    return elapsed


def test_a_silent_first_endpoint_costs_seconds_not_the_budget(quorum: KraftCluster) -> None:
    """Item 3: a listener that accepts and never answers, listed first."""
    proxy = Proxy(("127.0.0.1", 1), silent=True)
    try:
        bootstrap = f"{proxy.endpoint},{quorum.bootstrap_controllers}"
        elapsed = timed_one_shot(bootstrap)
        print(f"one-shot with a silent first endpoint: {elapsed:.2f} s")
        assert elapsed <= ONE_SHOT_S
        t0 = time.monotonic()
        out = run_cli("-q", bootstrap, "ls", "/image")
        assert out.returncode == 0, out.stderr
        assert time.monotonic() - t0 < 15  # interpreter start-up included
    finally:
        proxy.close()


def test_a_frozen_first_controller_costs_seconds(quorum: KraftCluster) -> None:
    """Item 3 as reported: the first controller in -q frozen (a follower: the quorum goes on)."""
    leader = quorum.leader_id()
    other = next(n for n in quorum.controllers if n.node_id != leader)
    rest = [n.endpoint for n in quorum.controllers if n is not other]
    with frozen(quorum, other):
        elapsed = timed_one_shot(",".join([other.endpoint, *rest]))
    print(f"one-shot with the first controller frozen: {elapsed:.2f} s")
    assert elapsed <= ONE_SHOT_S


def _leader_elsewhere(client: Client, old: int, epoch: int) -> int | None:
    with contextlib.suppress(LiveError):
        q = describe_quorum(client)
        if q.leader_epoch > epoch and q.leader_id not in (old, -1):
            return q.leader_id
    return None


def test_a_frozen_leader_is_noticed_and_the_new_one_followed(quorum: KraftCluster) -> None:
    """Item 2: stale within 3 s of the freeze, the new leader followed within 2 s of its
    election (seen by asking the two other voters every 50 ms)."""
    source = LiveSource(quorum.bootstrap_controllers)
    shell = Shell(source, opts=RenderOptions())
    old = quorum.node(quorum.leader_id())
    others = Client(",".join(n.endpoint for n in quorum.controllers if n is not old),
                    ClientConfig())
    try:
        source.follow()
        time.sleep(1.5)  # following, fresh
        assert source.stale_since is None
        epoch = source.observer.leader_epoch
        assert source.observer.leader_id == old.node_id
        noticed = elected = followed = None
        state = ""
        with frozen(quorum, old) as t_freeze:
            deadline = t_freeze + 30
            while followed is None and time.monotonic() < deadline:
                now = time.monotonic()
                if noticed is None and source.stale_since is not None:
                    noticed = now - t_freeze
                    state = "\n".join(shell.run(["cat", "/live/state"]).lines)
                if elected is None and (new := _leader_elsewhere(others, old.node_id, epoch)):
                    elected = now
                if (elected is not None and source.observer.leader_id == new
                        and source.stale_since is None):
                    followed = now - elected
                time.sleep(0.05)
        print(f"frozen leader: stale after {noticed} s, new leader followed {followed} s "
              "after its election")
        assert noticed is not None and noticed <= NOTICE_S
        assert state.startswith("stale since"), state
        assert followed is not None and followed <= FOLLOW_S
        leader = "\n".join(shell.run(["cat", "/live/leader"]).lines)
        assert f"node {source.observer.leader_id} at" in leader
        assert "following" in "\n".join(shell.run(["cat", "/live/state"]).lines)
    finally:
        others.close()
        source.close()


def test_a_cut_off_leader_of_an_older_epoch_is_not_taken_for_the_quorum(
        quorum: KraftCluster) -> None:
    """A controller cut off from the others still answers as the leader of the epoch it
    last knew (until check-quorum makes it resign; before Kafka 3.7 for ever), while the
    others elect a newer leader. Listed first in -q, its answer must not be taken: every
    controller given is asked, and the leader of the newest epoch answers. The cut-off one is
    the real leader's answers kept from before an election (``Recorder``)."""
    leader = quorum.node(quorum.leader_id())
    stale = Recorder(("127.0.0.1", leader.port))
    others = Client(",".join(n.endpoint for n in quorum.controllers if n is not leader),
                    ClientConfig())
    try:
        through = Client(stale.endpoint, ClientConfig())
        try:
            before = describe_quorum(through)  # the real leader's answer, kept
        finally:
            through.close()
        assert before.leader_id == leader.node_id
        stale.freeze()
        with frozen(quorum, leader) as t_freeze:
            while _leader_elsewhere(others, leader.node_id, before.leader_epoch) is None:
                assert time.monotonic() < t_freeze + 30, "no new leader within 30 s"
                time.sleep(0.2)
        alone = Client(stale.endpoint, ClientConfig())
        everyone = Client(",".join([stale.endpoint, *(n.endpoint for n in quorum.controllers)]),
                          ClientConfig())
        try:
            kept = describe_quorum(alone)  # what the cut-off controller says
            t0 = time.monotonic()
            now = describe_quorum(everyone)
            took = time.monotonic() - t0
        finally:
            alone.close()
            everyone.close()
        assert (kept.leader_id, kept.leader_epoch) == (before.leader_id, before.leader_epoch)
        assert now.leader_epoch > before.leader_epoch and now.asked != stale.endpoint
        assert now.leader_id == quorum.leader_id()
        assert took < 5, took
    finally:
        others.close()
        stale.close()


def _fields(text: str) -> dict[str, str]:
    """``Key: value`` lines (kafka-metadata-quorum describe --status, mdshell's quorum)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def test_quorum_forms_are_kafkas(quorum: KraftCluster) -> None:
    """Item 5: CurrentVoters with directory ids and endpoints, DirectoryId in base64, the
    leader's row first: what kafka-metadata-quorum of the quorum's version prints."""
    source = LiveSource(quorum.bootstrap_controllers)
    shell = Shell(source, opts=RenderOptions())
    try:
        kafka = _fields(quorum.quorum_tool("describe", "--status"))
        ours = _fields("\n".join(shell.run(["quorum"]).lines))
        for key in ("ClusterId", "LeaderId", "LeaderEpoch", "CurrentVoters", "CurrentObservers"):
            assert ours[key] == kafka[key], key
        assert all(f'"directoryId": "{d}"' in ours["CurrentVoters"]
                   for d in quorum.directory_ids.values())
        table = quorum.quorum_tool("describe", "--replication").splitlines()
        kafka_rows = [(r.split()[0], r.split()[1], r.split()[-1]) for r in table[1:] if r]
        result = shell.run(["quorum", "--replication"])
        rows = list(result.lines)
        assert rows[0].split()[:2] == ["NodeId", "DirectoryId"]
        ours_rows = [(r.split()[0], r.split()[1], r.split()[-1]) for r in rows[1:]]
        assert ours_rows == kafka_rows
        voters = "\n".join(shell.run(["tree", "/quorum/voters"]).lines)
        assert all(f"directoryId={d}" in voters for d in quorum.directory_ids.values())
    finally:
        source.close()


def _parse_controllers(rows: list[str]) -> dict[int, str]:
    """``controllers``' table: id -> the VOTER column."""
    out: dict[int, str] = {}
    for line in rows[1:]:
        parts = line.split()
        if parts and parts[0].isdigit():
            out[int(parts[0])] = parts[1]
    return out


def _controllers_until(shell: Shell, done: Callable[[dict[int, str]], bool],
                       timeout: float = 20.0) -> dict[int, str]:
    """``controllers``' VOTER column, asked again every 0.2 s until ``done`` says so or
    ``timeout`` seconds pass: the last answer either way."""
    deadline = time.monotonic() + timeout
    while True:
        flags = _parse_controllers(list(shell.run(["controllers"]).lines))
        if done(flags) or time.monotonic() > deadline:
            return flags
        time.sleep(0.2)


def test_a_removed_voter_is_followed_in_every_view(quorum: KraftCluster) -> None:
    """Item 1: kafka-metadata-quorum remove-controller while a session follows: controllers,
    quorum and /quorum say so within seconds; add-controller brings it back."""
    source = LiveSource(quorum.bootstrap_controllers)
    shell = Shell(source, opts=RenderOptions())
    leader = quorum.leader_id()
    gone = next(n for n in quorum.controllers if n.node_id != leader)
    removed = False
    try:
        source.follow()
        everyone = {1: "true", 2: "true", 3: "true"}
        # Controllers register after the election the fixture waits for: wait for theirs.
        assert _controllers_until(shell, lambda f: f == everyone) == everyone
        quorum.quorum_tool("remove-controller", "--controller-id", str(gone.node_id),
                           "--controller-directory-id", quorum.directory_ids[gone.node_id])
        removed = True
        t0 = time.monotonic()
        seen = None
        while time.monotonic() - t0 < 20:
            flags = _parse_controllers(list(shell.run(["controllers"]).lines))
            if flags.get(gone.node_id) == "false":
                seen = time.monotonic() - t0
                break
            time.sleep(0.1)
        print(f"voter removal seen by controllers after {seen} s")
        assert seen is not None  # the old code still said "true" after 20 s
        status = _fields("\n".join(shell.run(["quorum"]).lines))
        assert f'"id": {gone.node_id},' not in status["CurrentVoters"]
        voters = shell.run(["ls", "/quorum/voters"]).lines
        assert str(gone.node_id) not in list(voters)
    finally:
        source.close()
        if removed:
            quorum.quorum_tool("add-controller", config=gone.home / "server.properties")
            _wait_voters(quorum, 3)


def _wait_voters(cluster: KraftCluster, n: int) -> None:
    client = Client(cluster.bootstrap_controllers, ClientConfig())
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(LiveError):
                if len(describe_quorum(client).voters) == n:
                    return
            time.sleep(0.3)
        raise AssertionError(f"the quorum did not get back to {n} voters")
    finally:
        client.close()


def test_without_a_quorum_nothing_contradicts_itself(quorum: KraftCluster) -> None:
    """Item 4: two of three controllers frozen, so no leader. A running session's quorum
    says no leader was found and names none; a one-shot ends with one line that does not
    say "retrying"."""
    source = LiveSource(quorum.bootstrap_controllers)
    shell = Shell(source, opts=RenderOptions())
    leader = quorum.leader_id()  # frozen with a follower: the third cannot elect anyone
    left, *two = sorted(quorum.controllers, key=lambda n: n.node_id == leader)
    try:
        with frozen(quorum, two[0]), frozen(quorum, two[1]):
            result = shell.run(["quorum"])
            text = "\n".join([*result.lines, *result.errors])
            assert result.errors and "no leader found" in text, text
            assert "LeaderId" not in text
            t0 = time.monotonic()
            out = run_cli("-q", left.endpoint, "ls", "/", timeout=120)
            took = time.monotonic() - t0
            err = out.stderr.strip()
            print(f"one-shot without a quorum: exit {out.returncode} after {took:.1f} s: {err}")
            assert out.returncode == 1 and len(err.splitlines()) == 1
            assert "retrying" not in err and "gave up" in err
    finally:
        source.close()


def test_connections_the_controllers_closed_while_idle_are_opened_again(
        quorum: KraftCluster) -> None:
    """Controllers close connections idle longer than connections.max.idle.ms (10 min by
    default, IDLE_MS here), and restarted ones have closed them all. A session's next quorum
    must open new ones: it failed "no leader found (...: the connection was closed
    mid-response)" (the leader's closed connection tried first, the others not the leader),
    as the soak saw after controllers restarted."""
    source = LiveSource(quorum.bootstrap_controllers)
    shell = Shell(source, opts=RenderOptions())
    try:
        first = shell.run(["quorum"])
        assert not first.errors, first.errors
        time.sleep(IDLE_MS / 1000 + 3)  # Kafka's reaper closes them (it checks every poll)
        result = shell.run(["quorum"])
        assert not result.errors, result.errors
        kafka = _fields(quorum.quorum_tool("describe", "--status"))
        assert _fields("\n".join(result.lines))["LeaderId"] == kafka["LeaderId"]
    finally:
        source.close()


def _scram(tmp: Path, user: str) -> str:
    path = tmp / f"{user}.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                    f'sasl.jaas.config={SCRAM} required username="{user}" '
                    f'password="{user}-secret";\n', encoding="utf-8")
    return str(path)


def test_scram_sha_256_on_the_controller_listener(quorum: KraftCluster, tmp_path: Path) -> None:
    """Item 6: SCRAM-SHA-256 on a SASL_PLAINTEXT controller listener of a 4.4 quorum with
    the StandardAuthorizer: the same image and quorum as over PLAINTEXT."""
    out = run_cli("-q", sasl_endpoints(quorum), "--config", _scram(tmp_path, "bob"), "cat",
                  "/live/security", "/image/features/metadataVersion")
    assert out.returncode == 0, out.stderr
    assert "SCRAM-SHA-256 as bob" in out.stdout and "4.4-IV" in out.stdout
    assert out.stderr == ""


def test_a_principal_without_cluster_action_gets_an_incomplete_verdict(
        quorum: KraftCluster, tmp_path: Path) -> None:
    """Item 6: carol (SCRAM-SHA-256, Describe and Alter, no ClusterAction) cannot fetch the
    log. mdshell says which ACL is missing and that the image is incomplete: health fails
    its data check, topics exits 1 with one error line; no warning about a segment (none
    exists in live mode). (What still answers, /live and /quorum: test_live_security.)"""
    base = ("-q", sasl_endpoints(quorum), "--config", _scram(tmp_path, "carol"))
    health = run_cli(*base, "health")
    print(health.stdout + health.stderr)
    assert health.returncode == 1
    assert "FAIL  data: the image is incomplete" in health.stdout
    topics = run_cli(*base, "topics")
    assert topics.returncode == 1
    errors = [line for line in topics.stderr.splitlines()
              if not line.startswith("mdshell: warning: ")]
    assert len(errors) == 1 and "CLUSTER_ACTION" in errors[0], topics.stderr
    assert "--operation ClusterAction" in errors[0]
    for out in (health, topics):
        assert "empty segment" not in out.stderr and ".log" not in out.stderr
        assert "Traceback" not in out.stderr


def test_a_short_seeded_soak_finds_no_divergence(quorum: KraftCluster, tmp_path: Path) -> None:
    """The soak (tests/kafka/soak.py; bench/live_soak.py runs hundreds of steps), short:
    seed 60 creates a topic, freezes the leader, alters a config, removes and re-adds a voter
    and kills a node; after each step the followed image equals -d on a copy of the leader's
    directory and the session's quorum equals kafka-metadata-quorum's. Last in the module: it
    leaves the quorum with three voters, stable, but with other leaders and epochs."""
    soak = Soak(quorum, seed=60)
    soak.keep = tmp_path  # a divergence's directory copy and both trees, to diff
    try:
        soak.run(6, 60.0, print)
    finally:
        soak.close()
    print(soak.summary())
    assert soak.steps >= 1
    assert soak.divergences == []
