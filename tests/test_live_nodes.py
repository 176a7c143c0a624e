"""Issue 32 on a real Kafka 4.4 quorum: logs made to diverge by Kafka itself, Kafka's own
truncation as the oracle.

Three combined nodes (a dynamic quorum, an authorizer so that ACLs can be written). In each
run the leader appends alone (its followers frozen) and is killed; the others elect a new
leader that writes at the same offsets in a newer epoch; the nodes' log dirs are copied; the
old leader is started again and Kafka logs ``Truncated to offset N from Fetch response from
leader M`` (``tests/kafka/diverge.py``). mdshell, given the copies, must name N as where the
old leader's log parts from the quorum's, and what it holds past N. Which node leads and
which epochs are used change from run to run: they are read from DescribeQuorum and Kafka's
logs. One cluster for every run; runs go on until two different nodes were the lost leader.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mdshell.source.nodes.compare import EPOCH, SAME
from mdshell.source.nodes.group import open_group
from mdshell.source.nodes.report import build_report
from tests.conftest import run_cli
from tests.kafka import jars
from tests.kafka.cluster import KraftCluster
from tests.kafka.diverge import Diverged, copy_log_dirs, diverge, setup_topic

pytestmark = pytest.mark.live

AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS"}
WRITES = 4  # ACLs sent to the leader while its followers are frozen (and one topic config)
MAX_RUNS = 4


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    cluster = KraftCluster(jars.KAFKA_44, tmp_path_factory.mktemp("kraft-nodes"),
                           controller_extra=AUTHORIZER, dynamic=True, combined=True)
    with cluster.running():
        setup_topic(cluster)
        yield cluster


@pytest.fixture(scope="module")
def runs(quorum: KraftCluster, tmp_path_factory: pytest.TempPathFactory) -> list[Diverged]:
    """Divergences until two different nodes were the leader that lost its tail."""
    made: list[Diverged] = []
    work = tmp_path_factory.mktemp("copies")
    while len(made) < 2 or len({d.old_leader for d in made}) < 2:
        assert len(made) < MAX_RUNS, f"the same node led every run: {made}"
        tag = f"r{len(made) + 1}"
        made.append(diverge(quorum, work / tag, tag, writes=WRITES))
        d = made[-1]
        print(f"run {tag}: node {d.old_leader} led epoch {d.old_epoch} and was lost; node "
              f"{d.new_leader} leads epoch {d.new_epoch}; Kafka truncated node "
              f"{d.old_leader} to offset {d.truncation} ({d.truncated_to})")
    return made


def _dirs(d: Diverged) -> list[str]:
    return [str(d.copies[n]) for n in sorted(d.copies)]


def test_the_divergence_offset_is_where_kafka_truncates(runs: list[Diverged]) -> None:
    for d in runs:
        report = build_report(open_group(_dirs(d)))
        tails = {t.node: t for t in report.tails}
        lost = tails[str(d.old_leader)]
        print(f"old leader {d.old_leader}: mdshell says offset {lost.first}, Kafka "
              f"{d.truncation}")
        assert lost.first == d.truncation
        assert not lost.kept and list(tails) == [str(d.old_leader)]
        # What the old leader wrote alone is what the quorum's log lacks.
        kinds = sum((r.kinds for r in lost.runs if r.epoch == d.old_epoch), start=type(
            lost.runs[0].kinds)())
        assert kinds["AccessControlEntryRecord"] == WRITES and kinds["ConfigRecord"] == 1
        assert {r.epoch for r in lost.runs} == {d.old_epoch}
        assert report.quorum != str(d.old_leader)
        new = next(p for p in report.pairs if {p.a, p.b} == {str(d.old_leader),
                                                            str(d.new_leader)})
        assert new.kind == EPOCH and new.at == d.truncation
        assert d.old_epoch in (new.epoch_a, new.epoch_b)
        assert report.committed is not None and report.committed >= d.truncation
        assert not report.agree  # the new leader committed records at offsets it holds
        rows = {r.label: r for r in report.rows}
        old, led = rows[str(d.old_leader)], rows[str(d.new_leader)]
        assert (old.role, old.led_last_epoch, old.last_epoch) == ("leader", True, d.old_epoch)
        assert (led.role, led.led_last_epoch, led.last_epoch) == ("leader", True, d.new_epoch)
        assert led.epochs[-1] == (d.new_epoch, d.truncation)  # where its epoch starts
        # Kafka's own leader-epoch-checkpoint says where each epoch starts, as the batches do.
        assert [r.checkpoint for r in report.rows] == ["agrees"] * 3
        assert report.voters == [1, 2, 3] and report.damaged == []


def test_nodes_one_shot_on_the_copies(runs: list[Diverged]) -> None:
    d = runs[0]
    args = [a for p in _dirs(d) for a in ("-d", p)]
    out = run_cli(*args, "nodes")
    assert out.returncode == 1, out.stderr
    assert (f"node {d.old_leader} is truncated to offset {d.truncation} when it rejoins"
            in out.stdout)
    data = json.loads(run_cli(*args, "-o", "json", "nodes").stdout)
    assert [t["truncatedTo"] for t in data["truncations"]] == [d.truncation]
    # The old leader's copy alone shows the ACLs it wrote; the quorum's log does not.
    lost = run_cli(*args, "--node", str(d.old_leader), "tree", "/image/acls").stdout
    kept = run_cli(*args, "tree", "/image/acls").stdout
    assert lost.count("principal=User:lost-r1-") == WRITES and "User:kept-r1" not in lost
    assert "User:lost-r1-" not in kept and "principal=User:kept-r1" in kept
    diff = run_cli(*args, "diff", "--node", str(d.old_leader), "--node", str(d.new_leader),
                   "/image").stdout.splitlines()
    assert sum(x.startswith("- /image/acls/") and "User:lost-r1-" in x for x in diff) == WRITES
    assert sum(x.startswith("+ /image/acls/") and "User:kept-r1" in x for x in diff) == 1
    # retention.ms only the old leader has (the topic had no config before: a removed node)
    assert any(x.startswith("- /image/configs/TOPIC:orders") for x in diff)


def test_after_the_truncation_the_nodes_agree(quorum: KraftCluster, runs: list[Diverged],
                                              tmp_path: Path) -> None:
    """The old leader rejoined (each run waits for it): its log is the quorum's again."""
    copies = copy_log_dirs(quorum, tmp_path)
    report = build_report(open_group([str(copies[n]) for n in sorted(copies)]))
    assert report.agree and not report.tails, report.conflicts
    assert all(p.kind == SAME for p in report.pairs)
    out = run_cli(*[a for n in sorted(copies) for a in ("-d", str(copies[n]))], "nodes")
    assert out.returncode == 0 and "the nodes agree on every committed record" in out.stdout


