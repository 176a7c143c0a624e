"""Kafka's enum codes and the names it prints for them."""

from __future__ import annotations

# metadata.version feature level -> MetadataVersion name (Kafka's MetadataVersion enum).
METADATA_VERSIONS: dict[int, str] = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2",
    7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0",
    13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3",
    19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2",
    25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0",
    31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2", 34: "4.5-IV0",
}
METADATA_VERSION_FEATURE = "metadata.version"
MINIMUM_KRAFT_LEVEL = 1  # what an image without a FeatureLevelRecord reports (3.0-IV1)


def metadata_version_name(level: int) -> str:
    return METADATA_VERSIONS.get(level, f"unknown-level-{level}")


SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}

# ConfigResource.Type, in the order Kafka matches name prefixes (BROKER_LOGGER before BROKER).
CONFIG_RESOURCE_TYPES = {
    32: "GROUP", 16: "CLIENT_METRICS", 8: "BROKER_LOGGER", 4: "BROKER", 2: "TOPIC", 0: "UNKNOWN",
}
TOPIC_CONFIG, BROKER_CONFIG = 2, 4

RESOURCE_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER",
                  5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN", 7: "USER"}
PATTERN_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
ACL_OPERATIONS = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE",
                  6: "DELETE", 7: "ALTER", 8: "DESCRIBE", 9: "CLUSTER_ACTION",
                  10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE",
                  13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
PERMISSION_TYPES = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}

SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}

ZK_MIGRATION_STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION",
                       4: "ZK"}

LEADER_RECOVERY_STATES = {0: "RECOVERED", 1: "RECOVERING"}


def name_of(table: dict[int, str], code: int) -> str:
    """Kafka maps unknown codes to UNKNOWN; keep the code visible instead of hiding it."""
    return table.get(code, f"UNKNOWN({code})")
