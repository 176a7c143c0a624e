"""Live mode (-q) against a real Kafka KRaft quorum: 3 controllers + 1 broker on 127.0.0.1.

The quorum snapshots every second, so a fresh observer always starts from a FetchSnapshot
download. Topics and configs are made through the broker with a maintained admin client
(confluent-kafka). Without Java or Maven the fixture fails naming what to install.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mdshell import __version__
from mdshell.commands import Shell
from mdshell.session import load
from mdshell.source.live import LiveSource
from mdshell.tree.node import RenderOptions
from tests.conftest import run_cli
from tests.kafka import jars, tools
from tests.kafka.cluster import KraftCluster
from tests.kafka.proxy import Proxy

pytestmark = pytest.mark.live

VERSION = jars.KAFKA_4
_ADMINS: dict[str, object] = {}
SNAPSHOT_OFTEN = {
    "metadata.log.max.record.bytes.between.snapshots": "2048",
    "metadata.log.max.snapshot.interval.ms": "1000",
    # A new segment every few seconds (no minimum, unlike metadata.log.segment.bytes' 8 MiB):
    # following a controller's own directory must go on across a roll.
    "metadata.log.segment.ms": "4000",
}


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    cluster = KraftCluster(VERSION, tmp_path_factory.mktemp("kraft"),
                           controller_extra=dict(SNAPSHOT_OFTEN))
    with cluster.running():
        try:
            yield cluster
        finally:
            _ADMINS.pop(cluster.broker.endpoint, None)  # before its broker goes away


def admin(cluster: KraftCluster):  # type: ignore[no-untyped-def]
    """One admin client per broker, kept alive (a dropped one cancels its futures)."""
    from confluent_kafka.admin import AdminClient

    key = cluster.broker.endpoint
    if key not in _ADMINS:
        _ADMINS[key] = AdminClient({"bootstrap.servers": key, "socket.timeout.ms": 10000})
    return _ADMINS[key]


def create_topic(cluster: KraftCluster, name: str, partitions: int = 3) -> None:
    from confluent_kafka.admin import NewTopic

    futures = admin(cluster).create_topics([NewTopic(name, partitions, 1)],
                                           operation_timeout=20)
    futures[name].result(timeout=30)


def set_topic_config(cluster: KraftCluster, topic: str, key: str, value: str) -> None:
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    for f in admin(cluster).incremental_alter_configs([res]).values():
        f.result(timeout=30)


def hash_dir(path: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.iterdir()) if p.is_file()}


def wait_until(check, timeout: float = 30.0, what: str = "") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def live_shell(cluster: KraftCluster, bootstrap: str | None = None) -> tuple[LiveSource, Shell]:
    source = LiveSource(bootstrap or cluster.bootstrap_controllers)
    shell = Shell(source, opts=RenderOptions())
    return source, shell


def lines(shell: Shell, *words: str) -> list[str]:
    result = shell.run(list(words))
    assert not result.errors, result.errors
    return list(result.lines)


# --------------------------------------------------------------------------- catch-up


def test_catch_up_equals_leader_directory(kafka: KraftCluster) -> None:
    create_topic(kafka, "orders", 4)
    set_topic_config(kafka, "orders", "retention.ms", "3600000")
    leader = kafka.node(kafka.leader_id())
    before = hash_dir(leader.metadata_dir)
    source, shell = live_shell(kafka)  # not following: one image, at catch-up
    try:
        offset = source.observer.log.next_offset - 1  # the last offset fetched and committed
        live_tree = "\n".join(lines(shell, "tree", "/image")) + "\n"
    finally:
        source.close()
    on_disk = run_cli("-d", str(leader.metadata_dir), "--at", str(offset), "tree", "/image")
    assert on_disk.returncode == 0, on_disk.stderr
    assert live_tree == on_disk.stdout
    assert "orders:" in live_tree and "retention.ms:" in live_tree
    # Read-only: mdshell read the leader's directory while Kafka ran and changed nothing
    # (Kafka itself may only have added files meanwhile).
    after = hash_dir(leader.metadata_dir)
    changed = {k for k in before if k in after and before[k] != after[k]  # Kafka trims the
               and not k.endswith((".log", ".index", ".timeindex"))  # index of a segment it
               and k != "quorum-state"}  # rolls
    assert not changed


def test_fresh_observer_starts_from_a_snapshot(kafka: KraftCluster) -> None:
    for i in range(3):
        create_topic(kafka, f"snap-{i}", 2)
    leader = kafka.node(kafka.leader_id())
    wait_until(lambda: any(p.name.endswith(".checkpoint") and not p.name.startswith("0" * 20)
                           for p in leader.metadata_dir.iterdir()), what="a snapshot")
    source, shell = live_shell(kafka)
    try:
        status = source.status()
        assert status.snapshot is not None and status.snapshot_downloads == 1
        assert status.snapshot_chunks >= 1  # 8 MiB chunks: one for a small snapshot
        names = lines(shell, "ls", "/image/topics/byName")
        assert {"snap-0", "snap-1", "snap-2"} <= set(names)
        offset = source.observer.log.next_offset - 1
        live_tree = lines(shell, "tree", "/image")
    finally:
        source.close()
    on_disk = run_cli("-d", str(leader.metadata_dir), "--at", str(offset), "tree", "/image")
    assert on_disk.returncode == 0, on_disk.stderr
    assert "\n".join(live_tree) + "\n" == on_disk.stdout


def test_snapshot_in_small_chunks_is_the_leaders_file(kafka: KraftCluster) -> None:
    """FetchSnapshot with a 256-byte MaxBytes: many chunks, batches split across them (Kafka's
    UnalignedRecords), joined into exactly the leader's .checkpoint file."""
    from mdshell.source.live import checkpoint_name
    from mdshell.source.quorum.client import Client
    from mdshell.source.quorum.config import ClientConfig
    from mdshell.source.quorum.discover import learn
    from mdshell.source.quorum.observer import Observer

    client = Client(kafka.bootstrap_controllers, ClientConfig())
    try:
        view = learn(client)
        observer = Observer(client, view.cluster_id)
        observer.known_endpoints = dict(view.controllers)
        observer.snapshot_chunk_bytes = 256
        observer.catch_up(60)
    finally:
        client.close()
    log = observer.log
    assert log.snapshot is not None and log.snapshot_id is not None
    assert len(log.snapshot) > 768 and observer.progress.snapshot_chunks >= 4
    assert observer.progress.snapshot_chunks == -(-len(log.snapshot) // 256)
    on_disk = kafka.node(observer.leader_id).metadata_dir / checkpoint_name(*log.snapshot_id)
    assert log.snapshot == on_disk.read_bytes()


def test_live_and_quorum_nodes(kafka: KraftCluster) -> None:
    out = run_cli("-q", kafka.bootstrap_controllers, "-o", "json", "cat",
                  "/quorum/leaderId", "/quorum/highWatermark", "/live/clusterId")
    assert out.returncode == 0, out.stderr
    text = run_cli("-q", kafka.bootstrap_controllers, "tree", "/quorum/voters")
    assert text.returncode == 0
    assert text.stdout.count("ReplicaId=") == 3 and "(leader)" in text.stdout
    # mdshell fetches with ReplicaId -1: the leader never lists it as an observer.
    observers = run_cli("-q", kafka.bootstrap_controllers, "ls", "/quorum/observers")
    assert observers.stdout.split() == ["4"]
    assert kafka.cluster_id in out.stdout
    quorum = run_cli("-q", kafka.bootstrap_controllers, "-o", "json", "quorum",
                     "--replication")
    assert quorum.returncode == 0, quorum.stderr
    rows = json.loads(quorum.stdout)
    assert sorted(r["status"] for r in rows) == ["Follower", "Follower", "Leader", "Observer"]
    assert all(r["logEndOffset"] > 0 and r["lag"] is not None for r in rows)
    status = run_cli("-q", kafka.bootstrap_controllers, "quorum")
    assert "unknown" not in status.stdout
    # As kafka-metadata-quorum describe --status of 4.x prints it (static voters: no
    # directory id; the broker's own, from its fetches).
    observers = next(line for line in status.stdout.splitlines()
                     if line.startswith("CurrentObservers:")).split(":", 1)[1].strip()
    kafka_says = next(line for line in kafka.quorum_tool("describe", "--status").splitlines()
                      if line.startswith("CurrentObservers:")).split(":", 1)[1].strip()
    assert observers == kafka_says and observers.startswith('[{"id": 4, "directoryId": "')
    # health knows the voters from DescribeQuorum when the log has no VotersRecord.
    health = run_cli("-q", kafka.bootstrap_controllers, "-o", "json", "health")
    checks = {c["name"]: c for c in json.loads(health.stdout)["checks"]}
    assert "voter set is unknown" not in health.stdout
    assert checks["controller registrations"]["status"] == "ok", health.stdout
    # The commands that read the source beyond the image work on what was fetched.
    more = run_cli("-q", kafka.bootstrap_controllers, stdin="records --limit 2\nls /log\n"
                   "at earliest\ncat /image/provenance\n"
                   "records --snapshot --batches --limit 1\n")
    assert more.returncode == 0, more.stderr
    assert "image as of " in more.stdout and "segments" in more.stdout
    # The fetched snapshot listed batch by batch, as kafka-dump-log prints a file.
    assert re.search(r"^Dumping \d{20}-\d{10}\.checkpoint$", more.stdout, re.M)
    assert "isControl: true" in more.stdout and "isvalid: true" in more.stdout


def test_save_opens_with_mdshell_and_kafka_shell(kafka: KraftCluster, tmp_path: Path) -> None:
    create_topic(kafka, "saved-topic", 2)
    leader = kafka.node(kafka.leader_id())
    have = {p.name for p in leader.metadata_dir.glob("*.checkpoint")}
    # A snapshot taken after the topic was committed, so the saved .checkpoint holds it.
    wait_until(lambda: bool({p.name for p in leader.metadata_dir.glob("*.checkpoint")} - have),
               what="a newer snapshot")
    target = tmp_path / "bundle"
    out = run_cli("-q", kafka.bootstrap_controllers, stdin=f"save {target}\n"
                  "ls /image/topics/byName\n")
    assert out.returncode == 0, out.stderr
    names = sorted(p.name for p in target.iterdir())
    assert any(n.endswith(".checkpoint") for n in names)
    assert any(n.endswith(".log") for n in names)
    again = run_cli("-q", kafka.bootstrap_controllers, "save", str(target))
    assert again.returncode == 1 and "not empty" in again.stderr
    as_json = run_cli("-q", kafka.bootstrap_controllers, "-o", "json", "save",
                      str(tmp_path / "bundle2"))
    assert as_json.returncode == 0, as_json.stderr
    assert {f["size"] for f in json.loads(as_json.stdout)["files"]} != {0}
    from_disk = run_cli("-d", str(target), "ls", "/image/topics/byName")
    assert from_disk.returncode == 0, from_disk.stderr
    assert "saved-topic" in from_disk.stdout
    # Kafka's own shell opens the snapshot that was saved and prints the same trees.
    checkpoint = next(p for p in target.iterdir() if p.name.endswith(".checkpoint"))
    # (Kafka 4.x moved ACLs to /image/acls/byId and dropped zkMigrationState, and its `tree`
    # prints /image/cluster's brokers and controllers empty; mdshell keeps 3.7's layout, so
    # /image/topics, the same in both, is compared.)
    for subtree in ("/image/topics",):
        ours = run_cli("-s", str(checkpoint), "tree", subtree)
        # Kafka's shell may print before its loader published (tests/kafka/tools.py, the
        # oracle's load race; on a busy machine most runs here): empty topics, run again.
        for _ in range(tools.SHELL_TRIES):
            java = subprocess.run([jars.java(), "-Xmx256m", f"-Djava.io.tmpdir={tmp_path}",
                                   "-cp", jars.classpath(VERSION),
                                   "org.apache.kafka.shell.MetadataShell", "--snapshot",
                                   str(checkpoint), "tree", subtree], capture_output=True,
                                  text=True, timeout=120)
            assert java.returncode == 0, java.stderr[-2000:]
            if java.stdout != "byId:\nbyName:\n":
                break
        assert ours.stdout and java.stdout == ours.stdout
    assert "saved-topic" in ours.stdout


# --------------------------------------------------------------------------- follow


def test_follow_sees_a_topic_and_a_config_change(kafka: KraftCluster) -> None:
    source, shell = live_shell(kafka)
    try:
        source.follow()
        assert "follow-me" not in lines(shell, "ls", "/image/topics/byName")
        create_topic(kafka, "follow-me", 1)
        wait_until(lambda: "follow-me" in lines(shell, "ls", "/image/topics/byName"),
                   what="the new topic")
        set_topic_config(kafka, "follow-me", "cleanup.policy", "compact")
        wait_until(lambda: "compact" in "".join(
            shell.run(["cat", "/image/configs/TOPIC:follow-me/cleanup.policy"]).lines),
            what="the config change")
        status = source.status()
        assert status.following and status.records_committed > 0
        assert status.high_watermark > 0 and status.last_fetch_ms > 0
    finally:
        source.close()


def test_follow_a_controllers_own_directory(kafka: KraftCluster) -> None:
    """-d on the leader's own __cluster_metadata-0 while Kafka writes it, followed as --follow
    and the TUI's f do (the session reads the appends before each command): a topic created
    meanwhile shows, following goes on across a segment roll, and the image is then the one
    a fresh -d load of the directory makes at the same offset. Read-only, as every -d."""
    from mdshell.session import Session
    from mdshell.session.appends import Follow

    directory = kafka.node(kafka.leader_id()).metadata_dir
    segments = {p.name for p in directory.glob("*.log")}
    session = Session.open(str(directory))
    session.follow = Follow()
    shell = Shell(session, opts=RenderOptions())

    def topics() -> list[str]:
        return lines(shell, "ls", "/image/topics/byName")

    assert "dir-follow" not in topics()
    create_topic(kafka, "dir-follow", 2)
    wait_until(lambda: "dir-follow" in topics(), timeout=20, what="the topic in the directory")
    wait_until(lambda: bool({p.name for p in directory.glob("*.log")} - segments), timeout=20,
               what="a segment roll")
    create_topic(kafka, "after-roll", 1)
    wait_until(lambda: "after-roll" in topics(), timeout=20, what="the topic after the roll")
    assert session.follow.error is None and session.verdict().sound
    session.follow = None  # the image stays put while it is compared
    offset = session.latest.image.provenance.offset
    followed = "\n".join(lines(shell, "tree", "/image")) + "\n"
    fresh = run_cli("-d", str(directory), "--at", str(offset), "tree", "/image")
    assert fresh.returncode == 0, fresh.stderr
    assert followed == fresh.stdout


def test_follow_in_the_line_shell(kafka: KraftCluster) -> None:
    """Commands piped to one mdshell process: the image advances between them."""
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "mdshell", "-q",
                             kafka.bootstrap_controllers], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)

    def ask(line: str) -> list[str]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(f"{line}\ncat /local/version\n")
        proc.stdin.flush()
        out: list[str] = []
        while True:
            got = proc.stdout.readline()
            assert got, "mdshell ended early"
            if got.strip() == __version__:
                return out
            out.append(got.strip())

    try:
        assert "piped-topic" not in ask("ls /image/topics/byName")
        create_topic(kafka, "piped-topic", 1)
        wait_until(lambda: "piped-topic" in ask("ls /image/topics/byName"),
                   what="the topic in the piped shell")
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0


