"""Issue 31: one reader and one verdict for any bytes. One or more tests per class of the
issue, on bytes each test makes itself with mdshell's writer (``tests/fuzz/build.py``:
``encode_batch`` and the schema's encoder), built for the general rule rather than for the
issue's examples: every length and count field of the record framing at -1, -2, huge and the
int32/int64 edges, every batch header field at its edges, every codec as a bomb.

Each scenario is a log dir: good batches, then the damage, then more good batches. All of
them go through the fuzzer's workers (``tests/fuzz``: persistent processes, one compiled and
one ``MDSHELL_PURE=1``, each case bounded in CPU time and resident memory and killed past
it) and every reader runs on each: ``-d``/``-s`` ``health -o json``, ``tree /image``,
``records``, ``changes`` one-shot and after a whole load, the line shell's verdict after
reading the image, the library load and ``iter_log`` of the file, Spark's fast reader.
A scenario passes when:

- every reader finishes within the bounds (no hang, no memory blow-up, no crash);
- nothing raises an internal error;
- compiled and pure give the same output, verdict and image;
- the readers agree by Kafka's rules (``tests/fuzz/judge.py``: the load and ``records``
  stop at the same batch, ``-s`` and ``-d`` replay the same batches, a one-shot
  ``changes`` prints what it prints after a whole load, Spark's rows are the shell's, the
  image of one file stopped at a damaged batch is the image of the file cut there);
- damage (``damaged=True``): the verdict is not complete, and a problem names the damaged
  file and an offset;
- ``prefix``: the image (``-d``) is the image of the same directory cut before the damage:
  a batch applies whole or not at all.

Class 9's session part (re-reading a followed directory) is at the end: the line shell with
``--follow`` fed commands while the files change under it, in a bounded child process.

Scenarios that fail on main before the reader's rewrite are ``xfail(strict=True)`` with the
class and what fails (``KNOWN``): a fix flips them to XPASS, and the mark must go.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mdshell.synth.records import ControlRec, meta
from mdshell.wire import compression

from .fuzz import build as b
from .fuzz import judge
from .fuzz.campaign import COMPILED, PURE, Runner
from .fuzz.mutate import bomb, overlong, uvarint, varint
from .fuzz.pool import Killed, Limits
from .fuzz.readers import Case, Run

ROOT = Path(__file__).resolve().parent.parent
SEG0 = b.segment_name(0)
# Every scenario's first batch: offsets 0-2, a cluster with topic "orders".
GOOD = b.values_batch(0, [b.feature(), b.topic("orders"), b.partition(0)])


@dataclass
class Scenario:
    id: str
    cls: str  # the class of issue 31 it is for
    files: dict[str, bytes]  # inside __cluster_metadata-0
    target: str = SEG0
    damaged: bool = True  # the verdict must not be complete, and must name the file
    prefix: dict[str, bytes] | None = None  # the same directory cut before the damage
    changes: str | None = "/image/topics/byName/orders"
    # extra checks: "linear" (CPU a byte), "sound" (verdict complete), "offsets" (the
    # offsets `records` lists: extra["offsets"])
    checks: tuple[str, ...] = ()
    extra: dict[str, object] = field(default_factory=dict)


SCENARIOS: list[Scenario] = []


def scenario(*args: object, **kw: object) -> None:
    SCENARIOS.append(Scenario(*args, **kw))  # type: ignore[arg-type]


def damaged_segment(damage: bytes, *, after: bool = True) -> tuple[dict[str, bytes],
                                                                     dict[str, bytes]]:
    """The segment GOOD + ``damage`` (+ a good NoOp batch after it), and its valid prefix."""
    base, last = struct.unpack_from(">q", damage)[0], struct.unpack_from(">i", damage, 23)[0]
    tail = b.values_batch(base + max(last, 0) + 1, [b.noop()]) if after else b""
    return {SEG0: GOOD + damage + tail}, {SEG0: GOOD}


# ---------------------------------------------------------------- class 1: no progress
#
# Every length and count of a record's framing at -1, -2, huge and the int32/int64 edges
# (over-long 10-byte varints for the int64 ones): a decoder that steps back by a negative
# length, or believes a count, loops or allocates without end.

EDGES = {"-1": varint(-1), "-2": varint(-2), "int32max": varint(2**31 - 1),
         "int32min": varint(-2**31), "int64max": overlong(varint(2**63 - 1), 10),
         "int64min": varint(-2**63)}


def _payments(**raw: bytes) -> bytes:
    """Offsets 3-4: topic "payments" whose first record carries the broken field."""
    first = b.record(b.topic("payments", b.OTHER_ID), **raw)
    return b.batch(3, [first, b.record(b.partition(0, b.OTHER_ID), offset_delta=1)])


def _framing(field_name: str, value: bytes) -> bytes:
    if field_name == "length":
        return _payments(length=value)
    if field_name == "valueLength":  # the value's bytes stay: read as what follows it
        return _payments(valueLength=value)
    if field_name in ("keyLength", "headerCount"):
        return _payments(**{field_name: value})
    if field_name == "header key length":
        return _payments(headers_raw=value + b"k" + varint(1) + b"v", headerCount=varint(1))
    assert field_name == "header value length"
    return _payments(headers_raw=varint(1) + b"k" + value, headerCount=varint(1))


def kafka_takes(field_name: str, name: str) -> bool:
    """Whether KRaft's record reader (raft's ``RecordsIterator.readRecord``, which reads
    every metadata batch: log, snapshots, the shell) takes the record. It reads the length
    (0 < length <= the batch's size), the attributes, a timestamp delta that must be 0, an
    offset delta it ignores (records are numbered from the batch's base offset), the key
    (a negative length: none; a data record must have none), the value (a data record's
    must be there and not empty), then a header count that must be 0; its int32 varints
    take at most 5 bytes. So of the edges here only a key length below zero (no key; its
    bytes absent) leaves the record whole."""
    if name.startswith("int64") or name == "int32max":
        return False
    return field_name == "keyLength"


for _f in ("length", "keyLength", "valueLength", "headerCount", "header key length",
           "header value length"):
    for _name, _raw in EDGES.items():
        _files, _prefix = damaged_segment(_framing(_f, _raw))
        if kafka_takes(_f, _name):  # a null key or header value: the record is whole
            scenario(f"1-{_f.replace(' ', '-')}={_name}", "1", _files, damaged=False,
                     checks=("sound",))
        else:
            scenario(f"1-{_f.replace(' ', '-')}={_name}", "1", _files, prefix=_prefix)


def _sieve_steps(length: bytes) -> bytes:
    """A batch of 12 records that says it holds 2**31 - 1, one of them about "orders" (the
    one ``changes`` looks for, found by the byte sieve), and before it a record whose
    length steps back."""
    recs = [b.record(b.noop(), offset_delta=i) for i in range(11)]
    recs[3] = b.record(b.noop(), offset_delta=3, length=length)
    recs.append(b.record(b.partition(1), offset_delta=11))
    return b.batch(3, recs, count=2**31 - 1)


for _name in ("-1", "-2"):
    _files, _prefix = damaged_segment(_sieve_steps(EDGES[_name]), after=False)
    scenario(f"1-sieve-record-length={_name}", "1", _files, prefix=_prefix)

# The metadata frame's varints (frame version, api key, record version) huge or endless.
_FRAME = {"frame-version": uvarint(2**64 - 1) + uvarint(2) + uvarint(0),
          "api-key": uvarint(1) + overlong(uvarint(2), 12) + uvarint(0),
          "record-version": uvarint(1) + uvarint(2) + b"\xff" * 12}
for _name, _head in _FRAME.items():
    _value = _head + b.topic("payments", b.OTHER_ID)[3:]
    _files, _ = damaged_segment(b.batch(3, [b.record(_value)]))
    scenario(f"1-{_name}", "1", _files)


# ---------------------------------------------------------------- class 2: decompression
#
# A few KiB that expand to hundreds of MiB (every codec; raw snappy whose header claims
# 4 GiB), and one real, large compressed batch that must still be read whole.

for _codec, _size in ((compression.ZSTD, 1 << 30), (compression.GZIP, 256 << 20),
                      (compression.LZ4, 256 << 20), (compression.SNAPPY, 128 << 20)):
    _raw = b.batch(3, [b.record(b.noop())])
    _bomb = bytearray(_raw[:61]) + bomb(_codec, _size)
    struct.pack_into(">i", _bomb, 8, len(_bomb) - 12)
    struct.pack_into(">h", _bomb, 21, _codec)
    _files, _prefix = damaged_segment(b.recrc(bytes(_bomb), 0))
    scenario(f"2-bomb-{compression.NAMES[_codec]}-{_size >> 20}MiB", "2", _files,
             prefix=_prefix)

_claim = bytearray(b.batch(3, [b.record(b.noop())], codec=compression.SNAPPY))
_tiny = uvarint(2**32 - 1) + b"\x00"  # raw snappy (no xerial header): "4 GiB follow"
_claim = _claim[:61] + _tiny
struct.pack_into(">i", _claim, 8, len(_claim) - 12)
_files, _prefix = damaged_segment(b.recrc(bytes(_claim), 0))
scenario("2-snappy-claims-4GiB", "2", _files, prefix=_prefix)

_big = [b.record(b.partition(i, b.OTHER_ID, (1, 2, 3, 4, 5)), offset_delta=i)
        for i in range(3_000)]  # ~300 KiB of PartitionRecords, one zstd batch
scenario("2-large-real-batch-is-read", "2",
         {SEG0: GOOD + b.values_batch(3, [b.topic("payments", b.OTHER_ID)])
          + b.batch(4, _big, codec=compression.ZSTD)}, damaged=False, checks=("sound",))


# ---------------------------------------------------------------- class 3: superlinear work
#
# After a batch whose length field and CRC are both wrong, 512 KiB of the 8 bytes its true
# end would start with (the next offset), repeated: every place is a candidate end, none
# matches. Reading must stay linear.

_bad_len = b.patch(b.patch(b.batch(3, [b.record(b.noop())]), 0, 8, ">i", 60, crc=False), 0,
                   17, ">I", 0, crc=False)
_repeat = struct.pack(">q", 4) * (64 << 10)
scenario("3-true-end-candidates", "3", {SEG0: GOOD + _bad_len + _repeat}, prefix={SEG0: GOOD},
         checks=("linear",))


# ---------------------------------------------------------------- class 4: internal errors
#
# Every header field of a batch in the middle of a segment at the edges of its type (the
# CRC recomputed for the fields it covers): no exception may escape, whatever the reader.

_HEADER_EDGES = {">q": [2**63 - 1, -2**63, -1, 2**31], ">i": [-1, -2, 2**31 - 1, -2**31],
                 ">h": [-1, 2**15 - 1, -2**15], ">b": [0, 3, -1], ">I": [0, 2**32 - 1]}
_FIELDS = [("baseOffset", 0, ">q"), ("batchLength", 8, ">i"),
           ("partitionLeaderEpoch", 12, ">i"), ("magic", 16, ">b"), ("crc", 17, ">I"),
           ("attributes", 21, ">h"), ("lastOffsetDelta", 23, ">i"),
           ("baseTimestamp", 27, ">q"), ("maxTimestamp", 35, ">q"), ("producerId", 43, ">q"),
           ("producerEpoch", 51, ">h"), ("baseSequence", 53, ">i"), ("count", 57, ">i")]
_OUTSIDE = {"baseOffset", "batchLength", "partitionLeaderEpoch", "magic", "crc"}
for _name, _at, _fmt in _FIELDS:
    for _v in _HEADER_EDGES[_fmt]:
        _mid = b.patch(_payments(), 0, _at, _fmt, _v, crc=_name not in _OUTSIDE)
        scenario(f"4-{_name}={_v}", "4", {SEG0: GOOD + _mid + b.values_batch(5, [b.noop()])},
                 damaged=False)

# A snapshot (-s, offsets inside the file) whose first batch claims base offset 2**63 - 2 and
# whose CRC does not match (the base offset is outside the CRC: the CRC field is broken too).
_snap = b.patch(b.patch(b.values_batch(0, [b.feature(), b.topic("orders")]), 0, 0, ">q",
                        2**63 - 2, crc=False), 0, 17, ">I", 0, crc=False)
scenario("4-snapshot-offset-near-int64-bad-crc", "4", {b.snapshot_name(3): _snap},
         target=b.snapshot_name(3), changes=None)

# -d: the first batch of a segment named for offset 10 claims offset 0 and a length of -2.
scenario("4-first-batch-misnamed-negative-length", "4",
         {b.segment_name(10): b.patch(b.values_batch(0, [b.feature()]), 0, 8, ">i", -2,
                                      crc=False) + b.values_batch(1, [b.noop()])},
         target=b.segment_name(10), changes=None)

# A sound segment named for offset 10 whose batches start at 0 (renamed, or joined from
# another node): -d and -s both read it from its batches' offsets, and nothing is damaged.
scenario("4-segment-misnamed", "4",
         {b.segment_name(10): GOOD + b.values_batch(3, [b.noop()])},
         target=b.segment_name(10), damaged=False, checks=("sound",))

# A second segment misnamed (named 10, holds 3-): it follows on from the first, no gap.
scenario("4-second-segment-misnamed", "4",
         {SEG0: GOOD, b.segment_name(10): b.values_batch(3, [b.noop()])},
         damaged=False, checks=("sound",))

# A ClientQuotaRecord whose entity has two parts of one type, one of them the default (null).
scenario("4-quota-entity-twice-one-null", "4",
         {SEG0: GOOD + b.values_batch(3, [b.quota([("client-id", None), ("client-id", "app")]),
                                          b.quota([("user", "bob"), ("user", None)])])},
         damaged=False)

# A control batch whose record key is one byte (a control key is four).
scenario("4-control-key-too-short", "4",
         {SEG0: GOOD + b.batch(3, [b.record(b"\x00\x00\x00", key=b"\x01")], control=True)
          + b.values_batch(4, [b.noop()])}, prefix={SEG0: GOOD})

# A record's offset delta beyond int64 (the batch's CRC right).
scenario("4-offset-delta-beyond-int64", "4",
         {SEG0: GOOD + b.batch(3, [b.record(b.noop(), offsetDelta=varint(-2**64))])},
         damaged=False)


# ---------------------------------------------------------------- class 5: int64 overflow
#
# Offsets that pass 2**63 - 1: the compiled and the Python path must agree, and such an
# offset is damage, not a wrapped negative offset.

_near = 2**63 - 3
_over = b.batch(_near, [b.record(b.noop(), offset_delta=i) for i in range(5)])
scenario("5-segment-last-offset-past-int64", "5", {b.segment_name(_near): _over},
         target=b.segment_name(_near), changes=None)
scenario("5-one-file-past-int64", "5",
         {SEG0: GOOD + b.patch(b.batch(3, [b.record(b.noop(), offset_delta=i)
                                           for i in range(5)]), 0, 0, ">q", _near, crc=False)},
         prefix={SEG0: GOOD})
_wrapped = (b.values_batch(2**63 - 1, [b.feature(), b.topic("orders"), b.partition(0)])
            + b.values_batch(-2**63 + 2, [b.noop()]))
scenario("5-snapshot-offsets-wrap", "5", {b.snapshot_name(3): _wrapped},
         target=b.snapshot_name(3), changes=None)
# A segment whose offsets reach 2**63 - 1 exactly, then a batch that would go past it.
_edge = b.patch(b.values_batch(3, [b.topic("payments", b.OTHER_ID)]), 0, 0, ">q", 2**63 - 1,
                crc=False)
_past = b.patch(b.values_batch(4, [b.noop()]), 0, 0, ">q", -2**63, crc=False)
scenario("5-offsets-reach-int64-max", "5", {SEG0: GOOD + _edge + _past}, changes=None)
scenario("5-last-offset-delta-int32max", "5",
         {SEG0: GOOD + b.patch(b.patch(_payments(), 0, 23, ">i", 2**31 - 1), 0, 0, ">q",
                               2**63 - 2**30, crc=False)}, prefix={SEG0: GOOD})


# ---------------------------------------------------------------- class 6: half-applied
#
# A batch with a valid CRC whose first records are fine and whose last one is not: none of
# its records may reach the image.

def _half(last: bytes, **kw: object) -> bytes:
    return b.batch(3, [b.record(b.topic("payments", b.OTHER_ID)),
                       b.record(b.partition(0, b.OTHER_ID), offset_delta=1), last],
                   **kw)  # type: ignore[arg-type]


_valid3 = b.record(b.partition(1, b.OTHER_ID), offset_delta=2)
for _name, _damage in {
        "count-above-records": b.batch(3, [b.record(b.topic("payments", b.OTHER_ID)),
                                           b.record(b.partition(0, b.OTHER_ID),
                                                    offset_delta=1)], count=3),
        "last-record-cut": _half(_valid3[:-4]),
        "value-past-record": _half(b.record(b.partition(1, b.OTHER_ID), offset_delta=2,
                                            valueLength=varint(300))),
        "zstd-count-above-records": b.batch(3, [b.record(b.topic("payments", b.OTHER_ID)),
                                                b.record(b.partition(0, b.OTHER_ID),
                                                         offset_delta=1)],
                                            count=3, codec=compression.ZSTD)}.items():
    _files, _prefix = damaged_segment(_damage)
    scenario(f"6-{_name}", "6", _files, prefix=_prefix)

# A record count of 0 (the CRC right; the records' bytes there or not): raft's Batch.data and
# Batch.control refuse a batch without records ("Batch must contain at least one record"),
# so no controller, broker or shell reads past it (Kafka 4.3.1's shell waits for ever).
_pair = [b.record(b.topic("payments", b.OTHER_ID)),
         b.record(b.partition(0, b.OTHER_ID), offset_delta=1)]
_leader = {"version": 0, "leaderId": 1, "voters": [], "grantingVoters": []}
for _name, _damage in {
        "count-zero": b.batch(3, _pair, count=0),
        "count-zero-no-bytes": b.batch(3, [], last_delta=1),
        "count-zero-zstd": b.batch(3, _pair, count=0, codec=compression.ZSTD),
        "count-zero-control": b.control_batch(3, 2, _leader, count=0)}.items():
    _files, _prefix = damaged_segment(_damage)
    scenario(f"6-{_name}", "6", _files, prefix=_prefix)
scenario("6-count-zero-in-snapshot", "6",
         {b.snapshot_name(6): GOOD + b.batch(3, _pair, count=0)},
         target=b.snapshot_name(6), changes=None)

# A log batch spanning more or fewer offsets than it holds records (the CRC right): Kafka
# writes none, and its KRaft reader ends the batch by the count (Batch.lastOffset, where the
# raft client goes on from) while the log goes on by the delta, so it cannot read past one.
# A snapshot is read whatever its batches' offsets say.
_three = [*_pair, b.record(b.partition(1, b.OTHER_ID), offset_delta=2)]
for _name, _damage, _after in (("count-above-offsets", b.batch(3, _three, last_delta=0), True),
                               ("count-below-offsets", b.batch(3, _pair, last_delta=4), True),
                               ("count-below-offsets-at-end", b.batch(3, _pair, last_delta=2),
                                False)):
    _files, _prefix = damaged_segment(_damage, after=_after)
    scenario(f"6-{_name}", "6", _files, prefix=_prefix)
# A metadata frame header as Kafka's serde (AbstractApiMessageSerde.read) reads it: three
# unsigned varints, each may be longer than it needs; the frame version must be 1, and the
# type and version fit a short. Anything else Kafka refuses, so it reads no further.
_body = b.topic("payments", b.OTHER_ID)[3:]
scenario("6-frame-version-overlong", "6",
         {SEG0: GOOD + b.batch(3, [b.record(b"\x81\x00" + uvarint(2) + uvarint(0) + _body)])
          + b.values_batch(4, [b.noop()])}, damaged=False, checks=("sound",))
for _name, _head in {"frame-version-0": uvarint(0) + uvarint(2) + uvarint(0),
                     "frame-version-2": uvarint(2) + uvarint(2) + uvarint(0),
                     "type-past-short": uvarint(1) + uvarint(2 + 2**15) + uvarint(0),
                     "version-past-short": uvarint(1) + uvarint(2) + uvarint(2**15)}.items():
    _files, _prefix = damaged_segment(b.batch(3, [b.record(_head + _body)]))
    scenario(f"6-{_name}", "6", _files, prefix=_prefix)

# Control records as KRaft's reader (RecordsIterator.decodeControlRecord) reads them: it
# refuses a negative key version, an ABORT or COMMIT marker (ordinary topics' transaction
# markers) and a value of a known type that does not read, and passes over bytes after the
# message. A type it does not know (a newer Kafka's) mdshell keeps raw.
_leader_value = ControlRec(2, _leader).value()
for _name, (_key, _value, _damaged) in {
        "control-key-version-negative": (b"\xff\xff\x00\x02", _leader_value, True),
        "control-abort": (b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00", True),
        "control-commit": (b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", True),
        "control-leader-change-cut": (b"\x00\x00\x00\x02", _leader_value[:3], True),
        "control-value-trailing-bytes": (b"\x00\x00\x00\x02", _leader_value + b"\x01\x02",
                                         False),
        "control-type-unknown": (b"\x00\x00\x00\x09", b"\x00\x00\x01", False)}.items():
    _files, _prefix = damaged_segment(b.batch(3, [b.record(_value, key=_key)], control=True))
    if _damaged:
        scenario(f"6-{_name}", "6", _files, prefix=_prefix)
    else:
        scenario(f"6-{_name}", "6", _files, damaged=False, checks=("sound",))

# A snapshot must open with a control batch whose first record is its SnapshotHeader: Kafka's
# snapshot reader (RecordsSnapshotReader.nextBatch) refuses any other, so no node loads it.
_snap_header = ControlRec(3, {"version": 0, "lastContainedLogTimestamp": 0})
_snap_kraft = ControlRec(5, {"version": 0, "kRaftVersion": 0})
_snap_body = b.values_batch(1, [b.feature(), b.topic("orders"), b.partition(0)])
_snap_footer = b.control_batch(4, 4, {"version": 0})


def _controls(base: int, *recs: ControlRec) -> bytes:
    return b.batch(base, [b.record(r.value(), key=r.key_bytes(), offset_delta=i)
                          for i, r in enumerate(recs)], control=True)


for _name, _bytes, _damaged in (
        ("snapshot-without-header", _snap_body + _snap_footer, True),
        ("snapshot-footer-first", _controls(0, ControlRec(4, {"version": 0}))
         + _snap_body + _snap_footer, True),
        ("snapshot-kraft-version-before-header", _controls(0, _snap_kraft, _snap_header)
         + _snap_body + _snap_footer, True),
        ("snapshot-header-then-kraft-version", _controls(0, _snap_header, _snap_kraft)
         + _snap_body + _snap_footer, False)):
    scenario(f"6-{_name}", "6", {b.snapshot_name(5): _bytes}, target=b.snapshot_name(5),
             changes=None, damaged=_damaged, checks=() if _damaged else ("sound",))

scenario("6-count-above-offsets-in-snapshot", "6",
         {b.snapshot_name(7): b.control_batch(0, 3, {"version": 0, "lastContainedLogTimestamp": 0})
          + b.values_batch(1, [b.feature(), b.topic("orders"), b.partition(0)])
          + b.batch(4, _three, last_delta=0) + b.control_batch(5, 4, {"version": 0})},
         target=b.snapshot_name(7), changes=None, damaged=False, checks=("sound",))

# Bytes after the count's records (the CRC right): Kafka's reader reads the records the count
# says and passes over the rest, so the batch is whole and applied.
scenario("6-bytes-after-last-record", "6",
         damaged_segment(_half(_valid3 + b"\x02\x00"))[0], damaged=False, checks=("sound",))

# Framing right, but the last record's value too short for what replay reads without
# decoding it (a PartitionRecord's partition id and topic id; a PartitionChangeRecord's).
_change = meta("PartitionChangeRecord", 0, partitionId=0, topicId=b.OTHER_ID, leader=2).value()
for _name, _value in {"partition-record-cut": b.partition(1, b.OTHER_ID)[:12],
                      "partition-change-cut": _change[:9],
                      "partition-record-frame-only": b.partition(1, b.OTHER_ID)[:3]}.items():
    _files, _prefix = damaged_segment(_half(b.record(_value, offset_delta=2)))
    scenario(f"6-{_name}", "6", _files, prefix=_prefix)
    _snapshot = GOOD + _half(b.record(_value, offset_delta=2))
    scenario(f"6-{_name}-in-snapshot", "6", {b.snapshot_name(6): _snapshot},
             target=b.snapshot_name(6), changes=None)


# ---------------------------------------------------------------- class 7: readers disagree

# A snapshot (header, footer) whose metadata batch is there twice (offsets inside a snapshot
# may overlap: Kafka 3.7 wrote such): `changes` after a whole load lists what the image
# keeps of the snapshot's records, which holds one of each partition; a one-shot `changes`
# lists both copies. They must list the same records.
_header = b.control_batch(0, 3, {"version": 0, "lastContainedLogTimestamp": 0})
_body = b.values_batch(1, [b.feature(), b.topic("orders"), b.partition(0), b.partition(1)])
scenario("7-snapshot-batch-repeated", "7",
         {b.snapshot_name(5): _header + _body + _body + b.control_batch(5, 4, {"version": 0})},
         target=b.snapshot_name(5), damaged=False)

# A headers section with a header whose value overruns the record (record length right):
# replay skips the headers, `records` reads them.
scenario("7-header-value-overruns", "7",
         damaged_segment(_payments(headers_raw=varint(1) + b"k" + varint(40) + b"v",
                                   headerCount=varint(1)))[0],
         prefix={SEG0: GOOD})
# KRaft's reader refuses a metadata batch whose record has a header (its count must be 0),
# a key, a timestamp delta other than 0, no value or an empty one: the batch is refused
# whole, by every reader.
for _name, _rec in {
        "well-formed-header": b.record(b.topic("payments", b.OTHER_ID),
                                       headers=[(b"trace", b"1")]),
        "metadata-record-with-key": b.record(b.topic("payments", b.OTHER_ID), key=b"k"),
        "timestamp-delta-not-zero": b.record(b.topic("payments", b.OTHER_ID),
                                             timestamp_delta=1),
        "null-value": b.record(None, offset_delta=1),
        "empty-value": b.record(b"", offset_delta=1)}.items():
    _recs = [_rec] if _name.startswith(("well", "metadata", "timestamp")) else [
        b.record(b.topic("payments", b.OTHER_ID)), _rec]
    _files, _prefix = damaged_segment(b.batch(3, _recs))
    scenario(f"7-{_name}", "7", _files, prefix=_prefix)
# A value length past its record, the record length right: the loop that frames for replay
# and the one that frames for `records` must judge it alike.
scenario("7-value-length-past-record", "7",
         damaged_segment(_payments(valueLength=varint(900)))[0], prefix={SEG0: GOOD})
# A batch repeated, and a batch missing, inside one segment: -s and -d say the same.
_b1 = b.values_batch(3, [b.topic("payments", b.OTHER_ID)])
_b2 = b.values_batch(4, [b.partition(0, b.OTHER_ID)])
scenario("7-batch-repeated-in-segment", "7", {SEG0: GOOD + _b1 + _b1 + _b2})
scenario("7-batch-missing-in-segment", "7", {SEG0: GOOD + _b2})
# Damage the load stops at (a record length that steps back), then a later segment that
# creates topic "late": a one-shot `changes` of "late" (its byte sieve never frames the
# damaged batch, which holds no "late") must stop where the load stops, and say why.
for _codec in (compression.GZIP, compression.NONE):
    _recs = [b.record(b.noop(), offset_delta=i) for i in range(4)]
    _recs[0] = b.record(b.noop(), length=varint(-30))
    scenario(f"7-changes-sieve-past-damage-{compression.NAMES[_codec]}", "7",
             {SEG0: GOOD + b.batch(3, _recs, codec=_codec),
              b.segment_name(7): b.values_batch(7, [b.topic("late", b.OTHER_ID),
                                                    b.partition(0, b.OTHER_ID)])},
             prefix={SEG0: GOOD}, changes="/image/topics/byName/late")
# Two batches swapped inside a segment: -s and -d replay the same batches.
scenario("7-batches-swapped-in-segment", "7", {SEG0: GOOD + _b2 + _b1})
# A record whose offset delta points past its batch (CRC right): KRaft numbers a batch's
# records from its base offset (the delta is read and ignored), so `records` lists offset 3.
scenario("7-offset-delta-past-the-batch", "7",
         {SEG0: GOOD + b.batch(3, [b.record(b.topic("payments", b.OTHER_ID),
                                            offset_delta=1000)], last_delta=0)},
         damaged=False, checks=("offsets",), extra={"offsets": [0, 1, 2, 3]})
# A TopicRecord cut inside its name: every reader says the same of it.
scenario("7-value-cut-inside-name", "7",
         {SEG0: GOOD + b.values_batch(3, [b.topic("payments", b.OTHER_ID)[:9]])})
# A value of two bytes, the frame header's first two, the record's other bytes passed over
# (a value length cut): Kafka's serde fails (its reader is bounded by the value); the shell
# read the header on past the value, Spark's reader kept the record raw as unknown.
_files, _prefix = damaged_segment(b.batch(3, [b.record(b.topic("payments", b.OTHER_ID),
                                                       valueLength=varint(2))]))
scenario("7-frame-header-past-value", "7", _files, prefix=_prefix)
# A PartitionRecord whose body does not decode: `health` must say so before anything else
# has read the partition.
scenario("7-health-before-partition-read", "7",
         {SEG0: GOOD + b.values_batch(3, [b.partition(1)[:-3] + b"\x07\x07\x07\x07"])})


# An aborted transaction whose markers' frame headers are longer than they need (Kafka's
# serde reads them: `6-frame-version-overlong`): the partition change inside it is never
# applied. A one-shot `changes` of "orders" (its byte sieve looks for the markers by their
# first bytes) must find the markers in any form the load reads, or it lists the change.
def _longer_header(value: bytes, form: str) -> bytes:
    """``value`` (a metadata record's, frame version 1, type below 128) with its frame
    version (``form`` "frame") or its type ("type") written in two bytes."""
    if form == "frame":
        return b"\x81\x00" + value[1:]
    return value[:1] + bytes([value[1] | 0x80, 0]) + value[2:]


for _form in ("frame", "type"):
    _begin = meta("BeginTransactionRecord", 0, name="t").value()
    _abort = meta("AbortTransactionRecord", 0, reason="r").value()
    _moved = meta("PartitionChangeRecord", 0, partitionId=0, topicId=b.TOPIC_ID,
                  leader=2).value()
    scenario(f"7-changes-sieve-transaction-header-{_form}", "7",
             {SEG0: GOOD + b.values_batch(3, [_longer_header(_begin, _form)])
              + b.values_batch(4, [_moved])
              + b.values_batch(5, [_longer_header(_abort, _form)])
              + b.values_batch(6, [b.noop()])}, damaged=False, checks=("sound",))


# ---------------------------------------------------------------- known on main

# What fails on main, and how: the scenario's class, then what the checks found (a class in
# brackets when another class's rule caught it). Empty: every scenario passes.
KNOWN: dict[str, str] = {}


def _params() -> list[object]:
    out = []
    for s in SCENARIOS:
        reason = KNOWN.get(s.id)
        marks = [pytest.mark.xfail(strict=True, reason=f"issue 31: {reason}")] if reason else []
        out.append(pytest.param(s, id=s.id, marks=marks))
    return out


# ---------------------------------------------------------------- running them

LIMITS = Limits(cpu=2.0, wall=60.0, rss=1024 << 20, address_space=3 << 30)
_RESULTS: dict[str, dict[str, dict[str, Run] | Killed]] = {}


def _cases() -> list[tuple[str, Case]]:
    out: list[tuple[str, Case]] = []
    for i, s in enumerate(SCENARIOS):
        files = {f"__cluster_metadata-0/{n}": d for n, d in s.files.items()}
        out.append((s.id, Case(2 * i, s.id, files, f"__cluster_metadata-0/{s.target}",
                               s.changes, single=len(files) == 1)))
        if s.prefix is not None:
            files = {f"__cluster_metadata-0/{n}": d for n, d in s.prefix.items()}
            out.append((f"{s.id}/prefix", Case(2 * i + 1, s.id, files,
                                                f"__cluster_metadata-0/{s.target}",
                                                s.changes, single=len(files) == 1,
                                                only=frozenset({"d.health", "d.tree"}))))
    return out


def run_scenarios() -> dict[str, dict[str, dict[str, Run] | Killed]]:
    """Every scenario (and its valid prefix) through a compiled and a pure worker."""
    cases = _cases()
    by_id = {c.id: name for name, c in cases}
    with Runner([COMPILED, PURE], 1, LIMITS) as runner:
        got, _ = runner.run(c for _, c in cases)
    return {by_id[cid]: res for cid, res in got.items()}


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, dict[str, Run] | Killed]]:
    if not _RESULTS:
        _RESULTS.update(run_scenarios())
    return _RESULTS


def failures(s: Scenario, res: dict[str, dict[str, Run] | Killed],
             prefix: dict[str, dict[str, Run] | Killed] | None) -> list[tuple[str, str]]:
    """What is wrong with a scenario's results: ``(short, detail)`` pairs (the short forms
    name the xfail reasons of ``KNOWN``)."""
    out = [(f"{f.kind} (class {f.cls})",
            f"class {f.cls} ({judge.CLASSES[f.cls]}): {f.kind} [{f.reader}] {f.detail}")
           for f in judge.judge(s.target, frozenset({"compressed"} if s.cls == "2" else ()),
                                sum(len(d) for d in s.files.values()), res, None)]
    runs = res.get("compiled")
    if not isinstance(runs, dict):
        return out
    for tag in ("d", "s"):
        h = runs.get(f"{tag}.health")
        v = h.data if h else None
        if v is None:
            if s.damaged and h and not (h.exc or "").startswith("SourceError"):
                out.append(("no verdict", f"{tag}.health gave no verdict: "
                            f"{h.exc or h.err[-200:]}"))
            continue
        if s.damaged:
            if v["state"] == "complete":
                out.append((f"-{tag} says complete", f"{tag}: the verdict is complete on "
                            f"damaged data (offset {v['offset']})"))
            elif not any(f == s.target and off is not None for _, f, off in v["problems"]):
                out.append(("damage not named", f"{tag}: no problem names {s.target} and an "
                            f"offset: {v['problems']}"))
        if "sound" in s.checks and v["state"] != "complete":
            out.append((f"-{tag} not complete on sound data", f"{tag}: the verdict is "
                        f"{v['state']} on sound data: {v['problems']}"))
    scan = runs.get("s.logscan")
    if "offsets" in s.checks and scan is not None and scan.data is not None and (
            scan.data["offsets"] != s.extra["offsets"]):
        out.append(("records numbers records unlike KRaft", f"records lists offsets "
                    f"{scan.data['offsets']}, KRaft numbers them {s.extra['offsets']}"))
    if "linear" in s.checks:
        size = sum(len(d) for d in s.files.values())
        for r in runs.values():
            if r.cpu > 1.0 + 2e-6 * size:
                out.append(("not linear", f"{r.reader} took {r.cpu:.2f} s CPU for {size} "
                            "bytes"))
    p = prefix.get("compiled") if s.prefix is not None and isinstance(prefix, dict) else None
    if isinstance(p, dict):
        if runs["d.tree"].out != p["d.tree"].out:
            out.append(("-d image not the valid prefix", "-d: the image is not the "
                        "directory's cut before the damage: "
                        + judge._first_diff(p["d.tree"].out, runs["d.tree"].out)))
        a, c = runs["d.health"].data, p["d.health"].data
        if a and c and a["offset"] != c["offset"]:
            out.append(("-d offset past the valid prefix", f"-d: offset {a['offset']}, the "
                        f"valid prefix is as of {c['offset']}"))
    return out


@pytest.mark.parametrize("s", _params())
def test_reader_class(s: Scenario,
                      results: dict[str, dict[str, dict[str, Run] | Killed]]) -> None:
    bad = failures(s, results[s.id], results.get(f"{s.id}/prefix"))
    assert not bad, f"{s.id} (class {s.cls}):\n" + "\n".join(d for _, d in bad)


# ---------------------------------------------------------------- class 9: following again
#
# The line shell with --follow reads what was appended before each command. Each step
# changes the files (a dict of actions), then runs `health` (JSON): the verdict must be
# judged again from what is on disk now.

Step = tuple[str, ...]


def _follow(tmp: Path, files: dict[str, bytes], steps: list[tuple[list[Step], str]],
            ) -> list[dict[str, object]]:
    """Run ``mdshell -d DIR --follow -o json`` in a child (bounded), feeding each step's
    command after doing its actions; the JSON documents printed."""
    root = b.write_log_dir(tmp / "log", files)
    spec = {"dir": str(root), "steps": [[acts, cmd] for acts, cmd in steps]}
    code = _FOLLOW_DRIVER
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(spec), text=True,
                          capture_output=True, timeout=60, env=env, cwd=ROOT,
                          preexec_fn=_limit)
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    docs, dec, i, text = [], json.JSONDecoder(), 0, proc.stdout
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return docs
        doc, i = dec.raw_decode(text, i)
        docs.append(doc)


def _limit() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CPU, (20, 20))
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


_FOLLOW_DRIVER = r'''
import io, json, os, sys
spec = json.load(sys.stdin)
md = os.path.join(spec["dir"], "__cluster_metadata-0")

def act(a):
    kind, name = a[0], os.path.join(md, a[1])
    if kind == "append":
        with open(name, "ab") as f:
            f.write(bytes.fromhex(a[2]))
    elif kind == "truncate":
        os.truncate(name, int(a[2]))
    elif kind == "write":  # bytes at a position, the file's size unchanged
        with open(name, "r+b") as f:
            f.seek(int(a[2]))
            f.write(bytes.fromhex(a[3]))

class Lines:
    def isatty(self):
        return False
    def __iter__(self):
        for acts, cmd in spec["steps"]:
            for a in acts:
                act(a)
            yield cmd + "\n"

sys.stdin = Lines()
from mdshell.cli import main
raise SystemExit(main(["-d", spec["dir"], "--follow", "-o", "json"]))
'''


def _verdicts(docs: list[dict[str, object]]) -> list[dict[str, object]]:
    return [d["verdict"] for d in docs if isinstance(d, dict) and "verdict" in d]  # type: ignore[misc]


def _cut(data: bytes, keep: int) -> tuple[bytes, bytes]:
    return data[:keep], data[keep:]


FOLLOW_KNOWN: dict[str, str] = {}


def _fmark(name: str) -> list[pytest.MarkDecorator]:
    reason = FOLLOW_KNOWN.get(name)
    return [pytest.mark.xfail(strict=True, reason=f"issue 31: {reason}")] if reason else []


@pytest.mark.parametrize("keep", [pytest.param(k, id=f"cut-after-{k}-bytes",
                                               marks=_fmark(f"completed-{k}"))
                                  for k in (20, 45, 70)])
def test_follow_a_completed_batch_clears_cut_short(keep: int, tmp_path: Path) -> None:
    """A log cut inside its last batch, then completed (the bytes now those of a healthy
    copy): the next command's verdict is complete, and the image has the batch."""
    last = b.values_batch(3, [b.topic("payments", b.OTHER_ID), b.partition(0, b.OTHER_ID)])
    head, rest = _cut(last, keep)
    docs = _follow(tmp_path, {SEG0: GOOD + head},
                   [([], "health"), ([("append", SEG0, rest.hex())], "health"),
                    ([], "ls /image/topics/byName")])
    verdicts = _verdicts(docs)
    assert verdicts[0]["offset"] == 2, verdicts[0]  # a cut batch: damage, or one being written
    assert verdicts[1]["state"] == "complete", verdicts[1]
    assert verdicts[1]["offset"] == 4
    assert "payments" in json.dumps(docs[-1])


@pytest.mark.parametrize("junk", [
    pytest.param(b"\x07" * 40, id="40-bytes", marks=_fmark("garbage-40")),
    pytest.param(b"\xff" * 5, id="5-bytes", marks=_fmark("garbage-5")),
    pytest.param(b.values_batch(3, [b.noop()])[:-1] + b"\x01", id="a-batch-with-a-bad-crc",
                 marks=_fmark("garbage-crc"))])
def test_follow_appended_garbage_is_damage(junk: bytes, tmp_path: Path) -> None:
    """Bytes appended to a followed log that are not a batch (and stay so): damage, named."""
    docs = _follow(tmp_path, {SEG0: GOOD},
                   [([], "health"), ([("append", SEG0, junk.hex())], "health"),
                    ([], "health")])
    verdicts = _verdicts(docs)
    assert verdicts[0]["state"] == "complete", verdicts[0]
    for v in verdicts[1:]:
        assert v["state"] != "complete", v
        assert any(p["file"] and p["file"].endswith(SEG0) for p in v["problems"]), v


@pytest.mark.parametrize("change", [
    pytest.param("flip", id="byte-flipped-before-the-end", marks=_fmark("rewritten-flip")),
    pytest.param("shrink", id="file-shrank", marks=_fmark("rewritten-shrink"))])
def test_follow_notices_a_file_rewritten_before_what_was_read(change: str,
                                                              tmp_path: Path) -> None:
    """A segment changed before the point already read: the next verdict is the one its
    bytes give now (a fresh load of the same directory), not the old one."""
    tail = b.values_batch(3, [b.topic("payments", b.OTHER_ID)]) + b.values_batch(
        4, [b.partition(0, b.OTHER_ID)])
    data = GOOD + tail
    act: Step = (("write", SEG0, str(40), bytes([data[40] ^ 0x10]).hex()) if change == "flip"
                 else ("truncate", SEG0, str(len(GOOD))))
    docs = _follow(tmp_path, {SEG0: data}, [([], "health"), ([act], "health")])
    verdicts = _verdicts(docs)
    assert verdicts[0]["state"] == "complete", verdicts[0]
    fresh = tmp_path / "fresh"
    changed = bytearray(data)
    if change == "flip":
        changed[40] ^= 0x10
    else:
        del changed[len(GOOD):]
    want = _follow(fresh, {SEG0: bytes(changed)}, [([], "health")])
    expected = _verdicts(want)[0]
    assert (verdicts[1]["state"], verdicts[1]["offset"]) == (expected["state"],
                                                             expected["offset"]), (
        verdicts[1], expected)



@pytest.mark.parametrize("sparse", [False, True], ids=["zeros", "hole"])
def test_follow_a_preallocated_segment_written_into(sparse: bool, tmp_path: Path) -> None:
    """A preallocated segment (Kafka's file.preallocate: the file made its full size, then
    written into) followed: a batch written where the zeros began is read as appended, not
    as the file rewritten, and the verdict stays complete."""
    pad = 1 << 20
    later = b.values_batch(3, [b.topic("payments", b.OTHER_ID)])
    steps: list[tuple[list[Step], str]] = [
        ([("write", SEG0, str(len(GOOD)), later.hex())], "health"),
        ([], "ls /image/topics/byName")]
    if sparse:
        steps.insert(0, ([("truncate", SEG0, str(len(GOOD) + pad))], "health"))
        docs = _follow(tmp_path, {SEG0: GOOD}, steps)
    else:
        steps.insert(0, ([], "health"))
        docs = _follow(tmp_path, {SEG0: GOOD + bytes(pad)}, steps)
    first, then = _verdicts(docs)
    assert (first["state"], first["offset"]) == ("complete", 2), first
    assert (then["state"], then["offset"]) == ("complete", 3), then
    assert not then["problems"], then
    assert "payments" in json.dumps(docs[-1])
