"""Which record versions (and which records) a controller writes at a metadata.version.

Levels follow Kafka's MetadataVersion enum (3.3-IV0 = 4 ... 4.4-IV2 = 33); the gates are the
``is...Supported`` checks of that enum.
"""

from __future__ import annotations

from dataclasses import dataclass

# metadata.version levels used as gates
MV_3_3_IV2, MV_3_3_IV3, MV_3_4_IV0, MV_3_6_IV1 = 6, 7, 8, 13
MV_3_7_IV0, MV_3_7_IV2, MV_3_9_IV0, MV_4_0_IV1, MV_4_0_IV3 = 15, 17, 21, 23, 25
MV_4_3_IV0, MV_4_4_IV2 = 30, 33
LATEST_LEVEL = 34


@dataclass(frozen=True, slots=True)
class Versions:
    """Record versions and record kinds available at one metadata.version level."""

    level: int

    @property
    def register_broker(self) -> int:
        lv = self.level
        if lv >= MV_4_3_IV0:
            return 4
        if lv >= MV_3_7_IV2:
            return 3
        if lv >= MV_3_4_IV0:
            return 2
        return 1 if lv >= MV_3_3_IV3 else 0

    @property
    def broker_change(self) -> int:
        lv = self.level
        if lv >= MV_4_3_IV0:
            return 3
        if lv >= MV_3_7_IV2:
            return 2
        return 1 if lv >= MV_3_3_IV3 else 0

    @property
    def partition(self) -> int:
        """PartitionRecord and PartitionChangeRecord (v2 = ELR, v1 = directories)."""
        if self.level >= MV_4_0_IV1:
            return 2
        return 1 if self.level >= MV_3_7_IV2 else 0

    @property
    def fence_by_change_record(self) -> bool:
        """BrokerRegistrationChangeRecord instead of Fence/UnfenceBrokerRecord."""
        return self.level >= MV_3_3_IV2

    @property
    def transactions(self) -> bool:
        return self.level >= MV_3_6_IV1

    @property
    def controller_registration(self) -> bool:
        return self.level >= MV_3_7_IV0

    @property
    def directories(self) -> bool:
        return self.level >= MV_3_7_IV2

    @property
    def elr(self) -> bool:
        return self.level >= MV_4_0_IV1

    @property
    def zk_migration_record(self) -> bool:
        """3.4 to 3.9 write a ZkMigrationStateRecord (4.0 dropped ZooKeeper)."""
        return MV_3_4_IV0 <= self.level <= MV_3_9_IV0

    @property
    def controller_unregistration(self) -> bool:
        return self.level >= MV_4_4_IV2
