"""Kafka's codes for the names the builder accepts, and what each release supports.

Codes follow Kafka's enums (ConfigResource.Type, ResourceType, PatternType, AclOperation,
AclPermissionType, ScramMechanism); feature ranges follow the releases' defaults.
"""

from __future__ import annotations

import hashlib
import hmac

CONFIG_TYPES = {"TOPIC": 2, "BROKER": 4, "BROKER_LOGGER": 8, "CLIENT_METRICS": 16, "GROUP": 32}
SCRAM_TYPES = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
ACL_RESOURCES = {"TOPIC": 2, "GROUP": 3, "CLUSTER": 4, "TRANSACTIONAL_ID": 5,
                 "DELEGATION_TOKEN": 6, "USER": 7}
ACL_PATTERNS = {"LITERAL": 3, "PREFIXED": 4}
ACL_OPERATIONS = {"ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7,
                  "DESCRIBE": 8, "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10,
                  "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12}
ACL_PERMISSIONS = {"DENY": 2, "ALLOW": 3}


def supported_features(level: int) -> dict[str, tuple[int, int]]:
    """What a Kafka release at metadata.version ``level`` advertises it supports."""
    feats = {"metadata.version": (1 if level < 22 else 7, level)}
    if level >= 21:
        feats["kraft.version"] = (0, 1)
    if level >= 25:
        feats["group.version"] = (0, 1)
        feats["transaction.version"] = (0, 2)
    if level >= 26:
        feats["eligible.leader.replicas.version"] = (0, 1)
    if level >= 28:
        feats["share.version"] = (0, 1)
    if level >= 29:
        feats["streams.version"] = (0, 1)
    return feats


def bootstrap_features(level: int) -> dict[str, int]:
    """Finalized features a fresh cluster of that release starts with (besides metadata.version)."""
    feats: dict[str, int] = {}
    if level >= 25:
        feats.update({"group.version": 1, "transaction.version": 2})
    if level >= 27:
        feats["eligible.leader.replicas.version"] = 1
    if level >= 29:
        feats.update({"share.version": 1, "streams.version": 1})
    return feats


def scram_keys(password: str, salt: bytes, iterations: int, hash_name: str) -> tuple[bytes, bytes]:
    """RFC 5802 StoredKey and ServerKey, as Kafka's ScramFormatter derives them."""
    salted = hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hash_name).digest()
    stored_key = hashlib.new(hash_name, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", hash_name).digest()
    return stored_key, server_key
