"""Kafka's own bugs met by the oracle tests: each with the Kafka versions it affects and what
it changes in the shell's ``tree /image``. ``as_buggy_kafka_prints`` turns mdshell's correct
output into what that Kafka prints (and its exit code), so that everything else is still
compared byte for byte.

1. Default client-quota entities (Kafka 3.7.x and 4.3.1, ``ClientQuotasImageNode``): the
   entity name skips components whose value is null (the default user or client id), so
   ``user(<default>)`` is named ``""`` and ``user(<default>)_clientId(a)`` is named
   ``clientId(a)``; looking the name up again finds no entity (or another one).
   - 3.7.x: ``tree`` prints the empty name, then stops with a NullPointerException on the
     missing child (exit 1): everything after it is lost.
   - 4.3.1: ``tree`` prints the name with nothing below it and goes on.

2. A snapshot written by Kafka 3.7.x itself (``BatchAccumulator`` appends non-atomically: a
   batch begun inside an append starts at that append's first offset, with offset deltas
   from 0), read with ``-s``: the shell's ``SnapshotFileReader`` hands each batch to the
   ``MetadataLoader`` as ``base offset + count - 1``, and the loader waits until that reaches
   the high water mark (the footer's offset) minus one. When the last metadata batch began
   inside an append it never does: 3.7.2 hangs (checked: no output within 60 s). The
   ``kafka37-snapshot`` fixture ends with a batch begun on an append's first record, which
   3.7.2 and 4.3.1 load.

3. FetchSnapshot errors (4.3.1, seen by ``tests/test_live_protocol.py``): an answer with a
   partition error (SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE, FENCED_LEADER_EPOCH...) has no
   ``UnalignedRecords``; serializing it throws a NullPointerException ("Cannot invoke
   BaseRecords.sizeInBytes() because this.unalignedRecords is null", logged by
   ControllerApis), so the client gets a top-level UNKNOWN_SERVER_ERROR instead.

4. ``DumpLogSegments`` of Kafka 4.x (the Java port in ``org.apache.kafka.tools``; checked
   with 4.3.1) reports the first record of every file whose first offset is not 0 as
   non-consecutive: "Non-consecutive offsets in .../00000000000000000037.log" then
   "  -1 is followed by 37". Its offset tracker starts at -1 and, unlike the Scala tool of
   3.x (``if (lastOffset == -1) lastOffset = record.offset``), compares the first record
   with it too. Reproduced by hand on one segment alone and on several in one run; 3.7.2
   prints nothing for the same files. ``without_first_record_report`` takes exactly that
   pair out of the report (and the report's heading when nothing else is left), so a real
   repeat or gap inside a file still fails the oracle test.
"""

from __future__ import annotations

import re

_NON_CONSECUTIVE = "Non-consecutive offsets in "
_ENTITY = re.compile(r"(clientId|ip|user)\((?:[^()\\]|\\.)*\)")
DEFAULT = "<default>"


def _kafka_name(name: str) -> str:
    parts = [m.group(0) for m in _ENTITY.finditer(name)]
    return "_".join(p for p in parts if not p.endswith(f"({DEFAULT})"))


def as_buggy_kafka_prints(text: str, version: str) -> tuple[str, int]:
    """(stdout, exit code) of that Kafka's ``tree /image`` given mdshell's ``text``."""
    lines = text.splitlines(keepends=True)
    try:
        start = lines.index("clientQuotas:\n") + 1
    except ValueError:
        return text, 0
    end = start
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    blocks: dict[str, list[str]] = {}
    for line in lines[start:end]:
        if not line.startswith("    "):
            name = line.strip()[:-1]
            blocks[name] = []
        else:
            blocks[name].append(line)
    if not any(DEFAULT in n for n in blocks):
        return text, 0
    body: list[str] = []
    for ours in sorted(blocks, key=_kafka_name):
        name = _kafka_name(ours)
        body.append(f"  {name}:\n")
        found = blocks.get(name) if name and DEFAULT not in name else None
        if found is None and version.startswith("3."):
            return "".join(lines[:start] + body), 1
        body += found or []
    return "".join(lines[:start] + body + lines[end:]), 0


def without_first_record_report(err: str, version: str, first_offset: int | None) -> str:
    """``err`` of a ``DumpLogSegments`` run less bug 4's "-1 is followed by N" pair, where N
    is the file's first record offset (Kafka 4.x only: 3.x never prints it)."""
    if version.startswith("3.") or first_offset is None or first_offset == 0:
        return err
    bogus = f"  -1 is followed by {first_offset}"
    out: list[str] = []
    heading: str | None = None
    for line in err.splitlines(keepends=True):
        if line.startswith(_NON_CONSECUTIVE):
            heading = line
            continue
        if heading is not None and line.startswith("  "):
            if line.rstrip("\n") == bogus:
                continue
            out += [heading, line]
            heading = None
            continue
        heading = None
        out.append(line)
    return "".join(out)
