"""Which ``/image`` nodes a metadata record touches (for ``changes PATH``).

Computed against the image just before the record applies, so that records naming a topic by
id find its name (and a RemoveTopicRecord still knows the topic it removes).
"""

from __future__ import annotations

from typing import Any

from ..image import model as m
from ..image.names import SCRAM_MECHANISMS, TOPIC_CONFIG
from ..wire.primitives import uuid_str
from .image_tree import config_resource_name, quota_entity_name
from .paths import Matcher, related

IMG = "/image"


def _topic_paths(img: m.Image, tid: bytes, suffix: str = "") -> list[str]:
    topic = img.topics_by_id.get(tid)
    paths = [f"{IMG}/topics/byId/{uuid_str(tid)}{suffix}"]
    if topic is not None:
        paths.insert(0, f"{IMG}/topics/byName/{topic.name}{suffix}")
    return paths


def paths_for(key: int, d: dict[str, Any], img: m.Image) -> list[str]:
    """The tree paths a record of api key ``key`` changes."""
    if key in (0, 1):
        return [f"{IMG}/cluster/brokers/{d['brokerId']}"]
    if key in (7, 8):
        return [f"{IMG}/cluster/brokers/{d['id']}"]
    if key == 17:
        return [f"{IMG}/cluster/brokers/{d['brokerId']}"]
    if key in (27, 29):
        return [f"{IMG}/cluster/controllers/{d['controllerId']}"]
    if key == 2:
        return [f"{IMG}/topics/byName/{d['name']}", f"{IMG}/topics/byId/{uuid_str(d['topicId'])}"]
    if key in (3, 5):
        return _topic_paths(img, d["topicId"], f"/{d['partitionId']}")
    if key == 9:
        paths = _topic_paths(img, d["topicId"])
        topic = img.topics_by_id.get(d["topicId"])
        if topic is not None:
            paths.append(f"{IMG}/configs/{config_resource_name((TOPIC_CONFIG, topic.name))}")
        return paths
    if key == 28:
        if not d["topicName"]:
            return [f"{IMG}/topics"]
        topic = img.topics_by_name.get(d["topicName"])
        return (_topic_paths(img, topic.id) if topic
                else [f"{IMG}/topics/byName/{d['topicName']}"])
    if key == 4:
        res = config_resource_name((d["resourceType"], d["resourceName"]))
        return [f"{IMG}/configs/{res}/{d['name']}"]
    if key == 12:
        name = d["name"]
        leaf = "metadataVersion" if name == "metadata.version" else f"finalized_{name}"
        return [f"{IMG}/features/{leaf}"]
    if key == 21:
        return [f"{IMG}/features/zkMigrationState"]
    if key == 14:
        entity = tuple(sorted((e["entityType"], e["entityName"]) for e in d["entity"]))
        return [f"{IMG}/clientQuotas/{quota_entity_name(entity)}/{d['key']}"]
    if key == 15:
        return [f"{IMG}/producerIds/nextProducerId"]
    if key in (18, 19):
        return [f"{IMG}/acls/{uuid_str(d['id'])}"]
    if key in (11, 22):
        mech = SCRAM_MECHANISMS.get(d["mechanism"], f"UNKNOWN({d['mechanism']})")
        return [f"{IMG}/scram/{mech}/{d['name']}"]
    if key in (10, 26):
        return [f"{IMG}/delegationToken/{d['tokenId']}"]
    return []


def touches(record_paths: list[str], pattern: list[Matcher]) -> bool:
    """True when a record path is the node ``pattern`` names (see ``paths.matchers``), below
    it, or above it (removing a topic touches its partitions)."""
    return any(related(pattern, p.split("/")[1:]) for p in record_paths)
