"""Arrow tables from an image, its log and its history: the one place mdshell/spark reads the core.

Every table is built column by column into a ``pyarrow.Table`` (never a row at a time through
Spark). Secrets follow the shell's rules: redacted unless ``show_secrets``. The records of a
log come from the project's own reader (:func:`mdshell.logscan.iter_log`), so the damage rules
(CRC, truncation, undecodable batches) are the shell's, and so are the warnings.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

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
from ..image.replay import ImageBuilder, merge_partition
from ..problems import Problem, SourceError
from ..session import Loaded, load
from ..source import DirectorySource, Source, open_source
from ..source.layout import scan_layout
from ..source.localfiles import read_properties, read_quorum_state
from ..source.loginfo import quorum_info
from ..source.logscan import LogRecord, iter_log
from ..tree.logrecord import record_payload as payload_of
from ..tree.redact import REDACTED, is_sensitive_config, secret_fields
from ..wire.kinds import RecordKind
from ..wire.primitives import uuid_str
from ..wire.records import METADATA

# Spark's own Arrow types (list items named "element", microsecond timestamps), so that the
# data source's batches match the schema Spark derives from these.
INTS = pa.list_(pa.field("element", pa.int32()))
STRS = pa.list_(pa.field("element", pa.string()))
TIME = pa.timestamp("us", tz="UTC")


@dataclass
class View:
    """What a table is built from: a source, what was loaded from it, and the secrets rule."""

    source: Source
    loaded: Loaded
    show_secrets: bool = False


def _table(schema: pa.Schema, cols: dict[str, list[Any]]) -> pa.Table:
    return pa.Table.from_pydict({f.name: cols[f.name] for f in schema}, schema=schema)


def _columns(schema: pa.Schema) -> dict[str, list[Any]]:
    return {f.name: [] for f in schema}


def _micros(millis: list[int | None]) -> list[int | None]:
    return [None if t is None else t * 1000 for t in millis]


def _secret(value: Any, show: bool) -> Any:
    return value if show else REDACTED


# ------------------------------------------------------------------ records

RECORDS = pa.schema([
    ("offset", pa.int64()), ("epoch", pa.int32()), ("timestamp", pa.int64()), ("time", TIME),
    ("file", pa.string()), ("control", pa.bool_()), ("type", pa.string()),
    ("version", pa.int32()), ("broker_id", pa.int32()), ("topic_id", pa.string()),
    ("partition_id", pa.int32()), ("resource_type", pa.int32()),
    ("resource_name", pa.string()), ("name", pa.string()), ("payload", pa.string()),
])
# Key fields lifted out of the payload into columns: broker_id, topic_id, partition_id,
# resource_type, resource_name and name (of a config or topic), null when a record has none.


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def records_table(records: Iterable[LogRecord], show_secrets: bool,
                  payload: bool = True) -> pa.Table:
    """The ``records`` table of decoded log records (payload as JSON, secrets redacted;
    without ``payload`` that column is null, which halves the cost)."""
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    rows: list[tuple[Any, ...]] = []
    add = rows.append
    for r in records:
        v = r.value
        raw = v if isinstance(v, dict) else {}
        tid = raw.get("topicId")
        if not payload:
            text = None
        elif isinstance(v, dict) and not v:
            text = "{}"  # no fields (NoOpRecord, most of a quiet log): nothing to encode
        else:
            text = dumps(payload_of(r, show_secrets))
        add((r.offset, r.epoch, r.timestamp, r.timestamp * 1000, r.file, r.control, r.name,
             r.version, _int(raw.get("brokerId")),
             uuid_str(tid) if isinstance(tid, bytes) else None, _int(raw.get("partitionId")),
             _int(raw.get("resourceType")), _str(raw.get("resourceName")),
             _str(raw.get("name")), text))
    columns: list[Any] = list(zip(*rows, strict=True)) if rows else [[] for _ in RECORDS]
    return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, RECORDS,
                                                                     strict=True)],
                                schema=RECORDS)


def log_records(view: View) -> pa.Table:
    problems: list[Problem] = []
    return records_table(iter_log(view.source, problems=problems), view.show_secrets)


# ------------------------------------------------------------------ image tables

TOPICS = pa.schema([("name", pa.string()), ("topic_id", pa.string()),
                    ("partitions", pa.int32()), ("replication_factor", pa.int32())])


def topics(view: View) -> pa.Table:
    cols = _columns(TOPICS)
    for name, t in sorted(view.loaded.image.topics_by_name.items()):
        first = t.partition(min(t.partitions)) if t.partitions else None
        cols["name"].append(name)
        cols["topic_id"].append(uuid_str(t.id))
        cols["partitions"].append(len(t.partitions))
        cols["replication_factor"].append(len(first.replicas) if first else None)
    return _table(TOPICS, cols)


PARTITIONS = pa.schema([
    ("topic", pa.string()), ("topic_id", pa.string()), ("partition", pa.int32()),
    ("leader", pa.int32()), ("leader_epoch", pa.int32()), ("partition_epoch", pa.int32()),
    ("replicas", INTS), ("isr", INTS), ("elr", INTS), ("last_known_elr", INTS),
    ("adding_replicas", INTS), ("removing_replicas", INTS),
    ("leader_recovery_state", pa.string()), ("directories", STRS),
])


def partitions(view: View) -> pa.Table:
    cols = _columns(PARTITIONS)
    for name, t in sorted(view.loaded.image.topics_by_name.items()):
        tid = uuid_str(t.id)
        for pid in sorted(t.partitions):
            p = t.partition(pid)
            if p is None:
                continue
            cols["topic"].append(name)
            cols["topic_id"].append(tid)
            cols["partition"].append(pid)
            _partition_state(cols, p)
            cols["directories"].append([uuid_str(d) for d in p.directories])
    return _table(PARTITIONS, cols)


def _partition_state(cols: dict[str, list[Any]], p: m.Partition) -> None:
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
    cols = _columns(BROKERS)
    for bid, b in sorted(view.loaded.image.brokers.items()):
        for col, v in (("id", bid), ("epoch", b.epoch), ("incarnation_id",
                       uuid_str(b.incarnation_id)), ("rack", b.rack), ("fenced", b.fenced),
                       ("in_controlled_shutdown", b.in_controlled_shutdown),
                       ("is_migrating_zk_broker", b.is_migrating_zk_broker),
                       ("log_dirs", [uuid_str(d) for d in b.directories])):
            cols[col].append(v)
    return _table(BROKERS, cols)


CONTROLLERS = pa.schema([("id", pa.int32()), ("incarnation_id", pa.string()),
                         ("zk_migration_ready", pa.bool_())])


def controllers(view: View) -> pa.Table:
    cols = _columns(CONTROLLERS)
    for cid, c in sorted(view.loaded.image.controllers.items()):
        cols["id"].append(cid)
        cols["incarnation_id"].append(uuid_str(c.incarnation_id))
        cols["zk_migration_ready"].append(c.zk_migration_ready)
    return _table(CONTROLLERS, cols)


ENDPOINTS = pa.schema([("node", pa.int32()), ("kind", pa.string()), ("listener", pa.string()),
                       ("host", pa.string()), ("port", pa.int32()), ("protocol", pa.string())])


def _nodes(image: m.Image) -> Iterator[tuple[int, str, Any]]:
    for bid, b in sorted(image.brokers.items()):
        yield bid, "broker", b
    for cid, c in sorted(image.controllers.items()):
        yield cid, "controller", c


def endpoints(view: View) -> pa.Table:
    cols = _columns(ENDPOINTS)
    for node, kind, reg in _nodes(view.loaded.image):
        for e in reg.listeners.values():
            for col, v in (("node", node), ("kind", kind), ("listener", e.name),
                           ("host", e.host), ("port", e.port),
                           ("protocol", name_of(SECURITY_PROTOCOLS, e.security_protocol))):
                cols[col].append(v)
    return _table(ENDPOINTS, cols)


FEATURES = pa.schema([("name", pa.string()), ("level", pa.int32())])


def features(view: View) -> pa.Table:
    image = view.loaded.image
    levels = dict(image.finalized_features)
    if image.metadata_version is not None:
        levels[METADATA_VERSION_FEATURE] = image.metadata_version
    names = sorted(levels)
    return _table(FEATURES, {"name": names, "level": [levels[n] for n in names]})


SUPPORTED = pa.schema([("node", pa.int32()), ("kind", pa.string()), ("feature", pa.string()),
                       ("min_version", pa.int32()), ("max_version", pa.int32())])


def supported_features(view: View) -> pa.Table:
    cols = _columns(SUPPORTED)
    for node, kind, reg in _nodes(view.loaded.image):
        for name, (lo, hi) in sorted(reg.supported_features.items()):
            for col, v in (("node", node), ("kind", kind), ("feature", name),
                           ("min_version", lo), ("max_version", hi)):
                cols[col].append(v)
    return _table(SUPPORTED, cols)


CONFIGS = pa.schema([("resource_type", pa.string()), ("resource_name", pa.string()),
                     ("name", pa.string()), ("value", pa.string())])


def configs(view: View) -> pa.Table:
    cols = _columns(CONFIGS)
    for (rtype, rname), values in sorted(view.loaded.image.configs.items()):
        for key, value in sorted(values.items()):
            if is_sensitive_config(key) and not view.show_secrets:
                value = REDACTED
            for col, v in (("resource_type", name_of(CONFIG_RESOURCE_TYPES, rtype)),
                           ("resource_name", rname), ("name", key), ("value", value)):
                cols[col].append(v)
    return _table(CONFIGS, cols)


ACLS = pa.schema([("id", pa.string()), ("resource_type", pa.string()),
                  ("resource_name", pa.string()), ("pattern_type", pa.string()),
                  ("principal", pa.string()), ("host", pa.string()),
                  ("operation", pa.string()), ("permission_type", pa.string())])


def acls(view: View) -> pa.Table:
    cols = _columns(ACLS)
    for aid, a in sorted(view.loaded.image.acls.items()):
        for col, v in (("id", uuid_str(aid)),
                       ("resource_type", name_of(RESOURCE_TYPES, a.resource_type)),
                       ("resource_name", a.resource_name),
                       ("pattern_type", name_of(PATTERN_TYPES, a.pattern_type)),
                       ("principal", a.principal), ("host", a.host),
                       ("operation", name_of(ACL_OPERATIONS, a.operation)),
                       ("permission_type", name_of(PERMISSION_TYPES, a.permission_type))):
            cols[col].append(v)
    return _table(ACLS, cols)


QUOTAS = pa.schema([("entity", pa.string()), ("user", pa.string()),
                    ("client_id", pa.string()), ("ip", pa.string()), ("key", pa.string()),
                    ("value", pa.float64())])
_DEFAULT = "<default>"


def quotas(view: View) -> pa.Table:
    """One row per quota value; an entity part absent is null, a default one ``<default>``."""
    cols = _columns(QUOTAS)
    for entity, values in sorted(view.loaded.image.client_quotas.items(),
                                 key=lambda kv: repr(kv[0])):
        parts = {t: (n if n is not None else _DEFAULT) for t, n in entity}
        label = ",".join(f"{t}={v}" for t, v in parts.items())
        for key, value in sorted(values.items()):
            for col, v in (("entity", label), ("user", parts.get("user")),
                           ("client_id", parts.get("client-id")), ("ip", parts.get("ip")),
                           ("key", key), ("value", value)):
                cols[col].append(v)
    return _table(QUOTAS, cols)


SCRAM_USERS = pa.schema([("user", pa.string()), ("mechanism", pa.string()),
                         ("iterations", pa.string()), ("salt", pa.string()),
                         ("stored_key", pa.string()), ("server_key", pa.string())])


def scram_users(view: View) -> pa.Table:
    """SCRAM users: the fields the record schema marks secret are redacted (as in the tree)."""
    cols = _columns(SCRAM_USERS)
    hidden = set() if view.show_secrets else secret_fields(RecordKind.USER_SCRAM_CREDENTIAL)
    for mech, users in sorted(view.loaded.image.scram.items()):
        for user, s in sorted(users.items()):
            for col, v in (("user", user), ("mechanism", name_of(SCRAM_MECHANISMS, mech)),
                           ("iterations", str(s.iterations)), ("salt", s.salt.hex()),
                           ("stored_key", s.stored_key.hex()),
                           ("server_key", s.server_key.hex())):
                cols[col].append(REDACTED if _camel(col) in hidden else v)
    return _table(SCRAM_USERS, cols)


def _camel(column: str) -> str:
    """A column's record field name: ``stored_key`` -> ``storedKey``."""
    head, *rest = column.split("_")
    return head + "".join(w.title() for w in rest)


