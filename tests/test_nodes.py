"""Several nodes' directories compared (issue 32): generated divergent quorums.

Each node's directory is written by ``mdshell.synth`` as Kafka would have left it: the same
seed and the same operations give the nodes byte-identical common prefixes, then each goes
its own way (an old leader appending alone in its epoch, the others electing a new leader
that writes at the same offsets). The real thing, made by Kafka itself, is in
``tests/test_live_nodes.py``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mdshell.problems import SourceError
from mdshell.source.nodes.compare import CONTENT, EPOCH, SAME, compare
from mdshell.source.nodes.group import open_group
from mdshell.source.nodes.report import build_report
from mdshell.synth import ClusterBuilder
from mdshell.synth import files as synth_files
from mdshell.synth.batches import metadata_batch
from mdshell.synth.damage import flip_byte
from mdshell.synth.records import meta
from mdshell.wire.batch import parse_header
from tests.conftest import cli

MD = "__cluster_metadata-0"
CLUSTER = "q7h2LzVnQWOJ9kCqf1n2bA"


def _builder(tmp: Path, node: int, *, seed: int = 7, cluster: str = CLUSTER) -> ClusterBuilder:
    """Node ``node``'s directory, with the history every node shares: a leader (node 1,
    epoch 1), the bootstrap records, three brokers, a topic and a few NoOps."""
    b = ClusterBuilder(str(tmp / f"node{node}"), seed=seed, metadata_version=21,
                       controllers=[1, 2, 3], node_id=node, cluster_id=cluster)
    b.elect_controller_leader(1)
    b.bootstrap()
    for c in (1, 2, 3):
        b.register_controller(c)
    for i in (1, 2, 3):
        b.register_broker(i)
        b.unfence_broker(i)
    b.create_topic("orders", 3, 3)
    b.noop(3)
    return b


def lost_leader(tmp: Path) -> dict[str, object]:
    """The incident of issue 32: node 1 led epoch 1 and appended alone (two ACLs, a topic
    config, NoOps); nodes 2 and 3 elected node 2 in epoch 2, which wrote at the same offsets;
    node 3 is one NoOp behind node 2. Returns the directories and the offsets."""
    nodes = {n: _builder(tmp, n) for n in (1, 2, 3)}
    split = nodes[1].next_offset
    old = nodes[1]
    old.add_acl("TOPIC", "orders", "User:lost-1", "READ")
    old.add_acl("TOPIC", "orders", "User:lost-2", "READ")
    old.set_config("TOPIC", "orders", "retention.ms", "1000")
    old.noop(3)
    for n in (2, 3):
        b = nodes[n]
        b.elect_controller_leader(2)
        b.add_acl("TOPIC", "orders", "User:kept", "READ")
        b.noop(2 if n == 3 else 3)
    ends = {}
    for n, b in nodes.items():
        ends[n] = b.next_offset - 1
        b.finish()
    return {"dirs": [str(tmp / f"node{n}") for n in (1, 2, 3)], "split": split, "ends": ends}


def test_the_divergence_is_where_the_epochs_part(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    group = open_group(made["dirs"])  # type: ignore[arg-type]
    one, two, three = group.nodes
    p = compare("1", one.scan, "2", two.scan)
    split = made["split"]
    assert (p.kind, p.at, p.epoch_a, p.epoch_b, p.agree_to) == (EPOCH, split, 1, 2, split - 1)
    same = compare("2", two.scan, "3", three.scan)
    assert (same.kind, same.agree_to) == (SAME, made["ends"][3])  # type: ignore[index]


def test_the_report_names_the_quorums_log_the_committed_offset_and_the_lost_tail(
        tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    ends, split = made["ends"], made["split"]
    report = build_report(open_group(made["dirs"]))  # type: ignore[arg-type]
    assert report.voters == [1, 2, 3] and report.majority == 2
    assert report.quorum == "2" and "newest" in report.why  # epoch 2 beats epoch 1
    assert report.committed == ends[3] and report.committed_by == 2  # type: ignore[index]
    assert report.uncommitted == (ends[3] + 1, ends[2], 1)  # type: ignore[index,operator]
    [tail] = report.tails
    assert (tail.node, tail.first, tail.last) == ("1", split, ends[1])  # type: ignore[index]
    [run] = tail.runs
    assert run.epoch == 1 and dict(run.kinds) == {
        "AccessControlEntryRecord": 2, "ConfigRecord": 1, "NoOpRecord": 3}
    assert not report.agree  # node 1 contradicts what nodes 2 and 3 committed
    assert report.conflicts == [f"node 1 holds other records than the committed log at "
                                f"offsets {split}-{ends[3]}"]  # type: ignore[index]


def test_nodes_text_and_exit_code(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    split, ends = made["split"], made["ends"]
    dirs: list[str] = made["dirs"]  # type: ignore[assignment]
    run = cli(*[a for d in dirs for a in ("-d", d)], "nodes")
    assert run.code == 1, run.err
    out = run.out
    assert f"nodes 1 and 2: part at offset {split} (epoch 1 on node 1, 2 on node 2)" in out
    assert (f"node 1 is truncated to offset {split} when it rejoins: the quorum's log lacks "
            f"its offsets {split}-{ends[1]}") in out  # type: ignore[index]
    assert (f"offsets {split}-{ends[1]}, epoch 1: 3 NoOpRecord, 2 AccessControlEntryRecord, "
            "1 ConfigRecord") in out  # type: ignore[index]
    assert "the quorum's log is node 2's" in out
    assert out.rstrip().endswith(f"offsets {split}-{ends[3]}")  # type: ignore[index]
    assert run.err == ""  # `nodes` names no chosen node: it reads them all


def test_nodes_json(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    dirs: list[str] = made["dirs"]  # type: ignore[assignment]
    run = cli(*[a for d in dirs for a in ("-d", d)], "-o", "json", "nodes")
    assert run.code == 1
    data = json.loads(run.out)
    assert data["agree"] is False and data["quorumLog"]["node"] == "2"
    assert [t["truncatedTo"] for t in data["truncations"]] == [made["split"]]
    assert {r["node"]: r["role"] for r in data["nodes"]} == {
        "1": "leader", "2": "leader", "3": "follower of 2"}
    assert [r["leaderEpochCheckpoint"] for r in data["nodes"]] == ["agrees"] * 3
    assert data["pairs"][0]["divergesAt"] == made["split"]


def test_a_quorum_that_agrees_says_so_and_exits_0(tmp_path: Path) -> None:
    dirs = []
    for n in (1, 2, 3):
        b = _builder(tmp_path, n)
        if n != 3:
            b.noop(1)  # node 3 is one NoOp behind: not committed by it, nothing to disagree on
        b.finish()
        dirs += ["-d", str(tmp_path / f"node{n}")]
    run = cli(*dirs, "nodes")
    assert run.code == 0, run.out
    assert "the nodes agree on every committed record" in run.out
    assert "node 3 is behind" in run.out


def test_other_records_inside_one_epoch_are_found_by_crc_and_said(tmp_path: Path) -> None:
    one, two = _builder(tmp_path, 1), _builder(tmp_path, 2)
    split = one.next_offset
    one.add_acl("TOPIC", "orders", "User:a", "READ")
    two.add_acl("TOPIC", "orders", "User:b", "READ")
    for b in (one, two):
        b.finish()
    group = open_group([str(tmp_path / "node1"), str(tmp_path / "node2")])
    p = compare("1", group.nodes[0].scan, "2", group.nodes[1].scan)
    assert (p.kind, p.at, p.epoch_a, p.epoch_b) == (CONTENT, split, 1, 1)
    assert p.why == "the records' values differ"
    report = build_report(group)
    assert not report.agree
    assert any("Raft never does this" in c for c in report.conflicts)


def _write_node(tmp: Path, name: str, node: int, batches: list[bytes],
                cluster: str = CLUSTER) -> str:
    """A node's log dir holding these batches, written with the wire writer."""
    md = tmp / name / MD
    md.mkdir(parents=True)
    (md / "00000000000000000000.log").write_bytes(b"".join(batches))
    (tmp / name / "meta.properties").write_bytes(synth_files.meta_properties(
        cluster_id=cluster, node_id=node, directory_id=None, written_ms=0))
    return str(tmp / name)


