"""The writer's own model of the cluster, so that it can write snapshots.

A snapshot holds the image of every offset below its end offset. The writer keeps this small
model up to date with each record it writes (Kafka's replay rules, metadata transactions
included) and turns it back into records when a snapshot is due. It is deliberately separate
from ``mdshell.image``: generated data then cross-checks the reader instead of mirroring it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..wire.records import NAME_TO_KEY
from .records import MetaRecord, PartRec, RawRecord, Record, meta
from .state import MIGRATING, PState
from .versions import Versions

K = NAME_TO_KEY
TOPIC_RESOURCE = 2
METADATA_VERSION = "metadata.version"

QuotaEntity = tuple[tuple[str, str | None], ...]


@dataclass(slots=True)
class TopicModel:
    name: str
    topic_id: bytes
    partitions: list[PState | None] = field(default_factory=list)

    def put(self, pid: int, state: PState) -> None:
        parts = self.partitions
        if pid == len(parts):
            parts.append(state)
            return
        if pid > len(parts):
            parts.extend([None] * (pid - len(parts) + 1))
        parts[pid] = state

    def get(self, pid: int) -> PState | None:
        return self.partitions[pid] if 0 <= pid < len(self.partitions) else None


class ClusterModel:
    """Cluster state as Kafka's image would hold it after the records applied so far."""

    def __init__(self) -> None:
        self.metadata_version: int | None = None
        self.features: dict[str, int] = {}
        self.zk_migration_state: int | None = None
        self.brokers: dict[int, dict[str, Any]] = {}
        self.controllers: dict[int, dict[str, Any]] = {}
        self.topics: dict[bytes, TopicModel] = {}
        self.topics_by_name: dict[str, TopicModel] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.quotas: dict[QuotaEntity, dict[str, float]] = {}
        self.next_producer_id = -1
        self.acls: dict[bytes, dict[str, Any]] = {}
        self.scram: dict[tuple[int, str], dict[str, Any]] = {}
        self.tokens: dict[str, dict[str, Any]] = {}
        self._txn: list[Record] | None = None

    @property
    def in_transaction(self) -> bool:
        return self._txn is not None

    # ------------------------------------------------------------ replay

    def apply(self, rec: Record) -> None:
        """Apply one record as Kafka's loader would (transactions apply at their end)."""
        if type(rec) is PartRec and self._txn is None:  # the bulk case, kept short
            topic = self.topics.get(rec.topic_id)
            if topic is not None:
                topic.put(rec.partition_id, _normal(rec.state))
            return
        if isinstance(rec, RawRecord):
            return  # unknown to Kafka's loader as well: kept raw, never applied
        key = rec.key
        if key == K["BeginTransactionRecord"]:
            self._txn = []
        elif key == K["EndTransactionRecord"]:
            pending, self._txn = self._txn or [], None
            for r in pending:
                self._apply_now(r)
        elif key == K["AbortTransactionRecord"]:
            self._txn = None
        elif self._txn is not None:
            self._txn.append(rec)
        else:
            self._apply_now(rec)

    def _apply_now(self, rec: Record) -> None:
        if isinstance(rec, RawRecord):
            return
        if isinstance(rec, PartRec):
            self._put_partition(rec.topic_id, rec.partition_id, rec.state)
            return
        handler = _HANDLERS.get(rec.key)
        if handler is not None:
            handler(self, rec.data)

    def _put_partition(self, topic_id: bytes, pid: int, state: PState) -> None:
        topic = self.topics.get(topic_id)
        if topic is None:
            return
        topic.put(pid, _normal(state))

    # ------------------------------------------------------------ snapshot

    def snapshot_records(self, versions: Versions | None = None) -> Iterator[Record]:
        """The image as records, in the order Kafka's MetadataImage.write uses."""
        v = versions or Versions(self.metadata_version or 1)
        if self.metadata_version is not None:
            yield meta("FeatureLevelRecord", 0, name=METADATA_VERSION,
                       featureLevel=self.metadata_version)
        for name, level in self.features.items():
            yield meta("FeatureLevelRecord", 0, name=name, featureLevel=level)
        if v.zk_migration_record:
            yield meta("ZkMigrationStateRecord", 0,
                       zkMigrationState=self.zk_migration_state or 0)
        for _, b in sorted(self.brokers.items()):
            yield MetaRecord(K["RegisterBrokerRecord"], v.register_broker, dict(b))
        for _, c in sorted(self.controllers.items()):
            yield MetaRecord(K["RegisterControllerRecord"], 0, dict(c))
        pv = v.partition
        for topic in self.topics.values():
            yield meta("TopicRecord", 0, name=topic.name, topicId=topic.topic_id)
            tid = topic.topic_id
            for pid, state in enumerate(topic.partitions):
                if state is not None:
                    yield PartRec(tid, pid, state, pv)
        for (rtype, rname), values in self.configs.items():
            for k, val in values.items():
                yield meta("ConfigRecord", 0, resourceType=rtype, resourceName=rname, name=k,
                           value=val)
        for entity, quotas in self.quotas.items():
            ent = [{"entityType": t, "entityName": n} for t, n in entity]
            for k, q in quotas.items():
                yield meta("ClientQuotaRecord", 0, entity=ent, key=k, value=q, remove=False)
        if self.next_producer_id >= 0:
            yield meta("ProducerIdsRecord", 0, brokerId=-1, brokerEpoch=-1,
                       nextProducerId=self.next_producer_id)
        for acl in self.acls.values():
            yield MetaRecord(K["AccessControlEntryRecord"], 0, dict(acl))
        for cred in self.scram.values():
            yield MetaRecord(K["UserScramCredentialRecord"], 0, dict(cred))
        for token in self.tokens.values():
            yield MetaRecord(K["DelegationTokenRecord"], 0, dict(token))

    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics.values())


