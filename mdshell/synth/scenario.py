"""A whole cluster's life from a few numbers: setup, then random history, with snapshots.

Used by the command line (``python -m mdshell.synth``) and by benchmarks. Setup = leader
election, bootstrap features, controllers, brokers (registered then unfenced), topics. History =
``history_changes`` operations drawn with fixed weights (leader elections, ISR changes,
reassignments, broker restarts, configs, quotas, ACLs, SCRAM users, tokens, producer id
blocks, topic creation/deletion, ELR, controller failover), each followed by NoOps.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from .batches import codec_named
from .builder import MAX_RECORDS_PER_BATCH, ClusterBuilder
from .snapshot import MAX_BATCH_BYTES
from .versions import MV_3_7_IV2, MV_4_0_IV1

POINT_SETUP, POINT_END = "setup", "end"
CONTROLLER_BASE_ID = 1000  # brokers are 0..N-1, controllers 1000, 1001...


@dataclass
class Scenario:
    """Parameters of a generated cluster (see ``python -m mdshell.synth --help``)."""

    brokers: int = 3
    controllers: int = 1
    topics: int = 10
    partitions_per_topic: int = 3
    rf: int = 3
    history_changes: int = 100
    snapshot_at: Sequence[str] = ()
    log_from: str = "start"  # or "snapshot": segments start at the first snapshot
    compression: Sequence[str] = ("none",)
    snapshot_compression: str = "none"
    snapshot_batch_bytes: int = MAX_BATCH_BYTES  # Kafka's 8 MiB; smaller gives more batches
    metadata_version: int = 25
    kraft_version: int = 0
    segment_bytes: int = 1 << 30
    noops_per_change: int = 1
    partition_dirs: bool = False
    seed: int = 0
    # History: weights of the operation kinds by name (those given replace the defaults; 0
    # leaves a kind out), partitions of the topics it creates, the most records a batch
    # holds (more are split over batches in a metadata transaction, as Kafka does).
    mix: Mapping[str, int] = field(default_factory=dict)
    created_partitions: tuple[int, int] = (1, 6)
    max_records_per_batch: int = MAX_RECORDS_PER_BATCH


@dataclass
class Summary:
    out_dir: str
    end_offset: int
    partitions: int
    segments: list[str]
    snapshots: list[str]
    seconds: float
    changes: dict[str, int] = field(default_factory=dict)


def snapshot_points(points: Sequence[str], changes: int) -> tuple[bool, set[int]]:
    """``(after setup?, {after change n})`` from ``setup``, ``end``, ``N`` or ``P%``."""
    setup = False
    after: set[int] = set()
    for raw in points:
        p = raw.strip()
        if p == POINT_SETUP:
            setup = True
        elif p == POINT_END:
            after.add(changes)
        elif p.endswith("%"):
            after.add(round(changes * float(p[:-1]) / 100))
        else:
            n = int(p)
            if not 0 <= n <= changes:
                raise ValueError(f"snapshot point {n} is outside 0..{changes} changes")
            after.add(n)
    if 0 in after:
        after.discard(0)
        setup = True
    return setup, after


def generate(sc: Scenario, out_dir: str) -> Summary:
    """Write the scenario's log dir to ``out_dir``; returns what was written."""
    t0 = time.perf_counter()
    if sc.rf > sc.brokers:
        raise ValueError(f"replication factor {sc.rf} needs at least {sc.rf} brokers")
    setup_snap, after = snapshot_points(sc.snapshot_at, sc.history_changes)
    if sc.log_from == "snapshot" and not (setup_snap or after):
        raise ValueError("--log-from snapshot needs a snapshot (--snapshot-at)")
    b = ClusterBuilder(out_dir, seed=sc.seed, metadata_version=sc.metadata_version,
                       kraft_version=sc.kraft_version,
                       controllers=range(CONTROLLER_BASE_ID, CONTROLLER_BASE_ID + sc.controllers),
                       compression=sc.compression, segment_bytes=sc.segment_bytes,
                       max_records_per_batch=sc.max_records_per_batch)
    snap_opts = {"codec": codec_named(sc.snapshot_compression),
                 "max_batch_bytes": sc.snapshot_batch_bytes}
    first_snapshot_pending = sc.log_from == "snapshot"
    suppress = b.log_suppressed() if first_snapshot_pending else contextlib.nullcontext()
    history = History(b, sc)
    with suppress:
        _setup(b, sc)
        if setup_snap:
            b.snapshot(**snap_opts)
            first_snapshot_pending = False
    for n in range(1, sc.history_changes + 1):
        with (b.log_suppressed() if first_snapshot_pending else contextlib.nullcontext()):
            history.step()
            b.noop(sc.noops_per_change)
            if n in after:
                b.snapshot(**snap_opts)
                first_snapshot_pending = False
    if sc.kraft_version >= 1:
        b.write_bootstrap_snapshot()
    b.finish(partition_dirs=sc.partition_dirs)
    return Summary(out_dir, b.next_offset, b.model.partition_count(), b.log.segments,
                   b.snapshots, time.perf_counter() - t0, history.counts)


