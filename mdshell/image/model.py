"""The metadata image: what the cluster looks like at one offset of the log.

Plain data, built by :mod:`replay` and read by everything above. UUIDs are 16 raw bytes
(rendered as Kafka's base64 by the tree). Partitions of a topic may be held undecoded (see
:class:`LazyPartition`) until something reads them: a million-partition snapshot loads
without decoding a million records.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..wire import codec
from ..wire.codec import UNKNOWN_TAGS
from ..wire.frames import MIGRATING_DIR, PARTITION_PREFIX_SIZE
from ..wire.kinds import RecordKind
from ..wire.primitives import DecodeError
from ..wire.records import METADATA
from .names import MINIMUM_KRAFT_LEVEL

NO_LEADER = -1


@dataclass(slots=True)
class Endpoint:
    """A listener of a broker or controller registration."""

    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(slots=True)
class BrokerRegistration:
    """A registered broker (RegisterBrokerRecord and its changes)."""

    id: int
    epoch: int
    incarnation_id: bytes
    listeners: dict[str, Endpoint]
    supported_features: dict[str, tuple[int, int]]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    is_migrating_zk_broker: bool
    directories: list[bytes]
    cordoned_directories: list[bytes] | None = None  # 4.3+ (KIP-1066); None: not reported

    def copy(self) -> BrokerRegistration:
        """A shallow copy (positional: ``dataclasses.replace`` costs eight times more, and
        replay copies a registration once per change of it between publishes)."""
        return BrokerRegistration(
            self.id, self.epoch, self.incarnation_id, self.listeners,
            self.supported_features, self.rack, self.fenced, self.in_controlled_shutdown,
            self.is_migrating_zk_broker, self.directories, self.cordoned_directories)

    @property
    def log_dir_count(self) -> int | None:
        """How many log dirs the broker registered (KIP-858), or None when it registered none.

        Empty is never a real count: before metadata.version 3.7-IV2 registrations carry no
        LogDirs; from 3.7-IV2 the controller refuses a registration without directories, and
        a broker registered before the upgrade (snapshots then write it as v3 with an empty
        list) re-registers to add them (Kafka's ClusterControlManager.registerBroker and
        BrokerRegistrationTracker). A change record's empty list means "no change".
        """
        return len(self.directories) or None


@dataclass(slots=True)
class ControllerRegistration:
    """A registered controller (RegisterControllerRecord)."""

    id: int
    incarnation_id: bytes
    zk_migration_ready: bool
    listeners: dict[str, Endpoint]
    supported_features: dict[str, tuple[int, int]]


@dataclass(slots=True)
class Partition:
    """A decoded partition (PartitionRecord and its PartitionChangeRecords)."""

    replicas: list[int]
    directories: list[bytes]
    isr: list[int]
    removing_replicas: list[int]
    adding_replicas: list[int]
    elr: list[int]
    last_known_elr: list[int]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int


# An undecoded PartitionRecord: (buffer, body start, end, version). A plain tuple because a
# million of them are made during a large load.
LazyPartition = tuple[bytes, int, int, int]


def partition_from_record(d: dict[str, Any]) -> Partition:
    replicas = d["replicas"]
    dirs = d["directories"]
    if dirs.count(MIGRATING_DIR) == len(dirs):  # none given (v0), or pre-3.7-IV2 brokers
        dirs = [MIGRATING_DIR] * len(replicas)
    # Positional (in field order): a million of these are made, keywords cost 4x.
    return Partition(
        replicas, dirs, d["isr"], d["removingReplicas"], d["addingReplicas"],
        d["eligibleLeaderReplicas"] or [], d["lastKnownElr"] or [], d["leader"],
        d["leaderRecoveryState"], d["leaderEpoch"], d["partitionEpoch"])


_PARTITION_DECODERS: dict[int, codec.Decoder] = {}


def _decode_fast(buf: bytes, body: int, end: int, version: int) -> dict[str, Any] | None:
    """The record decoded by its generated decoder directly, or None when anything is off
    (the checked path then says what)."""
    dec = _PARTITION_DECODERS.get(version)
    if dec is None:
        dec = codec.decoder_for(METADATA[RecordKind.PARTITION], version)
        _PARTITION_DECODERS[version] = dec
    try:
        d, pos = dec(buf, body, end)
    except Exception:  # the checked decode below reports it
        return None
    return d if pos == end else None


def record_of(lazy: LazyPartition) -> dict[str, Any]:
    """The PartitionRecord of an undecoded partition, decoded (replay holds only records
    that decode, so this does)."""
    buf, body, end, version = lazy
    return codec.decode(METADATA[RecordKind.PARTITION], version, buf, body, end)


def decode_clean(lazy: LazyPartition) -> Partition | None:
    """The partition of an undecoded record when it decodes with nothing to report (the
    same bytes then always give the same partition); None: let :meth:`Topic.partition` say
    what is wrong."""
    d = _decode_fast(*lazy)
    if d is None or UNKNOWN_TAGS in d:
        return None
    return partition_from_record(d)


def record_key(lazy: LazyPartition) -> tuple[int, bytes]:
    """What an undecoded partition depends on: its record's version and bytes past the
    partition and topic ids (hot loops compute it inline, per partition)."""
    buf, body, end, version = lazy
    return (version, bytes(buf[body + PARTITION_PREFIX_SIZE:end]))


def record_keys(parts: Iterable[Partition | LazyPartition]) -> list[tuple[int, bytes] | None]:
    """:func:`record_key` of each undecoded partition, None for a decoded one: a topic's at
    once (one comprehension, no call a partition)."""
    skip = PARTITION_PREFIX_SIZE
    return [(p[3], bytes(p[0][p[1] + skip:p[2]])) if type(p) is tuple else None
            for p in parts]


# The partition of an undecoded PartitionRecord by :func:`record_key`: views reading every
# partition (``health``, ``topics --describe``) decode each distinct record once, as replica
# sets repeat across a cluster (870 distinct among 100k generated partitions). The objects
# are shared by every partition with those bytes: read them, never change them. Bounded:
# emptied when full.
SHARED: dict[tuple[int, bytes], Partition] = {}
SHARED_MAX = 16_384


def shared_clean(key: tuple[int, bytes], lazy: LazyPartition) -> Partition | None:
    """The shared partition of an undecoded record whose :func:`record_key` is ``key``;
    None: it does not decode cleanly (:meth:`Topic.partition` says what is wrong)."""
    p = SHARED.get(key)
    if p is None:
        p = decode_clean(lazy)
        if p is not None:
            if len(SHARED) >= SHARED_MAX:
                SHARED.clear()
            SHARED[key] = p
    return p


@dataclass(slots=True)
class Topic:
    """A topic and its partitions, decoded or held as undecoded records."""

    name: str
    id: bytes
    partitions: dict[int, Partition | LazyPartition] = field(default_factory=dict)
    # Where problems found when a stored record is finally decoded go (the image's notes).
    notes: Notes | None = field(default=None, compare=False, repr=False)

    def partition(self, pid: int) -> Partition | None:
        """The partition, its record decoded if it is held undecoded. Nothing is changed: an
        image may be shared by readers and replay (decoding again is cheaper than a lock). A
        record that does not decode gives None and a note (reported once)."""
        p = self.partitions.get(pid)
        if isinstance(p, tuple):
            return self._decode(pid, p)
        return p

    def shared(self, pid: int) -> Partition | None:
        """:meth:`partition`, an undecoded record's shared with every partition of the same
        bytes (:func:`shared_clean`): read it, never change it."""
        p = self.partitions.get(pid)
        if type(p) is tuple:
            return shared_clean(record_key(p), p) or self._decode(pid, p)
        return p  # type: ignore[return-value]

    def _decode(self, pid: int, lazy: LazyPartition) -> Partition | None:
        p = decode_clean(lazy)
        if p is not None:
            return p
        buf, body, end, version = lazy
        try:
            d = codec.decode(METADATA[RecordKind.PARTITION], version, buf, body, end)
        except DecodeError as e:
            if self.notes is not None:
                self.notes.add(("bad-partition", self.name, pid),
                               f"PartitionRecord of {self.name}-{pid} does not decode "
                               f"({e}); the partition is left out")
            return None
        if UNKNOWN_TAGS in d and self.notes is not None:
            self.notes.add(("unknown-tag", 3, version, *sorted(d[UNKNOWN_TAGS])),
                           f"PartitionRecord v{version} ({self.name}-{pid}) has unknown "
                           f"tagged fields {sorted(d[UNKNOWN_TAGS])}; kept raw — written by "
                           "a newer Kafka (reported once per type)")
        return partition_from_record(d)


class Notes:
    """Problems found after the load (undecoded records that fail when first read), each
    reported once; front ends print the ones added while a command ran."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.codes: list[str] = []  # each message's problem code (the key's first part)
        self._seen: set[tuple[object, ...]] = set()

    def add(self, key: tuple[object, ...], message: str) -> None:
        if key not in self._seen:
            self._seen.add(key)
            self.messages.append(message)
            self.codes.append(str(key[0]))


