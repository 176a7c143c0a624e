"""What a live source (``-q``) says about the quorum, for the header and the overview: the
offset and lag indicator, the voters and the leader. Cheap reads of what the follower already
knows (no request: these run on the UI thread). No textual."""

from __future__ import annotations

import time
from typing import Any

from .rows import LiveRow


def live_row(source: Any, shown: int) -> LiveRow | None:
    """Where the image shown (``shown``: its offset) stands against the quorum."""
    status = getattr(source, "status", None)
    if status is None:
        return None
    st = status()
    since = (None if not st.last_fetch_ms
             else max(0.0, time.time() - st.last_fetch_ms / 1000))
    hw = st.high_watermark if st.high_watermark >= 0 else None
    return LiveRow(st.next_offset, hw, shown, since, st.follow_error)


def live_voters(source: Any) -> list[int] | None:
    """The voters of the last DescribeQuorum answer (None: not live, or never answered)."""
    quorum = getattr(getattr(source, "view", None), "quorum", None)
    if quorum is None:
        return None
    return [v.replica_id for v in quorum.voters]


def live_observers(source: Any) -> list[int]:
    """The observers of the last DescribeQuorum answer (brokers among them)."""
    quorum = getattr(getattr(source, "view", None), "quorum", None)
    return [] if quorum is None else [o.replica_id for o in quorum.observers]


def live_leader(source: Any) -> int | None:
    """The leader the follower fetches from (None: not live, or not known yet)."""
    observer = getattr(source, "observer", None)
    leader = getattr(observer, "leader_id", None)
    return leader if isinstance(leader, int) and leader >= 0 else None
