"""``/quorum`` and ``/log``: the KRaft quorum and the files behind the image."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from ..source.info import LogInfo, QuorumInfo, SegmentInfo, SnapshotInfo, VoterInfo
from ..wire.primitives import uuid_str
from .javafmt import iso_zoned_utc
from .node import Node, StaticDir, Value

UNKNOWN = "unknown"


def unknown(reason: str, text: str = UNKNOWN) -> Value:
    """A value the data does not hold: JSON ``{"value": null, "reason": ...}``."""
    return Value(text, {"value": None, "reason": reason})


def _opt(v: object, reason: str = "not in the files read") -> Value:
    return unknown(reason) if v is None else Value(str(v), v)


def quorum_node(q: QuorumInfo) -> Node:
    makers: dict[str, Callable[[], Node]] = {
        "clusterId": lambda: _opt(q.cluster_id),
        "nodeId": lambda: _opt(q.node_id),
        "leaderId": lambda: _opt(q.leader_id),
        "leaderEpoch": lambda: _opt(q.leader_epoch),
        "votedId": lambda: _opt(q.voted_id),
        "votedDirectoryId": lambda: _opt(q.voted_directory_id),
        "directoryId": lambda: _opt(q.directory_id),
        "appliedOffset": lambda: _opt(q.applied_offset),
        "kraftVersion": lambda: Value(str(q.kraft_version), q.kraft_version),
        "logEndOffset": lambda: _opt(q.log_end_offset),
        "highWatermark": lambda: unknown(
            "not stored on disk; a live connection reports it",
            "unknown offline (not stored on disk; a live connection reports it)"),
        "voters": lambda: _voters(q),
        "observers": lambda: unknown(
            "brokers and other observers fetching from the leader are not recorded on disk; "
            "a live connection reports them",
            "unknown offline (brokers and other observers fetching from the leader are not "
            "recorded on disk; a live connection reports them)"),
    }
    if q.last_leader_change is not None:
        lc = q.last_leader_change
        makers["lastLeaderChange"] = lambda: Value(
            f"offset {lc.offset}, epoch {lc.epoch}, leader {lc.leader_id}, voters "
            f"{lc.voters}, granting voters {lc.granting_voters}, time "
            f"{iso_zoned_utc(lc.timestamp)}",
            {"offset": lc.offset, "epoch": lc.epoch, "leaderId": lc.leader_id,
             "voters": lc.voters, "grantingVoters": lc.granting_voters,
             "timestamp": lc.timestamp})
    if q.notes:
        makers["notes"] = lambda: Value("\n".join(q.notes), list(q.notes))
    return StaticDir(makers)


def _voters(q: QuorumInfo) -> Node:
    """Voters from the newest VotersRecord (kraft.version 1), else the static set."""
    makers: dict[str, Callable[[], Node]] = {}
    if q.voters is not None:
        for v in q.voters:
            makers[str(v.id)] = partial(_voter_text, v, q.voters_offset)
    else:
        ids = q.quorum_state_voters or (q.last_leader_change.voters
                                        if q.last_leader_change else [])
        where = "quorum-state" if q.quorum_state_voters else "the last LeaderChange record"
        for vid in ids:
            makers[str(vid)] = partial(Value, f"VoterId={vid} (static quorum, from {where})",
                                       {"id": vid, "source": where})
    return StaticDir(makers)


def _voter_text(v: VoterInfo, offset: int | None) -> Node:
    ends = ", ".join(f"{n}://{h}:{p}" for n, h, p in v.endpoints)
    did = uuid_str(v.directory_id) if v.directory_id is not None else UNKNOWN
    rng = (f"{v.kraft_version_range[0]}-{v.kraft_version_range[1]}"
           if v.kraft_version_range else UNKNOWN)
    data: dict[str, Any] = {
        "id": v.id, "directoryId": None if v.directory_id is None else did,
        "endpoints": [{"name": n, "host": h, "port": p} for n, h, p in v.endpoints],
        "kraftVersion": None if v.kraft_version_range is None else rng, "fromOffset": offset,
    }
    return Value(f"Voter(id={v.id}, directoryId={did}, endpoints=[{ends}], "
                 f"kraftVersion={rng})", data)


def log_node(info: LogInfo) -> Node:
    offsets = (f"{info.start_offset}-{info.end_offset}" if info.end_offset is not None
               else "empty")
    return StaticDir({
        "directory": lambda: Value(info.directory),
        "offsets": lambda: Value(offsets, {"start": info.start_offset, "end": info.end_offset}),
        "segments": lambda: StaticDir({s.name: partial(_segment, s) for s in info.segments}),
        "snapshots": lambda: StaticDir({s.name: partial(_snapshot, s) for s in info.snapshots}),
        "ignored": lambda: StaticDir({name: partial(Value, why) for name, why in info.ignored}),
    })


def _n(n: int, noun: str, plural: str = "s") -> str:
    return f"{n} {noun}{'' if n == 1 else plural}"


def _segment(s: SegmentInfo) -> Node:
    if s.first_offset is None:
        rng = "no batches"
    else:
        rng = (f"offsets {s.first_offset}-{s.last_offset}, {_n(s.batches, 'batch', 'es')}, "
               f"{_n(s.records, 'record')}, {s.size} bytes, time "
               f"{iso_zoned_utc(s.first_timestamp or 0)} .. "
               f"{iso_zoned_utc(s.last_timestamp or 0)}")
    if s.damage:
        rng += f", damaged: {s.damage}"
    data = {"baseOffset": s.base_offset, "firstOffset": s.first_offset,
            "lastOffset": s.last_offset, "batches": s.batches, "records": s.records,
            "bytes": s.size, "firstTimestamp": s.first_timestamp,
            "lastTimestamp": s.last_timestamp, "damage": s.damage}
    return Value(rng, data)


def _snapshot(s: SnapshotInfo) -> Node:
    text = (f"image of offsets < {s.end_offset} (epoch {s.epoch}), {s.size} bytes, {s.status}")
    return Value(text, {"endOffset": s.end_offset, "epoch": s.epoch, "bytes": s.size,
                        "status": s.status})
