"""Replay semantics, record by record (kraft-facts.md's table), on hand-built batches."""

from __future__ import annotations

from typing import Any

from mdshell.image.replay import ImageBuilder
from mdshell.wire import codec
from mdshell.wire.batch import RecordSpec, encode_batch, frame_metadata_value, parse_header
from mdshell.wire.records import METADATA, NAME_TO_KEY

T1, T2 = b"\x01" * 16, b"\x02" * 16
DIR_A, DIR_B = b"\x0a" * 16, b"\x0b" * 16
UNASSIGNED = b"\0" * 15 + b"\x01"


def rec(record: str, version: int = 0, /, **fields: Any) -> bytes:
    key = NAME_TO_KEY[record]
    return frame_metadata_value(key, version, codec.encode(METADATA[key], version, fields))


def replay(*batches: list[bytes]) -> ImageBuilder:
    b = ImageBuilder()
    offset = 0
    for values in batches:
        raw = encode_batch(offset, [RecordSpec(i, 0, v) for i, v in enumerate(values)],
                           base_timestamp=1000 + offset, epoch=3)
        b.apply_batch(parse_header(raw, 0))
        offset += len(values)
    return b


def topic(name: str = "t", tid: bytes = T1) -> bytes:
    return rec("TopicRecord", name=name, topicId=tid)


def partition(pid: int = 0, tid: bytes = T1, version: int = 1, **kw: Any) -> bytes:
    fields = {"partitionId": pid, "topicId": tid, "replicas": [1, 2], "isr": [1, 2],
              "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderEpoch": 0,
              "partitionEpoch": 0, "directories": [DIR_A, DIR_B], **kw}
    return rec("PartitionRecord", version, **fields)


def change(pid: int = 0, tid: bytes = T1, version: int = 1, **kw: Any) -> bytes:
    return rec("PartitionChangeRecord", version, partitionId=pid, topicId=tid, **kw)


def broker(bid: int = 1, epoch: int = 10) -> bytes:
    return rec("RegisterBrokerRecord", 3, brokerId=bid, incarnationId=T2, brokerEpoch=epoch,
               endPoints=[], features=[], rack=None, fenced=True, logDirs=[DIR_B, DIR_A])


def test_partition_change_merge_rules() -> None:
    b = replay([topic(), partition(), change(isr=[1]), change(leader=-2, isr=[1]),
                change(leader=2), change(leaderRecoveryState=1)])
    p = b.image.topics_by_id[T1].partition(0)
    assert p is not None
    assert p.isr == [1] and p.replicas == [1, 2]
    assert p.leader == 2 and p.leader_epoch == 1  # -2 = unchanged; a new leader bumps it once
    assert p.partition_epoch == 4  # every change bumps it
    assert p.leader_recovery_state == 1


def test_directories_follow_kafka_38_merge() -> None:
    # directories not in the change record: kept (the controller sends them with replicas)
    b = replay([topic(), partition(), change(replicas=[2, 3], isr=[2, 3])])
    p = b.image.topics_by_id[T1].partition(0)
    assert p is not None and p.directories == [DIR_A, DIR_B]
    # all MIGRATING (pre-3.7-IV2 placement): follows the new replica count
    b = replay([topic(), partition(version=0), change(replicas=[1, 2, 3], isr=[1, 2, 3])])
    p = b.image.topics_by_id[T1].partition(0)
    assert p is not None and p.directories == [bytes(16)] * 3
    # given explicitly: taken as is
    b = replay([topic(), partition(), change(replicas=[2, 3], directories=[DIR_B, UNASSIGNED])])
    p = b.image.topics_by_id[T1].partition(0)
    assert p is not None and p.directories == [DIR_B, UNASSIGNED]


def test_version_0_partitions_get_migrating_directories() -> None:
    b = replay([topic(), partition(version=0)])
    p = b.image.topics_by_id[T1].partition(0)
    assert p is not None and p.directories == [bytes(16), bytes(16)]