def _normal(s: PState) -> PState:
    """Absent directories read as MIGRATING, one per replica (as Kafka's image holds them)."""
    if s.directories:
        return s
    return PState(s.replicas, s.isr, s.leader, s.leader_epoch, s.partition_epoch,
                  (MIGRATING,) * len(s.replicas), s.removing, s.adding,
                  s.leader_recovery_state, s.elr, s.last_known_elr)


# ---------------------------------------------------------------- handlers


def _register_broker(m: ClusterModel, d: dict[str, Any]) -> None:
    m.brokers[d["brokerId"]] = dict(d)


def _unregister_broker(m: ClusterModel, d: dict[str, Any]) -> None:
    m.brokers.pop(d["brokerId"], None)


def _broker(m: ClusterModel, bid: int, epoch: int) -> dict[str, Any] | None:
    b = m.brokers.get(bid)
    return b if b is not None and b["brokerEpoch"] == epoch else None


def _fence(m: ClusterModel, d: dict[str, Any]) -> None:
    b = _broker(m, d["id"], d["epoch"])
    if b is not None:
        b["fenced"] = True


def _unfence(m: ClusterModel, d: dict[str, Any]) -> None:
    b = _broker(m, d["id"], d["epoch"])
    if b is not None:
        b["fenced"] = False


def _broker_change(m: ClusterModel, d: dict[str, Any]) -> None:
    b = _broker(m, d["brokerId"], d["brokerEpoch"])
    if b is None:
        return
    fenced = d.get("fenced", 0)
    if fenced in (1, -1):
        b["fenced"] = fenced == 1
    if d.get("inControlledShutdown", 0) == 1:
        b["inControlledShutdown"] = True
    if d.get("logDirs"):
        b["logDirs"] = list(d["logDirs"])


def _register_controller(m: ClusterModel, d: dict[str, Any]) -> None:
    m.controllers[d["controllerId"]] = dict(d)


def _unregister_controller(m: ClusterModel, d: dict[str, Any]) -> None:
    m.controllers.pop(d["controllerId"], None)


def _topic(m: ClusterModel, d: dict[str, Any]) -> None:
    t = TopicModel(d["name"], d["topicId"])
    m.topics[t.topic_id] = t
    m.topics_by_name[t.name] = t


def _remove_topic(m: ClusterModel, d: dict[str, Any]) -> None:
    t = m.topics.pop(d["topicId"], None)
    if t is None:
        return
    if m.topics_by_name.get(t.name) is t:
        del m.topics_by_name[t.name]
    m.configs.pop((TOPIC_RESOURCE, t.name), None)


def _partition(m: ClusterModel, d: dict[str, Any]) -> None:
    m._put_partition(d["topicId"], d["partitionId"], PState.from_record(d))


