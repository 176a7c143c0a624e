"""The ``kraft`` source's options: which there are, what each value may be, and a one-line
refusal of anything else (an unknown option, a value that is not one).

No pyspark here. Spark hands a Python data source its options with lower-case keys (they are
case-insensitive); ``path`` and ``paths`` are Spark's own (``load(PATH)``, ``load([...])``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

MAX_PARTITION_BYTES = 128 << 20  # Spark's spark.sql.files.maxPartitionBytes
OPEN_COST_BYTES = 4 << 20  # Spark's spark.sql.files.openCostInBytes
# The options, as the docs spell them (matched without regard to case).
KNOWN = ("table", "at", "snapshots", "payload", "showSecrets", "maxPartitionBytes",
         "openCostInBytes", "pushdown")
SPARKS_OWN = ("path", "paths")
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40}


class OptionError(ValueError):
    """An option or path the source cannot take: the whole message is one line."""


@dataclass(frozen=True)
class ReadOptions:
    """What a read asks for, checked."""

    paths: list[str] = field(default_factory=list)
    table: str = "records"
    at: int | None = None
    snapshots: bool = False
    payload: bool = True
    show_secrets: bool = False
    max_bytes: int = MAX_PARTITION_BYTES
    open_cost: int = OPEN_COST_BYTES
    pushdown: bool | None = None  # None: take filters when Spark pushes them


def parse(options: Mapping[str, str], tables: Collection[str],
          max_bytes: int = MAX_PARTITION_BYTES,
          open_cost: int = OPEN_COST_BYTES, pushdown: bool | None = None) -> ReadOptions:
    """The options of one read; the keyword arguments are the defaults of the options of
    the same name (a registered source's). Raises :class:`OptionError`."""
    options = {str(k).lower(): v for k, v in options.items()}
    check_known(options)
    table = (options.get("table") or "records").lower()
    if table not in tables:
        raise OptionError(f"kraft: unknown table {table!r} (known: {', '.join(sorted(tables))})")
    at = _offset(options.get("at"))
    if at is not None and table == "records":
        raise OptionError(f"kraft: option at: the records table is the whole log, not an "
                          f"image; give an image table (.option('table', 'partitions')...), "
                          f"or filter the records: .where('offset <= {at}')")
    return ReadOptions(
        paths=_paths(options), table=table, at=at,
        snapshots=bool(_flag(options, "snapshots", False)),
        payload=bool(_flag(options, "payload", True)),
        show_secrets=bool(_flag(options, "showSecrets", False)),
        max_bytes=_bytes(options, "maxPartitionBytes", max_bytes),
        open_cost=_bytes(options, "openCostInBytes", open_cost),
        pushdown=_flag(options, "pushdown", pushdown))


def check_known(options: Mapping[str, str]) -> None:
    known = {k.lower() for k in (*KNOWN, *SPARKS_OWN)}
    unknown = sorted(k for k in options if k.lower() not in known)
    if unknown:
        what = "options" if len(unknown) > 1 else "option"
        raise OptionError(f"kraft: unknown {what} {', '.join(map(repr, unknown))} (known: "
                          f"{', '.join(KNOWN)})")


def _paths(options: Mapping[str, str]) -> list[str]:
    """``path`` (one, maybe a glob) and ``paths`` (a JSON list: what ``load([...])`` passes)."""
    given: list[str] = []
    if options.get("paths"):
        given += [str(p) for p in json.loads(options["paths"])]
    if options.get("path"):
        given.append(str(options["path"]))
    return given


def conf_bytes(value: str | None, default: int) -> int:
    """A Spark byte size ("128MB", "64m", "4194304"), as Spark reads it; else ``default``."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(value or ""))
    if m is None or m.group(2).lower() not in _UNITS:
        return default
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def _offset(value: str | None) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(str(value))
    except ValueError:
        raise OptionError(f"kraft: option at: {value!r} is not an offset (a number)") from None


def _flag(options: Mapping[str, str], name: str, default: bool | None) -> bool | None:
    value = options.get(name.lower())
    if value in (None, ""):
        return default
    word = str(value).strip().lower()
    if word in _TRUE | _FALSE:
        return word in _TRUE
    raise OptionError(f"kraft: option {name}: {value!r} is not true or false")


def _bytes(options: Mapping[str, str], name: str, default: int) -> int:
    value = options.get(name.lower())
    if value in (None, ""):
        return default
    n = conf_bytes(value, -1)
    if n < 0:
        raise OptionError(f"kraft: option {name}: {value!r} is not a size in bytes (e.g. "
                          "134217728 or 128m)")
    return n
