"""A directory's files as units of parallel reading (the ``kraft`` data source reads a fleet
of directories file by file), and the cluster id a directory belongs to.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from ..problems import Problem
from ..source import DirectorySource
from ..source.layout import Segment, scan_layout
from ..source.localfiles import read_properties, read_quorum_state
from ..source.logscan import LogRecord, iter_log


def identify(directory: str) -> tuple[str, str | None]:
    """The ``__cluster_metadata-0`` directory a path names, and its cluster id
    (meta.properties, else quorum-state; None when neither says)."""
    ignored: list[Problem] = []
    layout = scan_layout(directory)
    if layout.log_dir:
        props = read_properties(os.path.join(layout.log_dir, "meta.properties"), ignored)
        if props and props.get("cluster.id"):
            return layout.directory, props["cluster.id"]
    state = read_quorum_state(layout.directory, ignored)
    cid = state.get("clusterId") if state else None
    return layout.directory, cid if isinstance(cid, str) and cid else None


@dataclass(frozen=True)
class LogFile:
    """One segment or snapshot of one directory: a unit of parallel reading. A segment is
    read as the log's offsets ``first``-``last`` (up to the next segment's base offset)."""

    directory: str
    path: str
    role: str  # "segment" or "snapshot"
    first: int = 0
    last: int | None = None


def log_files(directory: str) -> list[LogFile]:
    """The segments and ready snapshots of a directory (bootstrap snapshots included)."""
    layout = scan_layout(directory)
    files = segment_files(layout.directory, layout.segments)
    files += [LogFile(layout.directory, c.path, "snapshot") for c in layout.checkpoints]
    return files


def segment_files(directory: str, segs: list[Segment]) -> list[LogFile]:
    return [LogFile(directory, s.path, "segment", s.base_offset,
                    segs[i + 1].base_offset - 1 if i + 1 < len(segs) else None)
            for i, s in enumerate(segs)]


def iter_file(f: LogFile, problems: list[Problem]) -> Iterator[LogRecord]:
    """The records of one file as the shell's reader gives them: a snapshot whole, a segment
    as its offset range of the log (the damage and continuity rules apply within it)."""
    source = DirectorySource(f.directory)
    if f.role == "snapshot":
        cp = next(c for c in source.layout.checkpoints if c.path == f.path)
        return iter_log(source, snapshot=cp, problems=problems)
    return iter_log(source, first=f.first, last=f.last, problems=problems)