TOKENS = pa.schema([("token_id", pa.string()), ("owner", pa.string()),
                    ("requester", pa.string()), ("renewers", pa.string()),
                    ("issue_timestamp", pa.string()), ("max_timestamp", pa.string()),
                    ("expiration_timestamp", pa.string())])


def tokens(view: View) -> pa.Table:
    """Delegation tokens: every field is redacted unless secrets are shown (as in the tree)."""
    cols = _columns(TOKENS)
    show = view.show_secrets
    for _, t in sorted(view.loaded.image.delegation_tokens.items()):
        for col, v in (("token_id", t.token_id), ("owner", t.owner), ("requester", t.requester),
                       ("renewers", ",".join(t.renewers)),
                       ("issue_timestamp", str(t.issue_timestamp)),
                       ("max_timestamp", str(t.max_timestamp)),
                       ("expiration_timestamp", str(t.expiration_timestamp))):
            cols[col].append(_secret(v, show))
    return _table(TOKENS, cols)


VOTERS = pa.schema([("id", pa.int32()), ("directory_id", pa.string()),
                    ("endpoints", STRS), ("kraft_min_version", pa.int32()),
                    ("kraft_max_version", pa.int32())])


def voters(view: View) -> pa.Table:
    """The KRaft voters (from the log's Voters record; empty for a static quorum)."""
    cols = _columns(VOTERS)
    loaded = view.loaded
    for v in quorum_info(view.source, loaded.controls, loaded.end_offset).voters or []:
        lo, hi = v.kraft_version_range or (None, None)
        for col, x in (("id", v.id),
                       ("directory_id", uuid_str(v.directory_id) if v.directory_id else None),
                       ("endpoints", [f"{n}://{h}:{p}" for n, h, p in v.endpoints]),
                       ("kraft_min_version", lo), ("kraft_max_version", hi)):
            cols[col].append(x)
    return _table(VOTERS, cols)


