"""The partition rows of ``topics --describe``, streamed the way ``tree`` streams.

JSON is made a row at a time; text in two passes (the column widths, then the lines) over
the rows kept as tuples sharing their states. A partition's cells depend only on its
record's bytes past the ids (and on the brokers and the topic's min.insync.replicas, the
same for the whole command), so each distinct record is decoded once
(:func:`~mdshell.tree.partitions.clean_partition`, the cache ``tree`` uses) and its cells,
its line's tail and its JSON are made once per command.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

from ..image import model as m
from ..tree.jsontext import string
from ..tree.partitions import clean_partition
from ..wire.frames import PARTITION_PREFIX_SIZE
from ..wire.primitives import uuid_str
from . import results as res
from .textform import NONE, cell


class _State:
    """What a row shows of one distinct partition state."""

    __slots__ = ("_json_head", "cells", "isr", "json", "line", "offline", "part",
                 "under_replicated")

    def __init__(self, img: m.Image, p: m.Partition) -> None:
        self.part = p
        target = [r for r in p.replicas if r not in p.adding_replicas]
        self.under_replicated = len(p.isr) < len(target)
        self.offline = p.leader == m.NO_LEADER or (
            (reg := img.brokers.get(p.leader)) is None or reg.fenced)
        self.isr = len(p.isr)
        self.cells = (NONE if p.leader == m.NO_LEADER else str(p.leader), cell(p.replicas),
                      cell(p.isr), cell(p.elr), cell(p.last_known_elr),
                      cell(p.adding_replicas), cell(p.removing_replicas))
        self.line: str | None = None  # the cells aligned (one command's widths)
        self.json: dict[int, str] = {}  # the row's JSON after its partition, by minIsr
        self._json_head: str | None = None  # that JSON up to underMinIsr

    def json_tail(self, need: int) -> str:
        """The row's JSON past its ``"partition": N``: what ``dumps(self.data(need), 1)``
        writes past its first field, written directly (json's indenting encoder is pure
        Python, and a row per distinct state and min.insync.replicas is made)."""
        head = self._json_head
        if head is None:
            p = self.part
            leader = "null" if p.leader == m.NO_LEADER else str(p.leader)
            head = self._json_head = (
                f',\n    "leader": {leader},\n    "replicas": {_ints(p.replicas)},\n    '
                f'"isr": {_ints(p.isr)},\n    "elr": {_ints(p.elr)},\n    "lastKnownElr": '
                f'{_ints(p.last_known_elr)},\n    "addingReplicas": {_ints(p.adding_replicas)}'
                f',\n    "removingReplicas": {_ints(p.removing_replicas)},\n    '
                f'"underReplicated": {_bool(self.under_replicated)},\n    "offline": '
                f'{_bool(self.offline)},\n    "underMinIsr": ')
        tail = self.json[need] = (f'{head}{_bool(self.isr < need)},\n    "minIsr": {need}'
                                  '\n  }')
        return tail

    def data(self, need: int) -> dict[str, Any]:
        p = self.part
        return {"leader": None if p.leader == m.NO_LEADER else p.leader,
                "replicas": p.replicas, "isr": p.isr, "elr": p.elr,
                "lastKnownElr": p.last_known_elr, "addingReplicas": p.adding_replicas,
                "removingReplicas": p.removing_replicas,
                "underReplicated": self.under_replicated, "offline": self.offline,
                "underMinIsr": self.isr < need, "minIsr": need}


def _ints(values: list[int]) -> str:
    """A list of broker ids as ``dumps`` writes it two levels deep."""
    if not values:
        return "[]"
    return "[\n      " + ",\n      ".join(map(str, values)) + "\n    ]"


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _shown(p: m.Partition) -> tuple[Any, ...]:
    """What a row shows of a decoded partition: equal states share their cells."""
    return (p.leader, tuple(p.replicas), tuple(p.isr), tuple(p.elr), tuple(p.last_known_elr),
            tuple(p.adding_replicas), tuple(p.removing_replicas))


Row = tuple[m.Topic, int, int, _State]  # topic, partition, its min.insync.replicas, state


class DescribeRows(res.RowStream):
    """``topics --describe``: the chosen topics' partitions (numerically), keeping those a
    filter asks for (``under_replicated``, ``offline``, ``under_min_isr``; none: all)."""

    def __init__(self, img: m.Image, topics: list[m.Topic],
                 filters: tuple[bool, bool, bool]) -> None:
        self.img = img
        self.topics = topics
        self.filters = filters
        self._states: dict[Any, _State] = {}
        self._count: int | None = None

    def _rows(self) -> Iterator[Row]:
        from ..image.health import min_isr  # not on a one-shot's start-up path

        img = self.img
        states = self._states
        skip = PARTITION_PREFIX_SIZE
        under, offline, under_min = self.filters
        filtering = under or offline or under_min
        for t in self.topics:
            need = min_isr(img, t.name)[0]
            parts = t.partitions
            for pid in sorted(parts):
                p = parts[pid]
                if type(p) is tuple:
                    buf, body, end, version = p
                    key: Any = (version, bytes(buf[body + skip:end]))
                else:  # changed in the log: by what the row shows of it
                    key = _shown(p)  # type: ignore[arg-type]
                st = states.get(key)
                if st is None:
                    part = clean_partition(key, p) if type(p) is tuple else p
                    if part is None:  # damaged or unknown tags: the topic says what
                        part = t.partition(pid)
                        if part is None:
                            continue
                        st = _State(img, part)  # not kept: each one is noted
                    else:
                        st = states[key] = _State(img, part)  # type: ignore[arg-type]
                if filtering and not ((under and st.under_replicated)
                                      or (offline and st.offline)
                                      or (under_min and st.isr < need)):
                    continue
                yield t, pid, need, st

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for t, pid, need, st in self._rows():
            yield {"topic": t.name, "topicId": uuid_str(t.id), "partition": pid,
                   **st.data(need)}

    def __len__(self) -> int:
        if self._count is None:
            self._count = sum(1 for _ in self._rows())
        return self._count

    def cells(self) -> Iterator[list[Any]]:
        for t, pid, _, st in self._rows():
            yield [t.name, pid, *st.cells]

    def text_lines(self, columns: Sequence[str]) -> Iterator[str]:
        """The table's lines as :func:`~.textform.table_lines` aligns them: one pass for
        the widths, one for the lines (each distinct state's aligned cells made once). The
        rows of the first pass are kept for the second (a tuple each, sharing its state:
        a tenth of what the image holds, where finding them again took a third of the
        command)."""
        widths = [len(c) for c in columns]
        seen: set[int] = set()
        count = 0
        last: m.Topic | None = None
        rows = list(self._rows())
        for t, pid, _, st in rows:
            count += 1
            if t is not last:
                last = t
                widths[0] = max(widths[0], len(t.name))
            widths[1] = max(widths[1], len(str(pid)))
            if id(st) not in seen:
                seen.add(id(st))
                for i, c in enumerate(st.cells, 2):
                    if len(c) > widths[i]:
                        widths[i] = len(c)
        self._count = count
        last = None
        yield "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()
        w0, w1 = widths[0], widths[1]
        rest = widths[2:]
        for st in self._states.values():
            st.line = None
        name = ""
        for t, pid, _, st in rows:
            if t is not last:
                last = t
                name = t.name.ljust(w0)
            line = st.line
            if line is None:  # the leader cell is never empty: rstrip is the tail's
                line = st.line = "  ".join(c.ljust(w) for c, w in zip(st.cells, rest,
                                                                     strict=True)).rstrip()
            yield f"{name}  {str(pid).ljust(w1)}  {line}"

    def json_chunks(self) -> Iterator[str]:
        """``json.dumps(list(self), indent=2)`` ~256 kB at a time (a row's pieces joined
        with its chunk's: no string made a row)."""
        out: list[str] = []
        extend = out.extend
        size = 0
        sep = "[\n  "
        last: m.Topic | None = None
        head = ""
        for t, pid, need, st in self._rows():
            if t is not last:
                last = t
                head = (f'{{\n    "topic": {string(t.name)},\n    "topicId": '
                        f'{string(uuid_str(t.id))},\n    "partition": ')
            tail = st.json.get(need)
            if tail is None:
                tail = st.json_tail(need)
            extend((sep, head, str(pid), tail))
            sep = ",\n  "
            size += len(tail)
            if size > res.CHUNK:
                yield "".join(out)
                out, size = [], 0
                extend = out.extend
        out.append("[]" if last is None else "\n]")
        yield "".join(out)


class RowCells(Sequence[list[Any]]):
    """The cells of a :class:`~.results.RowStream`, as the full-screen table reads them
    (its length, the first rows), made when read."""

    def __init__(self, rows: res.RowStream) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __bool__(self) -> bool:  # the first row, not a count of them all
        return next(self.rows.cells(), None) is not None

    def __iter__(self) -> Iterator[list[Any]]:
        return self.rows.cells()

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice) and (i.step or 1) > 0 and (i.start or 0) >= 0 and (
                i.stop is None or i.stop >= 0):
            return list(islice(self.rows.cells(), i.start, i.stop, i.step))
        return list(self.rows.cells())[i]
