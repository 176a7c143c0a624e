"""A partition's text and JSON, looked up by its record bytes.

A partition still undecoded in the image (a ``LazyPartition``: the PartitionRecord's bytes)
prints from caches keyed by those bytes past the partition and topic ids, which are all its
text depends on: replica sets repeat across a cluster, so most partitions print without being
decoded. The caches are bounded (emptied when full) and shared by every image.
"""

from __future__ import annotations

from typing import Any

from ..image import model as m
from . import leaves as lv
from .jsontext import dumps


def part_key(topic: m.Topic, pid: int) -> Any:
    """The record bytes while undecoded (cheap to compare), else the partition itself."""
    p = topic.partitions.get(pid)
    if isinstance(p, tuple):
        buf, body, end, version = p
        return (bytes(buf[body:end]), version)
    return p


UNDECODABLE_PARTITION = "[undecodable PartitionRecord: see the warning]"


def part_text(topic: m.Topic, pid: int) -> str:
    p = topic.partitions.get(pid)
    if type(p) is tuple:
        return lazy_text(topic, pid, p)
    return UNDECODABLE_PARTITION if p is None else lv.partition_text(p)  # type: ignore[arg-type]


# The text of an undecoded PartitionRecord by (version, its bytes past the partition and
# topic ids), which is all the text depends on. Replica sets repeat across a cluster's
# partitions (870 distinct texts among 100k generated partitions; one on a single broker), so
# most partitions print without being decoded. Bounded: emptied when full.
LAZY_TEXT: dict[tuple[int, bytes], str] = {}
LAZY_TEXT_MAX = 16_384


record_key = m.record_key
clean_partition = m.shared_clean  # each distinct record decoded once, shared with the views


def remember(cache: dict[Any, str], key: Any, text: str) -> str:
    """Keep ``text`` in a bounded cache (emptied when full)."""
    if len(cache) >= LAZY_TEXT_MAX:
        cache.clear()
    cache[key] = text
    return text


def lazy_text(topic: m.Topic, pid: int, lazy: m.LazyPartition) -> str:
    key = record_key(lazy)
    text = LAZY_TEXT.get(key)
    if text is not None:
        return text
    p = clean_partition(key, lazy)
    if p is None:  # damaged, or from a newer Kafka: the topic decodes it and says what
        checked = topic.partition(pid)
        return UNDECODABLE_PARTITION if checked is None else lv.partition_text(checked)
    return remember(LAZY_TEXT, key, lv.partition_text(p))


# ``tree``'s lines of undecoded partitions, by indent, then as LAZY_TEXT by record bytes: the
# text with its indentation, one string shared by every partition with those bytes.
# Bounded: emptied when full.
LINES: dict[int, dict[Any, str]] = {}
# The name lines of a topic's partitions (``  7:``; in JSON ``,\n  "7": ``) by indent, then
# by the topic's numbers in name order: topics made alike share them. Bounded.
HEADS: dict[int, dict[Any, list[str]]] = {}
JSON_NAMES: dict[int, dict[Any, list[str]]] = {}


def names_of(store: dict[int, dict[Any, list[str]]], level: int, order: tuple[int, ...],
             form: str) -> list[str]:
    """The name lines of partitions ``order`` at ``level``, each ``form`` filled in."""
    cached = store.get(level)
    if cached is None:
        cached = store[level] = {}
    names = cached.get(order)
    if names is None:
        if len(cached) >= 1024:
            cached.clear()
        names = cached[order] = [form.format(pid) for pid in order]
    return names

# A topic's partition numbers in the order ``tree`` sorts names (as text: 10 before 2), by
# the numbers in the map's order: topics made alike share it. Bounded: emptied when full.
_ORDERS: dict[tuple[int, ...], tuple[int, ...]] = {}


def name_order(parts: dict[int, Any]) -> tuple[int, ...]:
    """The keys of ``parts`` sorted as names."""
    keys = tuple(parts)
    order = _ORDERS.get(keys)
    if order is None:
        if len(_ORDERS) >= LAZY_TEXT_MAX:
            _ORDERS.clear()
        order = _ORDERS[keys] = tuple(sorted(keys, key=str))
    return order


def part_data(topic: m.Topic, pid: int) -> Any:
    p = topic.partition(pid)
    return {"error": UNDECODABLE_PARTITION} if p is None else lv.partition_data(p)


# The JSON of an undecoded PartitionRecord placed ``level`` deep, by level, then as
# LAZY_TEXT by the record bytes the data depends on. Bounded: emptied when full.
LAZY_JSON: dict[int, dict[Any, str]] = {}


def lazy_json(topic: m.Topic, pid: int, lazy: m.LazyPartition, level: int) -> str:
    key = record_key(lazy)
    cached = at_level(LAZY_JSON, level)
    text = cached.get(key)
    if text is not None:
        return text
    p = clean_partition(key, lazy)
    if p is None:  # damaged, or from a newer Kafka: the topic decodes it and says what
        return part_json(topic, pid, level)
    return remember(cached, key, dumps(lv.partition_data(p), level))


def part_json(topic: m.Topic, pid: int, level: int) -> str:
    """A partition's JSON; a decoded one (changed in the log after the snapshot) looked up
    by its fields, which repeat like the records' bytes."""
    p = topic.partitions.get(pid)
    if type(p) is not m.Partition:
        return dumps(part_data(topic, pid), level)
    key = (tuple(p.replicas), tuple(p.directories), tuple(p.isr), tuple(p.removing_replicas),
           tuple(p.adding_replicas), tuple(p.elr), tuple(p.last_known_elr), p.leader,
           p.leader_recovery_state, p.leader_epoch, p.partition_epoch)
    cached = at_level(_DECODED_JSON, level)
    text = cached.get(key)
    return text if text is not None else remember(cached, key, dumps(lv.partition_data(p), level))


# The JSON of a decoded partition by level, then by its fields. Bounded: emptied when full.
_DECODED_JSON: dict[int, dict[Any, str]] = {}


def at_level(store: dict[int, dict[Any, str]], level: int) -> dict[Any, str]:
    """The texts of ``store`` placed ``level`` deep (JSON's indentation is in them)."""
    cached = store.get(level)
    if cached is None:
        cached = store[level] = {}
    return cached
