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
from ..wire.primitives import uuid_from_str, uuid_str
from . import leaves as lv
from .javafmt import java_double
from .node import Dir, Leaf, Node, RenderOptions, StaticDir, Value
from .redact import REDACTED, is_sensitive_config
from .topic_tree import topics_by_id, topics_by_name

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
            "byName": lambda: topics_by_name(img),
            "byId": lambda: topics_by_id(img),
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


def config_resource_name(resource: m.ConfigResource) -> str:
    rtype, rname = resource
    tname = CONFIG_RESOURCE_TYPES.get(rtype, "UNKNOWN")
    return tname if rname == "" else f"{tname}:{rname}"


def _configs(img: m.Image) -> Node:
    def names() -> list[str]:
        return [config_resource_name(r) for r in img.configs]

    by_name: dict[str, dict[str, str]] = {}  # made on the first look-up (a published
    # image does not change): ``tree`` looks every resource up

    def child(name: str) -> Node | None:
        if not by_name:
            for resource, values in img.configs.items():
                by_name.setdefault(config_resource_name(resource), values)
        found = by_name.get(name)
        return None if found is None else _config_values(found)
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
    by_name: dict[str, dict[str, float]] = {}  # made on the first look-up, as configs'

    def child(name: str) -> Node | None:
        if not by_name:
            for entity, quotas in img.client_quotas.items():
                by_name.setdefault(quota_entity_name(entity), quotas)
        found = by_name.get(name)
        return None if found is None else _quota_values(found)
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
            cred = img.scram.get((code, user))
            if cred is None:
                return None
            return Leaf(lambda o: lv.scram_text(cred, o.show_secrets),
                        lambda o: lv.scram_data(cred, o.show_secrets))
        return Dir(lambda: [user for mech, user in img.scram if mech == code], child)
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
