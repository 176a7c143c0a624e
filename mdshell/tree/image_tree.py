"""``/image``: the metadata image, laid out exactly as Kafka's shell lays it out.

Two layouts: 3.7's (the default) and 4.x's, as Kafka 4.3 prints it: ACLs under ``acls/byId``
and rendered as a Java record (``StandardAcl[...]``), ``features`` without ``zkMigrationState``
(gone in 4.2) and the metadata version as an ``Optional``, brokers with their cordoned
directories (4.3). Leaves are otherwise identical.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ..image import model as m
from ..image.names import (
    CONFIG_RESOURCE_TYPES,
    SCRAM_MECHANISMS,
    ZK_MIGRATION_STATES,
    metadata_version_name,
    name_of,
)
from ..wire.frames import PARTITION_PREFIX_SIZE
from ..wire.primitives import uuid_from_str, uuid_str
from . import leaves as lv
from .javafmt import java_double
from .jsontext import dumps, string
from .node import Dir, Leaf, Node, RenderOptions, StaticDir, Subtree, Value
from .redact import REDACTED, is_sensitive_config

CLIENT_ID, IP, USER = "client-id", "ip", "user"
_ENTITY_ORDER = {CLIENT_ID: (0, "clientId"), IP: (1, "ip"), USER: (2, "user")}
DEFAULT_ENTITY = "<default>"


def image_node(img: m.Image, layout: str = "3.7") -> Node:
    new = layout == "4.x"
    return StaticDir({
        "acls": lambda: StaticDir({"byId": lambda: _acls(img, new)}) if new else _acls(img, new),
        "clientQuotas": lambda: _client_quotas(img),
        "cluster": lambda: StaticDir({
            "brokers": lambda: _brokers(img, new),
            "controllers": lambda: _controllers(img),
        }),
        "configs": lambda: _configs(img),
        "delegationToken": lambda: _tokens(img),
        "features": lambda: _features(img, new),
        "producerIds": lambda: StaticDir({
            "nextProducerId": lambda: Value(str(img.next_producer_id), img.next_producer_id),
        }),
        "provenance": lambda: Leaf(lambda o: lv.provenance_text(img.provenance),
                                   lambda o: lv.provenance_data(img.provenance)),
        "scram": lambda: _scram(img),
        "topics": lambda: StaticDir({
            "byName": lambda: _topics_by_name(img),
            "byId": lambda: _topics_by_id(img),
        }),
    })


def _int_keyed(mapping: dict[int, Any], make: Callable[[Any], Node]) -> Dir:
    def child(name: str) -> Node | None:
        try:
            item = mapping.get(int(name))
        except ValueError:
            return None
        return None if item is None else make(item)
    return Dir(lambda: [str(k) for k in mapping], child, mapping)


def _brokers(img: m.Image, new: bool) -> Node:
    return _int_keyed(img.brokers, lambda b: Leaf(lambda o: lv.broker_text(b, new),
                                                  lambda o: lv.broker_data(b)))


def _controllers(img: m.Image) -> Node:
    return _int_keyed(img.controllers, lambda c: Leaf(lambda o: lv.controller_text(c),
                                                      lambda o: lv.controller_data(c)))


def _features(img: m.Image, new: bool) -> Node:
    def child(name: str) -> Node | None:
        if name == "metadataVersion":
            level = img.metadata_version_level
            text = metadata_version_name(level)
            if new:  # 4.x: an Optional, empty until a metadata.version record is read
                known = img.metadata_version is not None
                text = f"Optional[{text}]" if known else "Optional.empty"
            return Value(text, {"name": metadata_version_name(level), "level": level})
        if name == "zkMigrationState" and not new:
            return Value(name_of(ZK_MIGRATION_STATES, img.zk_migration_state))
        if name.startswith("finalized_"):
            # Kafka's shell answers 0 for any name; only finalized features exist here.
            found = img.finalized_features.get(name[len("finalized_"):])
            return None if found is None else Value(str(found), found)
        return None

    def names() -> list[str]:
        fixed = ["metadataVersion"] if new else ["metadataVersion", "zkMigrationState"]
        return fixed + [f"finalized_{f}" for f in img.finalized_features]
    return Dir(names, child)


def topic_node(topic: m.Topic) -> Node:
    return TopicDir(topic)


class TopicDir(Dir):
    """A topic: ``name``, ``id`` and its partitions by number. ``tree`` prints it in one go
    (no node per partition), with the partitions' text looked up by their record bytes."""

    __slots__ = ("topic",)

    def __init__(self, topic: m.Topic) -> None:
        def child(name: str) -> Node | None:
            if name == "name":
                return Value(topic.name)
            if name == "id":
                return Value(uuid_str(topic.id))
            try:
                pid = int(name)
            except ValueError:
                return None
            if pid not in topic.partitions:
                return None
            return PartitionLeaf(topic, pid)

        def child_ident(name: str) -> object | None:
            return topic.partitions.get(int(name)) if name.isdigit() else None

        def changed(other: object) -> list[str] | None:
            if not isinstance(other, m.Topic):
                return None
            return ["name", "id", *(_changed_keys(topic.partitions, other.partitions, str)
                                    or ())]

        super().__init__(lambda: ["name", "id", *map(str, topic.partitions)], child, topic,
                         child_ident, changed)
        self.topic = topic

    def subtree(self, opts: RenderOptions, indent: int) -> Subtree:
        pad = "  " * indent
        inner = pad + "  "
        topic = self.topic
        parts = topic.partitions
        texts = _LAZY_TEXT
        skip = PARTITION_PREFIX_SIZE
        made = 0  # texts not found ready-made
        lines: list[str] = []
        add = lines.append
        # Sorted as names, like every directory: numbers (even "-1") come before "id".
        for pid in sorted(parts, key=str):
            p = parts[pid]
            if type(p) is tuple:
                buf, body, end, version = p
                text = texts.get((version, bytes(buf[body + skip:end])))
                if text is None:
                    text = _lazy_text(topic, pid, p)
                    made += 1
            else:
                text = lv.partition_text(p)  # type: ignore[arg-type]
                made += 1
            add(f"{pad}{pid}:")
            add(inner + text)
        lines += (f"{pad}id:", inner + uuid_str(topic.id), f"{pad}name:", inner + topic.name)
        return Subtree(lines, made * 4 > len(parts))

    def subtree_json(self, opts: RenderOptions, level: int) -> list[str]:
        topic = self.topic
        parts = topic.partitions
        pad = "  " * (level + 1)
        skip = PARTITION_PREFIX_SIZE
        cached = _at_level(_LAZY_JSON, level + 1)  # the partitions' level
        out: list[str] = []
        add = out.append
        for pid in sorted(parts, key=str):  # as names: numbers (even "-1") before "id"
            p = parts[pid]
            if type(p) is tuple:
                buf, body, end, version = p
                text = cached.get((version, bytes(buf[body + skip:end])))
                if text is None:
                    text = _lazy_json(topic, pid, p, level + 1)
            else:
                text = _part_json(topic, pid, level + 1)
            add(f'{pad}"{pid}": {text}')
        add(f"{pad}\"id\": {string(uuid_str(topic.id))}")
        add(f"{pad}\"name\": {string(topic.name)}")
        return ["{\n", ",\n".join(out), "\n" + "  " * level + "}"]


