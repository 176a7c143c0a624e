"""Images published along a replay, by offset: time travel starts from the nearest one.

Published images share everything they have in common (see ``ImageBuilder.publish``), so a
checkpoint every few thousand records costs the maps that changed, not a copy of the image.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from ..wire.batch import Batch
from . import model as m
from .replay import ImageBuilder

CHECKPOINT_RECORDS = 1000  # records between checkpoints: the most an `at` replays


class History:
    """Published images by the last offset they include (ascending)."""

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.images: list[m.Image] = []

    def add(self, offset: int, image: m.Image) -> None:
        if self.offsets and offset <= self.offsets[-1]:
            if offset == self.offsets[-1]:
                self.images[-1] = image
            return
        self.offsets.append(offset)
        self.images.append(image)

    def nearest(self, offset: int) -> tuple[int, m.Image] | None:
        """The latest image as of ``offset`` or before, or None."""
        i = bisect.bisect_right(self.offsets, offset) - 1
        return (self.offsets[i], self.images[i]) if i >= 0 else None


class Replayer:
    """Replay that can be fed more batches at any time (live follow: cost proportional to
    the new records). Each :meth:`feed` publishes an image that never changes afterwards;
    checkpoints go to ``history`` every ``every`` records, at batch ends outside metadata
    transactions."""

    def __init__(self, builder: ImageBuilder | None = None, history: History | None = None,
                 every: int = CHECKPOINT_RECORDS) -> None:
        self.builder = builder or ImageBuilder()
        self.history = history if history is not None else History()
        self.every = every
        self._since = 0
        self.current: m.Image = self.builder.publish()

    def apply(self, batch: Batch, upto: int | None = None, skip_below: int = -1) -> None:
        """Apply one metadata batch (control batches carry no image change)."""
        if batch.is_control:
            return
        b = self.builder
        before = b.records_applied
        b.apply_batch(batch, upto, skip_below)
        self._since += b.records_applied - before
        if self._since >= self.every and b.txn is None:
            self.checkpoint()

    def checkpoint(self) -> m.Image:
        """Publish now and remember the image by its offset."""
        image = self.builder.publish()
        self._since = 0
        if image.provenance.offset >= 0:
            self.history.add(image.provenance.offset, image)
        self.current = image
        return image

    def feed(self, batches: Iterable[Batch], upto: int | None = None) -> m.Image:
        """Apply ``batches`` and publish the image they lead to."""
        for batch in batches:
            self.apply(batch, upto)
        return self.checkpoint()
