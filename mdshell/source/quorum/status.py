"""What ``/live`` shows: the connection and the observer's progress, as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LiveStatus:
    bootstrap: str
    security: str
    cluster_id: str | None
    leader_id: int
    leader_epoch: int
    leader_endpoint: str | None
    high_watermark: int
    next_offset: int
    snapshot: str | None
    bytes_fetched: int
    batches_fetched: int
    records_committed: int
    fetches: int
    snapshot_downloads: int
    snapshot_chunks: int
    leader_changes: int
    last_fetch_ms: int
    catch_up_s: float
    following: bool
    follow_error: str | None
    degraded: str | None
    api_versions: dict[int, tuple[int, int]] = field(default_factory=dict)
    finalized_features: dict[str, int] = field(default_factory=dict)
    authorized_operations: list[str] | None = None
    controllers: dict[int, str] = field(default_factory=dict)
    controller_id: int = -1
    notes: list[str] = field(default_factory=list)
    stale_since: float | None = None  # wall time: the leader's last answer, when stale

    @property
    def state(self) -> str:
        """One word for /live/state: following, stale, stopped, degraded or one-shot."""
        if self.degraded:
            return "degraded"
        if not self.following:
            return "one-shot"
        if self.stale_since is not None:
            return "stale"
        return "stopped" if self.follow_error else "following"
