"""A soak: a followed live session stays equal to the quorum while it churns (issue 21).

On a real quorum (3 nodes in combined mode, a dynamic quorum), random steps: create / delete
a topic, alter a topic config, SIGSTOP a voter (the leader half of the time) then SIGCONT,
SIGKILL a node and restart it, remove a follower voter and add it back. After each step, once
the quorum is stable, the followed image must equal ``-d`` on a copy of the leader's
directory at the same offset, and the session's voters and leader must equal
``kafka-metadata-quorum describe --status``; what differs is a divergence. Used by
``bench/live_soak.py`` (hundreds of steps) and a short seeded run in the live tests.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mdshell.commands import Shell
from mdshell.source.live import LiveSource
from mdshell.source.quorum.client import Client
from mdshell.source.quorum.config import ClientConfig
from mdshell.source.quorum.discover import QuorumView, describe_quorum
from mdshell.source.quorum.errors import LiveError
from mdshell.tree.node import RenderOptions
from tests.conftest import run_cli

from .cluster import KraftCluster, Node

SNAPSHOT_OFTEN = {"metadata.log.max.record.bytes.between.snapshots": "2048",
                  "metadata.log.max.snapshot.interval.ms": "1000"}


# Errors of a client whose broker went away meanwhile: worth a try with a fresh client.
_TRANSIENT = {"_DESTROY_BROKER", "_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN"}


class Soak:
    """One session following ``cluster``; :meth:`step` churns and compares, :meth:`run`
    repeats it. What differs goes to ``divergences``; frozen leaders' figures to ``notice``
    (freeze to stale) and ``follow`` (election to following the new leader)."""

    def __init__(self, cluster: KraftCluster, seed: int) -> None:
        self.cluster = cluster
        self.rng = random.Random(seed)
        self.topics: list[str] = []
        self.made = 0
        self.notice: list[float] = []
        self.follow: list[float] = []
        self.divergences: list[str] = []
        self.keep: Path | None = None
        self.steps = 0
        self.source = LiveSource(cluster.bootstrap_controllers)
        self.shell = Shell(self.source, opts=RenderOptions())
        self.source.follow()

    # -- helpers ---------------------------------------------------------------------------

    def quorum(self) -> QuorumView | None:
        client = Client(self.cluster.bootstrap_controllers, ClientConfig())
        try:
            return describe_quorum(client)
        except LiveError:
            return None
        finally:
            client.close()

    def brokers(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for i, p in self.cluster.broker_ports.items()
                        if self.cluster.node(i).proc is not None)

    def admin_client(self):  # type: ignore[no-untyped-def]
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.brokers(), "socket.timeout.ms": 10000})

    def admin(self, call: Callable[[Any], dict[Any, Any]], done: str = "") -> None:
        """``call(admin client)``'s futures, with a fresh client up to 5 times on an error the
        client calls retriable or a lost connection (a node restarted by the step before);
        ``done``: the error that means an earlier try did it."""
        from confluent_kafka import KafkaException

        for attempt in range(5):
            admin = self.admin_client()  # kept while waiting: a dropped one cancels its futures
            try:
                for future in call(admin).values():
                    future.result(30)
                return
            except KafkaException as e:
                err = e.args[0]
                if err.name() == done:
                    return
                if attempt == 4 or not (err.retriable() or err.name() in _TRANSIENT):
                    raise
                time.sleep(1)

    def stable(self, timeout: float = 90) -> QuorumView:
        """Until three voters and a leader, every voter within a few offsets of the high
        watermark (the leader appends a NoOpRecord every 0.5 s, so it never stands still)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            q = self.quorum()
            if q and q.leader_id >= 0 and q.high_watermark > 0 and len(q.voters) == 3 and all(
                    v.log_end_offset >= q.high_watermark - 10 for v in q.voters):
                return q
            time.sleep(0.5)
        raise RuntimeError("the quorum did not settle")

    # -- steps -----------------------------------------------------------------------------

    def create_topic(self) -> str:
        from confluent_kafka.admin import NewTopic

        self.made += 1
        name = f"soak-{self.made}"
        topic = NewTopic(name, self.rng.randint(1, 4), 1)
        self.admin(lambda a: a.create_topics([topic]), "TOPIC_ALREADY_EXISTS")
        self.topics.append(name)
        return f"create {name}"

    def delete_topic(self) -> str:
        if not self.topics:
            return self.create_topic()
        name = self.topics.pop(self.rng.randrange(len(self.topics)))
        self.admin(lambda a: a.delete_topics([name]), "UNKNOWN_TOPIC_OR_PART")
        return f"delete {name}"

    def alter_config(self) -> str:
        from confluent_kafka.admin import (
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ResourceType,
        )

        if not self.topics:
            return self.create_topic()
        name = self.rng.choice(self.topics)
        value = str(self.rng.randint(60000, 9999999))
        res = ConfigResource(ResourceType.TOPIC, name, incremental_configs=[
            ConfigEntry("retention.ms", value, incremental_operation=AlterConfigOpType.SET)])
        self.admin(lambda a: a.incremental_alter_configs([res]))
        return f"alter {name} retention.ms={value}"

    def freeze(self) -> str:
        q = self.stable()
        leader = self.rng.random() < 0.5
        node = self.cluster.node(q.leader_id) if leader else self.rng.choice(
            [n for n in self.cluster.controllers if n.node_id != q.leader_id])
        self.cluster.pause(node)
        t0 = time.monotonic()
        try:
            if leader:
                self._watch_failover(q, t0)
            else:
                time.sleep(5)
        finally:
            self.cluster.resume(node)
        return f"freeze {'leader' if leader else 'follower'} {node.node_id}"

    def _watch_failover(self, q: QuorumView, t0: float) -> None:
        others = Client(",".join(n.endpoint for n in self.cluster.controllers
                                 if n.node_id != q.leader_id), ClientConfig())
        noticed = elected = None
        try:
            while time.monotonic() - t0 < 30:
                now = time.monotonic()
                if noticed is None and self.source.stale_since is not None:
                    noticed = now - t0
                    self.notice.append(noticed)
                if elected is None:
                    with contextlib.suppress(LiveError):
                        n = describe_quorum(others)
                        if n.leader_epoch > q.leader_epoch and n.leader_id != q.leader_id:
                            elected = now
                if (elected is not None and self.source.stale_since is None
                        and self.source.observer.leader_id not in (-1, q.leader_id)):
                    self.follow.append(now - elected)
                    return
                time.sleep(0.05)
            self.divergences.append("a frozen leader was not noticed and followed in 30 s")
        finally:
            others.close()

    def kill_restart(self) -> str:
        node: Node = self.rng.choice(self.cluster.controllers)
        self.cluster.stop_node(node)
        time.sleep(2)
        self.cluster.start_node(node)
        return f"kill and restart {node.node_id}"

    def remove_add_voter(self) -> str:
        q = self.stable()
        node = self.rng.choice([n for n in self.cluster.controllers if n.node_id != q.leader_id])
        self.cluster.quorum_tool("remove-controller", "--controller-id", str(node.node_id),
                                 "--controller-directory-id",
                                 self.cluster.directory_ids[node.node_id])
        time.sleep(1)
        self.check_voters()
        self.cluster.quorum_tool("add-controller", config=node.home / "server.properties")
        return f"remove and re-add voter {node.node_id}"

    # -- checks ----------------------------------------------------------------------------

    def check_voters(self) -> None:
        """The session's controllers view and quorum against Kafka's tool. The two ask at
        different moments, and a voter can change in between (a restarted voter updates its
        endpoints): what differs is asked again, three times at most, a second apart."""
        for attempt in range(3):
            found: list[str] = []
            self._compare_voters(found)
            if not found or attempt == 2:
                self.divergences.extend(found)
                return
            time.sleep(1)
            self.shell.session.poll_source()

    def _compare_voters(self, divergences: list[str]) -> None:
        kafka = self.cluster.quorum_tool("describe", "--status")
        theirs = {k.strip(): v.strip() for k, _, v in
                  (line.partition(":") for line in kafka.splitlines())}
        result = self.shell.run(["quorum"])
        ours_lines = "\n".join(result.lines)
        if result.errors:
            divergences.append("quorum: " + " / ".join(result.errors))
        ours = {k.strip(): v.strip() for k, _, v in
                (line.partition(":") for line in ours_lines.splitlines())}
        for key in ("LeaderId", "LeaderEpoch", "CurrentVoters"):
            if ours.get(key) != theirs.get(key):
                divergences.append(f"quorum {key}: {ours.get(key)} vs {theirs.get(key)}")
        ids = sorted(int(x.split(",")[0]) for x in theirs["CurrentVoters"].split('"id": ')[1:])
        rows = [r.split() for r in list(self.shell.run(["controllers"]).lines)[1:]]
        voting = sorted(int(r[0]) for r in rows if len(r) > 1 and r[1] == "true")
        if voting != ids:
            divergences.append(f"controllers says voters {voting}, Kafka {ids}")

    def check_image(self, q: QuorumView) -> None:
        deadline = time.monotonic() + 30
        session = self.shell.session
        while time.monotonic() < deadline:
            session.poll_source()
            # At a metadata batch: where the newest batch is a control one (a leader change,
            # a voter change), Kafka's two loaders disagree on the image's provenance (see
            # _at_metadata_batch); the leader's next NoOpRecord comes within 0.5 s.
            if session.latest.next_offset >= q.high_watermark and _at_metadata_batch(session):
                break
            time.sleep(0.2)
        offset = session.latest.next_offset - 1
        tree = "\n".join(self.shell.run(["tree", "/image"]).lines) + "\n"
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "__cluster_metadata-0"
            leader, disk = self._leader_copy(copy, offset)
            if disk.returncode != 0 or disk.stdout != tree:
                self.divergences.append(f"image at {offset} differs from -d on node "
                                        f"{leader.node_id}'s copy")
                print(_first_difference(tree, disk.stdout + disk.stderr))
                self._keep(copy, tree, disk.stdout + disk.stderr)

    def _leader_copy(self, copy: Path, offset: int) -> tuple[Node, Any]:
        """A copy of the leader's directory at ``copy``, and ``-d --at offset tree /image``
        on it. The leader is the one of the highest epoch any node names: a deposed leader
        just resumed (SIGCONT) still answers DescribeQuorum as the leader, with its own log
        that ends before the committed offset, until it hears of the new epoch. So a copy
        that does not reach ``offset`` is taken again (10 s at most): a true leader holds
        every committed offset, so one that still does not is a divergence."""
        for attempt in range(10):
            leader = self.cluster.node(self._newest_leader())
            shutil.rmtree(copy, ignore_errors=True)
            # Kafka writes snapshots as .part files and renames them: skip those, and any
            # file deleted while copying (an old segment or snapshot cleaned meanwhile).
            shutil.copytree(leader.metadata_dir, copy, copy_function=_copy_if_there,
                            ignore=shutil.ignore_patterns("*.part", "*.deleted"))
            disk = run_cli("-d", str(copy), "--at", str(offset), "tree", "/image")
            if "after the end of the log" not in disk.stderr or attempt == 9:
                return leader, disk
            time.sleep(1)
        raise AssertionError("unreachable")

    def _newest_leader(self) -> int:
        """The leader of the highest epoch among each controller's own DescribeQuorum."""
        best: QuorumView | None = None
        for node in self.cluster.controllers:
            if node.proc is None:
                continue
            client = Client(node.endpoint, ClientConfig())
            try:
                q = describe_quorum(client)
            except LiveError:
                continue
            finally:
                client.close()
            if q.leader_id >= 0 and (best is None or q.leader_epoch > best.leader_epoch):
                best = q
        return best.leader_id if best is not None else self.stable().leader_id

    def _keep(self, copy: Path, ours: str, disk: str) -> None:
        """A divergence's evidence: the directory copy and both trees, for a diff later."""
        if self.keep is None:
            return
        where = self.keep / f"divergence-{len(self.divergences)}"
        shutil.copytree(copy, where / "__cluster_metadata-0")
        (where / "ours.txt").write_text(ours)
        (where / "disk.txt").write_text(disk)

    def run(self, steps: int, limit_s: float, say: Callable[[str], object]) -> int:
        """Up to ``steps`` steps within ``limit_s`` seconds (a step started is finished);
        each printed with the divergences it found. Returns the steps run."""
        t0 = time.monotonic()
        done = seen = 0
        while done < steps and time.monotonic() - t0 < limit_s:
            what = self.step()
            done += 1
            say(f"{done:4d} {time.monotonic() - t0:7.1f} s  {what}"
                f"  divergences {len(self.divergences)}")
            for d in self.divergences[seen:]:
                say("       " + d)
            seen = len(self.divergences)
        self.steps = done
        return done

    def summary(self) -> str:
        return (f"steps {self.steps}, divergences {len(self.divergences)}, worst notice "
                f"{max(self.notice, default=0):.2f} s ({len(self.notice)} frozen leaders), "
                f"worst follow {max(self.follow, default=0):.2f} s")

    def close(self) -> None:
        self.source.close()

    def step(self) -> str:
        kinds = [self.create_topic, self.create_topic, self.delete_topic, self.alter_config,
                 self.freeze, self.kill_restart, self.remove_add_voter]
        what = self.rng.choice(kinds)()
        q = self.stable()
        self.check_image(q)
        self.check_voters()
        return what


