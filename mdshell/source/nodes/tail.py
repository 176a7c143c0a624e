"""What one node's directory alone can say of its tail: whether the records of its last epoch
may never have been committed.

The high watermark is not on disk, so a copy of one node cannot show what was committed. Two
signs in its own files still show that the quorum went on without it: ``quorum-state`` names
an epoch newer than the last one in its log (the node voted in, or heard of, an election
whose leader it never fetched from), or the node led its last epoch and ``quorum-state``
shows it no longer does (it resigned: a leader cut off from the others writes on alone until
it gives up). Then the records past its last epoch change may be ones the quorum never
committed, and Kafka truncates them when the node rejoins.
"""

from __future__ import annotations

from ...wire import control as ctl
from ..base import ControlEntry
from ..info import QuorumInfo


def uncommitted_tail(q: QuorumInfo, controls: list[ControlEntry], last_epoch: int | None,
                     end: int | None) -> str | None:
    """Why the log's tail (its last epoch, to ``end``) may be uncommitted, in words; None
    when the files show nothing of the kind (which does not make it committed)."""
    if last_epoch is None or end is None or q.quorum_state_version is None:
        return None
    change = next((c for c in reversed(controls) if c.ctype == ctl.LEADER_CHANGE
                   and isinstance(c.value, dict) and c.epoch == last_epoch), None)
    leader = change.value["leaderId"] if change is not None and isinstance(
        change.value, dict) else None
    why = None
    state_epoch = q.leader_epoch
    if state_epoch is not None and state_epoch > last_epoch:
        follows = q.leader_id is not None and q.leader_id >= 0 and q.leader_id != q.node_id
        why = (f"quorum-state is at epoch {state_epoch}, newer than the log's last epoch "
               f"{last_epoch}: " + (f"it follows node {q.leader_id}, a leader this node has "
                                    "not fetched from yet, whose log may lack this tail"
                                    if follows else "the quorum moved on without this node"))
    elif (q.node_id is not None and leader == q.node_id and state_epoch == last_epoch
          and q.leader_id != q.node_id):
        now = ("no leader" if q.leader_id is None or q.leader_id < 0
               else f"node {q.leader_id} as leader")
        why = (f"node {q.node_id} led epoch {last_epoch} and quorum-state shows it resigned "
               f"({now} in that epoch)")
    if why is None:
        return None
    first = change.offset if change is not None else None
    span = (f"offsets {first}-{end}" if first is not None and first < end
            else f"offset {end}" if first == end else f"the records of epoch {last_epoch} "
            f"up to offset {end}")
    return (f"{span} (epoch {last_epoch}, since the log's last epoch change) may not be "
            f"committed: {why}; the high watermark is not on disk (compare every node's "
            "copy: mdshell -d DIR1 -d DIR2 -d DIR3 nodes)")
