"""What the files of a ``__cluster_metadata-0`` directory are (by name, never by guess).

- ``<20-digit base offset>.log``: log segments.
- ``<20-digit end offset>-<10-digit epoch>.checkpoint``: raft snapshots of offsets < end offset;
  ``.checkpoint.part`` is being written, ``.checkpoint.deleted`` is scheduled for deletion.
- ``<offset>.snapshot``: producer-state snapshots, not metadata.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field

from ..problems import SourceError

METADATA_DIR = "__cluster_metadata-0"
_NOT_DATA = {"leader-epoch-checkpoint"}
_SEGMENT = re.compile(r"^(\d{20})\.log$")
# A snapshot being written is Kafka's temporary file (Snapshots.createTempFile):
# ``<offset>-<epoch>-<random digits>.checkpoint.part``; Kafka parses any name ending in
# ``.checkpoint.part`` by its first 31 characters.
_CHECKPOINT = re.compile(r"^(\d{20})-(\d{10})"
                         r"(?:\.checkpoint(\.deleted)?|(?:-\d+)?\.checkpoint(\.part))$")
_PRODUCER = re.compile(r"^\d{20}\.snapshot$")
# Files Kafka leaves beside segments that hold no metadata (index files, segments being
# swapped, cleaned or deleted).
_KAFKA_OTHER = re.compile(r"^\d{20}\.(index|timeindex|txnindex)(\.deleted|\.swap|\.cleaned)?$"
                          r"|^\d{20}\.log\.(deleted|swap|cleaned)$")
_LOOKS_LIKE_DATA = re.compile(r"\.(log|checkpoint)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Segment:
    """A log segment file and its base offset."""

    path: str
    base_offset: int
    size: int


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A snapshot file and the offset it ends before."""

    path: str
    end_offset: int  # the snapshot holds offsets < end_offset
    epoch: int
    size: int
    state: str = "ready"  # "ready", "part" (being written) or "deleted" (scheduled)

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


@dataclass(slots=True)
class Layout:
    """The metadata files of one directory, sorted."""

    directory: str
    log_dir: str | None  # the parent log dir when it holds meta.properties etc.
    segments: list[Segment] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)  # ready ones, by end offset
    ignored_checkpoints: list[Checkpoint] = field(default_factory=list)  # .part / .deleted
    producer_snapshots: list[str] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (path, why) Kafka's own
    suspicious: list[tuple[str, str]] = field(default_factory=list)  # (path, why) odd ones
    other: list[str] = field(default_factory=list)
    # Laid out from what live mode fetched: the files exist nowhere, so an empty segment is
    # only where the log goes on after the snapshot, never a file worth a warning.
    virtual: bool = False


_GIVE = "give the __cluster_metadata-0 directory or the Kafka log dir that contains it"


def resolve_directory(path: str) -> str:
    """Accept the ``__cluster_metadata-0`` directory itself or the log dir holding it."""
    if not os.path.exists(path):
        raise SourceError(f"{path}: {_missing(path)}; {_GIVE}")
    if not os.path.isdir(path):
        kind = _not_a_file(path)
        raise SourceError(f"{path}: not a directory; use -s FILE to read one snapshot or log file"
                          if kind is None else f"{path}: not a directory ({kind}); {_GIVE}")
    inner = os.path.join(path, METADATA_DIR)
    if os.path.isdir(inner):
        return inner
    return path


def _missing(path: str) -> str:
    """Why ``path``, which does not exist, is not there: a link that leads nowhere (it exists:
    ``ls`` shows it) is told from a name that names nothing."""
    if not os.path.islink(path):
        return "no such directory"
    try:
        os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "a symbolic link that loops (its links lead back to it)"
    return f"a symbolic link to {os.path.realpath(path)}, which does not exist"


def _not_a_file(path: str) -> str | None:
    """What ``path`` is when it is neither a directory nor a regular file (None if a file)."""
    mode = os.stat(path).st_mode
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _partition_directory(directory: str) -> str | None:
    """The one line for a topic's own partition directory with no segments (``orders-0/``
    holding ``partition.metadata`` alone): whose partition it is, and the log dir beside it
    when that holds the metadata log. None for any other directory."""
    from .identity import METADATA_TOPIC_ID, partition_metadata_topic_id, topic_of_directory

    topic_id = partition_metadata_topic_id(directory)
    named = topic_of_directory(directory)
    if topic_id is None or topic_id == METADATA_TOPIC_ID or named is None:
        return None
    log_dir = os.path.dirname(os.path.abspath(directory))
    where = (f"-d {log_dir} (the log dir beside it, which holds {METADATA_DIR})"
             if os.path.isdir(os.path.join(log_dir, METADATA_DIR)) else _GIVE)
    return (f"{directory}: a topic's partition directory (partition {named[1]} of topic "
            f"'{named[0]}', topic id {topic_id}), not the metadata log; give {where}")


