"""Immutable partition state, shared between the writer's model and the fast encoder.

States are frozen and hashable so that identical ones (every fresh partition with the same
replica set) are interned: a million-partition topic then costs one pointer per partition, and
the encoder can reuse the bytes of a state it has already encoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..wire.frames import MIGRATING_DIR as MIGRATING
from ..wire.frames import UNASSIGNED_DIR as UNASSIGNED

NO_LEADER = -1
NO_LEADER_CHANGE = -2

Ints = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PState:
    """One partition's registration (Kafka's PartitionRegistration, without the ids).

    ``elr``/``last_known_elr`` are None when the record that set them had no such field.
    """

    replicas: Ints
    isr: Ints
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    directories: tuple[bytes, ...] = ()
    removing: Ints = ()
    adding: Ints = ()
    leader_recovery_state: int = 0
    elr: Ints | None = None
    last_known_elr: Ints | None = None

    @classmethod
    def from_record(cls, d: dict[str, Any]) -> PState:
        """The state a PartitionRecord dict describes (absent directories stay empty)."""
        def opt(v: list[int] | None) -> Ints | None:
            return None if v is None else tuple(v)
        return cls(
            replicas=tuple(d["replicas"]), isr=tuple(d["isr"]), leader=d["leader"],
            leader_epoch=d["leaderEpoch"], partition_epoch=d["partitionEpoch"],
            directories=tuple(d.get("directories") or ()),
            removing=tuple(d["removingReplicas"]), adding=tuple(d["addingReplicas"]),
            leader_recovery_state=d.get("leaderRecoveryState", 0),
            elr=opt(d.get("eligibleLeaderReplicas")), last_known_elr=opt(d.get("lastKnownElr")))

    def record_fields(self, version: int) -> dict[str, Any]:
        """The PartitionRecord fields (without ids) for the generic codec at ``version``."""
        d: dict[str, Any] = {
            "replicas": list(self.replicas), "isr": list(self.isr),
            "removingReplicas": list(self.removing), "addingReplicas": list(self.adding),
            "leader": self.leader, "leaderRecoveryState": self.leader_recovery_state,
            "leaderEpoch": self.leader_epoch, "partitionEpoch": self.partition_epoch,
        }
        if version >= 1:
            d["directories"] = list(self.directories)
        if version >= 2:
            d["eligibleLeaderReplicas"] = None if self.elr is None else list(self.elr)
            d["lastKnownElr"] = None if self.last_known_elr is None else list(self.last_known_elr)
        return d

    def effective_directories(self) -> tuple[bytes, ...]:
        """What a reader shows: no directories means MIGRATING for every replica."""
        return self.directories or (MIGRATING,) * len(self.replicas)

    def merge(self, change: dict[str, Any]) -> PState:
        """Apply a PartitionChangeRecord dict (Kafka 3.7's PartitionRegistration.merge).

        ``change`` uses the codec's keys; absent keys mean "no change".
        """
        new_replicas = change.get("replicas")
        old_dirs = self.effective_directories()
        if change.get("directories"):
            dirs = tuple(change["directories"])
        elif new_replicas is not None:
            by_replica = dict(zip(self.replicas, old_dirs, strict=False))
            dirs = tuple(by_replica.get(r, UNASSIGNED) for r in new_replicas)
        else:
            dirs = old_dirs
        if not dirs:
            dirs = (MIGRATING,) * len(self.replicas)
        leader, epoch = self.leader, self.leader_epoch
        if change.get("leader", NO_LEADER_CHANGE) != NO_LEADER_CHANGE:
            leader, epoch = change["leader"], self.leader_epoch + 1
        lrs = change.get("leaderRecoveryState", -1)

        def pick(key: str, old: Ints) -> Ints:
            v = change.get(key)
            return old if v is None else tuple(v)

        def pick_opt(key: str, old: Ints | None) -> Ints | None:
            v = change.get(key)
            return old if v is None else tuple(v)

        return PState(
            replicas=self.replicas if new_replicas is None else tuple(new_replicas),
            isr=pick("isr", self.isr), leader=leader, leader_epoch=epoch,
            partition_epoch=self.partition_epoch + 1, directories=dirs,
            removing=pick("removingReplicas", self.removing),
            adding=pick("addingReplicas", self.adding),
            leader_recovery_state=self.leader_recovery_state if lrs == -1 else lrs,
            elr=pick_opt("eligibleLeaderReplicas", self.elr),
            last_known_elr=pick_opt("lastKnownElr", self.last_known_elr))
