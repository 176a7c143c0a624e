"""Describe a source beyond its image: the quorum (``/quorum``) and its files (``/log``)."""

from __future__ import annotations

from typing import Any

from ..problems import Problem
from ..wire import control as ctl
from .base import ControlEntry, Source
from .cleanwalk import summary
from .info import LeaderChangeInfo, QuorumInfo, SegmentInfo, VoterInfo
from .walker import iter_batches


def scan_segment(name: str, data: bytes, base_offset: int, *, first: int | None = None,
                 dense: bool = True) -> SegmentInfo:
    """Counts, offset and time range of a file's batches, and where damage starts: the same
    walk as the load (what follows damage is not counted, as the load does not use it; a
    batch skipped for a damaged header is not counted either). ``first``: the offset its
    name gives; ``dense``: a log segment (not a snapshot)."""
    info = SegmentInfo(name, base_offset, len(data))
    clean = summary(data, first) if dense and first is not None else None
    if clean is not None:  # every batch read without a word: its headers say it all
        info.batches, info.records = clean.batches, clean.records
        info.first_offset, info.first_timestamp = clean.first_offset, clean.first_timestamp
        info.last_offset, info.last_timestamp = clean.last_offset, clean.last_timestamp
        return info
    damage: list[Problem] = []
    for b in iter_batches(name, data, damage, first=first, dense=dense):
        info.batches += 1
        info.records += b.count
        if info.first_offset is None:
            info.first_offset, info.first_timestamp = b.base_offset, b.base_timestamp
        info.last_offset, info.last_timestamp = b.last_offset, b.max_timestamp
    if damage:
        info.damage = _damage_text(damage[0])
    return info


def _damage_text(p: Problem) -> str:
    where = f"byte {p.position}" + (f" (offset {p.offset})" if p.offset is not None else "")
    if p.code == "crc":
        return f"CRC mismatch in the batch at {where}"
    if p.code == "truncated":
        return f"incomplete batch at {where}"
    if p.code == "header":
        return f"damaged batch header at {where} (the batch is skipped)"
    return f"corrupt batch at {where}"


def quorum_info(source: Source, controls: list[ControlEntry],
                end_offset: int | None) -> QuorumInfo:
    """The quorum as the source's own files (quorum-state, meta.properties) and the control
    records read (``controls``) show it."""
    q = QuorumInfo()
    problems: list[Problem] = []
    source.local_quorum(q, problems)
    # The last of each kind is what counts: read from the end (a long log holds thousands
    # of LeaderChange records).
    wanted = {ctl.LEADER_CHANGE, ctl.KRAFT_VERSION, ctl.KRAFT_VOTERS}
    for c in reversed(controls):
        v = c.value
        if c.ctype not in wanted or not isinstance(v, dict):
            continue
        wanted.discard(c.ctype)
        if c.ctype == ctl.LEADER_CHANGE:
            q.last_leader_change = LeaderChangeInfo(
                c.offset, c.epoch, c.timestamp, v["leaderId"],
                [x["voterId"] for x in v["voters"]], [x["voterId"] for x in v["grantingVoters"]])
        elif c.ctype == ctl.KRAFT_VERSION:
            q.kraft_version = v["kRaftVersion"]
        elif c.ctype == ctl.KRAFT_VOTERS:
            q.voters, q.voters_offset = [_voter(x) for x in v["voters"]], c.offset
        if not wanted:
            break
    if end_offset is not None:
        q.log_end_offset = end_offset + 1
    if q.leader_id is None and q.last_leader_change is not None:
        q.leader_id = q.last_leader_change.leader_id
        q.leader_epoch = q.last_leader_change.epoch
    q.notes.extend(p.message for p in problems)
    return q


def _voter(x: dict[str, Any]) -> VoterInfo:
    feature = x["kRaftVersionFeature"]
    return VoterInfo(x["voterId"], x["voterDirectoryId"],
                     [(e["name"], e["host"], e["port"]) for e in x["endpoints"]],
                     (feature["minSupportedVersion"], feature["maxSupportedVersion"]))


def quorum_from_files(q: QuorumInfo, state: dict[str, Any] | None,
                      props: dict[str, str] | None, problems: list[Problem]) -> None:
    """``quorum-state`` (JSON) and ``meta.properties`` of a directory, into ``q``."""
    if state is not None:
        q.quorum_state_version = _int(state.get("data_version"))
        q.leader_id = _int(state.get("leaderId"))
        q.leader_epoch = _int(state.get("leaderEpoch"))
        q.voted_id = _int(state.get("votedId"))
        q.applied_offset = _int(state.get("appliedOffset"))
        did = state.get("votedDirectoryId")
        q.voted_directory_id = did if isinstance(did, str) else None
        cluster = state.get("clusterId")
        if isinstance(cluster, str) and cluster:
            q.cluster_id = q.quorum_state_cluster_id = cluster
        voters = state.get("currentVoters")
        if isinstance(voters, list):
            ids = [_int(v.get("voterId")) for v in voters if isinstance(v, dict)]
            q.quorum_state_voters = [v for v in ids if v is not None]
    if props:
        meta_id = props.get("cluster.id")
        if meta_id and q.quorum_state_cluster_id and meta_id != q.quorum_state_cluster_id:
            problems.append(Problem(
                "cluster-id", f"meta.properties says cluster.id {meta_id} but quorum-state "
                f"says {q.quorum_state_cluster_id}: these files come from different "
                "clusters"))
        q.cluster_id = meta_id or q.cluster_id
        # meta.properties version 0 (ZooKeeper-era brokers) names it broker.id.
        q.node_id = _int(props.get("node.id", props.get("broker.id")))
        q.directory_id = props.get("directory.id")


def _int(v: object) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | str):
        try:
            return int(v)
        except ValueError:
            return None
    return None