def _changed_keys(mine: dict[Any, Any], other: object,
                  name: Callable[[Any], str]) -> list[str] | None:
    """The names of the entries of two maps that are not the same object on both sides."""
    if not isinstance(other, dict):
        return None  # not comparable: look at every child
    get = other.get
    return [*(name(k) for k, v in mine.items() if get(k) is not v),
            *(name(k) for k in other.keys() - mine.keys())]


class PartitionLeaf(Node):
    """One partition of a topic (made by the hundred thousand: no closures)."""

    is_dir = False
    __slots__ = ("pid", "topic")

    def __init__(self, topic: m.Topic, pid: int) -> None:
        self.topic = topic
        self.pid = pid

    def text(self, opts: RenderOptions) -> str:
        return _part_text(self.topic, self.pid)

    def data(self, opts: RenderOptions) -> Any:
        return _part_data(self.topic, self.pid)

    def data_json(self, opts: RenderOptions, level: int) -> str:
        p = self.topic.partitions.get(self.pid)
        if type(p) is tuple:
            return _lazy_json(self.topic, self.pid, p, level)
        return _part_json(self.topic, self.pid, level)

    def key(self) -> Any:
        return _part_key(self.topic, self.pid)

    def ident(self) -> object | None:
        return self.topic.partitions.get(self.pid)


