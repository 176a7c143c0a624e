"""ClusterBuilder: write a realistic ``__cluster_metadata-0`` directory one operation at a time.

Each operation (register a broker, create a topic, elect a leader...) becomes the records
Kafka's controller would write, appended as one batch (operations larger than a batch are
split inside a metadata transaction, as Kafka does). The builder keeps a
:class:`~.model.ClusterModel` up to date so that :meth:`ClusterBuilder.snapshot` can write the
image at the current offset. Everything random comes from one seeded generator and the clock
is simulated, so a seed gives identical bytes.
"""

from __future__ import annotations

import itertools
import os
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..wire import codec
from ..wire import control as ctl
from ..wire.primitives import uuid_str
from ..wire.records import METADATA
from . import files
from .batches import NONE, Codec, codec_named
from .catalog import (
    ACL_OPERATIONS,
    ACL_PATTERNS,
    ACL_PERMISSIONS,
    ACL_RESOURCES,
    CONFIG_TYPES,
    SCRAM_TYPES,
    bootstrap_features,
    scram_keys,
    supported_features,
)
from .ids import Ids
from .log import DEFAULT_SEGMENT_BYTES, LogWriter
from .model import ClusterModel
from .records import ControlRec, MetaRecord, PartRec, RawRecord, Record, meta
from .snapshot import SnapshotOptions, Voter, write_snapshot
from .state import MIGRATING, NO_LEADER, NO_LEADER_CHANGE, PState
from .versions import Versions

METADATA_DIR = "__cluster_metadata-0"
DEFAULT_START_MS = 1_714_000_000_000  # 2024-04-24T23:06:40Z: fixed, so output is stable
MAX_RECORDS_PER_BATCH = 10_000  # Kafka's controller limit for one atomic write
NOOP_INTERVAL_MS = 500

Endpoint = tuple[str, str, int, int]  # listener name, host, port, security protocol id


