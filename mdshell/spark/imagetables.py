"""The tables of an image: topics, partitions, brokers, controllers, endpoints, features,
configs, ACLs, quotas, SCRAM users, delegation tokens and voters, one row per entry, secrets
redacted unless the view shows them.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ..image import model as m
from ..image.names import (
    ACL_OPERATIONS,
    CONFIG_RESOURCE_TYPES,
    LEADER_RECOVERY_STATES,
    METADATA_VERSION_FEATURE,
    PATTERN_TYPES,
    PERMISSION_TYPES,
    RESOURCE_TYPES,
    SCRAM_MECHANISMS,
    SECURITY_PROTOCOLS,
    name_of,
)
from ..source.loginfo import quorum_info
from ..tree.redact import REDACTED, is_sensitive_config, secret_fields
from ..wire.kinds import RecordKind
from ..wire.primitives import uuid_str
from .columns import INTS, STRS, View, arrow_table, empty_columns, shown_or_redacted

TOPICS = pa.schema([("name", pa.string()), ("topic_id", pa.string()),
                    ("partitions", pa.int32()), ("replication_factor", pa.int32())])


def topics(view: View) -> pa.Table:
    cols = empty_columns(TOPICS)
    for name, t in sorted(view.loaded.image.topics_by_name.items()):
        first = t.partition(min(t.partitions)) if t.partitions else None
        cols["name"].append(name)
        cols["topic_id"].append(uuid_str(t.id))
        cols["partitions"].append(len(t.partitions))
        cols["replication_factor"].append(len(first.replicas) if first else None)
    return arrow_table(TOPICS, cols)


PARTITIONS = pa.schema([
    ("topic", pa.string()), ("topic_id", pa.string()), ("partition", pa.int32()),
    ("leader", pa.int32()), ("leader_epoch", pa.int32()), ("partition_epoch", pa.int32()),
    ("replicas", INTS), ("isr", INTS), ("elr", INTS), ("last_known_elr", INTS),
    ("adding_replicas", INTS), ("removing_replicas", INTS),
    ("leader_recovery_state", pa.string()), ("directories", STRS),
])


def partitions(view: View) -> pa.Table:
    """Built per distinct partition state: fresh partitions are held as undecoded records
    whose bytes after PartitionId and TopicId depend only on the state, and a large image has
    few distinct states; each is decoded once and its cells gathered with Arrow ``take``."""
    names: list[str] = []
    ids: list[str] = []
    counts: list[int] = []
    pids, index = array("i"), array("i")
    states: dict[tuple[int, bytes], int] = {}
    distinct: list[m.Partition] = []
    for name, t in sorted(view.loaded.image.topics_by_name.items()):
        names.append(name)
        ids.append(uuid_str(t.id))
        before = len(pids)
        parts = t.partitions
        for pid in sorted(parts):
            p = parts[pid]
            if isinstance(p, tuple):
                buf, body, end, version = p
                key = (version, bytes(buf[body + 20:end]))  # after PartitionId, TopicId
                i = states.get(key)
                if i is None:
                    decoded = t.partition(pid)
                    if decoded is None:
                        continue
                    i = states[key] = len(distinct)
                    distinct.append(decoded)
            else:
                i = len(distinct)
                distinct.append(p)
            pids.append(pid)
            index.append(i)
        counts.append(len(pids) - before)
    cols = empty_columns(PARTITIONS)
    for p in distinct:
        partition_state(cols, p)
        cols["directories"].append([uuid_str(d) for d in p.directories])
    topic = pa.array(np.repeat(np.arange(len(names), dtype=np.int32), counts))
    take = pa.array(np.frombuffer(index, np.int32))
    cols["topic"] = pa.array(names, pa.string()).take(topic)
    cols["topic_id"] = pa.array(ids, pa.string()).take(topic)
    cols["partition"] = pa.array(np.frombuffer(pids, np.int32))
    return pa.Table.from_arrays([
        cols[f.name] if f.name in ("topic", "topic_id", "partition")
        else pa.array(cols[f.name], f.type).take(take) for f in PARTITIONS], schema=PARTITIONS)


def partition_state(cols: dict[str, list[Any]], p: m.Partition) -> None:
    cols["leader"].append(p.leader)
    cols["leader_epoch"].append(p.leader_epoch)
    cols["partition_epoch"].append(p.partition_epoch)
    cols["replicas"].append(p.replicas)
    cols["isr"].append(p.isr)
    cols["elr"].append(p.elr)
    cols["last_known_elr"].append(p.last_known_elr)
    cols["adding_replicas"].append(p.adding_replicas)
    cols["removing_replicas"].append(p.removing_replicas)
    cols["leader_recovery_state"].append(name_of(LEADER_RECOVERY_STATES,
                                                 p.leader_recovery_state))


BROKERS = pa.schema([
    ("id", pa.int32()), ("epoch", pa.int64()), ("incarnation_id", pa.string()),
    ("rack", pa.string()), ("fenced", pa.bool_()), ("in_controlled_shutdown", pa.bool_()),
    ("is_migrating_zk_broker", pa.bool_()), ("log_dirs", STRS),
])


def brokers(view: View) -> pa.Table:
    cols = empty_columns(BROKERS)
    for bid, b in sorted(view.loaded.image.brokers.items()):
        for col, v in (("id", bid), ("epoch", b.epoch), ("incarnation_id",
                       uuid_str(b.incarnation_id)), ("rack", b.rack), ("fenced", b.fenced),
                       ("in_controlled_shutdown", b.in_controlled_shutdown),
                       ("is_migrating_zk_broker", b.is_migrating_zk_broker),
                       ("log_dirs", [uuid_str(d) for d in b.directories])):
            cols[col].append(v)
    return arrow_table(BROKERS, cols)


CONTROLLERS = pa.schema([("id", pa.int32()), ("incarnation_id", pa.string()),
                         ("zk_migration_ready", pa.bool_())])


def controllers(view: View) -> pa.Table:
    cols = empty_columns(CONTROLLERS)
    for cid, c in sorted(view.loaded.image.controllers.items()):
        cols["id"].append(cid)
        cols["incarnation_id"].append(uuid_str(c.incarnation_id))
        cols["zk_migration_ready"].append(c.zk_migration_ready)
    return arrow_table(CONTROLLERS, cols)


ENDPOINTS = pa.schema([("node", pa.int32()), ("kind", pa.string()), ("listener", pa.string()),
                       ("host", pa.string()), ("port", pa.int32()), ("protocol", pa.string())])


def _nodes(image: m.Image) -> Iterator[tuple[int, str, Any]]:
    for bid, b in sorted(image.brokers.items()):
        yield bid, "broker", b
    for cid, c in sorted(image.controllers.items()):
        yield cid, "controller", c


def endpoints(view: View) -> pa.Table:
    cols = empty_columns(ENDPOINTS)
    for node, kind, reg in _nodes(view.loaded.image):
        for e in reg.listeners.values():
            for col, v in (("node", node), ("kind", kind), ("listener", e.name),
                           ("host", e.host), ("port", e.port),
                           ("protocol", name_of(SECURITY_PROTOCOLS, e.security_protocol))):
                cols[col].append(v)
    return arrow_table(ENDPOINTS, cols)


FEATURES = pa.schema([("name", pa.string()), ("level", pa.int32())])


def features(view: View) -> pa.Table:
    image = view.loaded.image
    levels = dict(image.finalized_features)
    if image.metadata_version is not None:
        levels[METADATA_VERSION_FEATURE] = image.metadata_version
    names = sorted(levels)
    return arrow_table(FEATURES, {"name": names, "level": [levels[n] for n in names]})


SUPPORTED = pa.schema([("node", pa.int32()), ("kind", pa.string()), ("feature", pa.string()),
                       ("min_version", pa.int32()), ("max_version", pa.int32())])


def supported_features(view: View) -> pa.Table:
    cols = empty_columns(SUPPORTED)
    for node, kind, reg in _nodes(view.loaded.image):
        for name, (lo, hi) in sorted(reg.supported_features.items()):
            for col, v in (("node", node), ("kind", kind), ("feature", name),
                           ("min_version", lo), ("max_version", hi)):
                cols[col].append(v)
    return arrow_table(SUPPORTED, cols)


CONFIGS = pa.schema([("resource_type", pa.string()), ("resource_name", pa.string()),
                     ("name", pa.string()), ("value", pa.string())])


def configs(view: View) -> pa.Table:
    cols = empty_columns(CONFIGS)
    for (rtype, rname), values in sorted(view.loaded.image.configs.items()):
        for key, value in sorted(values.items()):
            if is_sensitive_config(key) and not view.show_secrets:
                value = REDACTED
            for col, v in (("resource_type", name_of(CONFIG_RESOURCE_TYPES, rtype)),
                           ("resource_name", rname), ("name", key), ("value", value)):
                cols[col].append(v)
    return arrow_table(CONFIGS, cols)


ACLS = pa.schema([("id", pa.string()), ("resource_type", pa.string()),
                  ("resource_name", pa.string()), ("pattern_type", pa.string()),
                  ("principal", pa.string()), ("host", pa.string()),
                  ("operation", pa.string()), ("permission_type", pa.string())])


def acls(view: View) -> pa.Table:
    cols = empty_columns(ACLS)
    for aid, a in sorted(view.loaded.image.acls.items()):
        for col, v in (("id", uuid_str(aid)),
                       ("resource_type", name_of(RESOURCE_TYPES, a.resource_type)),
                       ("resource_name", a.resource_name),
                       ("pattern_type", name_of(PATTERN_TYPES, a.pattern_type)),
                       ("principal", a.principal), ("host", a.host),
                       ("operation", name_of(ACL_OPERATIONS, a.operation)),
                       ("permission_type", name_of(PERMISSION_TYPES, a.permission_type))):
            cols[col].append(v)
    return arrow_table(ACLS, cols)


QUOTAS = pa.schema([("entity", pa.string()), ("user", pa.string()),
                    ("client_id", pa.string()), ("ip", pa.string()), ("key", pa.string()),
                    ("value", pa.float64())])
_DEFAULT = "<default>"


def quotas(view: View) -> pa.Table:
    """One row per quota value; an entity part absent is null, a default one ``<default>``."""
    cols = empty_columns(QUOTAS)
    for entity, values in sorted(view.loaded.image.client_quotas.items(),
                                 key=lambda kv: repr(kv[0])):
        parts = {t: (n if n is not None else _DEFAULT) for t, n in entity}
        label = ",".join(f"{t}={v}" for t, v in parts.items())
        for key, value in sorted(values.items()):
            for col, v in (("entity", label), ("user", parts.get("user")),
                           ("client_id", parts.get("client-id")), ("ip", parts.get("ip")),
                           ("key", key), ("value", value)):
                cols[col].append(v)
    return arrow_table(QUOTAS, cols)


SCRAM_USERS = pa.schema([("user", pa.string()), ("mechanism", pa.string()),
                         ("iterations", pa.string()), ("salt", pa.string()),
                         ("stored_key", pa.string()), ("server_key", pa.string())])


def scram_users(view: View) -> pa.Table:
    """SCRAM users: the fields the record schema marks secret are redacted (as in the tree)."""
    cols = empty_columns(SCRAM_USERS)
    hidden = set() if view.show_secrets else secret_fields(RecordKind.USER_SCRAM_CREDENTIAL)
    for (mech, user), s in sorted(view.loaded.image.scram.items()):
        for col, v in (("user", user), ("mechanism", name_of(SCRAM_MECHANISMS, mech)),
                       ("iterations", str(s.iterations)), ("salt", s.salt.hex()),
                       ("stored_key", s.stored_key.hex()), ("server_key", s.server_key.hex())):
            cols[col].append(REDACTED if _camel(col) in hidden else v)
    return arrow_table(SCRAM_USERS, cols)


def _camel(column: str) -> str:
    """A column's record field name: ``stored_key`` -> ``storedKey``."""
    head, *rest = column.split("_")
    return head + "".join(w.title() for w in rest)