# ------------------------------------------------------------------ history

PARTITION_CHANGES = pa.schema([
    ("offset", pa.int64()), ("origin", pa.string()), ("epoch", pa.int32()),
    ("timestamp", pa.int64()), ("time", TIME), ("type", pa.string()), ("topic", pa.string()),
    ("topic_id", pa.string()), ("partition", pa.int32()), *[
        f for f in PARTITIONS if f.name in (
            "leader", "leader_epoch", "partition_epoch", "replicas", "isr", "elr",
            "last_known_elr", "adding_replicas", "removing_replicas",
            "leader_recovery_state")],
])
_PARTITION_RECORD, _PARTITION_CHANGE = RecordKind.PARTITION, RecordKind.PARTITION_CHANGE


def partition_changes(view: View) -> pa.Table:
    """Each PartitionRecord/PartitionChangeRecord from as far back as the data goes, with the
    partition's state once it applies (offset null for records from a snapshot)."""
    cols = _columns(PARTITION_CHANGES)

    def observe(b: ImageBuilder, key: int, ver: int, d: dict[str, Any], off: int) -> None:
        if key not in (_PARTITION_RECORD, _PARTITION_CHANGE):
            return
        topic = b.image.topics_by_id.get(d["topicId"])
        if key == _PARTITION_RECORD:
            after = m.partition_from_record(d)
        else:
            current = topic.partition(d["partitionId"]) if topic is not None else None
            if current is None:
                return
            after = merge_partition(current, d)
        batch = b.batch
        for col, v in (("offset", None if b.origin else off), ("origin", b.origin or "log"),
                       ("epoch", batch.epoch if batch else None),
                       ("timestamp", batch.max_timestamp if batch else None),
                       ("type", METADATA[key].name), ("topic", topic.name if topic else None),
                       ("topic_id", uuid_str(d["topicId"])),
                       ("partition", d["partitionId"])):
            cols[col].append(v)
        _partition_state(cols, after)

    load(view.source, upto=view.loaded.upto, observer=observe, history=True)
    cols["time"] = _micros(cols["timestamp"])
    return _table(PARTITION_CHANGES, cols)


