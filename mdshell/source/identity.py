"""Is this the ``__cluster_metadata`` log at all? A topic's own partition directory (say
``orders-0/``) holds the same kind of files, and read as metadata it would only give odd
"unsupported frame version" warnings. Three signs, checked before anything is loaded:

- the records of the first data batch do not frame as metadata records (a metadata record
  has no key and a value that starts with frame version 0 or 1), and its first record has
  the key a producer gives (framed as a control record would be: a key and a value, no
  headers, timestamp delta 0, as a batch's first record has it);
- ``partition.metadata`` gives a topic id other than the metadata log's
  (``AAAAAAAAAAAAAAAAAAAAAQ``, Uuid.METADATA_TOPIC_ID);
- the directory is named for a partition of another topic.

The name alone never refuses a directory (copies get renamed); records refuse it only when
there is no snapshot (a metadata directory with a damaged first batch still has its
snapshots); ``partition.metadata`` is Kafka's own word and always counts.
"""

from __future__ import annotations

import os
import re
import struct

from ..problems import SourceError
from ..wire import frames, framing
from ..wire.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    Batch,
    iter_records,
    parse_header,
)
from ..wire.compression import CompressionError
from ..wire.primitives import DecodeError

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
_LENGTH = struct.Struct(">i")
_FIRST_BATCHES = 8  # how far to look for a data batch (control batches come first)


def topic_of_directory(directory: str) -> tuple[str, int] | None:
    """(topic, partition) when the directory is named like a partition directory."""
    m = _PARTITION_DIR.match(os.path.basename(os.path.normpath(directory)))
    return (m.group(1), int(m.group(2))) if m else None


def partition_metadata_topic_id(directory: str) -> str | None:
    """The ``topic_id`` of a ``partition.metadata`` file (None when absent or unreadable)."""
    try:
        with open(os.path.join(directory, "partition.metadata"), encoding="utf-8",
                  errors="replace") as f:
            text = f.read(4096)
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            return value.strip() or None
    return None


def records_frame_as_metadata(data: bytes) -> bool | None:
    """Whether the records of the first data batch of a file frame as metadata records;
    None when there is no intact data batch to judge by."""
    pos = 0
    for _ in range(_FIRST_BATCHES):
        if len(data) - pos < HEADER_SIZE:
            return None
        (length,) = _LENGTH.unpack_from(data, pos + 8)
        if length < MIN_BATCH_LENGTH or pos + LOG_OVERHEAD + length > len(data):
            return None
        batch = parse_header(data, pos)
        if batch.magic != 2 or not batch.crc_ok():
            return None
        if not batch.is_control and batch.count > 0:
            try:
                records = list(iter_records(batch))
            except (DecodeError, CompressionError, IndexError, struct.error, ValueError):
                return False if _first_record_keyed(batch) else None
            return any(_frames(r.key, r.value) for r in records)
        pos += batch.size
    return None


def _first_record_keyed(batch: Batch) -> bool:
    """Whether the first record of a batch the metadata framing refuses has a key (read by
    the one framing as a control record's: a key, a value, no headers)."""
    try:
        buf, start, end = batch.payload()
        framing.frame(buf, start, end, 1, batch.base_offset, 0, framing.FULL, True)
    except (DecodeError, CompressionError, IndexError, struct.error, ValueError):
        return False
    return True


def _frames(key: bytes | None, value: bytes | None) -> bool:
    """Whether a record is framed as a metadata record: no key, and a value whose frame
    header Kafka's serde reads (:func:`.frames.peek_frame`: its varints in any length), or
    one of frame version 0 (KRaft's 2.8 preview: the load says why it refuses it)."""
    if key is not None or value is None or len(value) < 3:
        return False
    if value[0] == 0:
        return True
    try:
        frames.peek_frame(value, 0)
    except DecodeError:
        return False
    return True


def read_head(path: str, size: int = 1 << 20) -> bytes | None:
    """The first ``size`` bytes of a file (enough for its first batches), None if unreadable."""
    try:
        with open(path, "rb") as f:
            return f.read(size)
    except OSError:
        return None


def check_metadata_log(directory: str, first_segment: bytes | None,
                       has_snapshots: bool) -> None:
    """Raise :class:`SourceError` (one line) when ``directory`` is another topic's log."""
    topic_id = partition_metadata_topic_id(directory)
    foreign_id = topic_id is not None and topic_id != METADATA_TOPIC_ID
    framed = records_frame_as_metadata(first_segment) if first_segment else None
    foreign_records = framed is False and not has_snapshots
    if not (foreign_id or foreign_records):
        return
    signs = []
    if framed is False:
        signs.append("its records do not frame as metadata records")
    named = topic_of_directory(directory)
    if named is not None and named[0] != METADATA_TOPIC:
        signs.append(f"the directory is named for partition {named[1]} of topic '{named[0]}'")
    if foreign_id:
        signs.append(f"partition.metadata gives topic id {topic_id} (the metadata log's is "
                     f"{METADATA_TOPIC_ID})")
    raise SourceError(f"{directory}: not the {METADATA_TOPIC} log but a topic's own partition "
                      f"log ({'; '.join(signs)}); give the {METADATA_TOPIC}-0 directory, or "
                      "the log dir that holds it")
