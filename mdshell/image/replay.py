"""Replay metadata records into an :class:`Image`, with Kafka's semantics.

- Records between BeginTransaction and EndTransaction apply at the End; an Abort drops them.
  A Begin inside a transaction is ignored with a warning, as a broker's loader faults on
  it and goes on with the transaction begun first (a controller halts there).
- Control batches (leader changes, snapshot header/footer, KRaft voters) never move the
  provenance; metadata batches set it to (last offset, leader epoch, max timestamp), as
  Kafka's loader does.
- A record that Kafka would refuse (fencing an unknown broker, a partition of an unknown
  topic...) is skipped with a warning; the load goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..problems import Problem, add
from ..wire import frames
from ..wire.batch import Batch
from ..wire.codec import UNKNOWN_TAGS
from ..wire.decoding import Decoded, decode_records, frame_and_decode
from ..wire.frames import MIGRATING_DIR
from ..wire.kinds import RecordKind as K
from ..wire.native import piece
from ..wire.primitives import uuid_sort_key, uuid_str
from ..wire.records import record_name
from . import model as m
from .index import SnapshotIndex
from .journal import MUTABLE_VALUES, TOMB, Journal
from .names import METADATA_VERSION_FEATURE, TOPIC_CONFIG

DECODED_MAX = 16_384  # distinct partition records kept decoded by a builder
_cwalk = piece("_cwalk")
_cput = _cwalk.put_partitions if _cwalk is not None else None
_PARTITION_RECORDS = (K.PARTITION, K.PARTITION_CHANGE)
# The ids of a partitions map's partitions that may hold ELR (all of them, read one by one,
# without the compiled filter, which leaves out undecoded records that hold none).
_elr_held: Callable[[dict[int, Any]], list[int]] = (
    _cwalk.elr_held if _cwalk is not None else list)


def txn_span(decoded: list[Decoded], i: int) -> int:
    """The end of the run of records from ``decoded[i]`` a metadata transaction keeps as
    they are until its end: a dict or an undecoded PartitionRecord (a tuple), not a
    transaction marker. The compiled ``txn_span`` is the same; this is its reference."""
    n = len(decoded)
    while i < n and type(decoded[i][3]) in (dict, tuple) and (
            decoded[i][1] not in TRANSACTION_MARKERS):
        i += 1
    return i


_txn_span: Callable[[list[Decoded], int], int] = (
    _cwalk.txn_span if _cwalk is not None else txn_span)


def _topic_partition(lazy: m.LazyPartition) -> tuple[bytes, int]:
    """(topic id, partition id) of an undecoded PartitionRecord."""
    pid, tid = frames.partition_prefix(lazy[0], lazy[1])
    return tid, pid

Handler = Callable[["ImageBuilder", dict[str, Any], int], None]
# Called before each record is applied: (builder, api key, version, record, offset).
Observer = Callable[["ImageBuilder", int, int, dict[str, Any], int], None]
# Asked before a partition record is decoded for an observer: (builder, topic id, partition
# id) -> wanted? The others stay undecoded and unobserved.
Wants = Callable[["ImageBuilder", bytes, int], bool]
# Picks the records of a batch to apply: (buffer, framed records) as metadata_ranges.
Sieve = Callable[[Batch], "tuple[bytes, list[tuple[int, int, int, int, int, int]]]"]
# A record of a metadata transaction, applied at its end: as decoded (offset, key, version,
# value, value position), a PartitionRecord's observed value decoded.
Pending = Decoded


if TYPE_CHECKING:  # for the type checker only: a Protocol class costs every command's start
    class OwnedIds(Protocol):
        """What the builder keeps of the ids of what it owns: a set of ints, or the compiled
        ``IdSet`` (the same operations, faster for ids, asked by the compiled handlers
        without making an int)."""

        def add(self, key: int, /) -> None: ...
        def discard(self, key: int, /) -> None: ...
        def clear(self) -> None: ...
        def __contains__(self, key: object, /) -> bool: ...
        def __len__(self) -> int: ...


def _shallow(img: m.Image) -> m.Image:
    """A new image object sharing every map of ``img`` (copy-on-write starts from here)."""
    return replace(img, provenance=replace(img.provenance))


class ImageBuilder:
    """Applies batches to a working image; :meth:`publish` hands out the image as it is and
    never touches it again: later writes copy the maps they change (structural sharing, so an
    image published before stays valid while replay goes on). ``problems`` collects what was
    skipped and why."""

    # Slots: the compiled handlers read a few of these once a record (``_cwalk``'s attr).
    __slots__ = (
        "__weakref__",
        "_decoded",
        "_ordinal",
        "_owned",
        "_pos",
        "_reported",
        "_reported_tags",
        "batch",
        "eager",
        "file",
        "image",
        "index",
        "journal",
        "observer",
        "origin",
        "problems",
        "records_applied",
        "sieve",
        "txn",
        "txn_offset",
        "wants",
    )

    def __init__(self, image: m.Image | None = None, observer: Observer | None = None,
                 eager: bool = False, wants: Wants | None = None,
                 sieve: Sieve | None = None) -> None:
        self._owned: OwnedIds = set() if _cwalk is None else _cwalk.IdSet()
        if image is None:
            self.image = m.Image()
            self._own_all(self.image)
        else:
            self.image = _shallow(image)  # ``image`` itself stays as it is
        self.observer = observer
        self.wants = wants  # with an observer: which PartitionRecords to decode for it
        # Which records of a batch to apply (None: all). Only for an observer that follows
        # a few nodes (``changes``): the image then holds only what those records build.
        self.sieve = sieve
        self.eager = eager  # decode every record now (no undecoded partitions)
        self.origin = ""  # what is being replayed, for observers: "" (the log) or a snapshot
        self.batch: Batch | None = None
        self.problems: list[Problem] = []
        self.txn: list[Pending] | None = None
        self.txn_offset = -1
        self._reported: set[tuple[int, int]] = set()
        self._reported_tags: set[tuple[int, ...]] = set()
        self.records_applied = 0
        self.file = ""
        self.index: SnapshotIndex | None = None  # set to keep what `changes` needs
        # What changed since the last mark, for history (None: not kept).
        self.journal: Journal | None = None
        self._ordinal = -1
        self._pos = -1
        # A snapshot's partitions decoded on their first change, by their record's version
        # and bytes past the ids (replica sets repeat: 870 distinct among 100k generated
        # partitions). Partitions are never changed in place, so one object serves all.
        self._decoded: dict[tuple[int, bytes], m.Partition] = {}

    # ------------------------------------------------------------ copy-on-write

    def _own_all(self, img: m.Image) -> None:
        for name in _MAPS:
            self._owned.add(id(getattr(img, name)))

    def own(self, obj: object) -> None:
        """``obj`` was made by this builder since the last publish: write it in place."""
        self._owned.add(id(obj))

    def publish(self) -> m.Image:
        """The image as of now, frozen: nothing changes it afterwards."""
        published = self.image
        self.image = _shallow(published)
        self._owned.clear()
        return published

    def mark(self) -> Journal:
        """The changes since the last mark (sealed with the image's single values); the
        journal starts again. Values replay changes in place are frozen from here on (the
        next write copies them), so the journal keeps them as they are now."""
        journal = self.journal
        assert journal is not None
        owned = self._owned
        for name in MUTABLE_VALUES:
            log = journal.maps.get(name)
            if log is not None:
                for value in log.values.values():
                    owned.discard(id(value))
        self.journal = Journal()
        return journal.seal(self.image)

    def put(self, name: str, key: Any, value: Any) -> None:
        """``image.<name>[key] = value``, copied first if shared, and journaled."""
        self.writable(name)[key] = value
        if self.journal is not None:
            self.journal.log(name).put(key, value)

    def drop(self, name: str, key: Any) -> Any:
        """Remove ``image.<name>[key]`` (journaled); its value, None when there was none."""
        if key not in getattr(self.image, name):
            return None
        value = self.writable(name).pop(key)
        if self.journal is not None:
            self.journal.log(name).drop(key)
        return value

    def set_partition(self, topic: m.Topic, pid: int,
                      value: m.Partition | m.LazyPartition) -> None:
        """``topic.partitions[pid] = value`` on a writable topic, journaled."""
        topic.partitions[pid] = value
        if self.journal is not None:
            self.journal.parts += (topic.id, pid, value)

    def decoded(self, lazy: m.LazyPartition) -> m.Partition | None:
        """An undecoded partition, decoded once per distinct record (None: it does not
        decode cleanly; :meth:`Topic.partition` says why)."""
        buf, body, end, version = lazy
        key = (version, bytes(buf[body + frames.PARTITION_PREFIX_SIZE:end]))
        p = self._decoded.get(key)
        if p is None:
            p = m.decode_clean(lazy)
            if p is not None:
                if len(self._decoded) >= DECODED_MAX:
                    self._decoded.clear()
                self._decoded[key] = p
        return p

    def writable(self, name: str) -> dict[Any, Any]:
        """The image's map ``name``, copied first if a published image shares it."""
        d: dict[Any, Any] = getattr(self.image, name)
        if id(d) not in self._owned:
            d = dict(d)
            setattr(self.image, name, d)
            self._owned.add(id(d))
        return d

    def inner(self, name: str, key: Any, create: bool = False) -> dict[Any, Any] | None:
        """The writable dict at ``image.<name>[key]`` (configs, quotas, scram users)."""
        outer = self.writable(name)
        v: dict[Any, Any] | None = outer.get(key)
        if v is None:
            if not create:
                return None
            v = outer[key] = {}
        elif id(v) not in self._owned:
            v = outer[key] = dict(v)
        else:
            return v  # made or copied since the last mark: journaled then
        self._owned.add(id(v))
        if self.journal is not None:
            self.journal.log(name).put(key, v)
        return v

    def topic(self, tid: bytes) -> m.Topic | None:
        """The topic ``tid``, writable (its partition map copied once per publish)."""
        topic = self.image.topics_by_id.get(tid)
        if topic is None or id(topic) in self._owned:
            return topic
        new = m.Topic(topic.name, topic.id, dict(topic.partitions), topic.notes)
        self._owned.add(id(new))
        self.writable("topics_by_id")[tid] = new
        if self.image.topics_by_name.get(topic.name) is topic:
            self.writable("topics_by_name")[topic.name] = new
        return new

    def broker(self, bid: int) -> m.BrokerRegistration | None:
        reg = self.image.brokers.get(bid)
        if reg is None or id(reg) in self._owned:
            return reg
        new = reg.copy()
        self._owned.add(id(new))
        self.put("brokers", bid, new)
        return new

    # ------------------------------------------------------------ batches

    def apply_batch(self, batch: Batch, stop: int | None = None, skip_below: int = -1) -> None:
        """Apply the records of a metadata batch with offsets in ``[skip_below, stop]``,
        whole or not at all: its records are framed (:func:`~mdshell.wire.framing.frame`)
        and every one decoded (:func:`~mdshell.wire.decoding.decode_records`) before any
        is applied. Raises what those raise for a batch that does not decode (nothing of it
        is then applied)."""
        if self.sieve is not None:
            buf, recs = self.sieve(batch)
            decoded, last = decode_records(buf, recs, skip_below, stop, not self.eager)
        else:
            buf, pos, end = batch.payload()
            decoded, last = frame_and_decode(buf, pos, end, batch.count, batch.base_offset,
                                             batch.base_timestamp, skip_below, stop,
                                             not self.eager, batch.size)
        self.batch = batch
        if self.index is not None and decoded:
            self._ordinal = self.index.add_batch(batch, buf, decoded[0][4])
        self.apply_decoded(decoded, last, batch.last_offset, batch.epoch, batch.max_timestamp,
                           stop)

    def apply_decoded(self, decoded: list[Decoded], last: int, batch_last: int, epoch: int,
                      time_ms: int, stop: int | None = None) -> int:
        """Apply one batch's decoded records (:func:`decode_records`; ``last``: the last
        offset in range, -1 for none), then move the provenance to the batch's end
        (``batch_last``, cut at ``stop``), leader ``epoch`` and max timestamp ``time_ms``
        when a record was in range, outside a metadata transaction. The one place records
        are applied: the compiled replay loop calls it too. Returns how many records it
        applied."""
        before = self.records_applied
        # Nobody watching (an observer, a snapshot index): a record outside a transaction
        # is applied here, as _dispatch and _apply would (most records of a log tail).
        plain = self.observer is None and self.index is None
        i, n = 0, len(decoded)
        while i < n:
            off, key, ver, value, vpos = decoded[i]
            kind = type(value)
            if kind is dict and plain and self.txn is None and key not in TRANSACTION_MARKERS:
                handler = HANDLERS.get(key)
                if handler is not None:
                    if UNKNOWN_TAGS in value:
                        self._unknown_tags(key, ver, value[UNKNOWN_TAGS], off)
                    self.records_applied += 1
                    handler(self, value, off)
            elif kind is tuple and self.observer is None and self.txn is None:
                i = self._put_partitions(decoded, i)  # a run of undecoded PartitionRecords
                continue
            elif (self.txn is not None and self.observer is None
                  and (j := _txn_span(decoded, i)) > i):
                # inside a metadata transaction: the records up to its next marker wait for its
                # end as they are (what the branch below does one by one)
                self.txn.extend(decoded[i:j])
                self._pos = decoded[j - 1][4]
                i = j
                continue
            else:
                self._pos = vpos
                if kind is tuple:  # observed, or inside a transaction
                    if self.observer is not None and (
                            self.wants is None or self.wants(self, *_topic_partition(value))):
                        self._dispatch(key, ver, m.record_of(value), off)
                    elif self.txn is not None:
                        self.txn.append(decoded[i])
                    else:
                        self._put_lazy_partition(value, off)
                elif kind is dict:
                    self._dispatch(key, ver, value, off)
                else:
                    self._unknown(value, off)
            i += 1
        if last >= 0 and self.txn is None:
            prov = self.image.provenance
            prov.offset = batch_last if stop is None or stop >= batch_last else last
            prov.epoch = epoch
            prov.time_ms = time_ms
        return self.records_applied - before

    def _put_partitions(self, decoded: list[Decoded], i: int) -> int:
        """Store the run of undecoded PartitionRecords from ``decoded[i]`` (outside a
        transaction, for no observer) as they are; the index of the record after the run.
        Consecutive partitions of one topic look their topic up once (a snapshot). The
        compiled ``put_partitions`` does the same; this is its reference."""
        noted = self.journal.parts if self.journal is not None else None
        if _cput is not None:
            after, stored = _cput(decoded, i, self.topic, noted, self._put_lazy_partition)
            self.records_applied += stored
            if after > i:
                return int(after)
        prefix = frames.partition_prefix
        last_tid: bytes | None = None
        parts: dict[int, m.Partition | m.LazyPartition] = {}
        topic_id = b""
        stored = 0
        n = len(decoded)
        try:
            while i < n:
                off, _key, _ver, value, _vpos = decoded[i]
                if type(value) is not tuple:
                    break
                i += 1
                pid, tid = prefix(value[0], value[1])
                if tid != last_tid:
                    topic = self.topic(tid)
                    if topic is None:
                        self._put_lazy_partition(value, off)  # says the id is unknown
                        last_tid = None
                        continue
                    last_tid, parts, topic_id = tid, topic.partitions, topic.id
                parts[pid] = value
                if noted is not None:
                    noted += (topic_id, pid, value)
                stored += 1
        finally:
            self.records_applied += stored
        return i

    def pass_noops(self, off: int, epoch: int, time_ms: int, stop: int | None = None,
                   skip_below: int = -1) -> None:
        """What a run of batches of one NoOp record each (offset delta 0), not read, would
        have done by :meth:`apply_batch`: the last one's provenance, outside a
        transaction. ``off``, ``epoch``, ``time_ms``: that batch's offset, leader epoch and
        max timestamp."""
        if self.txn is None and off >= skip_below and (stop is None or off <= stop):
            prov = self.image.provenance
            prov.offset, prov.epoch, prov.time_ms = off, epoch, time_ms

    def _dispatch(self, key: int, ver: int, value: dict[str, Any] | frames.Unknown,
                  off: int) -> None:
        if isinstance(value, frames.Unknown):
            self._unknown(value, off)
            return
        if key == K.BEGIN_TRANSACTION:
            if self.txn is not None:  # a broker's loader faults on it and goes on
                self._warn("txn", f"BeginTransactionRecord at offset {off} inside the "
                           f"transaction begun at {self.txn_offset}; ignored, as a broker's "
                           "loader ignores it (the transaction goes on; a controller halts "
                           "there)", off)
                return
            self.txn, self.txn_offset = [], off
            return
        if key == K.END_TRANSACTION:
            if self.txn is None:
                self._warn("txn", f"EndTransactionRecord at offset {off} without a "
                           "BeginTransactionRecord; ignored", off)
                return
            pending, self.txn = self.txn, None
            i, n = 0, len(pending)
            while i < n:
                o, k, v, val, _vpos = pending[i]
                if type(val) is tuple:  # a run of undecoded PartitionRecords (a new topic's)
                    i = self._put_partitions(pending, i)
                else:
                    self._apply(k, v, val, o)
                    i += 1
            return
        if key == K.ABORT_TRANSACTION:
            if self.txn is None:
                self._warn("txn", f"AbortTransactionRecord at offset {off} without a "
                           "BeginTransactionRecord; ignored", off)
            self.txn = None
            return
        if self.txn is not None:
            self.txn.append((off, key, ver, value, self._pos))
        else:
            self._apply(key, ver, value, off)

    def _apply(self, key: int, ver: int, d: dict[str, Any], off: int) -> None:
        handler = HANDLERS.get(key)
        if handler is None:
            return  # NoOp (IGNORED in the table)
        if UNKNOWN_TAGS in d:
            self._unknown_tags(key, ver, d[UNKNOWN_TAGS], off)
        if self.observer is not None and (self.wants is None or key not in _PARTITION_RECORDS
                                          or self.wants(self, d["topicId"],
                                                        d["partitionId"])):
            self.observer(self, key, ver, d, off)
        if self.index is not None:
            self.index.records.append((self._ordinal, self._pos, key, ver, d, off))
        self.records_applied += 1
        handler(self, d, off)

    # ------------------------------------------------------------ problems

    def _warn(self, code: str, msg: str, off: int | None) -> None:
        where = f"{self.file}: " if self.file else ""
        add(self.problems, Problem(code, where + msg, self.file or None, off))

    def _unknown(self, u: frames.Unknown, off: int) -> None:
        k = (u.api_key, u.version)
        if k in self._reported:
            return
        self._reported.add(k)
        self._warn("unknown-record",
                   f"offset {off}: {u.reason}; kept raw (see `records`) and not applied — a "
                   "newer mdshell may know it (reported once per type and version)", off)

    def _unknown_tags(self, key: int, ver: int, tags: dict[int, bytes], off: int) -> None:
        k = (key, ver, *sorted(tags))
        if k in self._reported_tags:
            return
        self._reported_tags.add(k)
        self._warn("unknown-tag", f"offset {off}: {record_name(key)} v{ver} has unknown tagged "
                   f"fields {sorted(tags)}; kept raw (see `records`) — written by a newer "
                   "Kafka (reported once per type)", off)

    # ------------------------------------------------------------ topics

    def _topic(self, tid: bytes, what: str, off: int) -> m.Topic | None:
        """The writable topic ``tid``; a warning when there is none."""
        topic = self.topic(tid)
        if topic is None:
            self._warn("no-topic", f"{what} at offset {off} names unknown topic id "
                       f"{uuid_str(tid)}; skipped", off)
        return topic

    def _no_partition(self, topic: m.Topic, pid: int, off: int) -> None:
        self._warn("no-partition", f"PartitionChangeRecord at offset {off} for partition "
                   f"{topic.name}-{pid}, which does not exist; skipped", off)

    def _put_lazy_partition(self, lazy: m.LazyPartition, off: int) -> None:
        buf, body, _end, _ver = lazy
        pid, tid = frames.partition_prefix(buf, body)
        topic = self._topic(tid, "PartitionRecord", off)
        if topic is not None:
            self.set_partition(topic, pid, lazy)
            self.records_applied += 1


_MAPS = ("finalized_features", "brokers", "controllers", "topics_by_id", "topics_by_name",
         "configs", "client_quotas", "acls", "scram", "delegation_tokens")


# ---------------------------------------------------------------- handlers


def _endpoints(items: list[dict[str, Any]]) -> dict[str, m.Endpoint]:
    return {e["name"]: m.Endpoint(e["name"], e["host"], e["port"], e["securityProtocol"])
            for e in items}


def _features(items: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    return {f["name"]: (f["minSupportedVersion"], f["maxSupportedVersion"]) for f in items}


def _register_broker(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    listeners, features = _endpoints(d["endPoints"]), _features(d["features"])
    old = b.image.brokers.get(d["brokerId"])
    if old is not None:  # a re-registration: its dicts shared when unchanged (never changed)
        listeners = old.listeners if old.listeners == listeners else listeners
        features = old.supported_features if old.supported_features == features else features
    b.put("brokers", d["brokerId"], m.BrokerRegistration(
        id=d["brokerId"], epoch=d["brokerEpoch"], incarnation_id=d["incarnationId"],
        listeners=listeners, supported_features=features,
        rack=d["rack"], fenced=d["fenced"], in_controlled_shutdown=d["inControlledShutdown"],
        is_migrating_zk_broker=d["isMigratingZkBroker"],
        directories=sorted(d["logDirs"], key=uuid_sort_key),
        cordoned_directories=(None if d["cordonedLogDirs"] is None
                              else sorted(d["cordonedLogDirs"], key=uuid_sort_key))))


def _unregister_broker(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    if b.drop("brokers", d["brokerId"]) is None:
        b._warn("no-broker", f"UnregisterBrokerRecord at offset {off} for broker "
                f"{d['brokerId']}, which is not registered", off)


def _broker_for(b: ImageBuilder, bid: int, epoch: int, what: str,
                off: int) -> m.BrokerRegistration | None:
    reg = b.broker(bid)
    if reg is None:
        b._warn("no-broker", f"{what} at offset {off} for broker {bid}, which is not "
                "registered; skipped", off)
    elif reg.epoch != epoch:
        b._warn("broker-epoch", f"{what} at offset {off} for broker {bid} epoch {epoch}, but "
                f"the registration has epoch {reg.epoch}; skipped", off)
        return None
    return reg


def _fence(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    reg = _broker_for(b, d["id"], d["epoch"], "FenceBrokerRecord", off)
    if reg is not None:
        reg.fenced = True


def _unfence(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    reg = _broker_for(b, d["id"], d["epoch"], "UnfenceBrokerRecord", off)
    if reg is not None:
        reg.fenced = False


def _broker_change(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    reg = _broker_for(b, d["brokerId"], d["brokerEpoch"], "BrokerRegistrationChangeRecord", off)
    if reg is None:
        return
    fenced, shutdown = d["fenced"], d["inControlledShutdown"]
    if fenced not in (-1, 0, 1) or shutdown not in (0, 1):
        # Kafka refuses the whole record when a value is unknown: so do we.
        b._warn("bad-value", f"BrokerRegistrationChangeRecord at offset {off}: unknown value "
                f"(fenced={fenced}, inControlledShutdown={shutdown}); the record is skipped", off)
        return
    if fenced:
        reg.fenced = fenced == 1
    if shutdown == 1:
        reg.in_controlled_shutdown = True
    if d["logDirs"]:
        reg.directories = sorted(d["logDirs"], key=uuid_sort_key)
    if d["cordonedLogDirs"] is not None:
        reg.cordoned_directories = sorted(d["cordonedLogDirs"], key=uuid_sort_key)


def _register_controller(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    b.put("controllers", d["controllerId"], m.ControllerRegistration(
        id=d["controllerId"], incarnation_id=d["incarnationId"],
        zk_migration_ready=d["zkMigrationReady"], listeners=_endpoints(d["endPoints"]),
        supported_features=_features(d["features"])))


def _unregister_controller(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    if b.drop("controllers", d["controllerId"]) is None:
        b._warn("no-controller", f"UnregisterControllerRecord at offset {off} for controller "
                f"{d['controllerId']}, which is not registered", off)


def _topic_record(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    topic = m.Topic(d["name"], d["topicId"], notes=b.image.notes)
    b.own(topic)
    b.put("topics_by_id", topic.id, topic)
    b.put("topics_by_name", topic.name, topic)
    if b.journal is not None:
        b.journal.made[topic.id] = len(b.journal.parts)  # its partitions start from here


def _partition(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    topic = b._topic(d["topicId"], "PartitionRecord", off)
    if topic is not None:
        b.set_partition(topic, d["partitionId"], m.partition_from_record(d))


def merge_partition(p: m.Partition, d: dict[str, Any]) -> m.Partition:
    """Kafka's PartitionRegistration.merge(PartitionChangeRecord), as of 3.8 (3.7.0 gave
    replicas new to a partition UNASSIGNED directories; 3.8+ keeps the array, and an
    all-MIGRATING one follows the new replica count)."""
    replicas, dirs = d["replicas"], d["directories"]
    if replicas is None and dirs is None:  # most changes: p's lists, normalized already
        replicas, dirs = p.replicas, p.directories
    else:
        replicas = p.replicas if replicas is None else replicas
        dirs = p.directories if dirs is None else dirs
        if dirs.count(MIGRATING_DIR) == len(dirs):
            dirs = [MIGRATING_DIR] * len(replicas)
    leader, leader_epoch = p.leader, p.leader_epoch
    if d["leader"] != -2:
        leader, leader_epoch = d["leader"], p.leader_epoch + 1
    lrs = p.leader_recovery_state if d["leaderRecoveryState"] == -1 else d["leaderRecoveryState"]
    isr, removing, adding = d["isr"], d["removingReplicas"], d["addingReplicas"]
    elr, last_elr = d["eligibleLeaderReplicas"], d["lastKnownElr"]
    # Positional, in field order (keywords cost more, once per change of a long log).
    return m.Partition(
        replicas, dirs, p.isr if isr is None else isr,
        p.removing_replicas if removing is None else removing,
        p.adding_replicas if adding is None else adding,
        p.elr if elr is None else elr, p.last_known_elr if last_elr is None else last_elr,
        leader, lrs, leader_epoch, p.partition_epoch + 1)


def _partition_change(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    """A PartitionChangeRecord (the reference of the compiled ``partition_change``, which
    :data:`HANDLERS` holds when it is built)."""
    tid = d["topicId"]
    topic = b.image.topics_by_id.get(tid)
    if topic is None or id(topic) not in b._owned:  # b.topic() inline when it is writable
        topic = b._topic(tid, "PartitionChangeRecord", off)
        if topic is None:
            return
    pid = d["partitionId"]
    raw = topic.partitions.get(pid)
    p = (b.decoded(raw) or topic.partition(pid)) if isinstance(raw, tuple) else raw
    if p is None:
        b._no_partition(topic, pid, off)
        return
    b.set_partition(topic, pid, merge_partition(p, d))


_CLEAR_ELR: dict[str, Any] = {
    "replicas": None, "directories": None, "isr": None, "removingReplicas": None,
    "addingReplicas": None, "leader": -2, "leaderRecoveryState": -1,
    "eligibleLeaderReplicas": [], "lastKnownElr": []}


def _clear_elr(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    name = d["topicName"]
    if name:
        topic = b.image.topics_by_name.get(name)
        if topic is None:
            b._warn("no-topic", f"ClearElrRecord at offset {off} names unknown topic "
                    f"{name!r}; skipped", off)
            return
        topics = [topic]
    else:
        topics = list(b.image.topics_by_id.values())
    for topic in topics:
        writable: m.Topic | None = None
        for pid in _elr_held(topic.partitions):
            p = topic.shared(pid)  # read only: a record's bytes decoded once for all
            if p is not None and (p.elr or p.last_known_elr):
                writable = writable or b.topic(topic.id)
                if writable is not None:
                    b.set_partition(writable, pid, merge_partition(p, _CLEAR_ELR))


def _remove_topic(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    img = b.image
    topic: m.Topic | None = b.drop("topics_by_id", d["topicId"])
    if topic is None:
        b._warn("no-topic", f"RemoveTopicRecord at offset {off} names unknown topic id "
                f"{uuid_str(d['topicId'])}; skipped", off)
        return
    if img.topics_by_name.get(topic.name) is topic:
        b.drop("topics_by_name", topic.name)
    b.drop("configs", (TOPIC_CONFIG, topic.name))


def _config(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    resource = (d["resourceType"], d["resourceName"])
    if d["value"] is None:
        values = b.inner("configs", resource)
        if values is not None:
            values.pop(d["name"], None)
            if not values:
                b.drop("configs", resource)
        return
    values = b.inner("configs", resource, create=True)
    assert values is not None
    values[d["name"]] = d["value"]


def _feature_level(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    img = b.image
    if d["name"] == METADATA_VERSION_FEATURE:
        img.metadata_version = d["featureLevel"]
    elif d["featureLevel"] == 0:
        b.drop("finalized_features", d["name"])
    else:
        b.put("finalized_features", d["name"], d["featureLevel"])


def _zk_migration(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    b.image.zk_migration_state = d["zkMigrationState"]


def _client_quota(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    entity = m.quota_entity(d["entity"])
    if d["remove"]:
        values = b.inner("client_quotas", entity)
        if values is not None:
            values.pop(d["key"], None)
            if not values:
                b.drop("client_quotas", entity)
        return
    values = b.inner("client_quotas", entity, create=True)
    assert values is not None
    values[d["key"]] = d["value"]


def _producer_ids(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    b.image.next_producer_id = d["nextProducerId"]


def _acl(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    b.put("acls", d["id"], m.Acl(d["resourceType"], d["resourceName"], d["patternType"],
                                 d["principal"], d["host"], d["operation"], d["permissionType"]))


def _remove_acl(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    if b.drop("acls", d["id"]) is None:
        b._warn("no-acl", f"RemoveAccessControlEntryRecord at offset {off} for unknown ACL "
                f"{uuid_str(d['id'])}; skipped", off)


def _scram(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    b.put("scram", (d["mechanism"], d["name"]), m.ScramCredential(
        d["salt"], d["storedKey"], d["serverKey"], d["iterations"]))


def _remove_scram(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    b.drop("scram", (d["mechanism"], d["name"]))


def _token(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    b.put("delegation_tokens", d["tokenId"], m.DelegationToken(
        d["tokenId"], d["owner"], d["requester"], d["renewers"], d["issueTimestamp"],
        d["maxTimestamp"], d["expirationTimestamp"]))


def _remove_token(b: ImageBuilder, d: dict[str, Any], off: int) -> None:
    b.drop("delegation_tokens", d["tokenId"])


IGNORED = None  # a table row for a record kind that has no effect there

# How each record kind applies to the image: one row per kind of the schemas, except the
# transaction markers, which replay itself handles (TRANSACTION_MARKERS, see _dispatch).
HANDLERS: dict[int, Handler | None] = {
    K.REGISTER_BROKER: _register_broker,
    K.UNREGISTER_BROKER: _unregister_broker,
    K.TOPIC: _topic_record,
    K.PARTITION: _partition,
    K.CONFIG: _config,
    K.PARTITION_CHANGE: _partition_change,
    K.FENCE_BROKER: _fence,
    K.UNFENCE_BROKER: _unfence,
    K.REMOVE_TOPIC: _remove_topic,
    K.DELEGATION_TOKEN: _token,
    K.USER_SCRAM_CREDENTIAL: _scram,
    K.FEATURE_LEVEL: _feature_level,
    K.CLIENT_QUOTA: _client_quota,
    K.PRODUCER_IDS: _producer_ids,
    K.BROKER_REGISTRATION_CHANGE: _broker_change,
    K.ACCESS_CONTROL_ENTRY: _acl,
    K.REMOVE_ACCESS_CONTROL_ENTRY: _remove_acl,
    K.NO_OP: IGNORED,
    K.ZK_MIGRATION_STATE: _zk_migration,
    K.REMOVE_USER_SCRAM_CREDENTIAL: _remove_scram,
    K.REMOVE_DELEGATION_TOKEN: _remove_token,
    K.REGISTER_CONTROLLER: _register_controller,
    K.CLEAR_ELR: _clear_elr,
    K.UNREGISTER_CONTROLLER: _unregister_controller,
}
TRANSACTION_MARKERS = frozenset({K.BEGIN_TRANSACTION, K.END_TRANSACTION, K.ABORT_TRANSACTION})
# The Python handlers: the reference the compiled ones (below) are tested against.
PYTHON_HANDLERS = dict(HANDLERS)
# What the compiled put handlers make: for a kind, (map, key fields, class, its record
# fields in the class's field order), as the Python handler above makes it.
_PUTS: dict[int, tuple[str, tuple[str, ...], type, tuple[str, ...]]] = {
    K.ACCESS_CONTROL_ENTRY: ("acls", ("id",), m.Acl, (
        "resourceType", "resourceName", "patternType", "principal", "host", "operation",
        "permissionType")),
    K.DELEGATION_TOKEN: ("delegation_tokens", ("tokenId",), m.DelegationToken, (
        "tokenId", "owner", "requester", "renewers", "issueTimestamp", "maxTimestamp",
        "expirationTimestamp")),
    K.USER_SCRAM_CREDENTIAL: ("scram", ("mechanism", "name"), m.ScramCredential, (
        "salt", "storedKey", "serverKey", "iterations")),
}
# The compiled drop handlers: (map, key fields, whether an absent key is said).
_DROPS: dict[int, tuple[str, tuple[str, ...], bool]] = {
    K.REMOVE_ACCESS_CONTROL_ENTRY: ("acls", ("id",), True),
    K.REMOVE_DELEGATION_TOKEN: ("delegation_tokens", ("tokenId",), False),
    K.REMOVE_USER_SCRAM_CREDENTIAL: ("scram", ("mechanism", "name"), False),
}


def _compiled_handlers(cwalk: Any) -> dict[int, Any]:
    """The compiled handlers (``_cwalk``), each handing its Python handler (its reference)
    what it does not take."""
    cwalk.setup_partitions(m.Partition, tuple(f.name for f in fields(m.Partition)),
                           MIGRATING_DIR)
    cwalk.setup_handlers(TOMB, m.BrokerRegistration,
                         tuple(f.name for f in fields(m.BrokerRegistration)))
    py = PYTHON_HANDLERS
    out: dict[int, Any] = {K.PARTITION_CHANGE: cwalk.partition_change}
    for key, (name, keys, cls, values) in _PUTS.items():
        out[key] = cwalk.handler("put", (name, keys, cls, tuple(f.name for f in fields(cls)),
                                         values, py[key]))
    for key, (name, keys, said) in _DROPS.items():
        out[key] = cwalk.handler("drop", (name, keys, said, py[key]))
    out[K.PRODUCER_IDS] = cwalk.handler("scalar", ("next_producer_id", "nextProducerId",
                                                   py[K.PRODUCER_IDS]))
    out[K.BROKER_REGISTRATION_CHANGE] = cwalk.handler("broker_change",
                                                      (py[K.BROKER_REGISTRATION_CHANGE],))
    out[K.REGISTER_BROKER] = cwalk.handler("register_broker", (
        py[K.REGISTER_BROKER], m.Endpoint, tuple(f.name for f in fields(m.Endpoint)),
        ("name", "host", "port", "securityProtocol")))
    out[K.CONFIG] = cwalk.handler("config", (py[K.CONFIG],))
    out[K.CLIENT_QUOTA] = cwalk.handler("client_quota", (py[K.CLIENT_QUOTA],))
    return out


if _cwalk is not None:
    HANDLERS.update(_compiled_handlers(_cwalk))