Builder = Callable[[View], pa.Table]
# name -> (schema, builder, what it is)
TABLES: dict[str, tuple[pa.Schema, Builder, str]] = {
    "records": (RECORDS, log_records, "every record of the log segments, payload as JSON"),
    "topics": (TOPICS, topics, "topics of the image"),
    "partitions": (PARTITIONS, partitions, "partitions of the image, leader/ISR/replicas"),
    "brokers": (BROKERS, brokers, "registered brokers"),
    "controllers": (CONTROLLERS, controllers, "registered controllers"),
    "endpoints": (ENDPOINTS, endpoints, "listeners of brokers and controllers"),
    "features": (FEATURES, features, "finalized feature levels (metadata.version included)"),
    "supported_features": (SUPPORTED, supported_features,
                           "feature ranges each broker and controller supports"),
    "configs": (CONFIGS, configs, "dynamic configs (sensitive values redacted)"),
    "acls": (ACLS, acls, "ACL bindings"),
    "quotas": (QUOTAS, quotas, "client quotas, one row per value"),
    "scram_users": (SCRAM_USERS, scram_users, "SCRAM users (credentials redacted)"),
    "tokens": (TOKENS, tokens, "delegation tokens (redacted)"),
    "partition_changes": (PARTITION_CHANGES, partition_changes,
                          "leader/ISR/replicas of each partition after every change"),
    "voters": (VOTERS, voters, "KRaft voters from the log (dynamic quorum)"),
}


