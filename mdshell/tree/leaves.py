"""Leaf text exactly as Kafka's shell prints it (the classes' ``toString()``), and leaf data
for JSON output. Secrets go through :mod:`redact`.
"""

from __future__ import annotations

from typing import Any

from ..image import model as m
from ..image.names import (
    ACL_OPERATIONS,
    LEADER_RECOVERY_STATES,
    PATTERN_TYPES,
    PERMISSION_TYPES,
    RESOURCE_TYPES,
    SECURITY_PROTOCOLS,
    name_of,
)
from ..wire.kinds import RecordKind
from ..wire.primitives import uuid_str
from .javafmt import iso_zoned_utc
from .redact import REDACTED, secret_fields

SHORT_MAX = 32767


def _ints(values: list[int]) -> str:
    if type(values) is list:  # a list of ints prints as Java's List.toString (and faster)
        return repr(values)
    return "[" + ", ".join(map(str, values)) + "]"


# Directory ids repeat across every partition of a broker: their text is kept (bounded).
_UUID_TEXT: dict[bytes, str] = {}


def _uuid_text(raw: bytes) -> str:
    if type(raw) is not bytes:  # a slice of a bytearray or memoryview: not a dict key
        return uuid_str(raw)
    text = _UUID_TEXT.get(raw)
    if text is None:
        if len(_UUID_TEXT) >= 4096:
            _UUID_TEXT.clear()
        text = _UUID_TEXT[raw] = uuid_str(raw)
    return text


def _uuids(values: list[bytes]) -> str:
    return "[" + ", ".join(map(_uuid_text, values)) + "]"


def version_range(lo: int, hi: int) -> str:
    """Kafka's VersionRange.toString."""
    if lo == hi:
        return str(lo)
    if hi == SHORT_MAX:
        return f"{lo}+"
    return f"{lo}-{hi}"


def endpoint_text(e: m.Endpoint) -> str:
    proto = name_of(SECURITY_PROTOCOLS, e.security_protocol)
    return (f"Endpoint(listenerName='{e.name}', securityProtocol={proto}, host='{e.host}', "
            f"port={e.port})")


def _listeners(listeners: dict[str, m.Endpoint]) -> str:
    return ", ".join(endpoint_text(listeners[n]) for n in sorted(listeners))


def _features(features: dict[str, tuple[int, int]]) -> str:
    return ", ".join(f"{k}: {version_range(*features[k])}" for k in sorted(features))


def _optional(value: str | None) -> str:
    return "Optional.empty" if value is None else f"Optional[{value}]"


def broker_text(b: m.BrokerRegistration, cordoned: bool = False) -> str:
    """Kafka's ``toString()``; 4.3 added ``cordonedDirectories`` (``null`` when unreported)."""
    tail = ""
    if cordoned:
        dirs = b.cordoned_directories
        tail = ", cordonedDirectories=" + ("null" if dirs is None else _uuids(dirs))
    return (f"BrokerRegistration(id={b.id}, epoch={b.epoch}, "
            f"incarnationId={uuid_str(b.incarnation_id)}, listeners=[{_listeners(b.listeners)}], "
            f"supportedFeatures={{{_features(b.supported_features)}}}, rack={_optional(b.rack)}, "
            f"fenced={_bool(b.fenced)}, inControlledShutdown={_bool(b.in_controlled_shutdown)}, "
            f"isMigratingZkBroker={_bool(b.is_migrating_zk_broker)}, "
            f"directories={_uuids(b.directories)}{tail})")


def controller_text(c: m.ControllerRegistration) -> str:
    return (f"ControllerRegistration(id={c.id}, incarnationId={uuid_str(c.incarnation_id)}, "
            f"zkMigrationReady={_bool(c.zk_migration_ready)}, "
            f"listeners=[{_listeners(c.listeners)}], "
            f"supportedFeatures={{{_features(c.supported_features)}}})")


def partition_text(p: m.Partition) -> str:
    lrs = name_of(LEADER_RECOVERY_STATES, p.leader_recovery_state)
    return (f"PartitionRegistration(replicas={_ints(p.replicas)}, "
            f"directories={_uuids(p.directories)}, isr={_ints(p.isr)}, "
            f"removingReplicas={_ints(p.removing_replicas)}, "
            f"addingReplicas={_ints(p.adding_replicas)}, elr={_ints(p.elr)}, "
            f"lastKnownElr={_ints(p.last_known_elr)}, leader={p.leader}, "
            f"leaderRecoveryState={lrs}, leaderEpoch={p.leader_epoch}, "
            f"partitionEpoch={p.partition_epoch})")


def acl_text(a: m.Acl, record: bool = False) -> str:
    """Kafka's ``toString()``: a class before 4.x, a Java record (square brackets) since."""
    opening, closing = "[]" if record else "()"
    return (f"StandardAcl{opening}resourceType={name_of(RESOURCE_TYPES, a.resource_type)}, "
            f"resourceName={a.resource_name}, "
            f"patternType={name_of(PATTERN_TYPES, a.pattern_type)}, principal={a.principal}, "
            f"host={a.host}, operation={name_of(ACL_OPERATIONS, a.operation)}, "
            f"permissionType={name_of(PERMISSION_TYPES, a.permission_type)}{closing}")


