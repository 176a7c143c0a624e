"""The RPC messages of live mode, built with kio for whichever version a controller speaks.

ReplicaId is always -1 (an anonymous observer: the leader keeps no state for it and it never
counts toward the high watermark). The metadata topic is fetched by its fixed id.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Any

from kio.index import load_request_schema

from .connection import DESCRIBE_CLUSTER, DESCRIBE_QUORUM, FETCH, FETCH_SNAPSHOT

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)  # Uuid(0, 1), KafkaRaftServer.MetadataTopicId
MAX_FETCH_BYTES = 8 * 1024 * 1024  # what Kafka's raft client asks for (and the leader caps at)
ENDPOINT_CONTROLLERS = 2
NO_OPS = -2147483648  # cluster_authorized_operations when not requested


def _build(api_key: int, version: int, cls_name: str, **kw: Any) -> Any:
    """An entity of the request schema: nested types found by class name in its module."""
    top = load_request_schema(api_key, version)
    if cls_name == top.__name__:
        cls: Any = top
    else:
        import sys

        cls = getattr(sys.modules[top.__module__], cls_name)
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in kw.items() if k in names})


def fetch_request(version: int, *, cluster_id: str | None, leader_epoch: int, offset: int,
                  last_epoch: int, max_wait_ms: int, high_watermark: int = -1) -> Any:
    part = _build(FETCH, version, "FetchPartition", partition=0,
                  current_leader_epoch=leader_epoch, fetch_offset=offset,
                  last_fetched_epoch=last_epoch, log_start_offset=-1,
                  partition_max_bytes=MAX_FETCH_BYTES, high_watermark=high_watermark)
    topic = _build(FETCH, version, "FetchTopic", topic_id=METADATA_TOPIC_ID, partitions=(part,))
    return _build(FETCH, version, "FetchRequest", cluster_id=cluster_id, replica_id=-1,
                  max_wait=datetime.timedelta(milliseconds=max_wait_ms), min_bytes=0,
                  max_bytes=MAX_FETCH_BYTES, topics=(topic,), forgotten_topics_data=(),
                  rack_id="")


def fetch_snapshot_request(version: int, *, cluster_id: str | None, leader_epoch: int,
                           end_offset: int, epoch: int, position: int,
                           max_bytes: int = MAX_FETCH_BYTES) -> Any:
    sid = _build(FETCH_SNAPSHOT, version, "SnapshotId", end_offset=end_offset, epoch=epoch)
    part = _build(FETCH_SNAPSHOT, version, "PartitionSnapshot", partition=0,
                  current_leader_epoch=leader_epoch, snapshot_id=sid, position=position)
    topic = _build(FETCH_SNAPSHOT, version, "TopicSnapshot", name=METADATA_TOPIC,
                   partitions=(part,))
    return _build(FETCH_SNAPSHOT, version, "FetchSnapshotRequest", cluster_id=cluster_id,
                  replica_id=-1, max_bytes=max_bytes, topics=(topic,))


def describe_quorum_request(version: int) -> Any:
    part = _build(DESCRIBE_QUORUM, version, "PartitionData", partition_index=0)
    topic = _build(DESCRIBE_QUORUM, version, "TopicData", topic_name=METADATA_TOPIC,
                   partitions=(part,))
    return _build(DESCRIBE_QUORUM, version, "DescribeQuorumRequest", topics=(topic,))


def describe_cluster_request(version: int) -> Any:
    return _build(DESCRIBE_CLUSTER, version, "DescribeClusterRequest",
                  include_cluster_authorized_operations=True,
                  endpoint_type=ENDPOINT_CONTROLLERS, include_fenced_brokers=False)


# Kafka's AclOperation codes (bit i of cluster_authorized_operations).
ACL_OPERATIONS = {2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
                  8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS",
                  11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS",
                  14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}


def operations(bits: int) -> list[str] | None:
    if bits == NO_OPS:
        return None
    return [name for code, name in ACL_OPERATIONS.items() if bits & (1 << code)]