class ClusterBuilder:
    """Writes a Kafka log dir: ``meta.properties``, ``__cluster_metadata-0/`` and friends.

    ``out_dir`` is the log dir; the metadata log goes to ``out_dir/__cluster_metadata-0``.
    ``compression`` is one codec name or a sequence cycled over data batches.
    """

    def __init__(self, out_dir: str, *, seed: int = 0, metadata_version: int = 21,
                 kraft_version: int = 0, controllers: Sequence[int] = (1,),
                 node_id: int | None = None, cluster_id: str | None = None,
                 compression: str | Sequence[str] = "none",
                 segment_bytes: int = DEFAULT_SEGMENT_BYTES, producer_snapshots: bool = False,
                 start_ms: int = DEFAULT_START_MS,
                 max_records_per_batch: int = MAX_RECORDS_PER_BATCH) -> None:
        self.out_dir = out_dir
        self.metadata_dir = os.path.join(out_dir, METADATA_DIR)
        self.rng = random.Random(seed)
        self.ids = Ids(self.rng)
        self.bootstrap_level = metadata_version
        self.kraft_version = kraft_version
        self.controller_ids = list(controllers)
        self.initial_voters = list(controllers)  # what `kafka-storage format` recorded
        self.node_id = self.controller_ids[0] if node_id is None else node_id
        self.cluster_id = cluster_id or uuid_str(self.ids.uuid())
        self.directory_ids = {c: self.ids.uuid() for c in self.controller_ids}
        self._codecs: Iterator[Codec] = iter(())
        self.use_compression(compression)
        self.start_ms = self.clock = start_ms
        self.max_records_per_batch = max_records_per_batch
        self.model = ClusterModel()
        self.log = LogWriter(self.metadata_dir, segment_bytes=segment_bytes,
                             producer_snapshots=producer_snapshots)
        self.leader = -1
        self.snapshots: list[str] = []
        self._next_producer_id = 0
        self._assign_cache: dict[tuple[Any, ...], PState] = {}

    # ------------------------------------------------------------ basics

    @property
    def versions(self) -> Versions:
        return Versions(self.model.metadata_version or self.bootstrap_level)

    @property
    def next_offset(self) -> int:
        return self.log.next_offset

    def tick(self, ms: int | None = None) -> int:
        """Advance the simulated clock (a small random step by default)."""
        self.clock += self.rng.randint(1, 40) if ms is None else ms
        return self.clock

    def next_codec(self) -> Codec:
        return next(self._codecs)

    def use_compression(self, compression: str | Sequence[str]) -> None:
        """Codec(s) of the following data batches (a sequence is cycled)."""
        names = [compression] if isinstance(compression, str) else list(compression)
        self._codecs = itertools.cycle([codec_named(n) for n in names] or [NONE])

    @contextmanager
    def log_suppressed(self) -> Iterator[None]:
        """Records written here advance offsets and the model but reach no segment."""
        self.log.suppressed = True
        try:
            yield
        finally:
            self.log.suppressed = False

    def append(self, records: Iterable[Record], *, codec: Codec | None = None) -> int:
        """Append records as one operation; returns the offset of the first one.

        More than ``max_records_per_batch`` records are split over several batches, inside a
        metadata transaction when the metadata.version supports one (Kafka's non-atomic
        writes).
        """
        it = iter(records)
        first = list(itertools.islice(it, self.max_records_per_batch + 1))
        start = self.log.next_offset
        if len(first) <= self.max_records_per_batch:
            self._batch(first, codec)
            return start
        wrap = self.versions.transactions and not self.model.in_transaction
        chunks = _chunks(itertools.chain(first, it), self.max_records_per_batch)
        if wrap:
            chunks = _wrap_transaction(chunks, self.max_records_per_batch)
        for chunk in chunks:
            self._batch(chunk, codec)
        return start

    def _batch(self, records: list[Record], codec: Codec | None) -> None:
        if not records:
            return
        ts = self.tick()
        self.log.append_metadata(records, timestamp=ts, codec=codec or self.next_codec())
        for r in records:
            self.model.apply(_as_read(r))

    def control(self, records: Sequence[ControlRec]) -> int:
        ts = self.tick()
        return self.log.append_control(records, timestamp=ts)

    # ------------------------------------------------------------ quorum

    def voters(self, ids: Sequence[int] | None = None) -> list[Voter]:
        return [Voter(c, self.directory_ids[c], (("CONTROLLER", _controller_host(c), 9093),))
                for c in (self.controller_ids if ids is None else ids)]

    def elect_controller_leader(self, leader: int | None = None) -> int:
        """A new leader epoch: the LeaderChange control batch the new leader writes first."""
        leader = self.controller_ids[0] if leader is None else leader
        self.leader = leader
        self.log.set_epoch(self.log.epoch + 1)
        majority = len(self.controller_ids) // 2 + 1
        granting = [leader, *[c for c in self.controller_ids if c != leader][:majority - 1]]
        value = {"version": 0, "leaderId": leader,
                 "voters": [{"voterId": c} for c in self.controller_ids],
                 "grantingVoters": [{"voterId": c} for c in granting]}
        self.control([ControlRec(ctl.LEADER_CHANGE, value)])
        return self.log.epoch

    def add_voter(self, cid: int) -> int:
        """KIP-853 AddVoter: the leader appends a Voters control record with the new set."""
        if self.kraft_version < 1:
            raise ValueError("voters can only change with kraft.version >= 1")
        if cid not in self.controller_ids:
            self.controller_ids.append(cid)
            self.directory_ids.setdefault(cid, self.ids.uuid())
        voters = [v.record() for v in self.voters()]
        return self.control([ControlRec(ctl.KRAFT_VOTERS, {"version": 0, "voters": voters})])

    # ------------------------------------------------------------ bootstrap and features

    def bootstrap(self, features: Mapping[str, int] | None = None) -> None:
        """The records a new cluster starts with: metadata.version and feature levels."""
        level = self.bootstrap_level
        recs: list[Record] = [meta("FeatureLevelRecord", 0, name="metadata.version",
                                   featureLevel=level)]
        feats = bootstrap_features(level) if features is None else dict(features)
        recs += [meta("FeatureLevelRecord", 0, name=k, featureLevel=v) for k, v in feats.items()]
        if Versions(level).zk_migration_record:
            recs.append(meta("ZkMigrationStateRecord", 0, zkMigrationState=0))
        if Versions(level).transactions:
            recs = [meta("BeginTransactionRecord", 0, name="Bootstrap records"), *recs,
                    meta("EndTransactionRecord", 0)]
        self.append(recs)

    def set_feature(self, name: str, level: int) -> int:
        return self.append([meta("FeatureLevelRecord", 0, name=name, featureLevel=level)])

    # ------------------------------------------------------------ controllers and brokers

    def register_controller(self, cid: int, *,
                            features: Mapping[str, tuple[int, int]] | None = None) -> int:
        """RegisterControllerRecord; ``features`` overrides what the release supports."""
        if cid not in self.directory_ids:
            self.directory_ids[cid] = self.ids.uuid()
        feats = supported_features(self.versions.level) if features is None else features
        return self.append([meta(
            "RegisterControllerRecord", 0, controllerId=cid, incarnationId=self.ids.uuid(),
            zkMigrationReady=False,
            endPoints=[{"name": "CONTROLLER", "host": _controller_host(cid), "port": 9093,
                        "securityProtocol": 0}],
            features=_feature_list(feats))])

    def unregister_controller(self, cid: int) -> int:
        return self.append([meta("UnregisterControllerRecord", 0, controllerId=cid)])

    def register_broker(self, bid: int, *, rack: str | None = None,
                        listeners: Sequence[Endpoint] | None = None, log_dirs: int = 1,
                        log_dir_ids: Sequence[bytes] | None = None, fenced: bool = True,
                        features: Mapping[str, tuple[int, int]] | None = None) -> int:
        """RegisterBrokerRecord; the broker epoch is the record's offset. Returns the epoch.

        A restarting broker passes its existing ``log_dir_ids`` (directory ids persist);
        ``features`` overrides the supported feature ranges (e.g. an older release).
        """
        epoch = self.log.next_offset
        eps = listeners or [("PLAINTEXT", _broker_host(bid), 9092, 0)]
        v = self.versions
        self.append([MetaRecord(0, v.register_broker, {
            "brokerId": bid, "isMigratingZkBroker": False, "incarnationId": self.ids.uuid(),
            "brokerEpoch": epoch,
            "endPoints": [{"name": n, "host": h, "port": p, "securityProtocol": sp}
                          for n, h, p, sp in eps],
            "features": _feature_list(supported_features(v.level) if features is None
                                      else features), "rack": rack,
            "fenced": fenced, "inControlledShutdown": False,
            "logDirs": self._log_dirs(log_dirs, log_dir_ids) if v.directories else []})])
        return epoch

    def _log_dirs(self, count: int, ids: Sequence[bytes] | None) -> list[bytes]:
        return list(ids) if ids else [self.ids.uuid() for _ in range(count)]

    def _broker_epoch(self, bid: int) -> int:
        return int(self.model.brokers[bid]["brokerEpoch"])

    def fence_broker(self, bid: int) -> int:
        return self._fencing(bid, True)

    def unfence_broker(self, bid: int) -> int:
        return self._fencing(bid, False)

    def _fencing(self, bid: int, fenced: bool) -> int:
        epoch = self._broker_epoch(bid)
        v = self.versions
        if v.fence_by_change_record:
            return self.append([MetaRecord(17, v.broker_change, {
                "brokerId": bid, "brokerEpoch": epoch, "fenced": 1 if fenced else -1})])
        name = "FenceBrokerRecord" if fenced else "UnfenceBrokerRecord"
        return self.append([meta(name, 0, id=bid, epoch=epoch)])

    def controlled_shutdown(self, bid: int) -> int:
        return self.append([MetaRecord(17, max(self.versions.broker_change, 1), {
            "brokerId": bid, "brokerEpoch": self._broker_epoch(bid),
            "inControlledShutdown": 1})])

    def unregister_broker(self, bid: int) -> int:
        return self.append([meta("UnregisterBrokerRecord", 0, brokerId=bid,
                                 brokerEpoch=self._broker_epoch(bid))])

    # ------------------------------------------------------------ topics and partitions

    def assign(self, partitions: int, rf: int, *, first_partition: int = 0,
               brokers: Sequence[int] | None = None) -> list[tuple[int, ...]]:
        """Kafka's rack-unaware replica assignment over the unfenced brokers."""
        if brokers is None:
            brokers = ([b for b, r in self.model.brokers.items() if not r["fenced"]]
                       or list(self.model.brokers))
        ids = sorted(brokers)
        n = len(ids)
        if n == 0 or rf > n:
            raise ValueError(f"replication factor {rf} needs {rf} brokers; {n} available")
        start, shift = self.rng.randrange(n), self.rng.randrange(n)
        out = []
        for p in range(first_partition, first_partition + partitions):
            if p > 0 and p % n == 0:
                shift += 1
            first = (start + p) % n
            reps = [ids[first]]
            reps += [ids[(first + 1 + (shift + j) % (n - 1)) % n] for j in range(rf - 1)]
            out.append(tuple(reps))
        return out

    def _states(self, assignment: Sequence[tuple[int, ...]]) -> Iterator[PState]:
        """Fresh partition states (leader = first replica), interned by (replicas, dirs).

        With one log dir per broker (the common case) a state depends on the replicas only.
        """
        cache = self._assign_cache
        dirs_of = {b: tuple(r["logDirs"]) or (MIGRATING,) for b, r in self.model.brokers.items()}
        if not self.versions.directories:
            dirs_of = {}
        one_dir = all(len(d) == 1 for d in dirs_of.values())
        for pid, reps in enumerate(assignment):
            key: tuple[Any, ...] = reps if one_dir else (reps, pid)
            state = cache.get(key)
            if state is None:
                dirs = tuple(_pick(dirs_of.get(b, (MIGRATING,)), pid) for b in reps)
                state = PState(reps, reps, reps[0], 0, 0, dirs)
                if one_dir:
                    cache[key] = state
            yield state

    def _dirs_for(self, replicas: Sequence[int], pid: int) -> tuple[bytes, ...]:
        if not self.versions.directories:
            return (MIGRATING,) * len(replicas)
        dirs_of = {b: r["logDirs"] or [MIGRATING] for b, r in self.model.brokers.items()}
        return tuple(_pick(dirs_of.get(b, [MIGRATING]), pid) for b in replicas)

    def create_topic(self, name: str, partitions: int = 1, rf: int = 1, *,
                     assignment: Sequence[Sequence[int]] | None = None,
                     configs: Mapping[str, str] | None = None) -> bytes:
        """TopicRecord, one PartitionRecord per partition, topic configs. Returns the id."""
        tid = self.ids.uuid()
        reps = ([tuple(a) for a in assignment] if assignment is not None
                else self.assign(partitions, rf))
        pv = self.versions.partition

        def records() -> Iterator[Record]:
            yield meta("TopicRecord", 0, name=name, topicId=tid)
            for pid, state in enumerate(self._states(reps)):
                yield PartRec(tid, pid, state, pv)
            for k, val in (configs or {}).items():
                yield meta("ConfigRecord", 0, resourceType=2, resourceName=name, name=k,
                           value=val)
        self.append(records())
        return tid

    def topic_id(self, name: str) -> bytes:
        return self.model.topics_by_name[name].topic_id

    def partition(self, topic: str, pid: int) -> PState:
        state = self.model.topics_by_name[topic].get(pid)
        if state is None:
            raise KeyError(f"{topic}-{pid}")
        return state

    def delete_topic(self, name: str) -> int:
        return self.append([meta("RemoveTopicRecord", 0, topicId=self.topic_id(name))])

    def change_partition(self, topic: str, pid: int, **fields: Any) -> int:
        """A PartitionChangeRecord; ``fields`` use the record's camelCase names."""
        data: dict[str, Any] = {"partitionId": pid, "topicId": self.topic_id(topic),
                                "leader": NO_LEADER_CHANGE}
        data.update(fields)
        return self.append([MetaRecord(5, self.versions.partition, data)])

    def elect_leader(self, topic: str, pid: int, leader: int,
                     isr: Sequence[int] | None = None) -> int:
        fields: dict[str, Any] = {"leader": leader}
        if isr is not None:
            fields["isr"] = list(isr)
        return self.change_partition(topic, pid, **fields)

    def set_isr(self, topic: str, pid: int, isr: Sequence[int]) -> int:
        """Shrink or expand the ISR; the leader goes if it left the ISR (Kafka's rule)."""
        fields: dict[str, Any] = {"isr": list(isr)}
        if self.partition(topic, pid).leader not in isr:
            fields["leader"] = isr[0] if isr else NO_LEADER
        return self.change_partition(topic, pid, **fields)

    def reassign(self, topic: str, pid: int, replicas: Sequence[int]) -> int:
        """Move a partition to new replicas in one step (directories follow the brokers)."""
        fields: dict[str, Any] = {"replicas": list(replicas), "isr": list(replicas)}
        if self.versions.directories:
            fields["directories"] = list(self._dirs_for(replicas, pid))
        if self.partition(topic, pid).leader not in replicas:
            fields["leader"] = replicas[0]
        return self.change_partition(topic, pid, **fields)

    def set_elr(self, topic: str, pid: int, elr: Sequence[int],
                last_known_elr: Sequence[int] = ()) -> int:
        return self.change_partition(topic, pid, eligibleLeaderReplicas=list(elr),
                                     lastKnownElr=list(last_known_elr))

    def clear_elr(self, topic: str = "") -> int:
        """ClearElrRecord: one topic, or every topic when ``topic`` is empty."""
        return self.append([meta("ClearElrRecord", 0, topicName=topic)])

    # ------------------------------------------------------------ configs, quotas, security

    def set_config(self, resource_type: str, resource_name: str, key: str,
                   value: str | None) -> int:
        """ConfigRecord; ``value`` None deletes the key. Type names as ConfigResource.Type."""
        return self.append([meta("ConfigRecord", 0, resourceType=CONFIG_TYPES[resource_type],
                                 resourceName=resource_name, name=key, value=value)])

    def set_quota(self, entity: Mapping[str, str | None], key: str,
                  value: float | None) -> int:
        """ClientQuotaRecord; entity types ``user``, ``client-id``, ``ip``; None = default."""
        ent = [{"entityType": t, "entityName": n} for t, n in entity.items()]
        return self.append([meta("ClientQuotaRecord", 0, entity=ent, key=key,
                                 value=0.0 if value is None else value,
                                 remove=value is None)])

    def add_acl(self, resource_type: str, resource_name: str, principal: str, operation: str,
                *, pattern: str = "LITERAL", host: str = "*", permission: str = "ALLOW") -> bytes:
        acl_id = self.ids.uuid()
        self.append([meta("AccessControlEntryRecord", 0, id=acl_id,
                          resourceType=ACL_RESOURCES[resource_type], resourceName=resource_name,
                          patternType=ACL_PATTERNS[pattern], principal=principal, host=host,
                          operation=ACL_OPERATIONS[operation],
                          permissionType=ACL_PERMISSIONS[permission])])
        return acl_id

    def remove_acl(self, acl_id: bytes) -> int:
        return self.append([meta("RemoveAccessControlEntryRecord", 0, id=acl_id)])

    def upsert_scram(self, user: str, mechanism: str = "SCRAM-SHA-256", *,
                     password: str | None = None, iterations: int = 4096,
                     salt: bytes | None = None) -> int:
        """A real SCRAM credential (RFC 5802 keys derived from the password)."""
        code, hash_name = SCRAM_TYPES[mechanism]
        salt = self.ids.secret(32) if salt is None else salt
        password = password if password is not None else f"{user}-secret"
        stored, server = scram_keys(password, salt, iterations, hash_name)
        return self.append([meta("UserScramCredentialRecord", 0, name=user, mechanism=code,
                                 salt=salt, storedKey=stored, serverKey=server,
                                 iterations=iterations)])

    def remove_scram(self, user: str, mechanism: str = "SCRAM-SHA-256") -> int:
        return self.append([meta("RemoveUserScramCredentialRecord", 0, name=user,
                                 mechanism=SCRAM_TYPES[mechanism][0])])

    def create_token(self, owner: str, *, renewers: Sequence[str] = (),
                     requester: str | None = None, lifetime_ms: int = 86_400_000,
                     max_lifetime_ms: int = 7 * 86_400_000, token_id: str | None = None) -> str:
        token_id = token_id or self.ids.token_id()
        now = self.clock
        self.append([meta("DelegationTokenRecord", 0, owner=owner,
                          requester=requester or owner, renewers=list(renewers),
                          issueTimestamp=now, maxTimestamp=now + max_lifetime_ms,
                          expirationTimestamp=now + lifetime_ms, tokenId=token_id)])
        return token_id

    def remove_token(self, token_id: str) -> int:
        return self.append([meta("RemoveDelegationTokenRecord", 0, tokenId=token_id)])

    def allocate_producer_ids(self, bid: int, block: int = 1000) -> int:
        self._next_producer_id = max(self._next_producer_id, self.model.next_producer_id, 0)
        self._next_producer_id += block
        return self.append([meta("ProducerIdsRecord", 0, brokerId=bid,
                                 brokerEpoch=self._broker_epoch(bid),
                                 nextProducerId=self._next_producer_id)])

    # ------------------------------------------------------------ log housekeeping

    def noop(self, count: int = 1) -> None:
        """NoOpRecords, one batch each, half a second apart (the active controller's beat)."""
        for _ in range(count):
            self.clock += NOOP_INTERVAL_MS
            self.log.append_metadata([meta("NoOpRecord", 0)], timestamp=self.clock,
                                     codec=NONE)

    def begin_transaction(self, name: str | None = None) -> int:
        return self.append([meta("BeginTransactionRecord", 0, name=name)])

    def end_transaction(self) -> int:
        return self.append([meta("EndTransactionRecord", 0)])

    def abort_transaction(self, reason: str | None = None) -> int:
        return self.append([meta("AbortTransactionRecord", 0, reason=reason)])

    @contextmanager
    def transaction(self, name: str | None = None) -> Iterator[None]:
        self.begin_transaction(name)
        yield
        self.end_transaction()

    def raw(self, value: bytes) -> int:
        """One record with a raw value (an unknown type or version), in its own batch."""
        return self.append([RawRecord(value)])

    def roll_segment(self) -> str:
        return self.log.roll()

    # ------------------------------------------------------------ snapshots and files

    def snapshot_options(self, **overrides: Any) -> SnapshotOptions:
        opts = SnapshotOptions(kraft_version=self.kraft_version, voters=tuple(self.voters()))
        for k, v in overrides.items():
            setattr(opts, k, v)
        return opts

    def snapshot(self, **options: Any) -> str:
        """Write the image of every offset written so far as a ``.checkpoint``; its path.

        ``options`` are :class:`~.snapshot.SnapshotOptions` fields (codec, overlap...).
        """
        if self.model.in_transaction:
            raise RuntimeError("a snapshot cannot end inside a metadata transaction")
        if self.log.next_offset == 0:
            raise RuntimeError("nothing written yet: a snapshot needs at least one record")
        path = write_snapshot(
            self.metadata_dir, self.model.snapshot_records(self.versions),
            end_offset=self.log.next_offset, epoch=self.log.last_epoch,
            timestamp=self.tick(), last_contained_timestamp=self.log.last_timestamp,
            options=self.snapshot_options(**options))
        self.snapshots.append(path)
        return path

    def write_bootstrap_snapshot(self) -> str:
        """``00000000000000000000-0000000000.checkpoint``: the initial voters, no metadata.

        Kafka 3.9+ writes it when formatting with kraft.version 1 (``--initial-controllers``).
        """
        opts = self.snapshot_options(voters=tuple(self.voters(self.initial_voters)))
        return write_snapshot(self.metadata_dir, (), end_offset=0, epoch=0,
                              timestamp=self.start_ms, last_contained_timestamp=-1,
                              options=opts)

    def finish(self, *, quorum_state_version: int | None = None,
               partition_dirs: bool = False) -> None:
        """Close the log and write the other files of the log dir."""
        self.log.close()
        if not self.log.segments:
            self.log.roll()  # Kafka always has an active segment
            self.log.close()
        md = self.metadata_dir
        dv = quorum_state_version if quorum_state_version is not None else (
            1 if self.kraft_version >= 1 else 0)
        files.write_bytes(os.path.join(md, "quorum-state"), files.quorum_state(
            data_version=dv, leader_id=self.leader, leader_epoch=self.log.epoch,
            voters=self.controller_ids))
        files.write_bytes(os.path.join(md, "leader-epoch-checkpoint"),
                          files.leader_epoch_checkpoint(self.log.epoch_starts))
        files.write_bytes(os.path.join(md, "partition.metadata"),
                          files.partition_metadata(files.METADATA_TOPIC_ID))
        files.write_bytes(os.path.join(self.out_dir, "meta.properties"), files.meta_properties(
            cluster_id=self.cluster_id, node_id=self.node_id,
            directory_id=self.directory_ids.get(self.node_id), written_ms=self.start_ms))
        self._write_log_dir_bootstrap()
        if partition_dirs:
            files.write_partition_dirs(self.out_dir, [
                (t.name, t.topic_id, len(t.partitions)) for t in self.model.topics.values()])

    def _write_log_dir_bootstrap(self) -> None:
        """``<log dir>/bootstrap.checkpoint``: the features the cluster was formatted with."""
        level = self.bootstrap_level
        recs = [meta("FeatureLevelRecord", 0, name="metadata.version", featureLevel=level)]
        recs += [meta("FeatureLevelRecord", 0, name=k, featureLevel=v)
                 for k, v in bootstrap_features(level).items()]
        tmp = write_snapshot(self.out_dir, recs, end_offset=0, epoch=0, timestamp=self.start_ms,
                             last_contained_timestamp=0)
        os.replace(tmp, os.path.join(self.out_dir, "bootstrap.checkpoint"))


