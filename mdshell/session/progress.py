"""How far a load has got: bytes and batches read of what the source holds.

The loader takes a hook that sees each stream it reads (``load(watch=...)``); this one counts
the batches the streams hand out (each carries its file and byte position), so a front end's
loading screen shows real progress (``Session.load_first(watch=progress.start(...))``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..source import Located, Source, Stretch
from ..source.base import BatchStream


class LoadProgress:
    """Bytes read of the total (newest snapshot plus the segments), and batches read.

    Written by the load thread, read by the UI thread: plain ints, a torn read only shows a
    slightly stale figure.
    """

    def __init__(self) -> None:
        self.total = 0
        self.batches = 0
        self._sizes: dict[str, int] = {}
        self._finished = 0  # bytes of the files read to their end
        self._file: str | None = None
        self._pos = 0

    @property
    def done(self) -> int:
        return min(self._finished + self._pos, self.total) if self.total else self._pos

    @property
    def fraction(self) -> float | None:
        return self.done / self.total if self.total else None

    def start(self, source: Source) -> Callable[[BatchStream], BatchStream]:
        """Size up what ``source`` holds; the hook to give ``load(watch=...)``, which counts
        what each stream hands out."""
        self._sizes, self.total = _sizes(source)
        return self._counted

    def _counted(self, stream: BatchStream) -> BatchStream:
        stream.batches = self._count(iter(stream.batches))
        return stream

    def _count(self, batches: Iterator[Located]) -> Iterator[Located]:
        for loc in batches:
            if loc.file != self._file:
                if self._file is not None:
                    self._finished += self._sizes.get(self._file, self._pos)
                self._file, self._pos = loc.file, 0
            self._pos = loc.position + loc.batch.size
            if isinstance(loc, Stretch):  # clean batches at once, up to this one
                self.batches += loc.plan[-1] + 1
            else:
                self.batches += 1 if loc.quiet is None else 1 + loc.quiet[0]
            yield loc


def bytes_to_read(source: Source) -> int:
    """What a load reads: the newest snapshot plus the segments (-s: the file)."""
    return _sizes(source)[1]


def _sizes(source: Source) -> tuple[dict[str, int], int]:
    snaps = [c for c in source.snapshots() if c.state == "ready"]
    segments = source.segments()
    sizes = {c.path: c.size for c in snaps} | {s.path: s.size for s in segments}
    total = (snaps[-1].size if snaps else 0) + sum(s.size for s in segments)
    if not total:  # a single file (-s): the file itself
        total = sum(sizes.values())
    return sizes, total
