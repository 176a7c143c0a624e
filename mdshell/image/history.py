"""Images along a replay, by offset: time travel starts from the nearest one.

History holds one whole image, where the replay started (a snapshot's end, or the empty
image before the log), the latest image published, and in between a mark every few thousand
records at a batch end: the journal of what changed since the mark before (see
:mod:`.journal`). An image at a mark is rebuilt from the start and the journals when asked,
so history costs what changed, not what exists, however the records were batched.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from ..wire import decoding, framing
from ..wire.batch import (
    COMPRESSION_MASK,
    CONTROL_FLAG,
    HEADER_SIZE,
    LOG_OVERHEAD,
    UNDECODABLE,
    Batch,
    ControlRead,
    compressed_payload,
    control_records,
)
from ..wire.codec import UNKNOWN_TAGS
from ..wire.decoding import decode_records
from ..wire.kinds import RecordKind
from ..wire.native import piece
from . import model as m
from . import replay
from .journal import Journal, rebuild
from .replay import ImageBuilder

# The header columns of a clean stretch a run reads, the fast walk's arrays: starts, base
# offsets, lengths, last offset deltas, leader epochs, max timestamps, attributes, record
# counts, base timestamps.
RunColumns = tuple["array[int]", "array[int]", "array[int]", "array[int]", "array[int]",
                   "array[int]", "array[int]", "array[int]", "array[int]"]
_NO_OP, _PARTITION = RecordKind.NO_OP, RecordKind.PARTITION
_cwalk = piece("_cwalk")
_crun = _cwalk.run if _cwalk is not None else None


CHECKPOINT_RECORDS = 1000  # records between marks: the most an `at` replays
NO_CHECKPOINTS = 1 << 62  # ``every`` for a replay that keeps no history (an observer's)


class History:
    """Marks by the last offset they include (ascending), each an image on demand."""

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self._start = m.Image()  # the whole image the journals start from
        self._journals: list[Journal] = []
        self._upto: list[int] = []  # how many journals lead to each mark's image
        self._images: dict[int, m.Image] = {}  # whole images kept, by mark index
        self._rebuilt: tuple[int, m.Image] | None = None  # the last one rebuilt

    def restart(self, image: m.Image) -> None:
        """History starts again at ``image`` (a mark when it holds an offset)."""
        self.offsets.clear()
        self._journals.clear()
        self._upto.clear()
        self._images.clear()
        self._rebuilt = None
        self._start = image
        if image.provenance.offset >= 0:
            self.offsets.append(image.provenance.offset)
            self._upto.append(0)
            self._images[0] = image

    def add(self, offset: int, journal: Journal, image: m.Image | None = None) -> None:
        """A mark at ``offset``: ``journal`` leads to it from the mark before. ``image``
        (the published one) is kept whole until the next published one replaces it."""
        if not (self.offsets and offset <= self.offsets[-1] and journal.empty()):
            self._journals.append(journal)
            self.offsets.append(offset)
            self._upto.append(len(self._journals))
        if image is not None:
            last = len(self.offsets) - 1
            self._images = {i: img for i, img in self._images.items() if self._upto[i] == 0}
            self._images[last] = image

    def nearest(self, offset: int) -> tuple[int, m.Image] | None:
        """The latest image as of ``offset`` or before, or None."""
        i = bisect.bisect_right(self.offsets, offset) - 1
        return (self.offsets[i], self.image(i)) if i >= 0 else None

    def image(self, i: int) -> m.Image:
        """The image at mark ``i``."""
        kept = self._images.get(i)
        if kept is not None:
            return kept
        upto = self._upto[i]
        start, done = self._start, 0
        if self._rebuilt is not None and self._upto[self._rebuilt[0]] <= upto:
            done, start = self._upto[self._rebuilt[0]], self._rebuilt[1]
        image = rebuild(start, self._journals[done:upto])
        self._rebuilt = (i, image)
        return image

    @property
    def images(self) -> Sequence[m.Image]:
        """The image at each of :attr:`offsets` (rebuilt one by one as they are read)."""
        return _Images(self)


class _Images(Sequence[m.Image]):
    def __init__(self, history: History) -> None:
        self._history = history

    def __len__(self) -> int:
        return len(self._history.offsets)

    @overload
    def __getitem__(self, i: int) -> m.Image: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[m.Image]: ...

    def __getitem__(self, i: int | slice) -> m.Image | Sequence[m.Image]:
        if isinstance(i, slice):
            return [self._history.image(j) for j in range(len(self))[i]]
        return self._history.image(range(len(self))[i])

    def __iter__(self) -> Iterator[m.Image]:
        return (self._history.image(i) for i in range(len(self)))


class Replayer:
    """Replay that can be fed more batches at any time (live follow: cost proportional to
    the new records). Each :meth:`feed` publishes an image that never changes afterwards;
    marks go to ``history`` every ``every`` records, at batch ends outside metadata
    transactions."""

    def __init__(self, builder: ImageBuilder | None = None, history: History | None = None,
                 every: int = CHECKPOINT_RECORDS) -> None:
        self.builder = builder or ImageBuilder()
        self.history = history if history is not None else History()
        self.every = every
        self._since = 0
        self.at = -1  # apply_run: the batch being applied
        self._run_state = (0, 0)  # the compiled run's (since, applied) when applying raised
        self._listed: tuple[RunColumns, tuple[list[int], ...]] | None = None
        # apply_run: the control records of each control batch it passed over, in order
        # (``control_records``); the caller takes them and empties the list
        self.passed_controls: list[list[ControlRead]] = []
        self.current: m.Image = self.builder.publish()
        self._restart()

    def _restart(self) -> None:
        """History starts at the current image; journals from here when marks are wanted."""
        self.history.restart(self.current)
        self.builder.journal = Journal() if self.every < NO_CHECKPOINTS else None

    def apply(self, batch: Batch, upto: int | None = None, skip_below: int = -1) -> None:
        """Apply one metadata batch (control batches carry no image change)."""
        if batch.attributes & CONTROL_FLAG:
            return
        b = self.builder
        before = b.records_applied
        b.apply_batch(batch, upto, skip_below)
        self.applied(b.records_applied - before)

    def applied(self, n: int) -> None:
        """A batch's ``n`` records were applied: a mark when enough have been since the
        last (:meth:`apply_run` does the same inline)."""
        b = self.builder
        since = self._since + n
        if since < self.every or b.txn is not None or b.journal is None:
            self._since = since
            return
        self._since = 0
        offset = b.image.provenance.offset
        if offset >= 0:
            self.history.add(offset, b.mark())

    def apply_run(self, data: bytes, heads: RunColumns, plan: array[int], k: int,
                  upto: int | None, skip_below: int) -> int:
        """Apply the batches ``plan[k:]`` of a clean stretch of ``data`` (their header
        fields in ``heads``, the fast walk's arrays; ``plan`` an int64 array of their
        indices) as :meth:`apply` applies each, for a builder without an observer, a sieve
        or a snapshot index (which are given each batch as :meth:`apply` gives it): framed
        (a compressed batch's payload decompressed first), every record decoded, then
        applied by ``apply_decoded`` (the one replay of a batch), the one-NoOp batches
        passed over before each done first. A control batch whose records read
        (``control_records``) changes nothing: its records go to :attr:`passed_controls`
        for the caller. The compiled loop (``_cwalk.run``) does the same. Returns the index
        in ``plan`` of the first batch it left (``len(plan)``: none), which the caller
        applies as any batch; a batch left for a problem is left whole (nothing of it
        applied), and applying it says what is wrong. :attr:`at`: the index of the batch
        being applied (the one that raised, if one did)."""
        b = self.builder
        plain = b.observer is None and b.sieve is None and b.index is None
        b.batch = None
        if plain and _crun is not None:
            done = self._compiled_run(data, heads, plan, k, upto, skip_below)
            if done is not None:
                return done
        # As lists: a list's item is read in place, an array's made into an int each time.
        starts, base, length, delta, epoch, max_ts, attrs, count, base_ts = self._lists(heads)
        n = len(plan)
        lazy = not b.eager
        before = plan[k - 1] if k else -1
        while k < n:
            self.at = i = plan[k]
            if i - before > 1:  # the one-NoOp batches passed over before this one
                b.pass_noops(base[i - 1], epoch[i - 1], max_ts[i - 1], upto, skip_below)
            before = i
            if not plain:
                return k
            pos = starts[i]
            if attrs[i] & CONTROL_FLAG:  # no image change: noted for the caller
                controls = control_records(data, pos)
                if controls is None:
                    return k  # reading it says what is wrong
                self.passed_controls.append(controls)
                k += 1
                continue
            buf, at, end = data, pos + HEADER_SIZE, pos + LOG_OVERHEAD + length[i]
            if attrs[i] & COMPRESSION_MASK:
                payload = compressed_payload(data, pos)
                if payload is None:
                    return k  # apply_batch decompresses it again, and says what
                buf, at, end = payload, 0, len(payload)
            try:
                recs = framing.frame(buf, at, end, count[i], base[i], base_ts[i],
                                     batch_size=LOG_OVERHEAD + length[i])
                decoded, last = decode_records(buf, recs, skip_below, upto, lazy)
            except UNDECODABLE:
                return k  # apply_batch frames it again, and says what
            self.applied(b.apply_decoded(decoded, last, base[i] + delta[i], epoch[i],
                                         max_ts[i], upto))
            k += 1
        return k

    def _lists(self, heads: RunColumns) -> tuple[list[int], ...]:
        """``heads`` as lists (kept for the stretch: the loop comes back to it)."""
        if self._listed is None or self._listed[0] is not heads:
            self._listed = (heads, tuple(col.tolist() for col in heads))
        return self._listed[1]

    def _compiled_run(self, data: bytes, cols: RunColumns, plan: array[int], k: int,
                      upto: int | None, skip_below: int) -> int | None:
        """:meth:`apply_run`'s loop in C (``_cwalk.run``), the marks it stops for made
        here; None when it does not take the arguments (the Python loop then runs)."""
        assert _crun is not None
        b = self.builder
        while True:
            ctx = (b, b.image.provenance, decoding.decoders(), decoding.decoder,
                   b.apply_decoded, not b.eager, self.every, self._since, _NO_OP, _PARTITION,
                   self, replay.HANDLERS, UNKNOWN_TAGS, b._unknown_tags, self.passed_controls,
                   compressed_payload, control_records)
            try:
                got = _crun(data, cols, plan, k, upto, skip_below, ctx)
            except BaseException:
                self._since, applied = self._run_state
                b.records_applied += applied
                raise
            if got is None:
                return None
            k, self._since, applied, why = got
            b.records_applied += applied
            if not why:
                return int(k)
            # a mark is due after plan[k] (apply's rule)
            self._since = 0
            offset = b.image.provenance.offset
            if offset >= 0:
                self.history.add(offset, b.mark())
            k += 1

    def checkpoint(self) -> m.Image:
        """Publish now and remember the image by its offset. Where no journal was kept (a
        snapshot's replay, an observer's), history starts again here."""
        b = self.builder
        journal = b.mark() if b.journal is not None else None
        image = b.publish()
        self._since = 0
        self.current = image
        if journal is None or image.provenance.offset < 0:
            self._restart()
        else:
            self.history.add(image.provenance.offset, journal, image)
        return image

    def feed(self, batches: Iterable[Batch], upto: int | None = None) -> m.Image:
        """Apply ``batches`` and publish the image they lead to."""
        for batch in batches:
            self.apply(batch, upto)
        return self.checkpoint()
