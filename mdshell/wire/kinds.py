"""Metadata record kinds by name (api key -> ``RecordKind.PARTITION``...).

Generated from the schemas in ``records.py`` by ``scripts/make_kinds.py``: do not edit.
"""

from __future__ import annotations

from enum import IntEnum


class RecordKind(IntEnum):
    """The api key of each metadata record type."""

    REGISTER_BROKER = 0  # RegisterBrokerRecord
    UNREGISTER_BROKER = 1  # UnregisterBrokerRecord
    TOPIC = 2  # TopicRecord
    PARTITION = 3  # PartitionRecord
    CONFIG = 4  # ConfigRecord
    PARTITION_CHANGE = 5  # PartitionChangeRecord
    FENCE_BROKER = 7  # FenceBrokerRecord
    UNFENCE_BROKER = 8  # UnfenceBrokerRecord
    REMOVE_TOPIC = 9  # RemoveTopicRecord
    DELEGATION_TOKEN = 10  # DelegationTokenRecord
    USER_SCRAM_CREDENTIAL = 11  # UserScramCredentialRecord
    FEATURE_LEVEL = 12  # FeatureLevelRecord
    CLIENT_QUOTA = 14  # ClientQuotaRecord
    PRODUCER_IDS = 15  # ProducerIdsRecord
    BROKER_REGISTRATION_CHANGE = 17  # BrokerRegistrationChangeRecord
    ACCESS_CONTROL_ENTRY = 18  # AccessControlEntryRecord
    REMOVE_ACCESS_CONTROL_ENTRY = 19  # RemoveAccessControlEntryRecord
    NO_OP = 20  # NoOpRecord
    ZK_MIGRATION_STATE = 21  # ZkMigrationStateRecord
    REMOVE_USER_SCRAM_CREDENTIAL = 22  # RemoveUserScramCredentialRecord
    BEGIN_TRANSACTION = 23  # BeginTransactionRecord
    END_TRANSACTION = 24  # EndTransactionRecord
    ABORT_TRANSACTION = 25  # AbortTransactionRecord
    REMOVE_DELEGATION_TOKEN = 26  # RemoveDelegationTokenRecord
    REGISTER_CONTROLLER = 27  # RegisterControllerRecord
    CLEAR_ELR = 28  # ClearElrRecord
    UNREGISTER_CONTROLLER = 29  # UnregisterControllerRecord
