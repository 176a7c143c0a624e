"""Appending batches to ``<20-digit base offset>.log`` segments of a metadata directory.

The writer owns offsets, the leader epoch of each batch and segment rolling; it knows nothing
about what the records mean (that is :mod:`.builder`'s job).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import BinaryIO

from .batches import NONE, Codec, control_batch, metadata_batch
from .files import EMPTY_PRODUCER_SNAPSHOT, write_bytes
from .records import ControlRec, Record

DEFAULT_SEGMENT_BYTES = 1 << 30  # Kafka's metadata.log.segment.bytes default


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


class LogWriter:
    """Appends batches at increasing offsets; rolls to a new segment when one is full.

    While ``suppressed`` is set, offsets advance but nothing is written: the records exist
    only in a later snapshot, as after Kafka deleted the segments a snapshot covers.
    """

    def __init__(self, directory: str, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 producer_snapshots: bool = False) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.producer_snapshots = producer_snapshots
        self.next_offset = 0
        self.epoch = 0
        self.last_epoch = 0  # epoch of the last batch appended
        self.last_timestamp = -1  # max timestamp of the last batch appended
        self.suppressed = False
        self.segments: list[str] = []
        self.epoch_starts: list[tuple[int, int]] = []  # (epoch, first offset), for the checkpoint
        self._file: BinaryIO | None = None
        self._size = 0
        os.makedirs(directory, exist_ok=True)

    # ------------------------------------------------------------ appending

    def append_metadata(self, records: Sequence[Record], *, timestamp: int,
                        codec: Codec = NONE) -> int:
        """Append one data batch; returns its base offset."""
        base = self.next_offset
        if not self.suppressed:
            values = [r.value() for r in records]
            self._write(metadata_batch(base, values, epoch=self.epoch, timestamp=timestamp,
                                       codec=codec))
        self._advance(len(records), timestamp)
        return base

    def append_control(self, records: Sequence[ControlRec], *, timestamp: int) -> int:
        base = self.next_offset
        if not self.suppressed:
            self._write(control_batch(base, records, epoch=self.epoch, timestamp=timestamp))
        self._advance(len(records), timestamp)
        return base

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        if not self.epoch_starts or self.epoch_starts[-1][0] != epoch:
            self.epoch_starts.append((epoch, self.next_offset))

    def _advance(self, count: int, timestamp: int) -> None:
        self.next_offset += count
        self.last_epoch = self.epoch
        self.last_timestamp = timestamp

    def _write(self, data: bytes) -> None:
        if self._file is None or (self._size and self._size + len(data) > self.segment_bytes):
            self.roll()
        assert self._file is not None
        self._file.write(data)
        self._size += len(data)

    # ------------------------------------------------------------ segments

    def roll(self) -> str:
        """Start a new segment at the next offset (Kafka also snapshots producer state)."""
        self.close()
        path = os.path.join(self.directory, segment_name(self.next_offset))
        if self.producer_snapshots and self.segments:
            write_bytes(os.path.join(self.directory, f"{self.next_offset:020d}.snapshot"),
                        EMPTY_PRODUCER_SNAPSHOT)
        self._file = open(path, "wb")  # noqa: SIM115 (kept open across appends)
        self._size = 0
        self.segments.append(path)
        return path

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