def test_topic_record_resets_partitions_and_remove_topic_drops_configs() -> None:
    b = replay([topic(), partition(), rec("ConfigRecord", resourceType=2, resourceName="t",
                                          name="retention.ms", value="1")],
               [rec("RemoveTopicRecord", topicId=T1)])
    assert b.image.topics_by_name == {} and b.image.configs == {}
    b2 = replay([topic(), partition(), topic()])
    assert b2.image.topics_by_id[T1].partitions == {}


def test_config_null_value_deletes_and_empty_resources_vanish() -> None:
    set_ = rec("ConfigRecord", resourceType=4, resourceName="", name="a", value="1")
    unset = rec("ConfigRecord", resourceType=4, resourceName="", name="a", value=None)
    assert replay([set_]).image.configs == {(4, ""): {"a": "1"}}
    assert replay([set_, unset]).image.configs == {}


def test_feature_level_zero_removes_but_not_metadata_version() -> None:
    b = replay([rec("FeatureLevelRecord", name="metadata.version", featureLevel=21),
                rec("FeatureLevelRecord", name="group.version", featureLevel=1),
                rec("FeatureLevelRecord", name="group.version", featureLevel=0)])
    assert b.image.metadata_version == 21 and b.image.finalized_features == {}


def test_fencing_needs_a_matching_epoch() -> None:
    b = replay([broker(epoch=10), rec("UnfenceBrokerRecord", id=1, epoch=10),
                rec("FenceBrokerRecord", id=1, epoch=9)])
    reg = b.image.brokers[1]
    assert reg.fenced is False  # the stale fence was skipped...
    assert [p.code for p in b.problems] == ["broker-epoch"]  # ...with a warning
    assert reg.directories == [DIR_A, DIR_B]  # sorted like Kafka's Uuid order


def test_broker_registration_change_values() -> None:
    change_rec = rec("BrokerRegistrationChangeRecord", 1, brokerId=1, brokerEpoch=10, fenced=-1,
                     inControlledShutdown=1)
    reg = replay([broker(), change_rec]).image.brokers[1]
    assert reg.fenced is False and reg.in_controlled_shutdown is True


def test_transactions_commit_and_abort() -> None:
    begin = rec("BeginTransactionRecord", name="x")
    b = replay([begin, topic("kept", T1), partition(tid=T1)], [rec("EndTransactionRecord")],
               [begin, topic("dropped", T2), partition(tid=T2)],
               [rec("AbortTransactionRecord", reason="failover")])
    assert set(b.image.topics_by_name) == {"kept"}
    assert b.image.topics_by_id[T1].partition(0) is not None


def test_a_begin_inside_a_transaction_is_ignored_as_kafkas_loader_ignores_it() -> None:
    """Kafka's MetadataBatchLoader faults on a BeginTransactionRecord inside a transaction
    and goes on with the transaction begun first: its records before the second Begin
    apply at the End with the rest (Kafka 4.3.1's shell shows them)."""
    begin = rec("BeginTransactionRecord", name="x")
    b = replay([begin, topic("first", T1)], [begin, topic("second", T2)],
               [rec("EndTransactionRecord")])
    assert set(b.image.topics_by_name) == {"first", "second"}
    assert [p.code for p in b.problems] == ["txn"]
    assert "ignored" in b.problems[0].message


def test_open_transaction_is_not_applied_and_holds_provenance() -> None:
    b = replay([topic()], [rec("BeginTransactionRecord"), topic("pending", T2)])
    assert set(b.image.topics_by_name) == {"t"}
    assert b.image.provenance.offset == 0


