#!/usr/bin/env python3
"""Regenerate every fixture under ``fixtures/`` (and its README) with ``mdshell.synth``.

    python scripts/make_fixtures.py            # rewrite fixtures/
    python scripts/make_fixtures.py --out DIR  # write them somewhere else (tests compare)

Deterministic: fixed seeds and a simulated clock, so two runs give identical bytes. Fixtures
are generated, never edited by hand: change this script and run it again.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mdshell.problems import Problem  # noqa: E402
from mdshell.source.walker import iter_batches  # noqa: E402
from mdshell.synth import ClusterBuilder, Scenario  # noqa: E402
from mdshell.synth import generate as synth  # noqa: E402
from mdshell.synth.batches import CODECS  # noqa: E402
from mdshell.synth.damage import cut_last_batch, flip_byte, truncate  # noqa: E402
from mdshell.synth.files import EMPTY_PRODUCER_SNAPSHOT, quorum_state, write_bytes  # noqa: E402
from mdshell.wire import codec  # noqa: E402
from mdshell.wire.batch import frame_metadata_value  # noqa: E402
from mdshell.wire.records import METADATA  # noqa: E402

MD = "__cluster_metadata-0"

# Passwords of the SCRAM users in the `security` fixture (tests recompute the keys from them).
PASSWORDS = {"alice": "alice-pass", "bob": "bob-pass", "dave": "dave-pass-2"}


@dataclass(frozen=True)
class Fixture:
    name: str
    covers: str
    make: Callable[[str], None]
    # For bad inputs: a substring of the expected stderr line, and the exit codes of
    # `mdshell -d DIR ls /` without and with --strict.
    message: str | None = None
    exit_code: int = 0
    strict_exit_code: int = 0


def base(b: ClusterBuilder, brokers: int = 3) -> None:
    """Leader election, bootstrap features, controller registrations, unfenced brokers."""
    b.elect_controller_leader(b.controller_ids[0])
    b.bootstrap()
    if b.versions.controller_registration:
        for c in b.controller_ids:
            b.register_controller(c)
    for i in range(1, brokers + 1):
        b.register_broker(i, rack=f"rack-{i % 2}")
        b.unfence_broker(i)


# ---------------------------------------------------------------- health fixtures
# Each breaks one `health` check (and only that one, where the cluster allows it).


def _healthy(out: str, seed: int, brokers: int = 3) -> ClusterBuilder:
    b = ClusterBuilder(out, seed=seed, metadata_version=21, controllers=[1, 2, 3])
    base(b, brokers)
    b.create_topic("orders", 3, 3)
    return b


def make_health_fenced(out: str) -> None:
    """Broker 4 fenced and broker 5 in controlled shutdown; they host no partition."""
    b = _healthy(out, 110)
    for bid in (4, 5):
        b.register_broker(bid)
        b.unfence_broker(bid)
    b.fence_broker(4)
    b.controlled_shutdown(5)
    b.finish()


def make_health_offline(out: str) -> None:
    b = _healthy(out, 111)
    b.elect_leader("orders", 1, -1)  # no leader: the partition is offline
    b.finish()


def make_health_under_replicated(out: str) -> None:
    b = _healthy(out, 112)
    s = b.partition("orders", 2)
    b.set_isr("orders", 2, [s.leader, s.replicas[1] if s.replicas[1] != s.leader
                            else s.replicas[2]])
    b.finish()


def make_health_under_min_isr(out: str) -> None:
    b = _healthy(out, 113)
    b.create_topic("payments", 2, 3, configs={"min.insync.replicas": "2"})
    s = b.partition("payments", 0)
    b.set_isr("payments", 0, [s.leader])  # 1 in-sync replica < min.insync.replicas 2
    b.finish()


def make_health_stale_controller(out: str) -> None:
    """Controller 4 was registered (it ran once) but is not one of the voters 1-3."""
    b = _healthy(out, 114)
    b.register_controller(4)
    b.finish()


def make_health_unsupported_feature(out: str) -> None:
    """Broker 4 registered with a 3.7 release (metadata.version up to 19) in a 3.9 cluster."""
    b = _healthy(out, 115)
    b.register_broker(4, features={"metadata.version": (1, 19)})
    b.unfence_broker(4)
    b.finish()


# ---------------------------------------------------------------- content fixtures


def make_cluster_basic(out: str) -> None:
    """The README's quick-start directory: a typical small cluster, via the scenario."""
    synth(Scenario(brokers=3, controllers=3, topics=4, partitions_per_topic=3, rf=3,
                   history_changes=60, snapshot_at=["50%"], metadata_version=25, seed=100),
          out)


