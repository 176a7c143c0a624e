"""``/image/topics``: the topics by name and by id, each topic printed in one go by ``tree``
(no node per partition) and its partitions made without closures, by the hundred thousand."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..image import model as m
from ..wire.primitives import uuid_from_str, uuid_str
from . import leaves as lv
from .jsontext import string
from .node import Dir, Lines, Node, RenderOptions, Value
from .partitions import (
    HEADS,
    JSON_NAMES,
    LAZY_JSON,
    LAZY_TEXT,
    LINES,
    at_level,
    lazy_json,
    lazy_text,
    name_order,
    names_of,
    part_data,
    part_json,
    part_key,
    part_text,
    remember,
)


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
            return ["name", "id", *(changed_keys(topic.partitions, other.partitions, str)
                                    or ())]

        super().__init__(lambda: ["name", "id", *map(str, topic.partitions)], child, topic,
                         child_ident, changed)
        self.topic = topic

    def subtree(self, opts: RenderOptions, indent: int) -> list[str]:
        pad = "  " * indent
        topic = self.topic
        parts = topic.partitions
        order = name_order(parts)
        # The lines are shared: a partition's (indented) text by its record bytes, its name
        # lines by the topic's numbers, so holding a topic's lines to print it again
        # (``byId`` and ``byName``) costs a pointer a line.
        texts = at_level(LINES, indent + 1)
        found = list(map(texts.get, m.record_keys(map(parts.__getitem__, order))))
        lines: list[Any] = [None] * (2 * len(order))
        lines[0::2] = names_of(HEADS, indent, order, f"{pad}{{}}:")
        lines[1::2] = found
        made = [i for i, text in enumerate(found) if text is None]
        for i in made:
            pid = order[i]
            p = parts[pid]
            if type(p) is tuple:
                key = m.record_key(p)
                text = pad + "  " + lazy_text(topic, pid, p)
                if key in LAZY_TEXT:  # it decodes cleanly (else each print notes it)
                    remember(texts, key, text)
            else:
                text = pad + "  " + lv.partition_text(p)  # type: ignore[arg-type]
            lines[2 * i + 1] = text
        lines += (f"{pad}id:", f"{pad}  {uuid_str(topic.id)}", f"{pad}name:",
                  f"{pad}  {topic.name}")
        return Lines(lines, len(made) + 4)

    def subtree_json(self, opts: RenderOptions, level: int) -> list[str]:
        topic = self.topic
        parts = topic.partitions
        pad = "  " * (level + 1)
        order = name_order(parts)  # as names: numbers (even "-1") before "id"
        cached = at_level(LAZY_JSON, level + 1)  # the partitions' level
        found = list(map(cached.get, m.record_keys(map(parts.__getitem__, order))))
        for i in [i for i, text in enumerate(found) if text is None]:
            pid = order[i]
            p = parts[pid]
            found[i] = (lazy_json(topic, pid, p, level + 1) if type(p) is tuple
                        else part_json(topic, pid, level + 1))
        out: list[Any] = [None] * (2 * len(order))
        out[0::2] = names_of(JSON_NAMES, level + 1, order, f',\n{pad}"{{}}": ')
        out[1::2] = found
        out += (f",\n{pad}\"id\": {string(uuid_str(topic.id))}",
                f",\n{pad}\"name\": {string(topic.name)}")
        out[0] = out[0][2:]  # the first follows "{\n"
        return ["{\n", *out, "\n" + "  " * level + "}"]


def changed_keys(mine: dict[Any, Any], other: object,
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
        return part_text(self.topic, self.pid)

    def data(self, opts: RenderOptions) -> Any:
        return part_data(self.topic, self.pid)

    def data_json(self, opts: RenderOptions, level: int) -> str:
        p = self.topic.partitions.get(self.pid)
        if type(p) is tuple:
            return lazy_json(self.topic, self.pid, p, level)
        return part_json(self.topic, self.pid, level)

    def key(self) -> Any:
        return part_key(self.topic, self.pid)

    def ident(self) -> object | None:
        return self.topic.partitions.get(self.pid)


def topics_by_name(img: m.Image) -> Node:
    def child(name: str) -> Node | None:
        t = img.topics_by_name.get(name)
        return None if t is None else topic_node(t)
    return Dir(lambda: img.topics_by_name.keys(), child, img.topics_by_name,
               changed=lambda other: changed_keys(img.topics_by_name, other, str))


def topics_by_id(img: m.Image) -> Node:
    def child(name: str) -> Node | None:
        try:
            t = img.topics_by_id.get(uuid_from_str(name))
        except ValueError:
            return None
        return None if t is None else topic_node(t)
    return Dir(lambda: [uuid_str(k) for k in img.topics_by_id], child, img.topics_by_id,
               changed=lambda other: changed_keys(img.topics_by_id, other, uuid_str))