# ---------------------------------------------------------------- helpers


def _broker_host(bid: int) -> str:
    return f"broker-{bid}.kafka.internal"


def _controller_host(cid: int) -> str:
    return f"controller-{cid}.kafka.internal"


def _pick(dirs: Sequence[bytes], pid: int) -> bytes:
    """The log dir a broker puts a partition in (round robin over its dirs)."""
    return dirs[pid % len(dirs)]


def _feature_list(feats: Mapping[str, tuple[int, int]]) -> list[dict[str, Any]]:
    return [{"name": k, "minSupportedVersion": lo, "maxSupportedVersion": hi}
            for k, (lo, hi) in feats.items()]


def _as_read(rec: Record) -> Record:
    """The record as a reader decodes it: fields absent at its version take their defaults."""
    if not isinstance(rec, MetaRecord):
        return rec
    msg = METADATA[rec.key]
    body = codec.encode(msg, rec.version, rec.data)
    return MetaRecord(rec.key, rec.version, codec.decode(msg, rec.version, body, 0, len(body)))


def _chunks(records: Iterable[Record], size: int) -> Iterator[list[Record]]:
    it = iter(records)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def _wrap_transaction(chunks: Iterator[list[Record]], size: int) -> Iterator[list[Record]]:
    """Begin in the first batch and End in the last, keeping each batch within ``size``."""
    begin = meta("BeginTransactionRecord", 0, name=None)
    carry: list[Record] = [begin]
    for chunk in chunks:
        merged = carry + chunk
        yield merged[:size]
        carry = merged[size:]
    yield [*carry, meta("EndTransactionRecord", 0)]