def make_codecs(out: str) -> None:
    b = ClusterBuilder(out, seed=101, metadata_version=21)
    base(b)
    for name in CODECS:
        b.roll_segment()
        b.use_compression(name)
        b.create_topic(f"topic-{name}", 3, 3, configs={"compression.type": "producer"})
        b.elect_leader(f"topic-{name}", 0, b.partition(f"topic-{name}", 0).replicas[1])
        b.set_config("TOPIC", f"topic-{name}", "retention.ms", "86400000")
        b.set_quota({"client-id": f"client-{name}"}, "producer_byte_rate", 1048576.0)
    b.finish()


def make_kraft_v1(out: str) -> None:
    b = ClusterBuilder(out, seed=102, metadata_version=21, kraft_version=1, controllers=[1, 2])
    base(b)
    b.add_voter(3)
    b.register_controller(3)
    b.create_topic("events", 4, 3)
    b.snapshot()
    b.elect_controller_leader(2)
    b.set_config("TOPIC", "events", "retention.ms", "3600000")
    b.noop(3)
    b.write_bootstrap_snapshot()
    b.finish()


def make_transactions(out: str) -> None:
    b = ClusterBuilder(out, seed=103, metadata_version=21, max_records_per_batch=16)
    base(b)
    with b.transaction("create orders"):
        b.create_topic("orders", 3, 3, configs={"cleanup.policy": "compact"})
        b.upsert_scram("carol", password="carol-pass")
        b.add_acl("TOPIC", "orders", "User:carol", "WRITE")
    b.begin_transaction("doomed")
    b.create_topic("aborted-topic", 2, 3)
    b.upsert_scram("mallory", password="mallory-pass")
    b.set_quota({"user": "mallory"}, "producer_byte_rate", 1.0)
    b.set_config("TOPIC", "orders", "retention.ms", "1")
    b.abort_transaction("controller failover")
    b.create_topic("big-topic", 50, 2)  # 51+ records > 16 per batch: Begin/End across batches
    b.noop(2)
    b.finish()


def make_elr(out: str) -> None:
    b = ClusterBuilder(out, seed=104, metadata_version=25)
    base(b, brokers=4)
    for t in ("elr-a", "elr-b", "elr-c"):
        b.create_topic(t, 2, 3, configs={"min.insync.replicas": "2"})
    for t in ("elr-a", "elr-b", "elr-c"):
        s = b.partition(t, 0)
        rest = [r for r in s.replicas if r != s.leader]
        b.change_partition(t, 0, isr=[s.leader], eligibleLeaderReplicas=rest,
                           lastKnownElr=[])
    s = b.partition("elr-b", 1)
    b.set_elr("elr-b", 1, [s.replicas[1]], [s.replicas[2]])
    b.clear_elr("elr-a")  # one topic
    b.clear_elr("")  # every topic
    s = b.partition("elr-c", 1)
    b.change_partition("elr-c", 1, isr=[s.leader], eligibleLeaderReplicas=[s.replicas[1]],
                       lastKnownElr=[s.replicas[2]])  # after the clears: stays
    b.finish()


def make_controllers(out: str) -> None:
    b = ClusterBuilder(out, seed=105, metadata_version=33, controllers=[1, 2, 3])
    base(b)
    b.create_topic("payments", 2, 3)
    b.register_controller(3)  # re-registration: a new incarnation id
    b.unregister_controller(2)
    b.snapshot()
    b.set_config("BROKER", "", "log.retention.ms", "604800000")
    b.finish()


