"""What a live session (``-q``) says about the quorum, for the header and the overview: the
offset and lag indicator, the voters and the leader. Cheap reads of what the follower already
knows (no request: these run on the UI thread). No textual."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .rows import LiveRow

if TYPE_CHECKING:
    from ..session import Session


def live_row(session: Session, shown: int) -> LiveRow | None:
    """Where the image shown (``shown``: its offset) stands against the quorum."""
    st = session.live_status()
    if st is None:
        return None
    since = (None if not st.last_fetch_ms
             else max(0.0, time.time() - st.last_fetch_ms / 1000))
    hw = st.high_watermark if st.high_watermark >= 0 else None
    return LiveRow(st.next_offset, hw, shown, since, st.follow_error)


def live_voters(session: Session) -> list[int] | None:
    """The voters of the last DescribeQuorum answer (None: not live, or never answered)."""
    quorum = session.live_quorum()
    if quorum is None:
        return None
    return [v.replica_id for v in quorum.voters]


def live_observers(session: Session) -> list[int]:
    """The observers of the last DescribeQuorum answer (brokers among them)."""
    quorum = session.live_quorum()
    return [] if quorum is None else [o.replica_id for o in quorum.observers]


def live_leader(session: Session) -> int | None:
    """The leader the follower fetches from (None: not live, or not known yet)."""
    st = session.live_status()
    leader = st.leader_id if st is not None else None
    return leader if isinstance(leader, int) and leader >= 0 else None