def _part_key(topic: m.Topic, pid: int) -> Any:
    """The record bytes while undecoded (cheap to compare), else the partition itself."""
    p = topic.partitions.get(pid)
    if isinstance(p, tuple):
        buf, body, end, version = p
        return (bytes(buf[body:end]), version)
    return p


UNDECODABLE_PARTITION = "[undecodable PartitionRecord: see the warning]"


def _part_text(topic: m.Topic, pid: int) -> str:
    p = topic.partitions.get(pid)
    if type(p) is tuple:
        return _lazy_text(topic, pid, p)
    return UNDECODABLE_PARTITION if p is None else lv.partition_text(p)  # type: ignore[arg-type]


# The text of an undecoded PartitionRecord by (version, its bytes past the partition and
# topic ids), which is all the text depends on. Replica sets repeat across a cluster's
# partitions (870 distinct texts among 100k generated partitions; one on a single broker), so
# most partitions print without being decoded. Bounded: emptied when full.
_LAZY_TEXT: dict[tuple[int, bytes], str] = {}
LAZY_TEXT_MAX = 16_384


def _lazy_text(topic: m.Topic, pid: int, lazy: m.LazyPartition) -> str:
    buf, body, end, version = lazy
    key = (version, bytes(buf[body + PARTITION_PREFIX_SIZE:end]))
    text = _LAZY_TEXT.get(key)
    if text is None:
        p = m.decode_clean(lazy)
        if p is None:  # damaged, or from a newer Kafka: the topic decodes it and says what
            checked = topic.partition(pid)
            return UNDECODABLE_PARTITION if checked is None else lv.partition_text(checked)
        if len(_LAZY_TEXT) >= LAZY_TEXT_MAX:
            _LAZY_TEXT.clear()
        text = _LAZY_TEXT[key] = lv.partition_text(p)
    return text


def _part_data(topic: m.Topic, pid: int) -> Any:
    p = topic.partition(pid)
    return {"error": UNDECODABLE_PARTITION} if p is None else lv.partition_data(p)


# The JSON of an undecoded PartitionRecord placed ``level`` deep, by level, then as
# _LAZY_TEXT by the record bytes the data depends on. Bounded: emptied when full.
_LAZY_JSON: dict[int, dict[Any, str]] = {}


def _lazy_json(topic: m.Topic, pid: int, lazy: m.LazyPartition, level: int) -> str:
    buf, body, end, version = lazy
    key = (version, bytes(buf[body + PARTITION_PREFIX_SIZE:end]))
    cached = _at_level(_LAZY_JSON, level)
    text = cached.get(key)
    if text is None:
        p = m.decode_clean(lazy)
        if p is None:  # damaged, or from a newer Kafka: the topic decodes it and says what
            return _part_json(topic, pid, level)
        if len(cached) >= LAZY_TEXT_MAX:
            cached.clear()
        text = cached[key] = dumps(lv.partition_data(p), level)
    return text


def _part_json(topic: m.Topic, pid: int, level: int) -> str:
    """A partition's JSON; a decoded one (changed in the log after the snapshot) looked up
    by its fields, which repeat like the records' bytes."""
    p = topic.partitions.get(pid)
    if type(p) is not m.Partition:
        return dumps(_part_data(topic, pid), level)
    key = (tuple(p.replicas), tuple(p.directories), tuple(p.isr), tuple(p.removing_replicas),
           tuple(p.adding_replicas), tuple(p.elr), tuple(p.last_known_elr), p.leader,
           p.leader_recovery_state, p.leader_epoch, p.partition_epoch)
    cached = _at_level(_DECODED_JSON, level)
    text = cached.get(key)
    if text is None:
        if len(cached) >= LAZY_TEXT_MAX:
            cached.clear()
        text = cached[key] = dumps(lv.partition_data(p), level)
    return text


# The JSON of a decoded partition by level, then by its fields. Bounded: emptied when full.
_DECODED_JSON: dict[int, dict[Any, str]] = {}


def _at_level(store: dict[int, dict[Any, str]], level: int) -> dict[Any, str]:
    """The texts of ``store`` placed ``level`` deep (JSON's indentation is in them)."""
    cached = store.get(level)
    if cached is None:
        cached = store[level] = {}
    return cached


