"""The small non-log files of a Kafka log dir, in the formats Kafka writes them."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence

from ..wire.primitives import uuid_str

# A producer-state snapshot with no producers: version 1, CRC-32C of the empty entry array,
# entry count 0 (byte-identical to what Kafka writes for the metadata partition).
EMPTY_PRODUCER_SNAPSHOT = b"\x00\x01\x48\x67\x4b\xc7\x00\x00\x00\x00"
METADATA_TOPIC_ID = bytes(15) + b"\x01"  # Kafka's Uuid.METADATA_TOPIC_ID


def write_bytes(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def quorum_state(*, data_version: int, leader_id: int, leader_epoch: int,
                 voters: Sequence[int] = (), voted_id: int = -1,
                 voted_directory_id: bytes = bytes(16)) -> bytes:
    """``quorum-state`` JSON: data_version 0 (voters listed) or 1 (kraft.version 1, no voters)."""
    doc: dict[str, object]
    if data_version == 0:
        doc = {"clusterId": "", "leaderId": leader_id, "leaderEpoch": leader_epoch,
               "votedId": voted_id, "appliedOffset": 0,
               "currentVoters": [{"voterId": v} for v in voters], "data_version": 0}
    elif data_version == 1:
        doc = {"leaderId": leader_id, "leaderEpoch": leader_epoch, "votedId": voted_id,
               "votedDirectoryId": uuid_str(voted_directory_id), "data_version": 1}
    else:
        raise ValueError(f"unknown quorum-state data_version {data_version}")
    return json.dumps(doc, separators=(",", ":")).encode()


def meta_properties(*, cluster_id: str, node_id: int, directory_id: bytes | None,
                    written_ms: int) -> bytes:
    """``meta.properties`` (version 1), with Java's Properties date comment."""
    stamp = time.strftime("%a %b %d %H:%M:%S GMT %Y", time.gmtime(written_ms // 1000))
    lines = ["#", f"#{stamp}", f"cluster.id={cluster_id}"]
    if directory_id is not None:
        lines.append(f"directory.id={uuid_str(directory_id)}")
    lines += [f"node.id={node_id}", "version=1"]
    return ("\n".join(lines) + "\n").encode()


def partition_metadata(topic_id: bytes) -> bytes:
    """``partition.metadata`` as Kafka writes it (no newline after the id)."""
    return f"version: 0\ntopic_id: {uuid_str(topic_id)}".encode()


def leader_epoch_checkpoint(entries: Sequence[tuple[int, int]]) -> bytes:
    """``leader-epoch-checkpoint``: version 0, count, then ``epoch start_offset`` lines."""
    lines = ["0", str(len(entries)), *(f"{e} {o}" for e, o in entries)]
    return ("\n".join(lines) + "\n").encode()


def write_partition_dirs(log_dir: str, topics: Sequence[tuple[str, bytes, int]]) -> int:
    """``<topic>-<n>/partition.metadata`` for every partition; returns how many."""
    n = 0
    for name, topic_id, count in topics:
        data = partition_metadata(topic_id)
        for pid in range(count):
            d = os.path.join(log_dir, f"{name}-{pid}")
            os.makedirs(d, exist_ok=True)
            write_bytes(os.path.join(d, "partition.metadata"), data)
            n += 1
    return n
