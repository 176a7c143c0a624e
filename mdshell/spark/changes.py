"""The ``partition_changes`` table: every PartitionRecord and PartitionChangeRecord from as
far back as the data goes, with the partition's state once each applies (a replay with an
observer).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..image import model as m
from ..image.replay import ImageBuilder, merge_partition
from ..session import load
from ..wire.kinds import RecordKind
from ..wire.primitives import uuid_str
from ..wire.records import METADATA
from .columns import TIME, View, arrow_table, empty_columns, micros
from .imagetables import PARTITIONS, partition_state

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
    cols = empty_columns(PARTITION_CHANGES)
    parts: list[pa.Table] = []

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
        partition_state(cols, after)
        if len(cols["offset"]) >= CHUNK_ROWS:
            parts.append(_flush(cols))

    replayed = load(view.source, upto=view.loaded.upto, observer=observe, history=True)
    view.warnings.extend(p.message for p in replayed.problems)
    parts.append(_flush(cols))
    return pa.concat_tables(parts)


CHUNK_ROWS = 65536  # rows held as Python lists before they become Arrow (a large snapshot
# is a million PartitionRecords: their lists and ints would all exist at once otherwise)


def _flush(cols: dict[str, list[Any]]) -> pa.Table:
    """The rows gathered so far as Arrow; the lists are emptied for the next ones."""
    cols["time"] = micros(cols["timestamp"])
    table = arrow_table(PARTITION_CHANGES, cols)
    for values in cols.values():
        values.clear()
    return table
