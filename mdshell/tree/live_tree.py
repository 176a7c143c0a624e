"""``/live`` (the connection) and the live ``/quorum`` (DescribeQuorum), from plain data."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from .javafmt import iso_zoned_utc
from .node import Node, StaticDir, Value

if TYPE_CHECKING:
    from ..source.quorum.discover import QuorumView, Replica
    from ..source.quorum.status import LiveStatus


UNKNOWN = "unknown"


def _v(value: object) -> Value:
    return Value(UNKNOWN if value is None else str(value), value)


def _time(ms: int) -> Value:
    return Value("never" if ms <= 0 else iso_zoned_utc(ms), ms if ms > 0 else None)


def live_node(get: Callable[[], LiveStatus]) -> Node:
    s = get()
    makers: dict[str, Callable[[], Node]] = {
        "state": lambda: _state(s),
        "bootstrap": lambda: _v(s.bootstrap),
        "security": lambda: _v(s.security),
        "clusterId": lambda: _v(s.cluster_id),
        "leader": lambda: Value(_leader_text(s), {"id": s.leader_id,
                                                  "endpoint": s.leader_endpoint,
                                                  "epoch": s.leader_epoch}),
        "highWatermark": lambda: _v(s.high_watermark),
        "nextOffset": lambda: _v(s.next_offset),
        "snapshot": lambda: _v(s.snapshot),
        "bytesFetched": lambda: _v(s.bytes_fetched),
        "batchesFetched": lambda: _v(s.batches_fetched),
        "recordsCommitted": lambda: _v(s.records_committed),
        "fetches": lambda: _v(s.fetches),
        "snapshotDownloads": lambda: _v(s.snapshot_downloads),
        "snapshotChunks": lambda: _v(s.snapshot_chunks),
        "leaderChanges": lambda: _v(s.leader_changes),
        "lastFetch": lambda: _time(s.last_fetch_ms),
        "catchUpSeconds": lambda: Value(f"{s.catch_up_s:.3f}", s.catch_up_s),
        "following": lambda: Value("yes" if s.following else "no (one-shot: the image at "
                                   "catch-up)", s.following),
        "controllers": lambda: StaticDir({str(k): partial(_v, v)
                                          for k, v in sorted(s.controllers.items())}),
        "activeController": lambda: _v(s.controller_id),
        "authorizedOperations": lambda: _v(
            None if s.authorized_operations is None else ", ".join(s.authorized_operations)),
        "finalizedFeatures": lambda: StaticDir({k: partial(_v, v)
                                                for k, v in sorted(s.finalized_features.items())}),
        "apiVersions": lambda: StaticDir({str(k): partial(
            Value, f"{lo}-{hi}", [lo, hi]) for k, (lo, hi) in sorted(s.api_versions.items())}),
    }
    if s.follow_error:
        makers["followError"] = lambda: _v(s.follow_error)
    if s.degraded:
        makers["degraded"] = lambda: _v(s.degraded)
    if s.notes:
        makers["notes"] = lambda: Value("\n".join(s.notes), list(s.notes))
    return StaticDir(makers)


def _leader_text(s: LiveStatus) -> str:
    if s.leader_id < 0:
        return UNKNOWN + " (no leader known yet)"
    if not s.leader_endpoint:
        return (f"none reachable now (last known: node {s.leader_id}, epoch "
                f"{s.leader_epoch})")
    return f"node {s.leader_id} at {s.leader_endpoint}, epoch {s.leader_epoch}"


def _state(s: LiveStatus) -> Value:
    """following / stale since <time> / stopped / degraded / one-shot."""
    if s.stale_since is None:
        return Value(s.state, {"state": s.state, "staleSince": None})
    ms = int(s.stale_since * 1000)
    return Value(f"stale since {iso_zoned_utc(ms)} ({time.time() - s.stale_since:.1f} s)",
                 {"state": s.state, "staleSince": ms})


def _replica(r: Replica, leader_id: int, hw: int) -> Value:
    lag = None if r.log_end_offset < 0 or hw < 0 else max(hw - r.log_end_offset, 0)
    role = " (leader)" if r.replica_id == leader_id else ""
    text = (f"ReplicaId={r.replica_id}{role}, logEndOffset={r.log_end_offset}, "
            f"lag={UNKNOWN if lag is None else lag}, "
            f"lastFetch={iso_zoned_utc(r.last_fetch_ms) if r.last_fetch_ms > 0 else 'unknown'}, "
            "lastCaughtUp="
            f"{iso_zoned_utc(r.last_caught_up_ms) if r.last_caught_up_ms > 0 else 'unknown'}")
    if r.directory_id:
        text += f", directoryId={r.directory_id}"
    return Value(text, {"replicaId": r.replica_id, "logEndOffset": r.log_end_offset, "lag": lag,
                        "lastFetchTimestamp": r.last_fetch_ms,
                        "lastCaughtUpTimestamp": r.last_caught_up_ms,
                        "directoryId": r.directory_id})


def live_quorum_node(q: QuorumView | None, cluster_id: str | None) -> Node:
    if q is None:
        return StaticDir({"error": lambda: Value("DescribeQuorum gave no answer (see /live)")})
    makers: dict[str, Callable[[], Node]] = {
        "clusterId": lambda: _v(cluster_id),
        "leaderId": lambda: _v(q.leader_id),
        "leaderEpoch": lambda: _v(q.leader_epoch),
        "highWatermark": lambda: _v(q.high_watermark),
        "voters": lambda: StaticDir({str(r.replica_id): partial(
            _replica, r, q.leader_id, q.high_watermark) for r in q.voters}),
        "observers": lambda: StaticDir({str(r.replica_id): partial(
            _replica, r, q.leader_id, q.high_watermark) for r in q.observers}),
        "answeredBy": lambda: _v(q.asked),
        "time": lambda: _time(q.at_ms),
    }
    if q.nodes:
        makers["endpoints"] = lambda: StaticDir({str(k): partial(
            Value, ", ".join(f"{n}://{h}:{p}" for n, h, p in v),
            [{"name": n, "host": h, "port": p} for n, h, p in v])
            for k, v in sorted(q.nodes.items())})
    return StaticDir(makers)
