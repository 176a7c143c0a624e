"""What a replay changed between two marks, and images rebuilt from it.

History keeps one whole image (where the replay started: a snapshot's end, or the empty
image) and, for each mark, the entries written since the mark before: the map keys set or
removed and the partitions set. That costs what changed, however the records were batched;
an image between two marks is rebuilt on demand (:func:`rebuild`: dict copies and updates,
unchanged maps and topics shared with the image it starts from).

Dicts keep insertion order and the image's maps are dicts, so a rebuilt map must end in the
order replay left it in: a key removed and set again within one journal moves to the end
(:class:`MapLog`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from . import model as m

TOMB: Any = object()  # a key removed since the mark

# Image maps whose values replay may change in place while it owns them (a broker's
# registration, the inner dicts of configs and quotas): frozen at a mark.
MUTABLE_VALUES = ("brokers", "configs", "client_quotas")


class MapLog:
    """The keys of one image map written since the mark: their values at the mark (TOMB:
    removed), in the order they take in the map, and the keys removed at some point (those
    leave their place)."""

    __slots__ = ("resets", "values")

    def __init__(self) -> None:
        self.values: dict[Any, Any] = {}
        self.resets: set[Any] = set()

    def put(self, key: Any, value: Any) -> None:
        values = self.values
        if values.get(key) is TOMB:
            del values[key]  # set again after a removal: at the end of the map now
        values[key] = value

    def drop(self, key: Any) -> None:
        self.values[key] = TOMB
        self.resets.add(key)

    def apply(self, target: dict[Any, Any]) -> None:
        resets = self.resets
        for key, value in self.values.items():
            if key in resets:
                target.pop(key, None)
            if value is not TOMB:
                target[key] = value


class Journal:
    """The changes of one stretch of replay (see the module docstring). ``parts`` holds the
    partitions set since the mark, flat: topic id, partition id, value, topic id... (three
    references a change); ``made`` where in ``parts`` the topics made since then begin."""

    __slots__ = ("made", "maps", "parts", "provenance", "scalars")

    def __init__(self) -> None:
        self.maps: dict[str, MapLog] = {}
        self.parts: list[Any] = []
        self.made: dict[bytes, int] = {}
        self.provenance = (-1, -1, -1)
        self.scalars: tuple[int | None, int, int] = (None, 0, -1)

    def log(self, name: str) -> MapLog:
        log = self.maps.get(name)
        if log is None:
            log = self.maps[name] = MapLog()
        return log

    def empty(self) -> bool:
        return not self.maps and not self.parts

    def seal(self, image: m.Image) -> Journal:
        """Note the image's single values (and where it stands) at the mark."""
        p = image.provenance
        self.provenance = (p.offset, p.epoch, p.time_ms)
        self.scalars = (image.metadata_version, image.zk_migration_state,
                        image.next_producer_id)
        return self


def rebuild(start: m.Image, journals: list[Journal]) -> m.Image:
    """The image ``journals`` (in order) lead to from ``start``, which is left as it is."""
    if not journals:
        return start
    last = journals[-1]
    version, zk_state, producer_id = last.scalars
    image = replace(start, provenance=m.Provenance(*last.provenance), metadata_version=version,
                    zk_migration_state=zk_state, next_producer_id=producer_id)
    names = {name for j in journals for name in j.maps} - {"topics_by_id", "topics_by_name"}
    for name in names:
        target = dict(getattr(start, name))
        for j in journals:
            log = j.maps.get(name)
            if log is not None:
                log.apply(target)
        setattr(image, name, target)
    if any(j.parts or "topics_by_id" in j.maps or "topics_by_name" in j.maps
           for j in journals):
        _topics(image, start, journals)
    return image


def _topics(image: m.Image, start: m.Image, journals: list[Journal]) -> None:
    by_id = dict(start.topics_by_id)
    made: dict[bytes, m.Topic] = {}  # topics of the rebuilt image (not shared with start)
    notes = start.notes
    for j in journals:
        log = j.maps.get("topics_by_id")
        if log is not None:
            for tid, topic in log.values.items():
                if tid in log.resets:
                    by_id.pop(tid, None)
                made.pop(tid, None)
                if topic is not TOMB:  # made since the mark: its partitions are all in parts
                    by_id[tid] = made[tid] = m.Topic(topic.name, topic.id, {}, notes)
        _parts(j, by_id, made)
    by_name = dict(start.topics_by_name)
    for j in journals:
        log = j.maps.get("topics_by_name")
        if log is not None:
            log.apply(by_name)
    # Names point at the rebuilt topic of their id (the journals hold replay's own objects).
    moved = [(name, now) for name, t in by_name.items()
             if (now := by_id.get(t.id)) is not t and now is not None]
    for name, topic in moved:
        by_name[name] = topic
    image.topics_by_id, image.topics_by_name = by_id, by_name


def _parts(j: Journal, by_id: dict[bytes, m.Topic], made: dict[bytes, m.Topic]) -> None:
    """Set the partitions of one journal on the topics they belong to (copied first when
    shared); a change to a topic removed or made again since is left out."""
    since = j.made
    it = iter(j.parts)
    for i, (tid, pid, value) in enumerate(zip(it, it, it, strict=True)):
        topic = made.get(tid)
        if topic is None:
            old = by_id.get(tid)
            if old is None:
                continue  # removed since
            topic = by_id[tid] = made[tid] = m.Topic(old.name, old.id, dict(old.partitions),
                                                     old.notes)
        elif since and 3 * i < since.get(tid, 0):
            continue  # a change to the topic this id named before it was made again
        topic.partitions[pid] = value
