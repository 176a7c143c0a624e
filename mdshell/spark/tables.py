"""The Spark tables by name, and the one entry to them for the rest of mdshell/spark.

Every table is built column by column into a ``pyarrow.Table`` (never a row at a time through
Spark), from a :class:`View` of a loaded source; secrets follow the shell's rules (redacted
unless ``show_secrets``). The tables themselves are in :mod:`.recordtable` (``records``),
:mod:`.imagetables` (the image's), :mod:`.changes` (``partition_changes``); a directory's
files for parallel reading in :mod:`.logfiles`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pyarrow as pa

from ..session import load
from ..source import open_source
from . import imagetables as it
from .changes import PARTITION_CHANGES, partition_changes
from .columns import STRS, View
from .logfiles import LogFile, identify, iter_file, log_files
from .recordtable import RECORDS, file_records, log_records, records_table

__all__ = ["STRS", "TABLES", "LogFile", "View", "at_refused", "build", "build_warned",
           "file_records", "identify", "image_table", "iter_file", "log_files",
           "log_records", "records_table"]

Builder = Callable[[View], pa.Table]
# name -> (schema, builder, what it is)
TABLES: dict[str, tuple[pa.Schema, Builder, str]] = {
    "records": (RECORDS, log_records, "every record of the log segments (source 'log'), "
                "payload as JSON; the kraft data source gives the same, and adds each "
                "snapshot's records (source 'snapshot') with .option('snapshots', 'true')"),
    "topics": (it.TOPICS, it.topics, "topics of the image"),
    "partitions": (it.PARTITIONS, it.partitions, "partitions of the image, leader/ISR/replicas"),
    "brokers": (it.BROKERS, it.brokers, "registered brokers"),
    "controllers": (it.CONTROLLERS, it.controllers, "registered controllers"),
    "endpoints": (it.ENDPOINTS, it.endpoints, "listeners of brokers and controllers"),
    "features": (it.FEATURES, it.features, "finalized feature levels (metadata.version included)"),
    "supported_features": (it.SUPPORTED, it.supported_features,
                           "feature ranges each broker and controller supports"),
    "configs": (it.CONFIGS, it.configs, "dynamic configs (sensitive values redacted)"),
    "acls": (it.ACLS, it.acls, "ACL bindings"),
    "quotas": (it.QUOTAS, it.quotas, "client quotas, one row per value"),
    "scram_users": (it.SCRAM_USERS, it.scram_users, "SCRAM users (credentials redacted)"),
    "tokens": (it.TOKENS, it.tokens, "delegation tokens"),
    "partition_changes": (PARTITION_CHANGES, partition_changes,
                          "leader/ISR/replicas of each partition after every change"),
    "voters": (it.VOTERS, it.voters, "KRaft voters from the log (dynamic quorum)"),
}


def build(name: str, view: View) -> pa.Table:
    return TABLES[name][1](view)


# Tables that read the data again (not just the loaded image): their own warnings only.
_OWN_READING = {"records", "partition_changes"}


def build_warned(name: str, view: View) -> tuple[pa.Table, list[str]]:
    """A table and the warnings behind it: what its own reading found, and for an image
    table the load's warnings (once each)."""
    mine = replace(view, warnings=[])
    table = build(name, mine)
    said = [] if name in _OWN_READING else [p.message for p in view.loaded.problems]
    return table, list(dict.fromkeys([*said, *mine.warnings]))


def at_refused(directory: str, at: int) -> str | None:
    """Why the image of a directory as of ``at`` cannot be given (the shell's rule and words
    for ``at``), or None when it can."""
    if at < 0:
        return f"offset {at}: offsets are 0 or more"
    first, last = open_source(directory).offset_range()
    if first is None or last is None:
        return "the log is empty: there is no offset to travel to"
    if at > last:
        return f"offset {at} is after the end of the log (offsets {first}-{last} can be rebuilt)"
    return None


def image_table(directory: str, name: str, at: int | None,
                show_secrets: bool) -> tuple[pa.Table, list[str]]:
    """One image table of a directory as of ``at`` (None: its end), with the load warnings."""
    source = open_source(directory)
    loaded = load(source, upto=at)
    table = build(name, View(source, loaded, show_secrets))
    return table, [p.message for p in loaded.problems]
