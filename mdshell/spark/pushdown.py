"""Filters Spark pushes into the ``kraft`` data source: which ones it takes, which directories
and files they rule out before anything is read, and the rows they keep.

No pyspark here: Spark's filter objects (``pyspark.sql.datasource.EqualTo`` and friends, 4.1+)
are recognised by class name and read through their ``attribute`` and ``value``. A filter
taken is applied exactly by the reader (Spark does not evaluate it again), so a taken filter
must never keep a row Spark would drop nor drop one it would keep: SQL's null rules hold (a
null never equals anything), and a file is skipped only when none of its rows can match.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

# Columns whose equality filters are taken (``In`` too), per table kind; ``offset`` also
# takes ranges, the others (strings) prefixes, suffixes and substrings: Spark turns ``like``
# patterns into these ('a%', '%a', '%a%'; 'a%b' into a prefix and a suffix).
ANY_TABLE = ("directory", "cluster_id")
RECORD_COLUMNS = (*ANY_TABLE, "file", "source", "type", "topic_id", "offset")
_RANGE = {"GreaterThan", "GreaterThanOrEqual", "LessThan", "LessThanOrEqual"}
# Spark's string filter -> (the test of a value, pyarrow's function over a column)
_STRING = {"StringStartsWith": (str.startswith, pc.starts_with),
           "StringEndsWith": (str.endswith, pc.ends_with),
           "StringContains": (str.__contains__, pc.match_substring)}
# Record types Kafka's image writer never puts in a snapshot (MetadataImage.write and the
# images it calls write only the state: FeatureLevel, RegisterBroker/Controller, Topic,
# Partition, Config, ClientQuota, ProducerIds, ACLs, SCRAM, DelegationToken, ZkMigration
# records): a type filter naming only these rules out every snapshot file.
LOG_ONLY_TYPES = frozenset({
    "PartitionChangeRecord", "NoOpRecord", "RemoveTopicRecord", "FenceBrokerRecord",
    "UnfenceBrokerRecord", "UnregisterBrokerRecord", "BrokerRegistrationChangeRecord",
    "BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord",
    "RemoveAccessControlEntryRecord", "RemoveDelegationTokenRecord",
    "RemoveUserScramCredentialRecord"})


@dataclass
class Pushed:
    """The filters taken, ANDed: allowed values per column, string patterns (Spark's filter
    name and its text) per column and an inclusive offset range."""

    allowed: dict[str, frozenset[Any]] = field(default_factory=dict)
    patterns: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    low: int | None = None
    high: int | None = None
    taken: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.taken)

    def take(self, filters: Iterable[Any], columns: tuple[str, ...]) -> list[Any]:
        """Takes what it can of ``filters``; returns the rest (for Spark to evaluate)."""
        rest = []
        for f in filters:
            if not self._take(f, columns):
                rest.append(f)
        return rest

    def _take(self, f: Any, columns: tuple[str, ...]) -> bool:
        kind = type(f).__name__
        attr: tuple[str, ...] = tuple(getattr(f, "attribute", ()))
        if len(attr) != 1 or attr[0] not in columns:
            return False
        column: str = attr[0]
        value: Any = getattr(f, "value", None)
        want = int if column == "offset" else str
        if kind in ("EqualTo", "In"):
            values = tuple(value) if kind == "In" else (value,)
            if not values or not all(_is(v, want) for v in values):
                return False
            old = self.allowed.get(column)
            self.allowed[column] = frozenset(values) & old if old is not None else frozenset(
                values)
        elif kind in _RANGE and column == "offset" and _is(value, int):
            self._bound(kind, value)
        elif kind in _STRING and column != "offset" and isinstance(value, str):
            self.patterns.setdefault(column, []).append((kind, value))
        else:
            return False
        self.taken.append(f"{kind}({column}, {value!r})")
        return True

    def _bound(self, kind: str, value: int) -> None:
        if kind.startswith("Greater"):
            low = value + (kind == "GreaterThan")
            self.low = low if self.low is None else max(self.low, low)
        else:
            high = value - (kind == "LessThan")
            self.high = high if self.high is None else min(self.high, high)

    def keeps(self, column: str, value: Any) -> bool:
        """Whether rows with this value of a column can match (a directory, a file...)."""
        allowed = self.allowed.get(column)
        if allowed is not None and value not in allowed:
            return False
        return all(value is not None and _STRING[kind][0](value, text)
                   for kind, text in self.patterns.get(column, ()))

    def keeps_file(self, name: str, role: str, first: int, last: int | None) -> bool:
        """Whether a segment (offsets ``first``-``last``) or snapshot can hold a match."""
        if not self.keeps("file", name):
            return False
        if not self.keeps("source", "log" if role == "segment" else "snapshot"):
            return False
        if role == "snapshot":
            types = self.allowed.get("type")
            return types is None or not types <= LOG_ONLY_TYPES
        if self.high is not None and first > self.high:
            return False
        return not (self.low is not None and last is not None and last < self.low)

    def filter(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The rows of a batch that match every filter taken (nulls never match)."""
        mask = None
        for column, values in self.allowed.items():
            col = batch.column(column)
            m = pc.is_in(col, value_set=pa.array(sorted(values), col.type))
            mask = m if mask is None else pc.and_(mask, m)
        for column, tests in self.patterns.items():
            for kind, text in tests:
                m = pc.fill_null(_STRING[kind][1](batch.column(column), text), False)
                mask = m if mask is None else pc.and_(mask, m)
        offsets = batch.column("offset") if "offset" in batch.schema.names else None
        for bound, op in ((self.low, pc.greater_equal), (self.high, pc.less_equal)):
            if bound is not None and offsets is not None:
                m = pc.fill_null(op(offsets, bound), False)
                mask = m if mask is None else pc.and_(mask, m)
        return batch if mask is None else batch.filter(mask)


def _is(value: Any, want: type) -> bool:
    return isinstance(value, want) and not isinstance(value, bool)
