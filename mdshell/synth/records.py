"""Records to write: metadata records (generic or fast partition records), raw values, and
control records.

Every record knows how to produce its value bytes through the project's own codec
(``mdshell.wire``); :class:`PartRec` uses the fast encoder of :mod:`.fastpart`, which is tested to
produce the same bytes as the generic one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..wire import codec
from ..wire.batch import control_key, frame_metadata_value
from ..wire.control import CONTROL
from ..wire.records import METADATA, NAME_TO_KEY
from . import fastpart
from .state import PState

PARTITION_RECORD = NAME_TO_KEY["PartitionRecord"]


@dataclass(slots=True)
class MetaRecord:
    """A metadata record given as a field dict (camelCase keys, as the codec decodes them)."""

    key: int
    version: int
    data: dict[str, Any]

    def value(self) -> bytes:
        body = codec.encode(METADATA[self.key], self.version, self.data)
        return frame_metadata_value(self.key, self.version, body)


@dataclass(slots=True)
class PartRec:
    """A PartitionRecord from a partition state; encoded by the fast path."""

    topic_id: bytes
    partition_id: int
    state: PState
    version: int

    key = PARTITION_RECORD

    def value(self) -> bytes:
        return fastpart.partition_value(self.partition_id, self.topic_id, self.state,
                                        self.version)


@dataclass(slots=True)
class RawRecord:
    """Value bytes written as they are (unknown record types, unsupported versions)."""

    raw: bytes
    key: int = -1
    version: int = -1

    def value(self) -> bytes:
        return self.raw


@dataclass(slots=True)
class ControlRec:
    """A KRaft control record (leader change, snapshot header/footer, kraft version, voters)."""

    ctype: int
    data: dict[str, Any]

    def key_bytes(self) -> bytes:
        return control_key(self.ctype)

    def value(self) -> bytes:
        return codec.encode(CONTROL[self.ctype], 0, self.data)


Record = MetaRecord | PartRec | RawRecord


def meta(record: str, version: int, /, **fields: Any) -> MetaRecord:
    """A metadata record by Kafka's record name, e.g. ``meta("TopicRecord", 0, name=..)``."""
    return MetaRecord(NAME_TO_KEY[record], version, fields)
