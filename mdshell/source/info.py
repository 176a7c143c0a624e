"""What mdshell knows besides the image: the quorum and the files of the log.

Plain data, filled by the loader (from quorum-state, meta.properties, control records and file
headers) and shown by the tree under ``/quorum`` and ``/log``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class VoterInfo:
    """A voter of the quorum, with its directory id when known."""

    id: int
    directory_id: bytes | None = None
    endpoints: list[tuple[str, str, int]] = field(default_factory=list)
    kraft_version_range: tuple[int, int] | None = None


@dataclass(slots=True)
class LeaderChangeInfo:
    """A LeaderChangeMessage of the log: who led from which offset."""

    offset: int
    epoch: int
    timestamp: int
    leader_id: int
    voters: list[int]
    granting_voters: list[int]


@dataclass(slots=True)
class QuorumInfo:
    """The KRaft quorum as seen offline. ``source`` says where each part came from."""

    cluster_id: str | None = None  # meta.properties (or quorum-state v0)
    quorum_state_cluster_id: str | None = None
    node_id: int | None = None  # meta.properties: the node that wrote this copy
    directory_id: str | None = None  # meta.properties directory.id (3.7+)
    applied_offset: int | None = None  # quorum-state v0
    leader_id: int | None = None
    leader_epoch: int | None = None
    voted_id: int | None = None
    voted_directory_id: str | None = None
    quorum_state_version: int | None = None
    quorum_state_voters: list[int] | None = None
    live_voters: list[int] | None = None  # the last DescribeQuorum answer (-q)
    kraft_version: int = 0
    voters: list[VoterInfo] | None = None  # from the newest VotersRecord
    voters_offset: int | None = None
    last_leader_change: LeaderChangeInfo | None = None
    log_end_offset: int | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(slots=True)
class SegmentInfo:
    """What a log segment holds (offsets, epochs, times, damage)."""

    name: str
    base_offset: int
    size: int
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    damage: str | None = None


@dataclass(slots=True)
class SnapshotInfo:
    """What a snapshot file holds."""

    name: str
    end_offset: int
    epoch: int
    size: int
    status: str  # "in use", "older", "newer than the selected offset", "unusable", ...


@dataclass(slots=True)
class LogInfo:
    """The log of a directory: its segments and snapshots."""

    directory: str
    segments: list[SegmentInfo] = field(default_factory=list)
    snapshots: list[SnapshotInfo] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (file name, why)
    start_offset: int | None = None  # the oldest offset whose image can be rebuilt
    end_offset: int | None = None  # the last offset in the log