def _acl_value(principal: str) -> bytes:
    return meta("AccessControlEntryRecord", 0, id=bytes(15) + b"\x07", resourceType=2,
                resourceName="orders", patternType=3, principal=principal, host="*",
                operation=3, permissionType=3).value()


def test_batch_boundaries_do_not_matter_records_do(tmp_path: Path) -> None:
    values = [_acl_value(f"User:{u}") for u in "abc"]
    whole = metadata_batch(0, values, epoch=1, timestamp=1000)
    split = [metadata_batch(i, [v], epoch=1, timestamp=1000) for i, v in enumerate(values)]
    other = [metadata_batch(0, values[:1], epoch=1, timestamp=1000),
             metadata_batch(1, [_acl_value("User:x"), values[2]], epoch=1, timestamp=1000)]
    a = _write_node(tmp_path, "a", 1, [whole])
    b = _write_node(tmp_path, "b", 2, split)
    c = _write_node(tmp_path, "c", 3, other)
    group = open_group([a, b, c])
    na, nb, nc = group.nodes
    same = compare("1", na.scan, "2", nb.scan)
    assert (same.kind, same.agree_to) == (SAME, 2)
    differs = compare("1", na.scan, "3", nc.scan)
    assert (differs.kind, differs.at) == (CONTENT, 1)


def test_several_directories_must_be_one_cluster(tmp_path: Path) -> None:
    a = _builder(tmp_path, 1)
    b = _builder(tmp_path, 2, cluster="OtherClusterIdAAAAAAAAA")
    for x in (a, b):
        x.finish()
    run = cli("-d", str(tmp_path / "node1"), "-d", str(tmp_path / "node2"), "ls")
    assert run.code == 1
    assert "of cluster OtherClusterIdAAAAAAAAA" in run.err and "of cluster " + CLUSTER in run.err
    assert "give the directories of one cluster's nodes" in run.err
    assert run.err.count("\n") == 1  # one line


def test_without_meta_properties_the_bootstrap_records_tell_clusters_apart(
        tmp_path: Path) -> None:
    for n, seed in ((1, 7), (2, 8)):  # another seed: other ids and times from offset 0 on
        _builder(tmp_path, n, seed=seed).finish()
        os.remove(tmp_path / f"node{n}" / "meta.properties")
    with pytest.raises(SourceError, match="begin with other records at offset 0"):
        open_group([str(tmp_path / "node1" / MD), str(tmp_path / "node2" / MD)])
    for n in (1, 2):
        (tmp_path / f"same{n}").mkdir()
    _builder(tmp_path / "same1", 1).finish()
    _builder(tmp_path / "same2", 1).finish()
    for n in (1, 2):
        os.remove(tmp_path / f"same{n}" / "node1" / "meta.properties")
    group = open_group([str(tmp_path / "same1" / "node1"), str(tmp_path / "same2" / "node1")])
    assert [n.label for n in group.nodes] == ["#1", "#2"]


def test_opening_the_nodes_reads_only_the_first_batch_of_each_log(tmp_path: Path) -> None:
    """`--node N cmd` reads one node: telling the clusters apart must not scan every log."""
    made = lost_leader(tmp_path)
    group = open_group(made["dirs"])  # type: ignore[arg-type]
    assert not any("scan" in vars(n) for n in group.nodes)


