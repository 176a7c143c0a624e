"""Which ``/image`` nodes a metadata record touches (for ``changes PATH``).

Computed against the image just before the record applies, so that records naming a topic by
id find its name (and a RemoveTopicRecord still knows the topic it removes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..image import model as m
from ..image.names import SCRAM_MECHANISMS, TOPIC_CONFIG
from ..wire import frames
from ..wire.kinds import RecordKind as K
from ..wire.primitives import DecodeError, uuid_from_str, uuid_str
from ..wire.sieve import Sieve, frame_needles
from .image_tree import config_resource_name, quota_entity_name
from .paths import Matcher, compile_glob, related, split_pattern, unescape

IMG = "/image"


def _name(name: str) -> str:
    """A name as a path component as it is typed: ``\\`` and ``/`` in it escaped (a client
    id, user or group may hold a ``/``); any other name as it is."""
    return name.replace("\\", "\\\\").replace("/", "\\/")


def _topic_paths(img: m.Image, tid: bytes, suffix: str = "") -> list[str]:
    topic = img.topics_by_id.get(tid)
    paths = [f"{IMG}/topics/byId/{uuid_str(tid)}{suffix}"]
    if topic is not None:
        paths.insert(0, f"{IMG}/topics/byName/{topic.name}{suffix}")
    return paths


PathsOf = Callable[[dict[str, Any], m.Image], list[str]]


def _broker(field: str) -> PathsOf:
    return lambda d, img: [f"{IMG}/cluster/brokers/{d[field]}"]


def _controller(d: dict[str, Any], img: m.Image) -> list[str]:
    return [f"{IMG}/cluster/controllers/{d['controllerId']}"]


def _topic(d: dict[str, Any], img: m.Image) -> list[str]:
    return [f"{IMG}/topics/byName/{d['name']}", f"{IMG}/topics/byId/{uuid_str(d['topicId'])}"]


def _partition(d: dict[str, Any], img: m.Image) -> list[str]:
    return _topic_paths(img, d["topicId"], f"/{d['partitionId']}")


def _remove_topic(d: dict[str, Any], img: m.Image) -> list[str]:
    paths = _topic_paths(img, d["topicId"])
    topic = img.topics_by_id.get(d["topicId"])
    if topic is not None:
        paths.append(f"{IMG}/configs/{config_resource_name((TOPIC_CONFIG, topic.name))}")
    return paths


def _clear_elr(d: dict[str, Any], img: m.Image) -> list[str]:
    if not d["topicName"]:
        return [f"{IMG}/topics"]
    topic = img.topics_by_name.get(d["topicName"])
    return _topic_paths(img, topic.id) if topic else [f"{IMG}/topics/byName/{d['topicName']}"]


def _config(d: dict[str, Any], img: m.Image) -> list[str]:
    res = config_resource_name((d["resourceType"], d["resourceName"]))
    return [f"{IMG}/configs/{_name(res)}/{_name(d['name'])}"]


def _feature(d: dict[str, Any], img: m.Image) -> list[str]:
    name = d["name"]
    leaf = "metadataVersion" if name == "metadata.version" else f"finalized_{name}"
    return [f"{IMG}/features/{leaf}"]


def _quota(d: dict[str, Any], img: m.Image) -> list[str]:
    entity = m.quota_entity(d["entity"])
    return [f"{IMG}/clientQuotas/{_name(quota_entity_name(entity))}/{_name(d['key'])}"]


def _scram(d: dict[str, Any], img: m.Image) -> list[str]:
    mech = SCRAM_MECHANISMS.get(d["mechanism"], f"UNKNOWN({d['mechanism']})")
    return [f"{IMG}/scram/{mech}/{_name(d['name'])}"]


def _acl(d: dict[str, Any], img: m.Image) -> list[str]:
    return [f"{IMG}/acls/{uuid_str(d['id'])}"]


def _token(d: dict[str, Any], img: m.Image) -> list[str]:
    return [f"{IMG}/delegationToken/{_name(d['tokenId'])}"]


def _fixed(path: str) -> PathsOf:
    return lambda d, img: [f"{IMG}/{path}"]


IGNORED = None  # a record kind that changes no node of the tree

# Which tree paths each record kind changes: one row per kind of the schemas.
PATHS: dict[int, PathsOf | None] = {
    K.REGISTER_BROKER: _broker("brokerId"),
    K.UNREGISTER_BROKER: _broker("brokerId"),
    K.TOPIC: _topic,
    K.PARTITION: _partition,
    K.CONFIG: _config,
    K.PARTITION_CHANGE: _partition,
    K.FENCE_BROKER: _broker("id"),
    K.UNFENCE_BROKER: _broker("id"),
    K.REMOVE_TOPIC: _remove_topic,
    K.DELEGATION_TOKEN: _token,
    K.USER_SCRAM_CREDENTIAL: _scram,
    K.FEATURE_LEVEL: _feature,
    K.CLIENT_QUOTA: _quota,
    K.PRODUCER_IDS: _fixed("producerIds/nextProducerId"),
    K.BROKER_REGISTRATION_CHANGE: _broker("brokerId"),
    K.ACCESS_CONTROL_ENTRY: _acl,
    K.REMOVE_ACCESS_CONTROL_ENTRY: _acl,
    K.NO_OP: IGNORED,
    K.ZK_MIGRATION_STATE: _fixed("features/zkMigrationState"),
    K.REMOVE_USER_SCRAM_CREDENTIAL: _scram,
    K.BEGIN_TRANSACTION: IGNORED,
    K.END_TRANSACTION: IGNORED,
    K.ABORT_TRANSACTION: IGNORED,
    K.REMOVE_DELEGATION_TOKEN: _token,
    K.REGISTER_CONTROLLER: _controller,
    K.CLEAR_ELR: _clear_elr,
    K.UNREGISTER_CONTROLLER: _controller,
}


def paths_for(key: int, d: dict[str, Any], img: m.Image) -> list[str]:
    """The tree paths a record of api key ``key`` changes."""
    of = PATHS.get(key)
    return [] if of is None else of(d, img)


def touches(record_paths: list[str], pattern: list[Matcher]) -> bool:
    """True when a record path is the node ``pattern`` names (see ``paths.matchers``), below
    it, or above it (removing a topic touches its partitions)."""
    return any(related(pattern, names_of(p)) for p in record_paths)


def names_of(record_path: str) -> list[str]:
    """The names of a record path (``\\/`` is a ``/`` inside a name)."""
    if "\\" not in record_path:
        return record_path.split("/")[1:]
    return [unescape(c) for c in split_pattern(record_path)]


# Kinds whose records may touch any topic without naming it in their bytes (ClearElr with no
# topic name), and the transaction markers that decide when the others apply.
_ALWAYS = (K.CLEAR_ELR, K.BEGIN_TRANSACTION, K.END_TRANSACTION, K.ABORT_TRANSACTION)


def topic_sieve(comps: list[str]) -> Sieve | None:
    """For ``/image/topics/byName/NAME[/P]`` or ``/image/topics/byId/ID/P`` (no globs): a
    sieve that picks every record that can touch it (``changes``). The kinds of ``PATHS``
    that reach a topic name it by id or by name: its TopicRecord, partitions, partition
    changes, removal, its config resource (by name); ClearElr and the transaction markers are
    always picked. A name follows each id a TopicRecord gives it (a topic made again). None
    for any other path."""
    depth = len(comps)  # 4: a topic, 5: a partition
    if not 4 <= depth <= 5 or comps[:2] != ["image", "topics"] or any(
            compile_glob(c) is not None for c in comps):
        return None
    name = unescape(comps[3])
    always = [n for k in _ALWAYS for n in frame_needles(k)]
    if comps[2] == "byId" and depth == 5:
        try:
            return Sieve([uuid_from_str(name), *always])
        except ValueError:
            return None
    if comps[2] != "byName":
        return None

    def learn(key: int, ver: int, buf: bytes, pos: int, end: int) -> list[bytes]:
        if key != K.TOPIC:
            return []
        try:
            d = frames.decode_metadata(buf, pos, end)[2]
        except DecodeError:
            return []  # replay refuses the batch, and says so
        if isinstance(d, dict) and d.get("name") == name:
            return [d["topicId"]]
        return []

    return Sieve([name.encode(), *always], learn)