def test_tui_follows_the_quorum(kafka: KraftCluster) -> None:
    """-q in the TUI (Pilot): a topic created while it runs appears in the open tree, the
    cursor and the open sections stay where they were, and the header shows LIVE and the lag."""
    import asyncio

    from textual.widgets import Static

    from mdshell.tui.app import make_app
    from mdshell.tui.browser import BrowserScreen, ImageTree
    from mdshell.tui.engine import Engine
    from mdshell.tui.widgets import StatusBar
    from tests.test_tui import text_of, until

    engine = Engine.open_live(kafka.bootstrap_controllers)
    app = make_app(engine)

    async def drive() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.loaded, "the live load", steps=1200)
            await until(pilot, lambda: bool(app.screen.query("#controllers")) and "leader" in
                        text_of(app.screen.query_one("#controllers", Static)), "the overview")
            roles = text_of(app.screen.query_one("#controllers", Static))
            assert "leader" in roles and "voter" in roles and "not a voter" not in roles, roles
            await pilot.press("t")
            await until(pilot, lambda: isinstance(app.screen, BrowserScreen)
                        and bool(app.screen.query(ImageTree)), "the tree screen")
            tree = app.screen.query_one(ImageTree)
            tree.nodes["/image/topics/byName"].expand()
            await pilot.pause()
            tree.move_cursor(tree.nodes["/image/cluster/brokers"])
            await pilot.pause()
            assert "/image/topics/byName/tui-live" not in tree.nodes
            await asyncio.to_thread(create_topic, kafka, "tui-live", 2)
            await until(pilot, lambda: "/image/topics/byName/tui-live" in tree.nodes,
                        "the new topic in the tree", steps=1200)
            await pilot.pause(0.1)
            assert tree.nodes["/image/topics/byName"].is_expanded
            assert tree.cursor_node is not None
            assert tree.cursor_node.data == "/image/cluster/brokers"
            header = text_of(app.screen.query_one(StatusBar))
            assert "LIVE" in header and "lag" in header, header
            assert kafka.cluster_id in header and "quorum" in header, header

    try:
        asyncio.run(drive())
    finally:
        engine.close()


