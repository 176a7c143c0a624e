"""The log's timeline for the history screen: its batches (up to the first damaged one),
snapshots and leader changes, scanned once; and the time of an offset over it (what an
offset or a time typed there means is the shell's ``at`` rule). No textual."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .fmt import ui_time
from .rows import Timeline

if TYPE_CHECKING:
    from ..session import Session
    from ..source import Source


def scan_timeline(source: Source, session: Session) -> Timeline:
    from ..source.batchscan import _files, file_batches, snapshot_points
    from ..wire import control as ctl

    first, last = session.offset_range()  # cut where damage stops a load
    batches = []
    noops = set()
    for path, data, base, dense in _files(source, None, []):
        for b in file_batches(path, data, [], first=base, dense=dense):
            if b.header_damage is not None:
                continue  # the loader skips it: its header may claim any offset
            if not b.crc_valid:
                break  # what the loader can use ends here
            batches.append((b.base_offset, b.last_offset, b.count, b.max_timestamp))
            if b.count == 1 and not b.control and b.compression == "none" \
                    and is_noop(data, b.position):
                noops.add(b.base_offset)
        else:
            continue
        break
    snaps = sorted(p.offset for p in snapshot_points(source))
    leaders = [(c.offset, c.value["leaderId"], c.epoch) for c in session.latest.controls
               if c.ctype == ctl.LEADER_CHANGE and isinstance(c.value, dict)]
    return Timeline(first, last, batches, snaps, leaders, frozenset(noops))


RECORDS_AT = 61  # a v2 batch's first record follows its 61-byte header


def is_noop(data: bytes, position: int) -> bool:
    """Whether the one record of the uncompressed batch at ``position`` is a NoOpRecord (its
    value's frame: version, then api key 20)."""
    from ..wire.kinds import RecordKind
    from ..wire.primitives import read_uvarint, read_varint

    try:
        pos = read_varint(data, position + RECORDS_AT)[1] + 1  # length, attributes
        for _ in range(2):  # timestamp delta, offset delta
            pos = read_varint(data, pos)[1]
        key_len, pos = read_varint(data, pos)
        pos += max(key_len, 0)
        _value_len, pos = read_varint(data, pos)
        pos = read_uvarint(data, pos)[1]  # frame version
        return read_uvarint(data, pos)[0] == RecordKind.NO_OP
    except (IndexError, ValueError):
        return False


def time_at(timeline: Timeline, offset: int) -> str:
    """The timestamp of the batch holding ``offset`` (for the history cursor)."""
    for base, last, _n, t in timeline.batches:
        if base <= offset <= last:
            return ui_time(t)
    return "-"