def _at_metadata_batch(session) -> bool:  # type: ignore[no-untyped-def]
    """Whether the session's newest batch is a metadata batch (its image's provenance).

    A control batch (LeaderChange, VotersRecord) never moves the provenance when a log is
    replayed (Kafka's metadata shell, SnapshotFileReader; mdshell, which matches it), but
    Kafka's controller loader (MetadataBatchLoader) moves it to the control batch, and a
    snapshot the controller writes right then carries that offset in its name and header.
    So ``-d --at N`` where N is a control batch says N when such a snapshot exists and the
    last metadata batch before N when it replays the log: both Kafka's, not a divergence.
    At a metadata batch the two agree."""
    latest = session.latest
    return latest.image.provenance.offset == latest.next_offset - 1


def _copy_if_there(src: str, dst: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        shutil.copy2(src, dst)


def _first_difference(ours: str, disk: str) -> str:
    """Where the followed image and -d's first differ: a few lines of each, for the log."""
    a, b = ours.splitlines(), disk.splitlines()
    i = next((n for n, (x, y) in enumerate(zip(a, b, strict=False))
              if x != y), min(len(a), len(b)))
    return (f"       first difference at line {i + 1}:\n       followed: "
            + " | ".join(a[max(0, i - 2):i + 3]) + "\n       -d:       "
            + " | ".join(b[max(0, i - 2):i + 3]))
