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