def _setup(b: ClusterBuilder, sc: Scenario) -> None:
    b.elect_controller_leader(b.controller_ids[0])
    b.bootstrap()
    if b.versions.controller_registration:
        for c in b.controller_ids:
            b.register_controller(c)
    for i in range(sc.brokers):
        b.register_broker(i, rack=f"rack-{i % 3}")
    for i in range(sc.brokers):
        b.unfence_broker(i)
    width = len(str(max(sc.topics - 1, 0)))
    for t in range(sc.topics):
        b.create_topic(f"topic-{t:0{width}d}", sc.partitions_per_topic, sc.rf)


class History:
    """Random but plausible operations on the current cluster state."""

    def __init__(self, b: ClusterBuilder, sc: Scenario) -> None:
        self.b = b
        self.sc = sc
        self.rng = b.rng
        self.counts: dict[str, int] = {}
        self.created = 0
        self.users: list[str] = []
        self.tokens: list[str] = []
        self.acls: list[bytes] = []
        kinds: list[tuple[str, int, Callable[[], bool]]] = [
            ("leader-election", 30, self.elect), ("isr-shrink", 15, self.shrink),
            ("isr-expand", 15, self.expand), ("topic-config", 8, self.topic_config),
            ("broker-config", 2, self.broker_config), ("producer-ids", 4, self.producer_ids),
            ("broker-restart", 3, self.restart), ("create-topic", 3, self.create_topic),
            ("delete-topic", 2, self.delete_topic), ("quota", 3, self.quota),
            ("acl", 3, self.acl), ("scram", 2, self.scram), ("token", 2, self.token),
        ]
        if b.versions.level >= MV_3_7_IV2:
            kinds.append(("reassign", 3, self.reassign))
        if b.versions.level >= MV_4_0_IV1:
            kinds.append(("elr", 3, self.elr))
        if sc.controllers > 1:
            kinds.append(("controller-failover", 1, self.failover))
        unknown = set(sc.mix) - {name for name, _, _ in kinds}
        if unknown:
            raise ValueError(f"--mix: no operation named {', '.join(sorted(unknown))} at this "
                             f"metadata.version (known: {', '.join(n for n, _, _ in kinds)})")
        self.kinds = [(name, sc.mix.get(name, weight), op) for name, weight, op in kinds
                      if sc.mix.get(name, weight) > 0]
        if not self.kinds:
            raise ValueError("--mix leaves no operation with a weight above 0")

    def step(self) -> None:
        names = [k for k, _, _ in self.kinds]
        weights = [w for _, w, _ in self.kinds]
        for _ in range(20):  # some kinds need a suitable target; retry with another kind
            i = self.rng.choices(range(len(names)), weights)[0]
            if self.kinds[i][2]():
                self.counts[names[i]] = self.counts.get(names[i], 0) + 1
                return
        self.b.noop()

    # ------------------------------------------------------------ helpers

    def _partition(self) -> tuple[str, int] | None:
        topics = [t for t in self.b.model.topics.values() if t.partitions]
        if not topics:
            return None
        t = self.rng.choice(topics)
        return t.name, self.rng.randrange(len(t.partitions))

    def _alive(self) -> list[int]:
        return sorted(i for i, r in self.b.model.brokers.items() if not r["fenced"])

    # ------------------------------------------------------------ operations

    def elect(self) -> bool:
        tp = self._partition()
        if tp is None:
            return False
        s = self.b.partition(*tp)
        candidates = [r for r in s.isr if r != s.leader]
        if not candidates:
            return False
        self.b.elect_leader(*tp, self.rng.choice(candidates))
        return True

    def shrink(self) -> bool:
        tp = self._partition()
        if tp is None:
            return False
        s = self.b.partition(*tp)
        if len(s.isr) < 2:
            return False
        gone = self.rng.choice([r for r in s.isr if r != s.leader] or list(s.isr))
        self.b.set_isr(*tp, [r for r in s.isr if r != gone])
        return True

    def expand(self) -> bool:
        tp = self._partition()
        if tp is None:
            return False
        s = self.b.partition(*tp)
        missing = [r for r in s.replicas if r not in s.isr]
        if not missing:
            return False
        self.b.set_isr(*tp, [*s.isr, missing[0]])
        return True

    def reassign(self) -> bool:
        tp = self._partition()
        alive = self._alive()
        if tp is None:
            return False
        s = self.b.partition(*tp)
        if len(alive) <= len(s.replicas):
            return False
        spare = [a for a in alive if a not in s.replicas]
        replicas = list(s.replicas)
        replicas[self.rng.randrange(len(replicas))] = self.rng.choice(spare)
        self.b.reassign(*tp, replicas)
        return True

    def elr(self) -> bool:
        tp = self._partition()
        if tp is None:
            return False
        s = self.b.partition(*tp)
        if s.elr:
            self.b.clear_elr(tp[0])
            return True
        if len(s.isr) < 2 or s.leader not in s.isr:
            return False
        rest = [r for r in s.isr if r != s.leader]
        self.b.change_partition(*tp, isr=[s.leader], eligibleLeaderReplicas=rest,
                                lastKnownElr=[])
        return True

    def topic_config(self) -> bool:
        names = list(self.b.model.topics_by_name)
        if not names:
            return False
        key, values = self.rng.choice(_TOPIC_CONFIGS)
        value = self.rng.choice(values)
        self.b.set_config("TOPIC", self.rng.choice(names), key, value)
        return True

    def broker_config(self) -> bool:
        key, values = self.rng.choice(_BROKER_CONFIGS)
        target = self.rng.choice(["", str(self.rng.randrange(self.sc.brokers))])
        self.b.set_config("BROKER", target, key, self.rng.choice(values))
        return True

    def producer_ids(self) -> bool:
        alive = self._alive()
        if not alive:
            return False
        self.b.allocate_producer_ids(self.rng.choice(alive))
        return True

    def restart(self) -> bool:
        """Controlled shutdown, fencing, then a new registration (new epoch) and unfencing."""
        alive = self._alive()
        if len(alive) < 2:
            return False
        bid = self.rng.choice(alive)
        old = self.b.model.brokers[bid]
        self.b.controlled_shutdown(bid)
        self.b.fence_broker(bid)
        self.b.register_broker(bid, rack=old["rack"], log_dir_ids=old["logDirs"])
        self.b.unfence_broker(bid)
        return True

    def create_topic(self) -> bool:
        rf = min(self.sc.rf, len(self._alive()))
        if rf < 1:
            return False
        self.created += 1
        partitions = self.rng.randint(*self.sc.created_partitions)
        self.b.create_topic(f"history-{self.created}", partitions, rf,
                            configs={"retention.ms": str(self.rng.choice([3600000, 86400000]))})
        return True

    def delete_topic(self) -> bool:
        names = [n for n in self.b.model.topics_by_name if n.startswith("history-")]
        if not names:
            return False
        self.b.delete_topic(self.rng.choice(names))
        return True

    def quota(self) -> bool:
        entity: dict[str, str | None] = self.rng.choice([
            {"user": f"user-{self.rng.randrange(10)}"},
            {"client-id": f"client-{self.rng.randrange(10)}"},
            {"user": None}, {"ip": f"10.0.0.{self.rng.randrange(1, 255)}"},
            {"user": f"user-{self.rng.randrange(10)}", "client-id": "app"}])
        key = self.rng.choice(["producer_byte_rate", "consumer_byte_rate", "request_percentage",
                               "connection_creation_rate"] if "ip" not in entity
                              else ["connection_creation_rate"])
        self.b.set_quota(entity, key, float(self.rng.choice([1024, 1048576, 50, 200])))
        return True

    def acl(self) -> bool:
        if self.acls and self.rng.random() < 0.3:
            self.b.remove_acl(self.acls.pop(self.rng.randrange(len(self.acls))))
            return True
        names = list(self.b.model.topics_by_name) or ["*"]
        self.acls.append(self.b.add_acl(
            "TOPIC", self.rng.choice(names), f"User:user-{self.rng.randrange(10)}",
            self.rng.choice(["READ", "WRITE", "DESCRIBE"])))
        return True

    def scram(self) -> bool:
        if self.users and self.rng.random() < 0.3:
            self.b.remove_scram(self.users.pop(self.rng.randrange(len(self.users))))
            return True
        user = f"user-{len(self.users)}-{self.rng.randrange(1000)}"
        self.b.upsert_scram(user, iterations=4096)
        self.users.append(user)
        return True

    def token(self) -> bool:
        if self.tokens and self.rng.random() < 0.3:
            self.b.remove_token(self.tokens.pop(self.rng.randrange(len(self.tokens))))
            return True
        self.tokens.append(self.b.create_token(f"User:user-{self.rng.randrange(10)}",
                                               renewers=["User:admin"]))
        return True

    def failover(self) -> bool:
        others = [c for c in self.b.controller_ids if c != self.b.leader]
        self.b.elect_controller_leader(self.rng.choice(others))
        return True


_TOPIC_CONFIGS = [
    ("retention.ms", ["3600000", "86400000", "604800000"]),
    ("cleanup.policy", ["delete", "compact", "compact,delete"]),
    ("min.insync.replicas", ["1", "2"]),
    ("segment.bytes", ["104857600", "1073741824"]),
    ("max.message.bytes", ["1048588", "5242880"]),
]
_BROKER_CONFIGS = [
    ("log.retention.ms", ["604800000", "172800000"]),
    ("num.io.threads", ["8", "16"]),
    ("log.cleaner.threads", ["1", "2"]),
]
