"""``records --batches``: one line per record batch, in ``kafka-dump-log``'s batch format."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..problems import Problem
from ..source.batchscan import BatchInfo, iter_batch_infos
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
    }


def batch_line(j: dict[str, Any]) -> str:
    """Kafka's DumpLogSegments.printBatchLevel, word for word."""
    horizon = ("OptionalLong.empty" if j["deleteHorizonMs"] is None
               else f"OptionalLong[{j['deleteHorizonMs']}]")
    return (f"baseOffset: {j['baseOffset']} lastOffset: {j['lastOffset']} count: {j['count']} "
            f"baseSequence: {j['baseSequence']} lastSequence: {j['lastSequence']} "
            f"producerId: {j['producerId']} producerEpoch: {j['producerEpoch']} "
            f"partitionLeaderEpoch: {j['partitionLeaderEpoch']} "
            f"isTransactional: {_b(j['isTransactional'])} isControl: {_b(j['isControl'])} "
            f"deleteHorizonMs: {horizon} position: {j['position']} "
            f"{j['timestampType']}: {j['maxTimestamp']} size: {j['size']} magic: {j['magic']} "
            f"compresscodec: {j['compressCodec']} crc: {j['crc']} isvalid: {_b(j['crcValid'])}")


def _b(v: bool) -> str:
    return "true" if v else "false"


def batches(shell: Shell, first: int | None, last: int | None, snapshot: str | None,
            limit: int | None) -> Result:
    """Batches overlapping ``first``-``last``; a new file starts with ``Dumping FILE``."""
    warnings: list[str] = []

    def selected() -> Iterator[dict[str, Any]]:
        problems: list[Problem] = []
        n = 0
        for b in iter_batch_infos(shell.source, snapshot=snapshot, problems=problems):
            if last is not None and b.base_offset > last:
                break
            if first is not None and b.last_offset < first:
                continue
            yield batch_json(b)
            n += 1
            if limit is not None and n >= limit:
                break
        warnings.extend(p.message for p in problems)

    def lines() -> Iterator[str]:
        file = None
        for j in selected():
            if j["file"] != file:
                file = j["file"]
                yield f"Dumping {file}"
            yield batch_line(j)

    return Result(lines(), lambda: list(selected()), warnings=warnings)