def _partition_change(m: ClusterModel, d: dict[str, Any]) -> None:
    t = m.topics.get(d["topicId"])
    if t is None:
        return
    old = t.get(d["partitionId"])
    if old is not None:
        t.put(d["partitionId"], old.merge(d))


def _clear_elr(m: ClusterModel, d: dict[str, Any]) -> None:
    name = d["topicName"]
    if name:
        t = m.topics_by_name.get(name)
        topics = [t] if t is not None else []
    else:
        topics = list(m.topics.values())
    clear: dict[str, Any] = {"eligibleLeaderReplicas": [], "lastKnownElr": []}
    for t in topics:
        for pid, s in enumerate(t.partitions):
            if s is not None and (s.elr or s.last_known_elr):
                t.partitions[pid] = s.merge(clear)


def _config(m: ClusterModel, d: dict[str, Any]) -> None:
    res = (d["resourceType"], d["resourceName"])
    values = m.configs.get(res)
    if d["value"] is None:
        if values is not None:
            values.pop(d["name"], None)
            if not values:
                del m.configs[res]
        return
    m.configs.setdefault(res, {})[d["name"]] = d["value"]


def _feature(m: ClusterModel, d: dict[str, Any]) -> None:
    if d["name"] == METADATA_VERSION:
        m.metadata_version = d["featureLevel"]
    elif d["featureLevel"] == 0:
        m.features.pop(d["name"], None)
    else:
        m.features[d["name"]] = d["featureLevel"]


def _zk_migration(m: ClusterModel, d: dict[str, Any]) -> None:
    m.zk_migration_state = d["zkMigrationState"]


def _quota(m: ClusterModel, d: dict[str, Any]) -> None:
    entity: QuotaEntity = tuple(sorted((e["entityType"], e["entityName"]) for e in d["entity"]))
    values = m.quotas.get(entity)
    if d["remove"]:
        if values is not None:
            values.pop(d["key"], None)
            if not values:
                del m.quotas[entity]
        return
    m.quotas.setdefault(entity, {})[d["key"]] = d["value"]


def _producer_ids(m: ClusterModel, d: dict[str, Any]) -> None:
    m.next_producer_id = d["nextProducerId"]


def _acl(m: ClusterModel, d: dict[str, Any]) -> None:
    m.acls[d["id"]] = dict(d)


def _remove_acl(m: ClusterModel, d: dict[str, Any]) -> None:
    m.acls.pop(d["id"], None)


def _scram(m: ClusterModel, d: dict[str, Any]) -> None:
    m.scram[(d["mechanism"], d["name"])] = dict(d)


def _remove_scram(m: ClusterModel, d: dict[str, Any]) -> None:
    m.scram.pop((d["mechanism"], d["name"]), None)


def _token(m: ClusterModel, d: dict[str, Any]) -> None:
    m.tokens[d["tokenId"]] = dict(d)


def _remove_token(m: ClusterModel, d: dict[str, Any]) -> None:
    m.tokens.pop(d["tokenId"], None)


_HANDLERS = {
    K["RegisterBrokerRecord"]: _register_broker,
    K["UnregisterBrokerRecord"]: _unregister_broker,
    K["TopicRecord"]: _topic,
    K["PartitionRecord"]: _partition,
    K["ConfigRecord"]: _config,
    K["PartitionChangeRecord"]: _partition_change,
    K["FenceBrokerRecord"]: _fence,
    K["UnfenceBrokerRecord"]: _unfence,
    K["RemoveTopicRecord"]: _remove_topic,
    K["DelegationTokenRecord"]: _token,
    K["UserScramCredentialRecord"]: _scram,
    K["FeatureLevelRecord"]: _feature,
    K["ClientQuotaRecord"]: _quota,
    K["ProducerIdsRecord"]: _producer_ids,
    K["BrokerRegistrationChangeRecord"]: _broker_change,
    K["AccessControlEntryRecord"]: _acl,
    K["RemoveAccessControlEntryRecord"]: _remove_acl,
    K["ZkMigrationStateRecord"]: _zk_migration,
    K["RemoveUserScramCredentialRecord"]: _remove_scram,
    K["RemoveDelegationTokenRecord"]: _remove_token,
    K["RegisterControllerRecord"]: _register_controller,
    K["ClearElrRecord"]: _clear_elr,
    K["UnregisterControllerRecord"]: _unregister_controller,
}