def make_security(out: str) -> None:
    b = ClusterBuilder(out, seed=106, metadata_version=21)
    base(b)
    b.create_topic("orders", 2, 2)
    b.upsert_scram("alice", "SCRAM-SHA-256", password=PASSWORDS["alice"], iterations=4096)
    b.upsert_scram("alice", "SCRAM-SHA-512", password=PASSWORDS["alice"], iterations=4096)
    b.upsert_scram("bob", "SCRAM-SHA-256", password=PASSWORDS["bob"])
    b.upsert_scram("dave", "SCRAM-SHA-512", password="dave-pass-1", iterations=4096)
    b.upsert_scram("dave", "SCRAM-SHA-512", password=PASSWORDS["dave"], iterations=8192)
    b.remove_scram("bob", "SCRAM-SHA-256")
    b.add_acl("TOPIC", "orders", "User:alice", "READ")
    b.add_acl("TOPIC", "orders-", "User:alice", "WRITE", pattern="PREFIXED")
    b.add_acl("GROUP", "billing", "User:alice", "READ")
    b.add_acl("CLUSTER", "kafka-cluster", "User:admin", "ALTER")
    b.add_acl("TOPIC", "*", "User:mallory", "ALL", host="10.0.0.66", permission="DENY")
    gone = b.add_acl("TOPIC", "orders", "User:bob", "READ")
    b.remove_acl(gone)
    b.set_quota({"user": "alice"}, "producer_byte_rate", 1048576.0)
    b.set_quota({"user": "alice"}, "consumer_byte_rate", 2097152.0)
    b.set_quota({"client-id": "billing-app"}, "request_percentage", 50.0)
    b.set_quota({"ip": "10.0.0.1"}, "connection_creation_rate", 20.0)
    b.set_quota({"user": None}, "producer_byte_rate", 1024.0)
    b.set_quota({"client-id": None}, "consumer_byte_rate", 4096.0)
    b.set_quota({"user": "alice", "client-id": "billing-app"}, "request_percentage", 0.0001)
    b.set_quota({"user": "bob"}, "producer_byte_rate", 5.0)
    b.set_quota({"user": "bob"}, "producer_byte_rate", None)
    b.create_token("User:alice", renewers=["User:bob", "User:carol"], token_id="token-alice-1")
    b.create_token("User:bob", token_id="token-bob-1")
    b.remove_token("token-bob-1")
    b.set_config("BROKER", "", "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config",
                 'org.apache.kafka.common.security.scram.ScramLoginModule required;')
    b.set_config("BROKER", "1", "log.retention.ms", "172800000")
    b.finish()


def make_segments_snapshots(out: str) -> None:
    b = ClusterBuilder(out, seed=107, metadata_version=21, kraft_version=1,
                       controllers=[1, 2, 3], segment_bytes=4096, producer_snapshots=True)
    base(b, brokers=4)
    md = b.metadata_dir
    for i in range(3):
        b.create_topic(f"early-{i}", 3, 3)
        b.noop(4)
    oldest = b.snapshot()
    b.elect_controller_leader(2)
    for i in range(3):
        b.create_topic(f"middle-{i}", 3, 3)
        b.elect_leader(f"early-{i}", 0, b.partition(f"early-{i}", 0).replicas[2])
        b.noop(4)
    b.snapshot()  # the older usable snapshot
    b.elect_controller_leader(3)
    b.delete_topic("early-0")
    for i in range(3):
        b.create_topic(f"late-{i}", 2, 3)
        b.set_isr(f"middle-{i}", 1, b.partition(f"middle-{i}", 1).replicas[:2])
        b.noop(4)
    b.snapshot()  # the newest snapshot: the loader starts here
    for i in range(2):
        b.create_topic(f"tail-{i}", 2, 3)
        b.noop(4)
    part = b.snapshot()  # being written when the copy was taken: truncated .part
    cut_last_batch(part, 0.4)
    os.replace(part, part + ".part")
    os.replace(oldest, oldest + ".deleted")  # scheduled for deletion
    b.write_bootstrap_snapshot()
    b.finish(partition_dirs=True)
    assert len(b.log.segments) >= 3, "the fixture needs several segments"
    assert os.path.exists(os.path.join(md, "quorum-state"))