# ---------------------------------------------------------------- a quorum log on snapshots

SNAPSHOTTING = {  # snapshots every ~2 KiB of NoOps, a segment every 2 s, deleted soon
    "metadata.max.idle.interval.ms": "50", "metadata.log.segment.ms": "2000",
    "metadata.log.max.record.bytes.between.snapshots": "2048",
    "metadata.log.max.snapshot.interval.ms": "1000", "metadata.max.retention.ms": "1000",
    "metadata.max.retention.bytes": "1"}
CLEANED_WITHIN_S = 240  # Kafka's raft client cleans its log every 60 s


@pytest.fixture(scope="module")
def snapshotted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    """KIP-853 grown from one voter (--standalone, then add-controller 2 and 3), node 3
    killed once added: Kafka snapshots often and deletes the segments below its snapshots,
    so the VotersRecords of the additions are soon only in snapshots."""
    from tests.test_live_standalone import _add_controller

    cluster = KraftCluster(jars.KAFKA_44, tmp_path_factory.mktemp("kraft-snapshots"),
                           standalone=True, with_broker=False, controller_extra=SNAPSHOTTING)
    with cluster.running():
        for added in (2, 3):
            _add_controller(cluster, cluster.node(added))
        cluster.stop_node(cluster.node(3))
        yield cluster


def test_voters_and_a_stale_node_on_a_log_kafka_deleted_below_its_snapshots(
        snapshotted: KraftCluster, tmp_path: Path) -> None:
    import time

    from mdshell.wire import control as ctl

    deadline = time.monotonic() + CLEANED_WITHIN_S
    for attempt in range(CLEANED_WITHIN_S):
        copies = copy_log_dirs(snapshotted, tmp_path / f"c{attempt}")
        group = open_group([str(copies[n]) for n in sorted(copies)])
        one, two, three = group.nodes
        gone = all(c.ctype not in (ctl.KRAFT_VOTERS, ctl.LEADER_CHANGE)
                   for n in (one, two) for c in n.scan.controls)
        starts = [n.scan.start for n in (one, two)]
        end3 = three.scan.end
        if gone and end3 is not None and all(s is not None and s > end3 + 1 for s in starts):
            break
        assert time.monotonic() < deadline, f"Kafka deleted no segment in time: {starts}"
        time.sleep(10)
    print(f"logs start at {starts}; node 3 ends at {end3}")
    report = build_report(group)
    rows = {r.label: r for r in report.rows}
    print({k: (r.start, r.end, r.epochs[-4:], r.checkpoint, r.snapshot)
           for k, r in rows.items()})
    # The voters as Kafka keeps them: the newest snapshot's VotersRecord (the bootstrap
    # snapshot of --standalone names node 1 alone).
    assert report.voters == [1, 2, 3] and report.majority == 2, report.voters_from
    assert "snapshot" in report.voters_from
    # Kafka's leader-epoch-checkpoint, kept from its log start, agrees with the batches.
    assert rows["1"].checkpoint == rows["2"].checkpoint == "agrees"
    # Node 3's log ends before the quorum's starts. Where the quorum's log (its snapshots'
    # and segments' epochs) holds node 3's last epoch at or after node 3's end, one leader
    # wrote both: node 3 is behind. Otherwise nothing given tells: said, never "agree".
    ref = group.node(report.quorum or "")
    points = [(cp.end_offset - 1, cp.epoch) for cp in ref.source.snapshots()]
    points += [(o, e) for e, o in ref.scan.epoch_starts]
    known = any(e == three.scan.last_epoch and o >= (end3 or 0) for o, e in points) or any(
        e == three.scan.last_epoch for e, _ in ref.scan.epoch_starts)
    assert report.agree and not report.tails
    if known:
        assert report.sound and "3" in [b[0] for b in report.behind], report.unchecked
        assert report.sent_snapshot["3"] == ref.source.snapshots()[-1].name
    else:
        [said] = report.unchecked
        assert said.startswith(f"node 3's offsets {three.scan.start}-{end3} (last epoch "
                               f"{three.scan.last_epoch}) cannot be compared")
        assert not report.sound
    alone = build_report(open_group([str(copies[1]), str(copies[2])]))
    assert alone.voters == [1, 2, 3] and any(n.startswith("voter 3 not given")
                                             for n in alone.notes)