TOKENS = pa.schema([("token_id", pa.string()), ("owner", pa.string()),
                    ("requester", pa.string()), ("renewers", pa.string()),
                    ("issue_timestamp", pa.string()), ("max_timestamp", pa.string()),
                    ("expiration_timestamp", pa.string())])


def tokens(view: View) -> pa.Table:
    """Delegation tokens, redacted as the schema marks them: the record holds no HMAC, so owner,
    renewers and times stay readable (as in the tree and ``records``)."""
    cols = empty_columns(TOKENS)
    show = view.show_secrets
    secret = secret_fields(RecordKind.DELEGATION_TOKEN)
    for _, t in sorted(view.loaded.image.delegation_tokens.items()):
        for col, v in (("token_id", t.token_id), ("owner", t.owner), ("requester", t.requester),
                       ("renewers", ",".join(t.renewers)),
                       ("issue_timestamp", str(t.issue_timestamp)),
                       ("max_timestamp", str(t.max_timestamp)),
                       ("expiration_timestamp", str(t.expiration_timestamp))):
            hidden = _camel(col) in secret
            cols[col].append(shown_or_redacted(v, show) if hidden else v)
    return arrow_table(TOKENS, cols)


VOTERS = pa.schema([("id", pa.int32()), ("directory_id", pa.string()),
                    ("endpoints", STRS), ("kraft_min_version", pa.int32()),
                    ("kraft_max_version", pa.int32())])


def voters(view: View) -> pa.Table:
    """The KRaft voters (from the log's Voters record; empty for a static quorum)."""
    cols = empty_columns(VOTERS)
    loaded = view.loaded
    for v in quorum_info(view.source, loaded.controls, loaded.end_offset).voters or []:
        lo, hi = v.kraft_version_range or (None, None)
        for col, x in (("id", v.id),
                       ("directory_id", uuid_str(v.directory_id) if v.directory_id else None),
                       ("endpoints", [f"{n}://{h}:{p}" for n, h, p in v.endpoints]),
                       ("kraft_min_version", lo), ("kraft_max_version", hi)):
            cols[col].append(x)
    return arrow_table(VOTERS, cols)
