"""What every table is built from: a :class:`View` (a source, its load, the secrets rule),
Spark's own Arrow types, and the column-by-column helpers the tables share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..session import Loaded
from ..source import Source
from ..tree.redact import REDACTED

# Spark's own Arrow types (list items named "element", microsecond timestamps), so that the
# data source's batches match the schema Spark derives from these.
INTS = pa.list_(pa.field("element", pa.int32()))
STRS = pa.list_(pa.field("element", pa.string()))
TIME = pa.timestamp("us", tz="UTC")


@dataclass
class View:
    """What a table is built from: a source, what was loaded from it, and the secrets rule;
    a builder adds what its own reading found to ``warnings`` (the shell's verdict and
    ``--strict`` see them)."""

    source: Source
    loaded: Loaded
    show_secrets: bool = False
    warnings: list[str] = field(default_factory=list)


def arrow_table(schema: pa.Schema, cols: dict[str, list[Any]]) -> pa.Table:
    return pa.Table.from_pydict({f.name: cols[f.name] for f in schema}, schema=schema)


def empty_columns(schema: pa.Schema) -> dict[str, list[Any]]:
    return {f.name: [] for f in schema}


def micros(millis: list[int | None]) -> list[int | None]:
    return [None if t is None else t * 1000 for t in millis]


def shown_or_redacted(value: Any, show: bool) -> Any:
    return value if show else REDACTED
