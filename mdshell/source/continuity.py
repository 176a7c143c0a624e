"""The log's continuity, checked as its batches are read: offsets follow on from batch to
batch and file to file, leader epochs never go down. Each break is one :class:`Problem`
naming the file and the offsets; a batch that repeats offsets already read is skipped. A
directory's segments (``laidout``) and one segment read alone (``-s``) are checked alike."""

from __future__ import annotations

import os

from ..problems import Problem, add
from ..wire.batch import Batch


class Continuity:
    """Offsets follow on from batch to batch and file to file; epochs never go down."""

    def __init__(self, problems: list[Problem], epoch: int) -> None:
        self.problems = problems
        self.epoch = epoch
        self.last_epoch: int | None = None  # of the last batch read (the walker's neighbour)
        self.expected: int | None = None

    def passed(self, first: int, last: int) -> None:
        """The walker skipped a batch holding ``first``-``last`` (a damaged header): the
        offsets after it follow on from it, and it was said once already."""
        if self.expected is not None and first <= self.expected <= last:
            self.expected = last + 1

    def follows(self, batch: Batch, path: str) -> bool:
        """Record what breaks continuity; False to skip a batch already read."""
        problems = self.problems
        last = batch.last_offset
        expected = self.expected
        self.last_epoch = batch.epoch
        if (batch.epoch >= self.epoch and (expected is None or (
                last >= expected and batch.base_offset <= expected))):
            self.epoch = batch.epoch
            self.expected = last + 1
            return True  # the usual case: nothing to say
        name = os.path.basename(path)
        if batch.epoch < self.epoch:
            add(problems, Problem(
                "epoch", f"{name}: the batch at offset {batch.base_offset} has leader epoch "
                f"{batch.epoch}, lower than the {self.epoch} before it (a log from another node "
                "mixed in, or damage)", path, batch.base_offset))
        self.epoch = max(self.epoch, batch.epoch)
        expected = self.expected
        if expected is not None:
            if batch.last_offset < expected:
                add(problems, Problem(
                    "overlap", f"{name}: the batch at offsets {batch.base_offset}-"
                    f"{batch.last_offset} repeats offsets already read (up to {expected - 1}); "
                    "skipped (duplicated or reordered segments?)", path, batch.base_offset))
                return False
            if batch.base_offset > expected:
                add(problems, Problem(
                    "gap", f"{name}: offsets {expected}-{batch.base_offset - 1} are missing "
                    f"before the batch at offset {batch.base_offset}; records there are lost, "
                    "so the image may be wrong (a segment was deleted or is damaged)", path,
                    expected))
        self.expected = batch.last_offset + 1
        return True