def test_one_node_given_twice_is_refused(tmp_path: Path) -> None:
    _builder(tmp_path, 1).finish()
    run = cli("-d", str(tmp_path / "node1"), "-d", str(tmp_path / "node1" / MD), "ls")
    assert run.code == 1 and "node 1 is given twice" in run.err


def test_the_default_node_is_the_quorums_log_and_node_picks_another(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    dirs = [a for d in made["dirs"] for a in ("-d", d)]  # type: ignore[attr-defined]
    ends = made["ends"]
    run = cli(*dirs, "cat", "/image/provenance")
    assert run.code == 0
    assert run.out.startswith(f"offset {ends[2]}, epoch 2")  # type: ignore[index]
    assert "reading node 2" in run.err and "--node ID reads another" in run.err
    old = cli(*dirs, "--node", "1", "cat", "/image/provenance")
    assert old.out.startswith(f"offset {ends[1]}, epoch 1") and old.err == ""  # type: ignore
    lost = cli(*dirs, "--node", "1", "tree", "/image/acls").out
    kept = cli(*dirs, "--node", "3", "tree", "/image/acls").out
    assert "principal=User:lost-1" in lost and "principal=User:kept" not in lost
    assert "principal=User:kept" in kept and "User:lost" not in kept
    missing = cli(*dirs, "--node", "9", "ls")
    assert missing.code == 1 and "no such node among the directories given (nodes: 1, 2, 3)" \
        in missing.err
    assert cli("-s", "x", "--node", "1", "ls").code == 2
    follow = cli(*dirs, "--follow")
    assert follow.code == 2 and "give one -d" in follow.err


def test_nodes_needs_directories(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    seg = Path(made["dirs"][0]) / MD / "00000000000000000000.log"  # type: ignore[index]
    run = cli("-s", str(seg), "nodes")
    assert run.code == 1 and "nodes: it compares nodes' directories" in run.err
    one = cli("-d", made["dirs"][0], "nodes")  # type: ignore[index]
    assert one.code == 0 and "one node given" in one.out


def test_a_wrong_leader_epoch_checkpoint_is_said(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    two = Path(made["dirs"][1]) / MD  # type: ignore[index]
    split = made["split"]
    (two / "leader-epoch-checkpoint").write_bytes(
        synth_files.leader_epoch_checkpoint([(1, 0), (2, split + 1)]))  # type: ignore[operator]
    report = build_report(open_group(made["dirs"]))  # type: ignore[arg-type]
    assert report.rows[1].checkpoint == (f"says epoch 2 from offset {split + 1}, the batches "
                                         f"epoch 2 from offset {split}")  # type: ignore
    # Kafka keeps the checkpoint from its log start offset, which a snapshot moves up
    # while the first segment is still on disk: compared from there.
    (two / "leader-epoch-checkpoint").write_bytes(
        synth_files.leader_epoch_checkpoint([(2, split + 2)]))  # type: ignore[operator]
    assert build_report(open_group(made["dirs"])).rows[1].checkpoint == "agrees"  # type: ignore
    (two / "leader-epoch-checkpoint").write_bytes(
        synth_files.leader_epoch_checkpoint([(1, split + 2)]))  # type: ignore[operator]
    assert build_report(open_group(made["dirs"])).rows[1].checkpoint == (  # type: ignore
        f"says epoch 1 from offset {split + 2}, the batches epoch 2 from offset "  # type: ignore
        f"{split + 2}")
    (two / "leader-epoch-checkpoint").write_bytes(b"garbage\n")
    row = build_report(open_group(made["dirs"])).rows[1]  # type: ignore[arg-type]
    assert row.checkpoint == "absent" and any("not in Kafka's format" in p for p in row.problems)


def test_damage_ends_a_log_where_it_starts_and_is_said(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    seg = Path(made["dirs"][0]) / MD / "00000000000000000000.log"  # type: ignore[index]
    span = flip_byte(str(seg), -2)  # the last NoOp but one of the old leader
    report = build_report(open_group(made["dirs"]))  # type: ignore[arg-type]
    row = report.rows[0]
    assert row.end == span.base_offset - 1  # type: ignore[attr-defined]
    assert any("CRC mismatch" in p and f"compared up to offset {span.base_offset - 1}" in p
               for p in row.problems)  # type: ignore[attr-defined]
    assert report.tails[0].last == span.base_offset - 1  # type: ignore[attr-defined]


def _patched(seg: Path, pick: Callable[[Any], bool], at: int, value: bytes) -> int:
    """The first batch of ``seg`` that ``pick`` takes given ``value`` at byte ``at`` of it
    (its CRC made right again); its base offset."""
    from mdshell.wire.batch import parse_header
    from mdshell.wire.crc import crc32c

    data = bytearray(seg.read_bytes())
    pos = 0
    while pos < len(data):
        b = parse_header(bytes(data), pos)
        if pick(b):
            data[pos + at:pos + at + len(value)] = value
            data[pos + 17:pos + 21] = crc32c(bytes(data[pos + 21:pos + b.size])).to_bytes(4, "big")
            seg.write_bytes(bytes(data))
            return int(b.base_offset)
        pos += b.size
    raise AssertionError("no such batch")


@pytest.mark.parametrize("what", ["count-zero", "count-off", "control-unread"])
def test_a_batch_the_loader_stops_at_ends_the_compared_log(tmp_path: Path, what: str) -> None:
    """`nodes` reads a log as the loader does: a batch of no records, one spanning more
    offsets than it holds records, a control batch whose records Kafka cannot read, each
    ends the log compared there, as it ends the load."""
    made = lost_leader(tmp_path)
    seg = Path(made["dirs"][0]) / MD / "00000000000000000000.log"  # type: ignore[index]
    if what == "control-unread":  # the leader change's voters say more than there are
        base = _patched(seg, lambda b: b.is_control, 61 + 16, b"\x7f")
    else:
        base = _patched(seg, lambda b: not b.is_control and b.base_offset > 5, 57,
                        (0 if what == "count-zero" else 2).to_bytes(4, "big"))
    cut = max(base - 1, -1)
    report = build_report(open_group(made["dirs"]))  # type: ignore[arg-type]
    row = report.rows[0]
    assert (row.end if row.end is not None else -1) == cut
    assert any("compared up to" in p for p in row.problems)
    dirs = [a for d in made["dirs"] for a in ("-d", d)]  # type: ignore[union-attr]
    loaded = cli(*dirs[:2], "-o", "json", "health")
    assert json.loads(loaded.out)["verdict"]["offset"] == cut


def test_files_left_by_a_truncation_are_listed(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    md = Path(made["dirs"][0]) / MD  # type: ignore[index]
    for name in ("00000000000000000040.log.deleted", "00000000000000000040.index.deleted",
                 "00000000000000000012-0000000001.checkpoint.deleted",
                 "00000000000000000016-0000000001.checkpoint.deleted"):
        (md / name).write_bytes(b"")
    report = build_report(open_group(made["dirs"]))  # type: ignore[arg-type]
    row = report.rows[0]
    assert row.truncated == ["00000000000000000040.log.deleted"]  # past its end, 26
    assert row.old_snapshots == [12, 16]
    out = cli(*[a for d in made["dirs"] for a in ("-d", d)], "nodes").out  # type: ignore
    assert ("node 1: left by a truncation (past its log's end, offset 26): "
            "00000000000000000040.log.deleted") in out
    assert ("node 1: 2 older snapshots being deleted (ending at offsets 12-16): Kafka keeps "
            "the newest") in out


def test_an_observers_directory_is_never_the_quorums_log(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    broker = _builder(tmp_path, 4)  # a broker that fetched node 1's tail: longest, epoch 1
    broker.add_acl("TOPIC", "orders", "User:lost-1", "READ")
    broker.finish()
    report = build_report(open_group([*made["dirs"], str(tmp_path / "node4")]))  # type: ignore
    assert report.rows[3].role == "observer" and report.quorum == "2"


# ---------------------------------------------------------------- one directory alone


def _health(path: Path) -> tuple[int, str]:
    run = cli("-d", str(path), "health")
    return run.code, run.out.splitlines()[0]


def test_one_directory_whose_quorum_state_is_newer_says_its_tail_may_be_uncommitted(
        tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    split, ends = made["split"], made["ends"]
    md = Path(made["dirs"][2]) / MD  # type: ignore[index]
    code, data = _health(md)
    assert data.startswith("OK    data: the image is complete as of offset")
    assert "may not be committed" not in data
    (md / "quorum-state").write_bytes(synth_files.quorum_state(
        data_version=0, leader_id=-1, leader_epoch=3, voters=[1, 2, 3], voted_id=3))
    code, data = _health(md)
    assert code == 0
    assert data == (f"WARN  data: the image is complete as of offset {ends[3]}; offsets "  # type: ignore
                    f"{split}-{ends[3]} (epoch 2, since the log's last epoch change) may "  # type: ignore
                    "not be committed: quorum-state is at epoch 3, newer than the log's last "
                    "epoch 2: the quorum moved on without this node; the high watermark is "
                    "not on disk (compare every node's copy: mdshell -d DIR1 -d DIR2 -d DIR3 "
                    "nodes)")
    js = json.loads(cli("-d", str(md), "-o", "json", "health").out)
    assert js["verdict"]["status"] == "warn" and js["verdict"]["sound"] is True
    assert "epoch 3" in js["verdict"]["unsure"]


def test_one_directory_of_a_leader_that_resigned_says_so(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    two = Path(made["dirs"][1]) / MD  # type: ignore[index]
    _, data = _health(two)  # node 2 leads epoch 2 by its quorum-state: nothing to say
    assert data.startswith("OK    data")
    (two / "quorum-state").write_bytes(synth_files.quorum_state(
        data_version=0, leader_id=-1, leader_epoch=2, voters=[1, 2, 3]))
    _, data = _health(two)
    assert data.startswith("WARN  data") and ("node 2 led epoch 2 and quorum-state shows it "
                                              "resigned (no leader in that epoch)") in data
    # Time travel to an older offset: the tail is not in the image shown.
    run = cli("-d", str(two), "--at", str(made["split"]), "health")
    assert "may not be committed" not in run.out


# ---------------------------------------------------------------- diff --node


def test_diff_node_shows_what_two_nodes_images_differ_in(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    dirs = [a for d in made["dirs"] for a in ("-d", d)]  # type: ignore[attr-defined]
    ends, split = made["ends"], made["split"]
    run = cli(*dirs, "diff", "--node", "1", "--node", "2", "/image/acls")
    assert run.code == 0 and run.err == ""
    lines = run.out.splitlines()
    assert lines[0] == f"--- node 1, offset latest (last applied {ends[1]})"  # type: ignore
    assert lines[1] == f"+++ node 2, offset latest (last applied {ends[2]})"  # type: ignore
    assert sum("principal=User:lost-" in x for x in lines if x.startswith("- ")) == 2
    assert sum("principal=User:kept" in x for x in lines if x.startswith("+ ")) == 1
    assert lines[-1] == "1 added, 2 removed, 0 changed"
    configs = json.loads(cli(*dirs, "-o", "json", "diff", "--node", "1", "--node", "3",
                             "/image/configs").out)
    assert configs["fromNode"] == "1" and configs["toNode"] == "3"
    assert [(c["kind"], c["path"], c["before"]) for c in configs["changes"]] == [
        ("removed", "/image/configs/TOPIC:orders", {"retention.ms": "1000"})]
    before = cli(*dirs, "diff", "--node", "1", "--node", "2", "--at", str(split - 1))
    assert before.out.splitlines()[-1] == "no differences"  # the common prefix
    at_split = cli(*dirs, "diff", "--node", "1", "--node", "3", "--at", str(split))
    assert "principal=User:lost-1" in at_split.out  # node 1's offset 21 is its first ACL


def test_diff_node_usage(tmp_path: Path) -> None:
    made = lost_leader(tmp_path)
    dirs = [a for d in made["dirs"] for a in ("-d", d)]  # type: ignore[attr-defined]
    once = cli(*dirs, "diff", "--node", "1")
    assert once.code == 2 and "give --node twice" in once.err
    unknown = cli(*dirs, "diff", "--node", "1", "--node", "7")
    assert unknown.code == 1 and "--node 7: no such node" in unknown.err
    beyond = cli(*dirs, "diff", "--node", "1", "--node", "3", "--at", "26")
    assert beyond.code == 1 and "offset 26 is after the end of the log" in beyond.err
    single = cli("-d", made["dirs"][0], "diff", "--node", "1", "--node", "2")  # type: ignore
    assert single.code == 1 and "no such node" in single.err


# ---------------------------------------------------------------- damaged copies


def _damages(md: Path, rng: random.Random) -> list[tuple[str, Callable[[], None]]]:
    seg = md / "00000000000000000000.log"
    size = seg.stat().st_size

    def flip() -> None:
        data = bytearray(seg.read_bytes())
        for _ in range(rng.randint(1, 3)):
            data[rng.randrange(size)] ^= 1 << rng.randrange(8)
        seg.write_bytes(bytes(data))

    def cut() -> None:
        seg.write_bytes(seg.read_bytes()[:rng.randrange(size)])

    def write(name: str, data: bytes) -> Callable[[], None]:
        return lambda: (md / name).write_bytes(data)

    return [
        ("flip", flip), ("cut", cut), ("empty segment", write(seg.name, b"")),
        ("quorum-state not JSON", write("quorum-state", b"{leaderId")),
        ("quorum-state a list", write("quorum-state", b"[1, 2]")),
        ("quorum-state wrong types", write("quorum-state", json.dumps(
            {"leaderId": "x", "leaderEpoch": None, "votedId": True, "currentVoters": [
                {"voterId": "a"}, 3], "clusterId": 5, "data_version": 0}).encode())),
        ("checkpoint garbage", write("leader-epoch-checkpoint", b"0\n2\n1 x\n")),
        ("checkpoint short", write("leader-epoch-checkpoint", b"0\n")),
        ("meta.properties odd", lambda: (md.parent / "meta.properties").write_bytes(
            b"node.id=abc\ncluster.id=\n")),
        ("segment gone", lambda: seg.unlink()),
    ]


@pytest.mark.parametrize("seed", range(6))
def test_damaged_copies_are_named_problems_never_a_traceback(tmp_path: Path, seed: int) -> None:
    """Copies made in these incidents are often damaged: whatever the bytes, `nodes` and
    `diff --node` end with a verdict or a one-line error, never an internal error."""
    rng = random.Random(seed)
    lost_leader(tmp_path / "made")
    victim = f"node{seed % 3 + 1}"
    names = [name for name, _ in _damages(tmp_path / "made" / victim / MD, rng)]
    for name in names:
        work = tmp_path / name.replace(" ", "-")
        shutil.copytree(tmp_path / "made", work)
        dict(_damages(work / victim / MD, rng))[name]()
        dirs = [a for n in (1, 2, 3) for a in ("-d", str(work / f"node{n}"))]
        for words in (["nodes"], ["-o", "json", "nodes"],
                      ["diff", "--node", "1", "--node", "2"]):
            run = cli(*dirs, *words)
            assert run.code in (0, 1), (name, words, run.err)
            assert "internal error" not in run.err and "Traceback" not in run.err, (name, run.err)
            if run.code == 1 and not run.out:
                assert run.err.strip() and run.err.count("\n") <= 2, (name, run.err)


def test_a_damaged_copy_makes_the_answer_unsound(tmp_path: Path) -> None:
    dirs = []
    for n in (1, 2, 3):
        _builder(tmp_path, n).finish()
        dirs += ["-d", str(tmp_path / f"node{n}")]
    assert cli(*dirs, "nodes").code == 0
    span = flip_byte(str(tmp_path / "node3" / MD / "00000000000000000000.log"), 5)
    run = cli(*dirs, "nodes")
    assert run.code == 1
    assert f"node 3: 00000000000000000000.log: a CRC mismatch in the batch at offset " \
           f"{span.base_offset}; the log is compared up to offset {span.base_offset - 1}" \
           in run.out  # type: ignore[attr-defined]
    assert run.out.splitlines()[-1] == (
        "the nodes agree on every committed record read; but the log of node 3 is damaged: "
        "what it holds past the damage is not counted (see above)")
    assert json.loads(cli(*dirs, "-o", "json", "nodes").out)["damaged"] == ["3"]


def test_logs_that_start_at_a_snapshot_are_compared_from_there(tmp_path: Path) -> None:
    """Kafka deletes segments below a snapshot: a node may hold offsets only from there, or
    nothing but the snapshot."""
    nodes = {n: _builder(tmp_path, n) for n in (1, 2, 3)}
    for b in nodes.values():
        b.snapshot()
        b.roll_segment()
    snap = nodes[1].next_offset
    for n in (1, 2):
        nodes[n].add_acl("TOPIC", "orders", "User:after", "READ")
        nodes[n].noop(2)
    for b in nodes.values():
        b.finish()
    for n in (2, 3):  # segment 0 deleted: node 2 from the snapshot on, node 3 the snapshot only
        (tmp_path / f"node{n}" / MD / "00000000000000000000.log").unlink()
    group = open_group([str(tmp_path / f"node{n}") for n in (1, 2, 3)])
    one, two, three = (n.scan for n in group.nodes)
    assert (two.start, three.start, three.end) == (snap, None, snap - 1)
    p = compare("1", one, "2", two)
    assert (p.kind, p.from_, p.agree_to) == (SAME, snap, one.end)
    q = compare("1", one, "3", three)
    assert (q.kind, q.agree_to) == (SAME, snap - 1)
    report = build_report(group)
    assert report.sound and report.quorum in ("1", "2") and report.rows[2].start == snap - 1
    assert report.behind == [("3", snap - 1, one.end)]


def test_voters_added_before_the_newest_snapshot_are_read_from_it(tmp_path: Path) -> None:
    """KIP-853: AddVoter's VotersRecord is in the log; once the segments before a snapshot
    are deleted it is only in the snapshot (Kafka's voter set: the newest VotersRecord of
    the log, else of the latest snapshot), not in the stale bootstrap snapshot."""
    made: list[str] = []
    for n in (1, 2, 3):
        b = ClusterBuilder(str(tmp_path / f"node{n}"), seed=7, metadata_version=21,
                           kraft_version=1, controllers=[1, 2, 3], node_id=n,
                           cluster_id=CLUSTER)
        b.write_bootstrap_snapshot()  # voters 1, 2, 3
        b.elect_controller_leader(1)
        b.bootstrap()
        b.noop(2)
        b.add_voter(4)
        b.noop(2)
        b.snapshot()
        b.roll_segment()
        b.noop(2)
        b.finish()
        (tmp_path / f"node{n}" / MD / "00000000000000000000.log").unlink()
        made.append(str(tmp_path / f"node{n}"))
    report = build_report(open_group(made))
    assert report.voters == [1, 2, 3, 4] and report.majority == 3
    assert "snapshot" in report.voters_from
    assert any(note.startswith("voter 4 not given") for note in report.notes)
    assert report.committed_by == 3


def _snapshotted(tmp: Path, *, diverge: bool, keep_log: tuple[int, ...] = (),
                 inside: bool = False) -> tuple[list[str], int]:
    """Nodes 2 and 3 went on without node 1 (in a new epoch when ``diverge``: node 1 led
    epoch 1 alone past ``split``), took a snapshot and deleted the segments below it,
    except the nodes in ``keep_log``; ``inside``: they took one more snapshot, inside node
    1's log. Returns the directories and the offset where node 1 went its own way."""
    nodes = {n: _builder(tmp, n) for n in (1, 2, 3)}
    split = nodes[1].next_offset
    if diverge:
        nodes[1].add_acl("TOPIC", "orders", "User:lost-1", "READ")
    nodes[1].noop(3)
    for n in (2, 3):
        b = nodes[n]
        if diverge:
            b.elect_controller_leader(2)
            b.add_acl("TOPIC", "orders", "User:kept", "READ")
        if inside:
            b.noop(1)
            b.snapshot()
        b.noop(20)
        b.snapshot()
        b.roll_segment()
        b.noop(3)
    for b in nodes.values():
        b.finish()
    for n in (2, 3):
        if n not in keep_log:
            (tmp / f"node{n}" / MD / "00000000000000000000.log").unlink()
    return [str(tmp / f"node{n}") for n in (1, 2, 3)], split


def test_a_log_that_ends_before_the_quorums_log_starts_is_not_taken_as_agreeing(
        tmp_path: Path) -> None:
    """The quorum's log holds node 1's offsets only in a snapshot: nothing given shows
    whether node 1's records are the committed ones, and `nodes` says so (exit 1)."""
    dirs, split = _snapshotted(tmp_path, diverge=True)
    report = build_report(open_group(dirs))
    assert not report.sound and report.agree and not report.tails
    [text] = report.unchecked
    assert text.startswith(f"node 1's offsets 0-{split + 3} (last epoch 1) cannot be "
                           "compared with the quorum's log: node 2's log starts at offset")
    assert "Kafka replaces its log with node 2's snapshot" in text
    run = cli(*[a for d in dirs for a in ("-d", d)], "nodes")
    assert run.code == 1 and text in run.out
    assert run.out.splitlines()[-1] == (
        "the nodes agree on every committed record read; but 1 node could not be compared "
        "with the quorum's log (see above)")
    assert json.loads(cli(*[a for d in dirs for a in ("-d", d)], "-o", "json",
                          "nodes").out)["unchecked"] == [text]


def test_another_nodes_log_shows_where_a_node_parts_from_a_snapshotted_quorum_log(
        tmp_path: Path) -> None:
    """Node 3 still holds the segments node 2 deleted: by log matching its log is the
    quorum's below node 2's log start, and shows node 1 parting at the split."""
    dirs, split = _snapshotted(tmp_path, diverge=True, keep_log=(3,))
    report = build_report(open_group(dirs))
    [tail] = report.tails
    assert (tail.node, tail.first, tail.last, tail.by) == ("1", split, split + 3,
                                                           "node 3's log")
    assert tail.snapshot is not None and tail.snapshot.endswith("-0000000002.checkpoint")
    assert not report.agree and report.conflicts[0].startswith(
        f"node 1 holds other records than the committed log at offsets {split}-{split + 3}")


@pytest.mark.parametrize("inside", [True, False])
def test_a_stale_log_in_an_epoch_the_quorums_log_holds_later_is_only_behind(
        tmp_path: Path, inside: bool) -> None:
    """Node 1 stopped early; the quorum's log (a snapshot and later segments) holds its last
    epoch at later offsets: one leader wrote that epoch, appending only, so node 1 holds the
    quorum's log (log matching), behind, whether or not a snapshot ends inside its log."""
    dirs, _ = _snapshotted(tmp_path, diverge=False, inside=inside)
    report = build_report(open_group(dirs))
    assert report.sound and not report.unchecked and not report.tails
    assert [b[0] for b in report.behind] == ["1"]
    # Its log ends before the quorum's starts: Kafka's leader sends the newest snapshot.
    newest = sorted(os.listdir(Path(dirs[1]) / MD))
    snap = [f for f in newest if f.endswith(".checkpoint")][-1]
    assert report.sent_snapshot == {"1": snap}
    run = cli(*[a for d in dirs for a in ("-d", d)], "nodes")
    assert run.code == 0 and f"(Kafka sends it the snapshot {snap}, then the rest)" in run.out


def test_clusters_that_share_a_default_cluster_id_are_told_apart(tmp_path: Path) -> None:
    """Docker images format every cluster with one cluster.id: two clusters' directories
    then agree on it, and their batches at offset 0 (same span, same epoch, other bytes:
    followers copy their leader's batches as they are) tell them apart, before a node id
    both share is taken for one node given twice."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _builder(tmp_path / "a", 1, seed=7).finish()
    _builder(tmp_path / "b", 2, seed=8).finish()
    _builder(tmp_path / "b", 1, seed=8).finish()
    for pair in ((tmp_path / "a" / "node1", tmp_path / "b" / "node2"),
                 (tmp_path / "a" / "node1", tmp_path / "b" / "node1")):
        run = cli("-d", str(pair[0]), "-d", str(pair[1]), "nodes")
        assert run.code == 1 and run.out == ""
        assert "begin with other records at offset 0 in one leader epoch" in run.err
        assert f"cluster.id {CLUSTER} for both" in run.err and "given twice" not in run.err
        assert run.err.count("\n") == 1
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "a" / "node1", copy)  # node 1 copied twice: given twice
    run = cli("-d", str(tmp_path / "a" / "node1"), "-d", str(copy), "nodes")
    assert run.code == 1 and "node 1 is given twice" in run.err
    assert "two clusters' nodes" not in run.err  # one cluster id, one first batch
    props = copy / "meta.properties"  # no cluster id: nothing shows they are one cluster's
    props.write_text("".join(line for line in props.read_text().splitlines(True)
                             if not line.startswith("cluster.id")))
    run = cli("-d", str(tmp_path / "a" / "node1"), "-d", str(copy), "nodes")
    assert run.code == 1 and "node 1 is given twice" in run.err
    assert "two clusters' nodes: nothing shows they are one cluster's" in run.err


@pytest.mark.parametrize("cut", [10, 30, 70])  # inside the length, the header, the records
def test_a_torn_last_batch_is_a_write_cut_short_not_damage(tmp_path: Path, cut: int) -> None:
    """A node killed while writing, or a copy taken while Kafka wrote, ends inside its last
    batch: Kafka's log recovery drops those bytes and the node fetches them again. That is
    no damage to what it holds; inside an earlier segment it is."""
    dirs = []
    for n in (1, 2, 3):
        b = _builder(tmp_path, n)
        b.add_acl("TOPIC", "orders", "User:big" + "x" * 80, "READ")  # a batch past 70 bytes
        b.finish()
        dirs += ["-d", str(tmp_path / f"node{n}")]
    seg = tmp_path / "node3" / MD / "00000000000000000000.log"
    data = seg.read_bytes()
    pos = 0  # where the last batch starts
    while pos + parse_header(data, pos).size < len(data):
        pos += parse_header(data, pos).size
    seg.write_bytes(data[:pos + cut])
    report = build_report(open_group(dirs[1::2]))
    assert report.damaged == [] and report.sound
    row = report.rows[2]
    assert any(f"its last batch is cut short at byte {pos}" in p for p in row.problems)
    assert cli(*dirs, "nodes").code == 0
    # The same bytes in a segment that is not the last: damage, as before.
    (tmp_path / "node3" / MD / "00000000000000009999.log").write_bytes(data[pos:])
    report = build_report(open_group(dirs[1::2]))
    assert report.damaged == ["3"] and not report.sound


def test_with_a_voter_not_given_the_committed_bound_counts_it_as_holding_everything(
        tmp_path: Path) -> None:
    """Nodes 2 and 3 alone: offsets up to node 3's end are held by a majority, but voter 1
    (not given) may hold node 2's last offsets too: they may have been committed, so
    neither "at most node 3's end" nor "not committed when copied" can be said."""
    made = lost_leader(tmp_path)
    ends = made["ends"]
    dirs: list[str] = made["dirs"][1:]  # type: ignore[index]
    report = build_report(open_group(dirs))
    assert report.missing == [1]
    assert (report.committed, report.most) == (ends[3], ends[2])  # type: ignore[index]
    assert report.uncommitted is None
    out = cli(*[a for d in dirs for a in ("-d", d)], "nodes").out
    assert (f"committed: offsets up to {ends[3]} are held by 2 of 3 voters, a majority; with "  # type: ignore[index]
            f"voter 1 not given, up to offset {ends[2]} at most can have been committed") in out  # type: ignore[index]
    assert "not committed when copied" not in out
    everyone = build_report(open_group(made["dirs"]))  # type: ignore[arg-type]
    assert everyone.most == everyone.committed == ends[3]  # type: ignore[index]


def test_a_node_whose_log_is_gone_is_named_with_what_to_do(tmp_path: Path) -> None:
    """A controller whose disk was wiped (or re-formatted) holds no segment or snapshot:
    the one line says which -d it is and that the others can be compared without it."""
    made = lost_leader(tmp_path)
    dirs: list[str] = made["dirs"]  # type: ignore[assignment]
    for seg in (Path(dirs[2]) / MD).glob("*.log"):
        seg.unlink()
    run = cli(*[a for d in dirs for a in ("-d", d)], "nodes")
    assert run.code == 1 and run.out == "" and run.err.count("\n") == 1
    assert "no metadata log segments" in run.err
    assert "(-d number 3 of 3: leave it out to compare the others)" in run.err
    assert "the quorum's log is node 2's" in cli(*[a for d in dirs[:2] for a in ("-d", d)],
                                                 "nodes").out


def test_a_node_ahead_of_the_quorums_log_is_not_said_to_be_truncated(tmp_path: Path) -> None:
    """A broker copied after the controllers (or fed by a leader not given) holds offsets
    past the quorum's log in the epochs both hold: Kafka truncates only where the logs
    part (the leader's end for that epoch before the fetch offset), so that is not said."""
    dirs = []
    for n in (1, 2, 3, 4):
        b = _builder(tmp_path, n)
        if n == 4:  # the broker: two NoOps the controllers' copies lack
            b.noop(2)
        b.finish()
        dirs.append(str(tmp_path / f"node{n}"))
    report = build_report(open_group(dirs))
    [tail] = report.tails
    assert (tail.node, tail.ahead) == ("4", True) and report.sound
    out = cli(*[a for d in dirs for a in ("-d", d)], "nodes").out
    assert "node 4 is ahead of the quorum's log: it holds its offsets" in out
    assert "node 4 is truncated" not in out


def test_a_node_that_holds_no_record_is_behind(tmp_path: Path) -> None:
    """A controller formatted (a bootstrap snapshot, an empty segment) that never fetched,
    or whose log was wiped: it holds nothing to disagree with and fetches everything."""
    made = lost_leader(tmp_path)
    empty = ClusterBuilder(str(tmp_path / "node4"), seed=7, metadata_version=21,
                           kraft_version=1, controllers=[1, 2, 3], node_id=4,
                           cluster_id=CLUSTER)
    empty.write_bootstrap_snapshot()
    empty.finish()
    dirs = [*made["dirs"], str(tmp_path / "node4")]  # type: ignore[misc]
    report = build_report(open_group(dirs))
    assert ("4", -1, made["ends"][2]) in report.behind and not report.unchecked  # type: ignore[index]
    out = cli(*[a for d in dirs for a in ("-d", d)], "nodes").out
    assert "node 4 is behind: it holds no record (a log never written, or wiped)" in out
    assert "None" not in out


def test_options_nodes_would_ignore_are_usage_errors(tmp_path: Path) -> None:
    """`nodes` compares every log whole and `diff --node` names its nodes: a global --at or
    --node would change nothing there, and is refused (exit 2), never dropped in silence."""
    made = lost_leader(tmp_path)
    dirs = [a for d in made["dirs"] for a in ("-d", d)]  # type: ignore[attr-defined]
    for words in (["--at", "10", "nodes"], ["--node", "1", "nodes"],
                  ["--node", "3", "diff", "--node", "1", "--node", "2"]):
        run = cli(*dirs, *words)
        assert run.code == 2 and run.out == "" and run.err.count("\n") == 1, words
        assert f"drop {'--at' if words[0] == '--at' else 'the --node'}" in run.err
    assert cli(*dirs, "--node", "1", "cat", "/image/provenance").code == 0
    assert cli(*dirs, "diff", "--node", "1", "--node", "2", "--at", "10").code == 0


def test_a_node_left_with_its_snapshot_alone_is_compared_by_it(tmp_path: Path) -> None:
    """Node 3's segments were deleted below its snapshot and what follows it is damaged:
    it holds the snapshot alone, the same (end offset, epoch) as the quorum log's, so it
    holds the quorum's log up to there; and a garbled quorum-state is shown as such."""
    dirs, _ = _snapshotted(tmp_path, diverge=False)
    md = Path(dirs[2]) / MD
    [seg] = [p for p in md.glob("*.log") if p.name != "00000000000000000000.log"]
    data = bytearray(seg.read_bytes())
    data[30] ^= 0xFF  # inside the first batch's CRC-covered bytes
    seg.write_bytes(bytes(data))
    (md / "quorum-state").write_text('{"leaderIf": 2, "leaderEpoch": 1, "votedId": -1}')
    report = build_report(open_group(dirs))
    assert not report.unchecked and report.damaged == ["3"]
    row = report.rows[2]
    assert row.role == "?" and ("3", row.end, report.rows[1].end) in report.behind
    out = cli(*[a for d in dirs for a in ("-d", d)], "nodes").out
    assert "None" not in out and "leader ?, epoch 1" in out


def test_one_directory_that_follows_a_newer_leader_says_so(tmp_path: Path) -> None:
    """quorum-state names a leader of a newer epoch than the log's last (elected, not yet
    fetched from, as greenlemonT's node 3 in the corpus): said as such, not as a quorum
    that went on without the node."""
    made = lost_leader(tmp_path)
    md = Path(made["dirs"][2]) / MD  # type: ignore[index]
    (md / "quorum-state").write_bytes(synth_files.quorum_state(
        data_version=0, leader_id=1, leader_epoch=3, voters=[1, 2, 3]))
    _, data = _health(md)
    assert data.startswith("WARN  data") and ("quorum-state is at epoch 3, newer than the "
                                              "log's last epoch 2: it follows node 1, a leader "
                                              "this node has not fetched from yet") in data
    assert "moved on without this node" not in data
