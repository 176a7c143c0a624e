"""A topic as commands take it (``topics NAME``, ``records --topic NAME``): a name, a glob or
a topic id. One model, so that every command accepts the same words and refuses the same
unknown ones (exit 1, "no such topic") instead of answering with nothing."""

from __future__ import annotations

from collections.abc import Iterable

from ..tree.paths import Matcher, matchers


class TopicPattern:
    """What the user typed for a topic. A trailing ``/`` is dropped: completing a path under
    ``byName`` offers it, and no topic name holds a ``/``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pattern = text.rstrip("/") or text
        self._test: Matcher = matchers([self.pattern])[0]  # raises GlobError on a bad glob
        self.id_names: set[str] = set()  # the names of the topic id given (config records)

    def matches(self, name: str | None, topic_id: str | None = None) -> bool:
        """Whether a topic (its name, or its id in Kafka's base64) is the one meant."""
        if name is not None and (self._test(name) or name in self.id_names):
            return True
        return topic_id == self.pattern

    def learn(self, topic_id: str, name: str) -> None:
        """A topic's id and name (images, TopicRecords): an id given also means its name."""
        if topic_id == self.pattern:
            self.id_names.add(name)

    def known(self, names: dict[str, str]) -> bool:
        """Whether one of the topics in ``names`` (id -> name) is meant."""
        return self.pattern in names or any(self._test(n) for n in names.values())

    def chosen(self, names: dict[str, str]) -> list[str]:
        """The names in ``names`` (id -> name) meant, sorted."""
        return sorted({n for tid, n in names.items() if self.matches(n, tid)})


def no_such_topic(pattern: TopicPattern, where: str = "") -> str:
    """The one line for a topic that is not there, and what to do."""
    return (f"{pattern.text}: no such topic{where} (`topics` lists the topics; a name, a "
            "glob or a topic id)")


def names_of(pairs: Iterable[tuple[bytes, str]]) -> dict[str, str]:
    """id (Kafka's base64) -> name, from (raw id, name) pairs."""
    from ..wire.primitives import uuid_str

    return {uuid_str(tid): name for tid, name in pairs}