def test_clear_elr_one_topic_and_all() -> None:
    elr = {"eligibleLeaderReplicas": [2], "lastKnownElr": [3]}
    b = replay([topic("a", T1), partition(0, T1, 2, **elr), topic("b", T2),
                partition(0, T2, 2, **elr), rec("ClearElrRecord", topicName="a")])
    pa, pb = b.image.topics_by_id[T1].partition(0), b.image.topics_by_id[T2].partition(0)
    assert pa is not None and pa.elr == [] and pa.last_known_elr == []
    assert pb is not None and pb.elr == [2]
    b2 = replay([topic("a", T1), partition(0, T1, 2, **elr), rec("ClearElrRecord", topicName="")])
    p = b2.image.topics_by_id[T1].partition(0)
    assert p is not None and p.elr == [] and p.last_known_elr == []


def test_controller_register_and_unregister() -> None:
    reg = rec("RegisterControllerRecord", controllerId=3, incarnationId=T1,
              zkMigrationReady=False, endPoints=[], features=[])
    b = replay([reg, rec("UnregisterControllerRecord", controllerId=3)])
    assert b.image.controllers == {}


def test_quotas_scram_tokens_acls_round_trip() -> None:
    quota = rec("ClientQuotaRecord", entity=[{"entityType": "user", "entityName": None}],
                key="producer_byte_rate", value=1024.0, remove=False)
    unquota = rec("ClientQuotaRecord", entity=[{"entityType": "user", "entityName": None}],
                  key="producer_byte_rate", value=0.0, remove=True)
    b = replay([quota])
    assert b.image.client_quotas == {(("user", None),): {"producer_byte_rate": 1024.0}}
    assert replay([quota, unquota]).image.client_quotas == {}
    acl = rec("AccessControlEntryRecord", id=T1, resourceType=2, resourceName="t",
              patternType=3, principal="User:a", host="*", operation=3, permissionType=3)
    assert replay([acl, rec("RemoveAccessControlEntryRecord", id=T1)]).image.acls == {}


def test_unknown_records_and_tags_are_reported_once() -> None:
    body = codec.encode(METADATA[2], 0, {"name": "t", "topicId": T1})
    tagged = frame_metadata_value(2, 0, body[:-1] + b"\x01\x09\x01\x00")
    unknown = frame_metadata_value(99, 0, b"\x00")
    b = replay([tagged, unknown, unknown, frame_metadata_value(2, 9, body)])
    codes = [p.code for p in b.problems]
    assert codes.count("unknown-tag") == 1 and codes.count("unknown-record") == 2
    assert "t" in b.image.topics_by_name  # the tagged record still applied


def test_provenance_follows_metadata_batches() -> None:
    b = replay([topic()], [rec("NoOpRecord"), rec("NoOpRecord")])
    prov = b.image.provenance
    assert (prov.offset, prov.epoch, prov.time_ms) == (2, 3, 1001)


def test_a_batch_of_one_noop_moves_the_provenance_within_the_bounds() -> None:
    """A quiet log's one-NoOp batches take a short way: the same provenance, bounds kept,
    nothing applied, held back inside a transaction."""
    b = ImageBuilder()

    def noop(offset: int, **bounds: int) -> tuple[int, int, int]:
        raw = encode_batch(offset, [RecordSpec(0, 0, rec("NoOpRecord"))],
                           base_timestamp=1000 + offset, epoch=3 + offset)
        b.apply_batch(parse_header(raw, 0), **bounds)
        prov = b.image.provenance
        return prov.offset, prov.epoch, prov.time_ms

    assert noop(0) == (0, 3, 1000)
    assert noop(1, stop=0) == (0, 3, 1000)  # past the stop
    assert noop(2, skip_below=3) == (0, 3, 1000)  # below the start
    assert noop(3, stop=3, skip_below=3) == (3, 6, 1003)
    raw = encode_batch(4, [RecordSpec(0, 0, rec("BeginTransactionRecord", name="x"))],
                       base_timestamp=1004, epoch=7)
    b.apply_batch(parse_header(raw, 0))
    assert noop(5) == (3, 6, 1003)  # inside a transaction: not yet
    assert b.records_applied == 0
