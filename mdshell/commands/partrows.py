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


# The most rows of JSON written at once (~800 kB).
CHUNK_ROWS = 2048

Row = tuple[m.Topic, int, int, _State]  # topic, partition, its min.insync.replicas, state
# A topic's rows: the topic, its min.insync.replicas, its partitions' numbers and states.
TopicRows = tuple[m.Topic, int, list[int], list[_State]]


class DescribeRows(res.RowStream):
    """``topics --describe``: the chosen topics' partitions (numerically), keeping those a
    filter asks for (``under_replicated``, ``offline``, ``under_min_isr``; none: all).
    Rows are made a topic at a time, in lists (a row is a partition number and a state
    shared by the partitions of the same record bytes), so the loops over 100k rows are
    mostly comprehensions, joins and maps."""

    def __init__(self, img: m.Image, topics: list[m.Topic],
                 filters: tuple[bool, bool, bool]) -> None:
        self.img = img
        self.topics = topics
        self.filters = filters
        self._states: dict[Any, _State] = {}
        self._count: int | None = None

    def _topic_rows(self) -> Iterator[TopicRows]:
        from ..image.health import min_isrs  # not on a one-shot's start-up path

        img = self.img
        get = self._states.get
        skip = PARTITION_PREFIX_SIZE
        under, offline, under_min = self.filters
        own_min_isr, cluster_min_isr = min_isrs(img)
        for t in self.topics:
            need = own_min_isr.get(t.name, cluster_min_isr)[0]
            parts = t.partitions
            pids = sorted(parts)
            keys = [(p[3], bytes(p[0][p[1] + skip:p[2]])) if type(p) is tuple
                    else _shown(p)  # type: ignore[arg-type]  # changed in the log
                    for p in map(parts.__getitem__, pids)]
            states: list[Any] = list(map(get, keys))
            if None in states:
                pids, states = self._made(t, pids, keys, states)
            if under or offline or under_min:
                keep = [i for i, st in enumerate(states)
                        if (under and st.under_replicated) or (offline and st.offline)
                        or (under_min and st.isr < need)]
                pids = [pids[i] for i in keep]
                states = [states[i] for i in keep]
            if pids:
                yield t, need, pids, states

    def _made(self, t: m.Topic, pids: list[int], keys: list[Any],
              found: list[_State | None]) -> tuple[list[int], list[_State]]:
        """The states not found by their key made (each distinct one decoded once); a
        partition that does not decode is left out (the topic notes it)."""
        img = self.img
        states = self._states
        dropped = False
        for i in [i for i, st in enumerate(found) if st is None]:
            key = keys[i]
            st = states.get(key)
            if st is None:
                pid = pids[i]
                p = t.partitions[pid]
                part = clean_partition(key, p) if type(p) is tuple else p
                if part is None:  # damaged or unknown tags: the topic says what
                    part = t.partition(pid)
                    if part is None:
                        dropped = True
                        continue
                    st = _State(img, part)  # not kept: each one is noted
                else:
                    st = states[key] = _State(img, part)  # type: ignore[arg-type]
            found[i] = st
        if not dropped:
            return pids, found  # type: ignore[return-value]  # every one filled in
        return ([pid for pid, st in zip(pids, found, strict=True) if st is not None],
                [st for st in found if st is not None])

    def _rows(self) -> Iterator[Row]:
        for t, need, pids, states in self._topic_rows():
            for pid, st in zip(pids, states, strict=True):
                yield t, pid, need, st

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for t, pid, need, st in self._rows():
            yield {"topic": t.name, "topicId": uuid_str(t.id), "partition": pid,
                   **st.data(need)}

    def __len__(self) -> int:
        if self._count is None:
            self._count = sum(len(pids) for _, _, pids, _ in self._topic_rows())
        return self._count

    def cells(self) -> Iterator[list[Any]]:
        for t, pid, _, st in self._rows():
            yield [t.name, pid, *st.cells]

    def text_lines(self, columns: Sequence[str]) -> Iterator[str]:
        """The table's lines as :func:`~.textform.table_lines` aligns them: one pass for
        the widths, one for the lines (each distinct state's aligned cells, and each
        partition number's, made once). The rows of the first pass are kept for the second
        (lists sharing their states: a tenth of what the image holds, where finding them
        again took a third of the command)."""
        topics = list(self._topic_rows())
        self._count = sum(len(pids) for _, _, pids, _ in topics)
        widths = [len(c) for c in columns]
        if topics:
            widths[0] = max(widths[0], *(len(t.name) for t, _, _, _ in topics))
        # The widest number is the largest or the most negative.
        numbers = set().union(*(pids for _, _, pids, _ in topics))
        if numbers:
            widths[1] = max(widths[1], len(str(max(numbers))), len(str(min(numbers))))
        distinct = list(dict.fromkeys(st for _, _, _, states in topics for st in states))
        for st in distinct:
            for i, c in enumerate(st.cells, 2):
                if len(c) > widths[i]:
                    widths[i] = len(c)
        yield "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()
        w0, w1 = widths[0], widths[1]
        rest = widths[2:]
        for st in distinct:  # the leader cell is never empty: rstrip is the tail's
            st.line = "  ".join(c.ljust(w) for c, w in zip(st.cells, rest,
                                                         strict=True)).rstrip()
        number = {pid: str(pid).ljust(w1) for pid in numbers}
        for t, _, pids, states in topics:
            name = t.name.ljust(w0)
            yield from [f"{name}  {col}  {st.line}"
                        for col, st in zip(map(number.__getitem__, pids), states,
                                           strict=True)]

    def json_chunks(self) -> Iterator[str]:
        """``json.dumps(list(self), indent=2)`` up to :data:`CHUNK_ROWS` rows of a topic at a
        time (a row's pieces joined with its chunk's: no string made a row)."""
        first = True
        for t, need, pids, states in self._topic_rows():
            head = (f'{{\n    "topic": {string(t.name)},\n    "topicId": '
                    f'{string(uuid_str(t.id))},\n    "partition": ')
            tails = [st.json.get(need) or st.json_tail(need) for st in states]
            for at in range(0, len(pids), CHUNK_ROWS):
                some = pids[at:at + CHUNK_ROWS]
                out = [",\n  ", head, "", ""] * len(some)
                out[2::4] = map(str, some)
                out[3::4] = tails[at:at + CHUNK_ROWS]
                if first:
                    out[0] = "[\n  "
                    first = False
                yield "".join(out)
        yield "[]" if first else "\n]"


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
