"""Metadata record kinds by name (api key -> ``RecordKind.PARTITION``...).

Generated from the schemas in ``records.py`` by ``scripts/make_kinds.py``: do not edit.
Plain ints, not an enum: replay compares kinds once per record, and a class attribute is read
several times faster than an enum member.
"""

from __future__ import annotations

from typing import Final


class RecordKind:
    """The api key of each metadata record type."""

    REGISTER_BROKER: Final = 0  # RegisterBrokerRecord
    UNREGISTER_BROKER: Final = 1  # UnregisterBrokerRecord
    TOPIC: Final = 2  # TopicRecord
    PARTITION: Final = 3  # PartitionRecord
    CONFIG: Final = 4  # ConfigRecord
    PARTITION_CHANGE: Final = 5  # PartitionChangeRecord
    FENCE_BROKER: Final = 7  # FenceBrokerRecord
    UNFENCE_BROKER: Final = 8  # UnfenceBrokerRecord
    REMOVE_TOPIC: Final = 9  # RemoveTopicRecord
    DELEGATION_TOKEN: Final = 10  # DelegationTokenRecord
    USER_SCRAM_CREDENTIAL: Final = 11  # UserScramCredentialRecord
    FEATURE_LEVEL: Final = 12  # FeatureLevelRecord
    CLIENT_QUOTA: Final = 14  # ClientQuotaRecord
    PRODUCER_IDS: Final = 15  # ProducerIdsRecord
    BROKER_REGISTRATION_CHANGE: Final = 17  # BrokerRegistrationChangeRecord
    ACCESS_CONTROL_ENTRY: Final = 18  # AccessControlEntryRecord
    REMOVE_ACCESS_CONTROL_ENTRY: Final = 19  # RemoveAccessControlEntryRecord
    NO_OP: Final = 20  # NoOpRecord
    ZK_MIGRATION_STATE: Final = 21  # ZkMigrationStateRecord
    REMOVE_USER_SCRAM_CREDENTIAL: Final = 22  # RemoveUserScramCredentialRecord
    BEGIN_TRANSACTION: Final = 23  # BeginTransactionRecord
    END_TRANSACTION: Final = 24  # EndTransactionRecord
    ABORT_TRANSACTION: Final = 25  # AbortTransactionRecord
    REMOVE_DELEGATION_TOKEN: Final = 26  # RemoveDelegationTokenRecord
    REGISTER_CONTROLLER: Final = 27  # RegisterControllerRecord
    CLEAR_ELR: Final = 28  # ClearElrRecord
    UNREGISTER_CONTROLLER: Final = 29  # UnregisterControllerRecord


# name -> api key, for every kind above
KINDS: Final[dict[str, int]] = {
    name: key for name, key in vars(RecordKind).items() if name.isupper()}