def _topics_by_name(img: m.Image) -> Node:
    def child(name: str) -> Node | None:
        t = img.topics_by_name.get(name)
        return None if t is None else topic_node(t)
    return Dir(lambda: img.topics_by_name.keys(), child, img.topics_by_name,
               changed=lambda other: _changed_keys(img.topics_by_name, other, str))


def _topics_by_id(img: m.Image) -> Node:
    def child(name: str) -> Node | None:
        try:
            t = img.topics_by_id.get(uuid_from_str(name))
        except ValueError:
            return None
        return None if t is None else topic_node(t)
    return Dir(lambda: [uuid_str(k) for k in img.topics_by_id], child, img.topics_by_id,
               changed=lambda other: _changed_keys(img.topics_by_id, other, uuid_str))


def config_resource_name(resource: m.ConfigResource) -> str:
    rtype, rname = resource
    tname = CONFIG_RESOURCE_TYPES.get(rtype, "UNKNOWN")
    return tname if rname == "" else f"{tname}:{rname}"


def _configs(img: m.Image) -> Node:
    def names() -> list[str]:
        return [config_resource_name(r) for r in img.configs]

    def child(name: str) -> Node | None:
        for resource, values in img.configs.items():
            if config_resource_name(resource) == name:
                return _config_values(values)
        return None
    return Dir(names, child)


def _config_values(values: dict[str, str]) -> Node:
    def child(key: str) -> Node | None:
        if key not in values:
            return None
        secret = is_sensitive_config(key)

        def text(o: RenderOptions) -> str:
            return REDACTED if secret and not o.show_secrets else values[key]
        return Leaf(text)
    return Dir(lambda: values.keys(), child)


def quota_entity_name(entity: m.QuotaEntity) -> str:
    """Kafka's ClientQuotasImageNode naming: ``clientId(a)_ip(b)_user(c)``, escaped."""
    parts = []
    for etype, ename in sorted(entity, key=lambda e: _ENTITY_ORDER.get(e[0], (9, e[0]))):
        label = _ENTITY_ORDER.get(etype, (9, etype))[1]
        value = DEFAULT_ENTITY if ename is None else _escape(ename)
        parts.append(f"{label}({value})")
    return "_".join(parts)


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _client_quotas(img: m.Image) -> Node:
    def child(name: str) -> Node | None:
        for entity, quotas in img.client_quotas.items():
            if quota_entity_name(entity) == name:
                return _quota_values(quotas)
        return None
    return Dir(lambda: [quota_entity_name(e) for e in img.client_quotas], child)


def _quota_values(quotas: dict[str, float]) -> Node:
    def child(key: str) -> Node | None:
        return Value(java_double(quotas[key]), quotas[key]) if key in quotas else None
    return Dir(lambda: quotas.keys(), child)


def _acls(img: m.Image, new: bool) -> Node:
    def child(name: str) -> Node | None:
        try:
            acl = img.acls.get(uuid_from_str(name))
        except ValueError:
            return None
        if acl is None:
            return None
        return Leaf(lambda o: lv.acl_text(acl, new), lambda o: lv.acl_data(acl))
    return Dir(lambda: [uuid_str(k) for k in img.acls], child)


def _scram(img: m.Image) -> Node:
    def mechanism(code: int) -> Node:
        def child(user: str) -> Node | None:
            cred = img.scram.get(code, {}).get(user)
            if cred is None:
                return None
            return Leaf(lambda o: lv.scram_text(cred, o.show_secrets),
                        lambda o: lv.scram_data(cred, o.show_secrets))
        return Dir(lambda: img.scram.get(code, {}).keys(), child)
    makers: dict[str, Callable[[], Node]] = {}
    for code, name in SCRAM_MECHANISMS.items():
        makers[name] = partial(mechanism, code)
    return StaticDir(makers)


def _tokens(img: m.Image) -> Node:
    def child(token_id: str) -> Node | None:
        t = img.delegation_tokens.get(token_id)
        if t is None:
            return None
        return Leaf(lambda o: lv.token_text(t), lambda o: lv.token_data(t))
    return Dir(lambda: img.delegation_tokens.keys(), child)
