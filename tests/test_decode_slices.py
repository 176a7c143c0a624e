"""A load whose compiled calls are bounded (``decoding.SLICE``, which the TUI sets so that
keys are answered between calls) reads the same as one call per batch: the same image,
history, time travel and problems on every fixture and a generated log of every kind of
change, and the same records, ``last`` and error from ``frame_and_decode`` for batches
with NoOps, bounds that cut them, offsets out of order and a record that does not decode."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdshell.wire import codec, decoding
from mdshell.wire.batch import RecordSpec, encode_batch, frame_metadata_value, parse_header
from mdshell.wire.kinds import RecordKind
from mdshell.wire.primitives import DecodeError
from mdshell.wire.records import METADATA

from .test_handlers import DIRS, _facts, mixed  # noqa: F401 (mixed: a fixture)

pytestmark = pytest.mark.skipif(decoding._cdecode_batch is None,
                                reason="no compiled decoder (MDSHELL_PURE=1, or no compiler)")


def _facts_both(directory: Path) -> tuple[list[object], list[object]]:
    whole = _facts(directory)
    before = decoding.set_slice(3)
    try:
        return whole, _facts(directory)
    finally:
        decoding.set_slice(before)


@pytest.mark.parametrize("directory", DIRS, ids=[p.name for p in DIRS])
def test_fixtures_read_the_same_in_slices(directory: Path) -> None:
    whole, sliced_ = _facts_both(directory)
    assert sliced_ == whole


def test_every_kind_of_change_reads_the_same_in_slices(mixed: Path) -> None:  # noqa: F811
    whole, sliced_ = _facts_both(mixed)
    assert sliced_ == whole


def _batch(values: list[bytes], deltas: list[int] | None = None) -> tuple[bytes, int, int, int,
                                                                         int, int]:
    """A metadata batch of ``values`` (offset deltas ``deltas``, else 0, 1, ...): (buffer,
    records start, end, count, base offset, base timestamp)."""
    deltas = deltas if deltas is not None else list(range(len(values)))
    raw = encode_batch(100, [RecordSpec(d, 0, v) for v, d in
                             zip(values, deltas, strict=True)], base_timestamp=7)
    b = parse_header(raw, 0)
    buf, pos, end = b.payload()
    return buf, pos, end, b.count, b.base_offset, b.base_timestamp


def _values(n: int, noop_at: int | None = None) -> list[bytes]:
    out = []
    for i in range(n):
        if i == noop_at:
            out.append(frame_metadata_value(RecordKind.NO_OP, 0, b"\x00"))
        else:
            body = codec.encode(METADATA[RecordKind.FEATURE_LEVEL], 0,
                                {"name": f"f{i}", "featureLevel": i})
            out.append(frame_metadata_value(RecordKind.FEATURE_LEVEL, 0, body))
    return out


def _decode(args: tuple[bytes, int, int, int, int, int], lo: int = -1,
            hi: int | None = None) -> object:
    try:
        return decoding.frame_and_decode(*args, lo=lo, hi=hi)
    except DecodeError as e:
        return ("error", str(e))


def _same_both_ways(args: tuple[bytes, int, int, int, int, int], lo: int = -1,
                    hi: int | None = None) -> None:
    whole = _decode(args, lo, hi)
    before = decoding.set_slice(3)
    try:
        assert _decode(args, lo, hi) == whole
    finally:
        decoding.set_slice(before)


def test_batches_that_cannot_be_sliced_read_as_one_call() -> None:
    plain = _batch(_values(10))
    _same_both_ways(plain)
    _same_both_ways(plain, lo=102, hi=107)  # bounds that cut the batch
    _same_both_ways(plain, lo=100, hi=109)
    _same_both_ways(_batch(_values(10, noop_at=4)))  # a NoOp: never in the result
    _same_both_ways(_batch(_values(10), [0, 1, 2, 9, 4, 5, 6, 7, 8, 3]))  # out of order
    _same_both_ways(_batch(_values(10), [0, 1, 1, 2, 3, 4, 5, 6, 7, 8]))  # an offset twice
    broken = _values(10)
    broken[6] = frame_metadata_value(RecordKind.FEATURE_LEVEL, 0, b"\x05ab")  # cut short
    got = _decode(_batch(broken))
    assert isinstance(got, tuple) and got[0] == "error"
    _same_both_ways(_batch(broken))
