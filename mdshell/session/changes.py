"""The replays ``changes`` plans: every record from as far back as the data goes, seen by an
observer, without running the whole load again where the latest load kept what is needed
(``replay_history``), or before any load, applying only the records a sieve picks
(``replay_sieved``: a one-shot ``changes`` of one topic on a large snapshot)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..image.model import Image
from ..image.replay import ImageBuilder, Observer, Sieve, Wants
from ..wire import codec
from ..wire.batch import UNDECODABLE, Batch
from ..wire.kinds import RecordKind
from ..wire.records import METADATA
from .load import Loaded, first_load, load

if TYPE_CHECKING:
    from . import Session

_PARTITION_RECORDS = (RecordKind.PARTITION, RecordKind.PARTITION_CHANGE)


def replay_history(session: Session, observer: Observer, wants: Wants,
                   upto: int | None) -> None:
    """Show ``observer`` every record from as far back as the data goes up to ``upto``
    (``changes``). When the latest load started from the snapshot where history starts, the
    snapshot's records come from what that load kept (its decoded records, and the undecoded
    partitions of the image after it, in file order) and only the log after it is replayed;
    otherwise everything is replayed again."""
    latest, source = session.latest, session.source
    start = source.history_start()
    point = session.history.nearest(latest.base) if latest.base >= 0 else None
    if (latest.index is None or latest.snapshot is None or start is None
            or start.path != latest.snapshot.path or point is None or point[0] != latest.base
            or (upto is not None and upto < latest.base)
            or not _snapshot_records(point[1], latest, observer, wants)):
        load(source, upto=upto, observer=observer, history=True, wants=wants)
        return
    builder = ImageBuilder(point[1], observer=observer, wants=wants)
    stream = source.log_stream(latest.base + 1, upto, latest.snapshot)
    for loc in stream:
        if loc.batch.is_control:
            continue
        builder.file = os.path.basename(loc.file)
        try:
            builder.apply_batch(loc.batch, upto, latest.base + 1)
        except UNDECODABLE:
            break  # the load reported it


def replay_sieved(session: Session, observer: Observer, wants: Wants, sieve: Sieve) -> bool:
    """``replay_history`` for a session that has not loaded yet (a one-shot ``changes``):
    replay every change but apply only the records ``sieve`` picks, so the rest of a large
    snapshot is stepped over rather than framed. False (and nothing to keep) when the session
    has loaded already (its index serves better), or when reading found a problem, or when a
    picked record could not be applied (an unknown type or version holding the topic's bytes
    may be the topic's own record): then the full load must run, to report it as it always
    does. Problems of records the sieve stepped over go unreported: they are not framed."""
    if session.is_loaded:
        return False
    source = session.source
    loads = [first_load(source, observer=observer, history=True, wants=wants, sieve=sieve)]
    snaps = source.snapshots()
    if snaps and (len(snaps) > 1 or source.history_start() is None):
        # History starts elsewhere than the latest load would: read the way the latest load
        # does too (picking nothing), for what it would find (a damaged newest snapshot).
        loads.append(first_load(source, sieve=_NOTHING))
    for loaded in loads:
        replayer = loaded.replayer
        mine = replayer.builder.problems if replayer is not None else []
        # What the partial image lacks (a topic another record names) is the sieve's doing;
        # a picked record that is itself unreadable is not.
        if any(p not in mine or p.code in _RECORD_ITSELF for p in loaded.problems):
            return False
    session.spared = True
    return True


# Replay problems about the record itself, whatever image it is applied to.
_RECORD_ITSELF = frozenset({"unknown-record", "unknown-tag", "bad-value"})


def _NOTHING(batch: Batch) -> tuple[bytes, list[tuple[int, int, int, int, int, int]]]:
    """A sieve that picks no record: the batches are read and checked, not applied."""
    return batch.buf, []


def _snapshot_records(base: Image, latest: Loaded, observer: Observer, wants: Wants) -> bool:
    """Observe the snapshot's records from the index; False (nothing observed) when an
    image partition cannot be placed (decoded at load, or from elsewhere)."""
    index = latest.index
    assert index is not None and latest.snapshot is not None
    # Each record applied is in the index or is a partition of the image, unless one was
    # stored twice (a batch repeated) or dropped: then its records are not all here.
    kept = sum(len(t.partitions) for t in base.topics_by_id.values())
    decoded = sum(1 for e in index.records if e[2] == RecordKind.PARTITION)
    if len(index.records) - decoded + kept != index.applied:
        return False
    builder = ImageBuilder(base, observer=observer, wants=wants)
    builder.origin = latest.snapshot.name
    found: list[tuple[int, int, int, int, dict[str, Any], int]] = [
        e for e in index.records if e[2] not in _PARTITION_RECORDS
        or wants(builder, e[4]["topicId"], e[4]["partitionId"])]
    whole_topic = getattr(wants, "topic", None)  # a filter may answer for a whole topic
    for topic in base.topics_by_id.values():
        if whole_topic is not None and not whole_topic(builder, topic.id):
            continue
        for pid, p in topic.partitions.items():
            if not wants(builder, topic.id, pid):
                continue
            if not isinstance(p, tuple):
                return False
            buf, body, end, ver = p
            ordinal = index.ordinal(buf, body)
            if ordinal is None:
                return False
            d = codec.decode(METADATA[RecordKind.PARTITION], ver, buf, body, end)
            found.append((ordinal, body, RecordKind.PARTITION, ver, d, -1))
    found.sort(key=lambda e: (e[0], e[1]))
    for ordinal, _pos, key, ver, d, off in found:
        builder.batch = index.batches[ordinal]
        observer(builder, key, ver, d, off)
    return True