def make_kafka37_snapshot(out: str) -> None:
    """A snapshot as Kafka 3.7's writer lays it out (non-atomic chunks of 10 records, batches
    of at most 700 bytes), and a log that starts where it ends."""
    b = ClusterBuilder(out, seed=108, metadata_version=19)
    with b.log_suppressed():  # those segments were deleted once the snapshot covered them
        base(b, brokers=5)
        for i in range(4):
            b.create_topic(f"topic-{i}", 10, 3)
        b.set_config("BROKER", "", "log.retention.ms", "604800000")
        snap = b.snapshot(non_atomic=True, max_batch_bytes=700, chunk_records=10)
    problems: list[Problem] = []
    with open(snap, "rb") as f:
        *data, footer = list(iter_batches(snap, f.read(), problems))[1:]
    assert not problems and not any(x.is_control for x in data) and footer.is_control
    # A batch wholly inside offsets already used: a reader that skipped repeated offsets, as
    # in a log, would lose its records.
    assert any(x.last_offset <= w.last_offset for w, x in itertools.pairwise(data))
    # The last batch starts at a chunk's start, so its last offset is the footer's minus one:
    # Kafka's shell (-s) waits until a batch's base + count - 1 reaches that.
    assert data[-1].last_offset == footer.base_offset - 1
    b.elect_leader("topic-0", 0, b.partition("topic-0", 0).replicas[1])
    b.create_topic("after-snapshot", 2, 3)
    b.noop(3)
    b.finish()


# ---------------------------------------------------------------- bad inputs


def make_bad_no_metadata(out: str) -> None:
    md = os.path.join(out, MD)
    os.makedirs(md)
    write_bytes(os.path.join(md, "quorum-state"),
                quorum_state(data_version=0, leader_id=1, leader_epoch=1, voters=[1]))
    write_bytes(os.path.join(md, "00000000000000000000.snapshot"), EMPTY_PRODUCER_SNAPSHOT)
    write_bytes(os.path.join(md, "leader-epoch-checkpoint"), b"0\n0\n")


def make_bad_empty_log(out: str) -> None:
    b = ClusterBuilder(out, seed=110, metadata_version=21)
    b.finish()  # a formatted node that never wrote: one empty active segment


def make_bad_truncated_tail(out: str) -> None:
    b = ClusterBuilder(out, seed=111, metadata_version=21)
    base(b)
    b.create_topic("kept-topic", 2, 3)
    b.create_topic("lost-topic", 2, 3)  # the last batch: cut in half below
    b.finish()
    cut_last_batch(b.log.segments[-1])


def make_bad_crc(out: str) -> None:
    b = ClusterBuilder(out, seed=112, metadata_version=21)
    base(b)
    b.create_topic("before-crc", 2, 3)
    b.create_topic("corrupt-topic", 2, 3)
    b.create_topic("after-crc", 2, 3)
    b.roll_segment()
    b.create_topic("next-segment-topic", 2, 3)
    b.finish()
    flip_byte(b.log.segments[0], -2)  # corrupt-topic's batch: the middle of segment 0


def make_bad_log_gap(out: str) -> None:
    b = ClusterBuilder(out, seed=113, metadata_version=21)
    with b.log_suppressed():  # deleted, and no snapshot covers them
        base(b)
        b.create_topic("early", 2, 3)
    b.noop(2)
    b.create_topic("late", 2, 3)
    b.finish()


