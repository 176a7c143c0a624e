"""``records --batches``: one line per record batch, in ``kafka-dump-log``'s batch format."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..problems import Problem
from ..source.batchscan import BatchInfo, iter_batch_infos
from . import results as res
from .base import Result
from .shell import Shell


def batch_json(b: BatchInfo) -> dict[str, Any]:
    return {
        "file": b.file, "baseOffset": b.base_offset, "lastOffset": b.last_offset,
        "count": b.count, "baseSequence": b.base_sequence, "lastSequence": b.last_sequence,
        "producerId": b.producer_id, "producerEpoch": b.producer_epoch,
        "partitionLeaderEpoch": b.epoch, "isTransactional": b.transactional,
        "isControl": b.control,
        "deleteHorizonMs": b.base_timestamp if b.delete_horizon else None,
        "position": b.position,
        "timestampType": "LogAppendTime" if b.log_append_time else "CreateTime",
        "maxTimestamp": b.max_timestamp, "size": b.size, "magic": b.magic,
        "compressCodec": b.compression, "crc": b.crc, "crcValid": b.crc_valid,
        "headerDamage": b.header_damage,
    }


def batches(shell: Shell, first: int | None, last: int | None, snapshot: str | None,
            limit: int | None) -> Result:
    """Batches overlapping ``first``-``last`` (the text renderer heads each file with
    ``Dumping FILE``)."""
    warnings: list[str] = []
    errors: list[str] = []

    def selected() -> Iterator[dict[str, Any]]:
        problems: list[Problem] = []
        n = 0
        for b in iter_batch_infos(shell.session.source, snapshot=snapshot, problems=problems):
            if last is not None and b.base_offset > last:
                break
            if first is not None and b.last_offset < first:
                continue
            yield batch_json(b)
            n += 1
            if limit is not None and n >= limit:
                break
        warnings.extend(p.message for p in problems if p.message not in warnings)
        if n == 0 and snapshot is None and (outside := outside_the_log(shell, first, last)):
            errors.append(outside)

    return Result(warnings=warnings, errors=errors, value=res.Batches(selected))


def outside_the_log(shell: Shell, first: int | None, last: int | None) -> str | None:
    """Why ``--from``/``--to`` found nothing when they ask for offsets the log does not
    hold (after its end, or before its first segment); None otherwise (a range inside the
    log that no record matches is an empty answer, not an error)."""
    source = shell.session.source
    start, end = source.offset_range()
    segments = source.segments()
    log_first = segments[0].base_offset if segments else start
    if first is not None and end is not None and first > end:
        return (f"records: --from {first} is after the end of the log (its last offset is "
                f"{end}); nothing to show")
    if last is not None and log_first is not None and last < log_first:
        why = ("the records before it were deleted after a snapshot, or not copied; records "
               "--snapshot lists the snapshot in use" if source.snapshots()
               else "the records before it are not in this copy")
        return f"records: --to {last} is before the log's first offset {log_first} ({why})"
    return None