def scram_text(s: m.ScramCredential, show_secrets: bool) -> str:
    fields = ", ".join(f"{k}={v}" for k, v in scram_data(s, show_secrets).items())
    return f"ScramCredentialData({fields})"


def token_text(t: m.DelegationToken) -> str:
    """Kafka 3.7's DelegationTokenDataNode text (odd parentheses included). The record holds
    no secret: the token's HMAC is derived from the token id with the controllers' secret key
    and is never written to the log, and the id is the node's own name."""
    return (f"DelegationTokenDatatokenId={t.token_id}(owner={t.owner}"
            f"(tokenRequester={t.requester}(renewers={' '.join(t.renewers)}, "
            f"issueTimestamp={t.issue_timestamp}, maxTimestamp={t.max_timestamp}), "
            f"expiryTimestamp={t.expiration_timestamp}")


def provenance_text(p: m.Provenance) -> str:
    return f"offset {p.offset}, epoch {p.epoch}, time {iso_zoned_utc(p.time_ms)}"


def _bool(b: bool) -> str:
    return "true" if b else "false"


# ---------------------------------------------------------------- JSON data


def endpoint_data(e: m.Endpoint) -> dict[str, Any]:
    return {"listenerName": e.name, "securityProtocol": name_of(SECURITY_PROTOCOLS,
            e.security_protocol), "host": e.host, "port": e.port}


def _features_data(features: dict[str, tuple[int, int]]) -> dict[str, Any]:
    return {k: {"minSupportedVersion": lo, "maxSupportedVersion": hi}
            for k, (lo, hi) in sorted(features.items())}


def broker_data(b: m.BrokerRegistration) -> dict[str, Any]:
    return {
        "id": b.id, "epoch": b.epoch, "incarnationId": uuid_str(b.incarnation_id),
        "listeners": [endpoint_data(b.listeners[n]) for n in sorted(b.listeners)],
        "supportedFeatures": _features_data(b.supported_features), "rack": b.rack,
        "fenced": b.fenced, "inControlledShutdown": b.in_controlled_shutdown,
        "isMigratingZkBroker": b.is_migrating_zk_broker,
        "directories": [uuid_str(d) for d in b.directories],
        "cordonedDirectories": (None if b.cordoned_directories is None
                                else [uuid_str(d) for d in b.cordoned_directories]),
    }


def controller_data(c: m.ControllerRegistration) -> dict[str, Any]:
    return {
        "id": c.id, "incarnationId": uuid_str(c.incarnation_id),
        "zkMigrationReady": c.zk_migration_ready,
        "listeners": [endpoint_data(c.listeners[n]) for n in sorted(c.listeners)],
        "supportedFeatures": _features_data(c.supported_features),
    }


def partition_data(p: m.Partition) -> dict[str, Any]:
    return {
        "replicas": p.replicas, "directories": [uuid_str(d) for d in p.directories],
        "isr": p.isr, "removingReplicas": p.removing_replicas,
        "addingReplicas": p.adding_replicas, "elr": p.elr, "lastKnownElr": p.last_known_elr,
        "leader": p.leader,
        "leaderRecoveryState": name_of(LEADER_RECOVERY_STATES, p.leader_recovery_state),
        "leaderEpoch": p.leader_epoch, "partitionEpoch": p.partition_epoch,
    }


def acl_data(a: m.Acl) -> dict[str, Any]:
    return {
        "resourceType": name_of(RESOURCE_TYPES, a.resource_type),
        "resourceName": a.resource_name,
        "patternType": name_of(PATTERN_TYPES, a.pattern_type), "principal": a.principal,
        "host": a.host, "operation": name_of(ACL_OPERATIONS, a.operation),
        "permissionType": name_of(PERMISSION_TYPES, a.permission_type),
    }


def scram_data(s: m.ScramCredential, show_secrets: bool) -> dict[str, Any]:
    """The credential's fields by their record names; the schema's secret ones redacted."""
    out: dict[str, Any] = {"salt": s.salt.hex(), "storedKey": s.stored_key.hex(),
                           "serverKey": s.server_key.hex(), "iterations": s.iterations}
    if not show_secrets:
        hidden = secret_fields(RecordKind.USER_SCRAM_CREDENTIAL)
        out = {k: REDACTED if k in hidden else v for k, v in out.items()}
    return out


def token_data(t: m.DelegationToken) -> dict[str, Any]:
    return {
        "tokenId": t.token_id, "owner": t.owner, "tokenRequester": t.requester,
        "renewers": t.renewers, "issueTimestamp": t.issue_timestamp,
        "maxTimestamp": t.max_timestamp, "expiryTimestamp": t.expiration_timestamp,
    }


def provenance_data(p: m.Provenance) -> dict[str, Any]:
    return {"offset": p.offset, "epoch": p.epoch, "timeMs": p.time_ms,
            "time": iso_zoned_utc(p.time_ms)}