def make_bad_unknown_records(out: str) -> None:
    b = ClusterBuilder(out, seed=114, metadata_version=21)
    base(b)
    b.create_topic("before-unknown", 1, 3)
    b.raw(frame_metadata_value(99, 0, b"\x00\x00\x00\x2a\x00"))  # api key 99: from the future
    body = codec.encode(METADATA[2], 0, {"name": "from-the-future", "topicId": b.ids.uuid()})
    b.raw(frame_metadata_value(2, 7, body))  # TopicRecord v7: a version not known yet
    b.create_topic("after-unknown", 1, 3)
    b.finish()


def make_bad_half_snapshot(out: str) -> None:
    b = ClusterBuilder(out, seed=115, metadata_version=21, segment_bytes=8192)
    base(b)
    b.create_topic("first", 3, 3)
    b.snapshot()  # good: the loader falls back to it
    b.create_topic("second", 3, 3)
    b.noop(3)
    newest = b.snapshot(max_batch_bytes=512, chunk_records=4)
    spans = os.path.getsize(newest)
    truncate(newest, spans // 2)  # Kafka died while writing it (renamed too early)
    b.create_topic("third", 1, 3)
    b.finish()


FIXTURES = [
    Fixture("cluster-basic", "a typical small 4.0 cluster (3 controllers, 3 brokers, 4 topics, "
            "60 random operations, a snapshot halfway): the README's quick start",
            make_cluster_basic),
    Fixture("codecs", "one segment per batch codec: none, gzip, snappy (xerial framing), "
            "snappy (raw), lz4, zstd; topic `topic-<codec>` in each", make_codecs),
    Fixture("kraft-v1", "kraft.version 1: KRaftVersion and Voters control records (voter "
            "directory ids, endpoints) in the log (AddVoter of controller 3) and in the snapshot "
            "header batch, bootstrap `00000000000000000000-0000000000.checkpoint`, "
            "quorum-state data_version 1, leader failover", make_kraft_v1),
    Fixture("transactions", "metadata transactions: committed (topic `orders`, SCRAM user "
            "`carol`, ACL), aborted (topic `aborted-topic`, user `mallory`, quota, config: all "
            "absent), and `big-topic` (50 partitions) split over batches inside Begin/End",
            make_transactions),
    Fixture("elr", "4.0-IV3: PartitionRecord/PartitionChangeRecord v2 with ELR and "
            "LastKnownElr, ClearElrRecord for one topic (`elr-a`) and for all topics; `elr-c-1` "
            "gets ELR after the clears and keeps it", make_elr),
    Fixture("controllers", "4.4-IV2: RegisterControllerRecord 1-3, controller 3 re-registered, "
            "UnregisterControllerRecord (key 29) for controller 2, then a snapshot and a tail",
            make_controllers),
    Fixture("security", "SCRAM-SHA-256/512 credentials (real RFC 5802 keys; passwords in "
            "scripts/make_fixtures.py), one removed, one updated; ACLs (literal, prefixed, group, "
            "cluster, deny by host; one removed); client quotas for user, client-id, ip, default "
            "user, default client-id, user+client-id (one removed); delegation tokens (one "
            "removed); a sasl.jaas.config broker config (redacted)", make_security),
    Fixture("segments-snapshots", "several segments (4 KiB), three leader epochs, producer "
            "`.snapshot` files (ignored), snapshots: a `.checkpoint.deleted`, an older and the "
            "newest usable one, a truncated `.checkpoint.part`, the bootstrap 0-0 checkpoint; "
            "`<topic>-<n>/partition.metadata` dirs", make_segments_snapshots),
    Fixture("kafka37-snapshot", "3.7-IV4: a snapshot laid out by Kafka 3.7's writer (non-atomic "
            "appends): a batch begun inside an append starts at that append's first offset, with "
            "offset deltas from 0, so its offsets repeat earlier ones; a log that starts at the "
            "snapshot's end offset",
            make_kafka37_snapshot),
    Fixture("health-fenced", "`health` fails `fenced brokers`: broker 4 fenced, broker 5 in "
            "controlled shutdown (warning); neither hosts a partition", make_health_fenced),
    Fixture("health-offline", "`health` fails `offline partitions`: `orders-1` has no leader",
            make_health_offline),
    Fixture("health-under-replicated", "`health` warns `under-replicated partitions`: "
            "`orders-2` has 2 of 3 replicas in sync", make_health_under_replicated),
    Fixture("health-under-min-isr", "`health` fails `under-min-ISR partitions`: `payments-0` "
            "(min.insync.replicas=2) has one in-sync replica", make_health_under_min_isr),
    Fixture("health-stale-controller", "`health` fails `controller registrations`: controller "
            "4 is registered but not a voter", make_health_stale_controller),
    Fixture("health-unsupported-feature", "`health` fails `feature support`: broker 4 "
            "supports metadata.version 1-19, the cluster runs 21 (3.9-IV0)",
            make_health_unsupported_feature),
    Fixture("bad-no-metadata", "a metadata dir with quorum-state and a producer snapshot but "
            "no `.log` or `.checkpoint`", make_bad_no_metadata,
            "no metadata log segments (.log) or snapshots (.checkpoint)", 1, 1),
    Fixture("bad-empty-log", "a formatted node that never wrote: one empty `.log`",
            make_bad_empty_log, "empty segment", 0, 0),
    Fixture("bad-truncated-tail", "the last batch (topic `lost-topic`) cut in half",
            make_bad_truncated_tail, "is incomplete", 0, 1),
    Fixture("bad-crc", "a flipped byte in the middle batch of segment 0 (topic "
            "`corrupt-topic`); `after-crc` and segment 1 (`next-segment-topic`) are not applied",
            make_bad_crc, "CRC mismatch", 0, 1),
    Fixture("bad-log-gap", "the log starts at offset 15 and no snapshot covers 0-14",
            make_bad_log_gap, "the log starts at offset 15 but there is no snapshot", 0, 1),
    Fixture("bad-unknown-records", "a record with api key 99 and a TopicRecord v7 between "
            "valid records (both kept raw, reported once)", make_bad_unknown_records,
            "unknown metadata record type 99", 0, 1),
    Fixture("bad-half-snapshot", "the newest snapshot is truncated (no footer): the loader "
            "falls back to the older snapshot and the log", make_bad_half_snapshot,
            "is not usable", 0, 0),
]


def readme() -> str:
    lines = [
        "# Test fixtures",
        "",
        "Generated by `python scripts/make_fixtures.py` with `mdshell.synth` — never edit them "
        "by hand. Each fixture is a Kafka log dir (`meta.properties`, `bootstrap.checkpoint`, "
        "`__cluster_metadata-0/`); pass it to `mdshell -d`.",
        "",
        "## Content",
        "",
        "| fixture | covers |",
        "|---|---|",
    ]
    lines += [f"| `{f.name}` | {f.covers} |" for f in FIXTURES if f.message is None]
    lines += [
        "",
        "## Bad inputs",
        "",
        "Expected: a stderr line containing the message (warnings are prefixed "
        "`mdshell: warning:`), the exit code of `mdshell -d DIR ls /`, and the exit code with "
        "`--strict` (1 when the image is not sound: damaged or incomplete data; an empty segment "
        "or an older snapshot used instead of a damaged one leave it sound). Never a traceback. "
        "Permission denied and a missing path are created by the tests at run time.",
        "",
        "| fixture | covers | message (substring) | exit | --strict exit |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| `{f.name}` | {f.covers} | `{f.message}` | {f.exit_code} | "
              f"{f.strict_exit_code} |" for f in FIXTURES if f.message is not None]
    return "\n".join(lines) + "\n"


def generate(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    for f in FIXTURES:
        target = os.path.join(out, f.name)
        if os.path.exists(target):
            shutil.rmtree(target)
        f.make(target)
    with open(os.path.join(out, "README.md"), "w") as fh:
        fh.write(readme())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(ROOT, "fixtures"),
                   help="where to write (default: fixtures/ of this checkout)")
    generate(p.parse_args().out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
