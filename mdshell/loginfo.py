"""Describe a source beyond its image: the quorum (``/quorum``) and its files (``/log``)."""

from __future__ import annotations

import os
from typing import Any

from .info import LeaderChangeInfo, LogInfo, QuorumInfo, SegmentInfo, SnapshotInfo, VoterInfo
from .loader import DirectorySource, Loaded, Source
from .problems import Problem, SourceError
from .source.localfiles import read_properties, read_quorum_state
from .source.reader import MAX_BATCH_LENGTH
from .wire import control as ctl
from .wire.batch import HEADER, HEADER_SIZE, LOG_OVERHEAD, MIN_BATCH_LENGTH, parse_header


def scan_segment(name: str, data: bytes, base_offset: int) -> SegmentInfo:
    """Counts, offset and time range of a file's batches, and where damage starts (CRCs
    are checked: what follows damage is not counted, as the loader does not use it)."""
    info = SegmentInfo(name, base_offset, len(data))
    pos, size = 0, len(data)
    while pos < size:
        if size - pos < HEADER_SIZE:
            if data[pos:].strip(b"\0"):
                info.damage = f"incomplete batch at byte {pos}"
            break
        fields = HEADER.unpack_from(data, pos)
        base, length = fields[0], fields[1]
        if (length < MIN_BATCH_LENGTH or length > MAX_BATCH_LENGTH
                or pos + LOG_OVERHEAD + length > size):
            if length or data[pos:].strip(b"\0"):
                info.damage = f"incomplete or corrupt batch at byte {pos} (offset {base})"
            break
        if fields[3] != 2 or not parse_header(data, pos).crc_ok():
            info.damage = f"CRC mismatch in the batch at byte {pos} (offset {base})"
            break
        info.batches += 1
        info.records += fields[12]
        if info.first_offset is None:
            info.first_offset, info.first_timestamp = base, fields[7]
        info.last_offset, info.last_timestamp = base + fields[6], fields[8]
        pos += LOG_OVERHEAD + length
    return info


def _scan(source: DirectorySource, path: str, base: int) -> SegmentInfo:
    try:
        return scan_segment(os.path.basename(path), source.data(path), base)
    except SourceError as e:
        return SegmentInfo(os.path.basename(path), base, -1, damage=str(e))


def log_info(source: Source, loaded: Loaded) -> LogInfo:
    if not isinstance(source, DirectorySource):
        seg = scan_segment(os.path.basename(source.path), source.data(), 0)
        return LogInfo(source.path, [seg], start_offset=seg.first_offset,
                       end_offset=seg.last_offset)
    layout = source.layout
    info = LogInfo(layout.directory)
    info.segments = [_scan(source, s.path, s.base_offset) for s in layout.segments]
    used = loaded.snapshot.path if loaded.snapshot else None
    unusable = {p.file for p in loaded.problems if p.code == "snapshot"}
    for cp in layout.checkpoints:
        if cp.path == used:
            status = "in use"
        elif cp.end_offset == 0:
            status = "bootstrap (voters only, no metadata)"
        elif cp.path in unusable:
            status = "unusable (see warnings)"
        elif loaded.upto is not None and cp.end_offset - 1 > loaded.upto:
            status = "newer than the selected offset"
        else:
            status = "older"
        info.snapshots.append(SnapshotInfo(cp.name, cp.end_offset, cp.epoch, cp.size, status))
    for cp in layout.ignored_checkpoints:
        why = ("being written (.part): ignored" if cp.state == "part"
               else "scheduled for deletion (.deleted): ignored")
        info.ignored.append((os.path.basename(cp.path), why))
    for p in layout.producer_snapshots:
        info.ignored.append((os.path.basename(p), "producer-state snapshot, not metadata"))
    for path, why in layout.ignored + layout.suspicious:
        info.ignored.append((os.path.basename(path), why))
    info.start_offset, info.end_offset = offset_range(source, info.segments)
    return info


def offset_range(source: Source,
                 scanned: list[SegmentInfo] | None = None) -> tuple[int | None, int | None]:
    """The oldest and newest offsets whose image this source can rebuild: the end is the last
    offset of the newest segment that holds batches (an empty newest segment is normal)."""
    if not isinstance(source, DirectorySource):
        seg = scan_segment("", source.data(), 0)
        return seg.first_offset, seg.last_offset
    layout = source.layout
    last: int | None = None
    segments = scanned if scanned is not None else None
    for i in range(len(layout.segments) - 1, -1, -1):
        s = layout.segments[i]
        info = segments[i] if segments is not None else _scan(source, s.path, s.base_offset)
        if info.last_offset is not None:
            last = info.last_offset
            break
    snaps = [c.end_offset for c in layout.checkpoints if c.end_offset > 0]
    if snaps and (last is None or max(snaps) - 1 > last):
        last = max(snaps) - 1
    if layout.segments and layout.segments[0].base_offset == 0:
        return 0, last
    first_seg = layout.segments[0].base_offset if layout.segments else None
    usable = [e - 1 for e in snaps if first_seg is None or e >= first_seg]
    return (min(usable) if usable else first_seg), last


def quorum_info(source: Source, loaded: Loaded) -> QuorumInfo:
    q = QuorumInfo()
    problems: list[Problem] = []
    if isinstance(source, DirectorySource):
        _from_files(q, source, problems)
    for c in loaded.controls:
        v = c.value
        if not isinstance(v, dict):
            continue
        if c.ctype == ctl.LEADER_CHANGE:
            q.last_leader_change = LeaderChangeInfo(
                c.offset, c.epoch, c.timestamp, v["leaderId"],
                [x["voterId"] for x in v["voters"]], [x["voterId"] for x in v["grantingVoters"]])
        elif c.ctype == ctl.KRAFT_VERSION:
            q.kraft_version = v["kRaftVersion"]
        elif c.ctype == ctl.KRAFT_VOTERS:
            q.voters, q.voters_offset = [_voter(x) for x in v["voters"]], c.offset
    if loaded.end_offset is not None:
        q.log_end_offset = loaded.end_offset + 1
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


def _from_files(q: QuorumInfo, source: DirectorySource, problems: list[Problem]) -> None:
    state = read_quorum_state(source.layout.directory, problems)
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
    if source.layout.log_dir:
        props = read_properties(os.path.join(source.layout.log_dir, "meta.properties"),
                                problems)
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