def build(name: str, view: View) -> pa.Table:
    return TABLES[name][1](view)


# ------------------------------------------------------------------ fleets (the data source)

def identify(directory: str) -> tuple[str, str | None]:
    """The ``__cluster_metadata-0`` directory a path names, and its cluster id
    (meta.properties, else quorum-state; None when neither says)."""
    ignored: list[Problem] = []
    layout = scan_layout(directory)
    if layout.log_dir:
        props = read_properties(os.path.join(layout.log_dir, "meta.properties"), ignored)
        if props and props.get("cluster.id"):
            return layout.directory, props["cluster.id"]
    state = read_quorum_state(layout.directory, ignored)
    cid = state.get("clusterId") if state else None
    return layout.directory, cid if isinstance(cid, str) and cid else None


@dataclass(frozen=True)
class LogFile:
    """One segment or snapshot of one directory: a unit of parallel reading. A segment is
    read as the log's offsets ``first``-``last`` (up to the next segment's base offset)."""

    directory: str
    path: str
    role: str  # "segment" or "snapshot"
    first: int = 0
    last: int | None = None


def log_files(directory: str) -> list[LogFile]:
    """The segments and ready snapshots of a directory (bootstrap snapshots included)."""
    layout = scan_layout(directory)
    segs = layout.segments
    files = [LogFile(layout.directory, s.path, "segment", s.base_offset,
                     segs[i + 1].base_offset - 1 if i + 1 < len(segs) else None)
             for i, s in enumerate(segs)]
    files += [LogFile(layout.directory, c.path, "snapshot") for c in layout.checkpoints]
    return files


def iter_file(f: LogFile, problems: list[Problem]) -> Iterator[LogRecord]:
    """The records of one file as the shell's reader gives them: a snapshot whole, a segment
    as its offset range of the log (the damage and continuity rules apply within it)."""
    source = DirectorySource(f.directory)
    if f.role == "snapshot":
        cp = next(c for c in source.layout.checkpoints if c.path == f.path)
        return iter_log(source, snapshot=cp, problems=problems)
    return iter_log(source, first=f.first, last=f.last, problems=problems)


def file_records(f: LogFile, show_secrets: bool, chunk: int = 65536, payload: bool = True
                 ) -> Iterator[tuple[pa.Table, list[str]]]:
    """The records of one file in Arrow chunks, with the reader's warnings for the file (given
    with the last chunk)."""
    problems: list[Problem] = []
    try:
        it = iter_file(f, problems)
        while True:
            batch = [r for _, r in zip(range(chunk), it, strict=False)]
            if len(batch) < chunk:
                yield (records_table(batch, show_secrets, payload),
                       [p.message for p in problems])
                return
            yield records_table(batch, show_secrets, payload), []
    except SourceError as e:
        yield records_table([], show_secrets), [*(p.message for p in problems), str(e)]


def image_table(directory: str, name: str, at: int | None,
                show_secrets: bool) -> tuple[pa.Table, list[str]]:
    """One image table of a directory as of ``at`` (None: its end), with the load warnings."""
    source = open_source(directory)
    loaded = load(source, upto=at)
    table = build(name, View(source, loaded, show_secrets))
    return table, [p.message for p in loaded.problems]