@dataclass(slots=True)
class Acl:
    """A StandardAcl (AccessControlEntryRecord)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(slots=True)
class ScramCredential:
    """A SCRAM credential of a user (UserScramCredentialRecord)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(slots=True)
class DelegationToken:
    """A delegation token (DelegationTokenRecord)."""

    token_id: str
    owner: str
    requester: str
    renewers: list[str]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


@dataclass(slots=True)
class Provenance:
    """Where the image was read up to: the last applied offset, epoch and time."""

    offset: int = -1
    epoch: int = -1
    time_ms: int = -1


# A client quota entity: sorted ((entity type, entity name or None for the default), ...).
QuotaEntity = tuple[tuple[str, str | None], ...]
ConfigResource = tuple[int, str]  # (resource type code, resource name; "" = default)


def quota_entity(parts: Iterable[dict[str, Any]]) -> QuotaEntity:
    """The entity of a ClientQuotaRecord (its ``entity`` items) as Kafka reads it into a map
    of type -> name (``ClientQuotaImage.dataToEntity``): a type given twice keeps its last
    name; sorted by type."""
    return tuple(sorted({e["entityType"]: e["entityName"] for e in parts}.items()))


@dataclass(slots=True)
class Image:
    """The whole image. ``metadata_version`` is the feature level (None: never set)."""

    provenance: Provenance = field(default_factory=Provenance)
    metadata_version: int | None = None
    finalized_features: dict[str, int] = field(default_factory=dict)
    zk_migration_state: int = 0
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    controllers: dict[int, ControllerRegistration] = field(default_factory=dict)
    topics_by_id: dict[bytes, Topic] = field(default_factory=dict)
    topics_by_name: dict[str, Topic] = field(default_factory=dict)
    configs: dict[ConfigResource, dict[str, str]] = field(default_factory=dict)
    client_quotas: dict[QuotaEntity, dict[str, float]] = field(default_factory=dict)
    next_producer_id: int = -1
    acls: dict[bytes, Acl] = field(default_factory=dict)
    # SCRAM users by (mechanism code, user name): one map, so a user's change copies nothing
    # else (thousands of users of one mechanism are common).
    scram: dict[tuple[int, str], ScramCredential] = field(default_factory=dict)
    delegation_tokens: dict[str, DelegationToken] = field(default_factory=dict)

    notes: Notes = field(default_factory=Notes, compare=False, repr=False)

    @property
    def metadata_version_level(self) -> int:
        return self.metadata_version if self.metadata_version is not None else MINIMUM_KRAFT_LEVEL