def scan_layout(path: str) -> Layout:
    directory = resolve_directory(path)
    try:
        names = sorted(os.listdir(directory))
    except PermissionError:
        raise SourceError(f"{directory}: permission denied; run mdshell as a user who can read "
                          "the Kafka log dir (read access is enough)") from None
    parent = os.path.dirname(os.path.abspath(directory))
    log_dir = parent if os.path.basename(directory) == METADATA_DIR else None
    layout = Layout(directory, log_dir)
    for name in names:
        full = os.path.join(directory, name)
        try:
            size = os.path.getsize(full)
        except OSError:
            size = -1
        data_name = _SEGMENT.match(name) or _CHECKPOINT.match(name)
        if data_name and not os.path.isfile(full):
            layout.suspicious.append((full, "named like a segment or snapshot but not a regular "
                                      "file (a directory, FIFO or broken link); not read"))
            continue
        if _KAFKA_OTHER.match(name):
            layout.ignored.append((full, "Kafka index or a segment being deleted/swapped; no "
                                   "metadata"))
            continue
        if not data_name and _LOOKS_LIKE_DATA.search(name) and name not in _NOT_DATA:
            layout.suspicious.append((full, "looks like a log segment or snapshot but is not "
                                      "named like one (<20-digit offset>.log, <20-digit "
                                      "offset>-<10-digit epoch>.checkpoint); not read"))
            continue
        if m := _SEGMENT.match(name):
            layout.segments.append(Segment(full, int(m.group(1)), size))
        elif m := _CHECKPOINT.match(name):
            state = "part" if m.group(4) else "deleted" if m.group(3) else "ready"
            cp = Checkpoint(full, int(m.group(1)), int(m.group(2)), size, state)
            (layout.checkpoints if state == "ready" else layout.ignored_checkpoints).append(cp)
        elif _PRODUCER.match(name):
            layout.producer_snapshots.append(full)
        else:
            layout.other.append(full)
    layout.segments.sort(key=lambda s: s.base_offset)
    layout.checkpoints.sort(key=lambda c: (c.end_offset, c.epoch))
    if not layout.segments and not layout.checkpoints:
        hint = ""
        if layout.producer_snapshots:
            hint = " (.snapshot files are producer snapshots, not metadata)"
        below = metadata_dirs_below(directory)
        if below:
            which = (f"-d {os.path.join(directory, below[0])}" if len(below) == 1
                     else "give one of them to -d")
            raise SourceError(f"{directory}: no metadata log segments (.log) or snapshots "
                              f"(.checkpoint) here, but {_held_by(below)} {METADATA_DIR}: "
                              f"{which}")
        if (partition := _partition_directory(directory)) is not None:
            raise SourceError(partition)
        raise SourceError(f"{directory}: no metadata log segments (.log) or snapshots "
                          f"(.checkpoint) here{hint}; {_GIVE}")
    return layout


_LOOK_DEPTH = 3  # how far below a directory given by mistake its log dirs are looked for
_LOOK_LIMIT = 2000  # directories looked at, at most (a home directory must not take long)


def metadata_dirs_below(directory: str) -> list[str]:
    """The directories below ``directory`` (at most a few levels down) that hold a
    ``__cluster_metadata-0`` directory, sorted, relative to it: what a parent of several
    clusters' log dirs holds."""
    found: list[str] = []
    for seen, (root, dirs, _) in enumerate(os.walk(directory), 1):
        depth = os.path.relpath(root, directory).count(os.sep) + (root != directory)
        if METADATA_DIR in dirs:
            found.append(os.path.relpath(root, directory))
        dirs[:] = sorted(d for d in dirs if d != METADATA_DIR and not d.startswith("."))
        if depth >= _LOOK_DEPTH or seen >= _LOOK_LIMIT:
            dirs[:] = []
    return sorted(found)


def _held_by(paths: list[str], shown: int = 5) -> str:
    named = ", ".join(paths[:shown]) + (f" and {len(paths) - shown} more"
                                       if len(paths) > shown else "")
    return f"{named} hold{'s' if len(paths) == 1 else ''}"