# --------------------------------------------------------------------------- faults


def test_broker_endpoint_gets_the_kip919_explanation(kafka: KraftCluster) -> None:
    out = run_cli("-q", kafka.broker.endpoint, "ls", "/")
    assert out.returncode == 1
    assert "KIP-919" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_sasl_config_on_a_broker_listener_says_it_is_a_broker(kafka: KraftCluster,
                                                               tmp_path: Path) -> None:
    """Issue 21 item 4: --config with SASL against a broker's PLAINTEXT listener gets the
    same explanation as without --config (was: "offers: none; set sasl.mechanism")."""
    conf = tmp_path / "sasl.properties"
    conf.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
                    'required username="a" password="b";\n')
    out = run_cli("-q", kafka.broker.endpoint, "--config", str(conf), "ls", "/")
    assert out.returncode == 1
    assert "KIP-919" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_unreachable_controllers_name_what_was_tried(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = tmp_path / "client.properties"
    conf.write_text("request.timeout.ms=2000\n")
    t0 = time.monotonic()
    out = run_cli("-q", f"127.0.0.1:{port},no-such-host.invalid:9093", "--config", str(conf),
                  "ls", "/")
    assert out.returncode == 1
    err = out.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"127.0.0.1:{port}" in err and "no-such-host.invalid:9093" in err
    assert time.monotonic() - t0 < 30


def test_silent_peer_times_out(tmp_path: Path) -> None:
    proxy = Proxy(("127.0.0.1", 1), silent=True)
    conf = tmp_path / "client.properties"
    conf.write_text("request.timeout.ms=1000\n")
    try:
        t0 = time.monotonic()
        out = run_cli("-q", proxy.endpoint, "--config", str(conf), "ls", "/")
        assert out.returncode == 1
        assert "no answer within 1 s" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
        assert time.monotonic() - t0 < 30
    finally:
        proxy.close()


def test_slow_and_cut_connections_through_a_proxy(kafka: KraftCluster) -> None:
    first = kafka.controllers[0]
    slow = Proxy(("127.0.0.1", first.port), delay_s=0.05)
    cut = Proxy(("127.0.0.1", first.port), cut_first=2, cut_after_bytes=30)
    try:
        out = run_cli("-q", slow.endpoint, "ls", "/image/topics/byName")
        assert out.returncode == 0, out.stderr
        assert "orders" in out.stdout
        out = run_cli("-q", cut.endpoint, "ls", "/image/topics/byName")
        assert out.returncode == 0, out.stderr
        assert cut.cuts == 2 and cut.connections >= 3
    finally:
        slow.close()
        cut.close()


def test_killing_the_leader_mid_follow_loses_nothing(kafka: KraftCluster) -> None:
    source, shell = live_shell(kafka)
    old = kafka.node(kafka.leader_id())
    try:
        source.follow()
        kafka.stop_node(old)
        # A fresh observer catches up while the quorum elects a new leader.
        fresh = LiveSource(kafka.bootstrap_controllers)
        try:
            assert {"orders", "follow-me"} <= set(load(fresh).image.topics_by_name)
        finally:
            fresh.close()
        create_topic(kafka, "after-failover", 1)
        wait_until(lambda: "after-failover" in lines(shell, "ls", "/image/topics/byName"),
                   timeout=60, what="the topic created after the leader was killed")
        assert source.status().leader_changes >= 1 or source.observer.leader_id != old.node_id
        names = set(lines(shell, "ls", "/image/topics/byName"))
        assert {"orders", "follow-me", "after-failover"} <= names
    finally:
        source.close()
        kafka.start_node(old)
        kafka.wait_ready()


def test_one_shot_exits_and_leaves_no_thread(kafka: KraftCluster) -> None:
    before = threading.active_count()
    source, _shell = live_shell(kafka)
    source.close()
    assert threading.active_count() == before
