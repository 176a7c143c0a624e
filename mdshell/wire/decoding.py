"""The one decoding of a batch's framed metadata records: what replay applies, what
``records`` lists and what Spark's reader turns into rows.

:func:`decode_records` takes the records of one batch as :func:`.framing.frame` gives them
(``METADATA`` shape) and decodes every one in an offset range before anything is applied, so
that a batch applies whole or not at all. Each comes out as ``(offset, api_key, version,
value, value_pos)``, its value one of:

- a dict: the record decoded (its unknown tagged fields, if any, under ``codec.UNKNOWN_TAGS``);
- :class:`.frames.Unknown`: a record type or version this mdshell does not know (newer
  Kafka), kept raw and never applied;
- a :data:`Lazy` tuple ``(buffer, body_pos, value_end, version)``: a PartitionRecord whose
  bytes decode cleanly, left undecoded (``lazy``: a million-partition snapshot is read without
  making a million dicts; the image decodes it when it is read, always with success).

A record of a known type and version whose bytes do not decode raises
:class:`~.primitives.DecodeError`: the batch is damaged (CRC-valid bytes that are not a
record), and nothing of it may be applied. NoOpRecords are known by their frame header and
their body (which holds nothing) is not read: they are left out unless ``noops``, then
decoded for show, or kept raw when the body does not decode (never a reason to refuse the
batch); ``last`` counts them either way.

The compiled replay loop (``_cwalk.run``) decodes plain batches the same way with the same
decoders; this is the reference it is tested against.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from typing import Any

from . import codec, frames, framing
from .kinds import RecordKind
from .native import piece
from .primitives import DecodeError
from .records import METADATA

Lazy = tuple[bytes, int, int, int]  # (buffer, body position, value end, version)
Decoded = tuple[int, int, int, Any, int]  # (offset, api key, version, value, value position)

LAZY_VERSIONS = 2  # PartitionRecord versions 0..2 may be held undecoded
_NO_OP, _PARTITION = RecordKind.NO_OP, RecordKind.PARTITION
_BELOW, _ABOVE = -(1 << 64), 1 << 64

_cwalk = piece("_cwalk")
_cdecode_batch = _cwalk.decode if _cwalk is not None else None
# Records one compiled decode handles, at most (0: a batch at once). A compiled call holds
# the interpreter until it returns (a snapshot batch of 69,632 records: 35 ms): a front end
# that answers keys while a load runs sets a bound (tui/startup.py, :func:`set_slice`), so
# that its thread gets the interpreter between calls. The result is the same either way.
SLICE = 0
_ccheck = _cwalk.check if _cwalk is not None else None
_ccheck_section = _cwalk.check_section if _cwalk is not None else None
# The header columns :func:`first_to_read` takes, as the fast walk's arrays (``q``, ``i``,
# ``i``, ``q``, ``q``, ``h``): starts, lengths, record counts, base offsets, base timestamps,
# attributes.
CheckColumns = tuple["array[int]", "array[int]", "array[int]", "array[int]", "array[int]",
                     "array[int]"]

# Decoders by ``api key << 7 | version`` (both below 128: the 3-byte frame); None: a type or
# version this mdshell does not know.
_DECODERS: dict[int, codec.Decoder | None] = {}


def decoder(key: int, ver: int) -> codec.Decoder | None:
    """The decoder of metadata record ``key`` at ``ver`` (cached); None when unknown."""
    plan = _DECODERS.get(key << 7 | ver, False)
    if plan is False:
        msg = METADATA.get(key)
        plan = (codec.decoder_for(msg, ver) if msg is not None and msg.valid.contains(ver)
                else None)
        _DECODERS[key << 7 | ver] = plan
    return plan  # type: ignore[return-value]


def decoders() -> dict[int, codec.Decoder | None]:
    """The cache :func:`decoder` fills (the compiled loop reads it, and asks
    :func:`decoder` for a kind it lacks)."""
    return _DECODERS


def decode_records(buf: bytes, framed: Sequence[tuple[int, ...]], lo: int = -1,
                   hi: int | None = None, lazy: bool = True,
                   noops: bool = False) -> tuple[list[Decoded], int]:
    """The records of ``framed`` with offsets in ``[lo, hi]`` (``lo`` < 0, ``hi`` None: no
    bound), decoded; and the last offset in that range (-1: none). Raises
    :class:`DecodeError` for a record of a known kind that does not decode."""
    out: list[Decoded] = []
    append = out.append
    last = -1
    below = lo if lo >= 0 else _BELOW
    above = hi if hi is not None else _ABOVE
    for off, vpos, vend, key, ver, body in framed:
        if off < below:
            continue
        if off > above:
            break
        last = off
        if key == _NO_OP:
            if noops:  # shown, never judged: replay does not read its body
                append((off, key, ver, _noop(buf, vpos, vend, ver), vpos))
            continue
        if key < 0:  # the frame header in its long form: the general reader
            key, ver, value = frames.decode_metadata(buf, vpos, vend)
            if key == _NO_OP and not noops:
                continue
            append((off, key, ver, value, vpos))
            continue
        dec = _DECODERS.get(key << 7 | ver) or decoder(key, ver)
        if dec is None:
            append((off, key, ver, frames.unknown(buf, vpos, vend, key, ver), vpos))
        elif key == _PARTITION and lazy and ver <= LAZY_VERSIONS and clean(dec, buf, body,
                                                                            vend):
            append((off, key, ver, (buf, body, vend, ver), vpos))
        else:
            append((off, key, ver, frames.decoded(key, ver, dec, buf, body, vend), vpos))
    return out, last


def _noop(buf: bytes, vpos: int, vend: int, ver: int) -> dict[str, Any] | frames.Unknown:
    """A NoOpRecord's value for those who list it: decoded, or kept raw with what is wrong
    (replay passes NoOps by their frame header without reading their body, so a body that
    does not decode is no damage)."""
    try:
        return frames.decode_metadata(buf, vpos, vend)[2]
    except DecodeError as e:
        return frames.Unknown(_NO_OP, ver, bytes(buf[vpos:vend]), str(e))


def frame_and_decode(buf: bytes, pos: int, end: int, count: int, base_offset: int,
                     base_ts: int, lo: int = -1, hi: int | None = None, lazy: bool = True,
                     batch_size: int = framing.NO_LIMIT) -> tuple[list[Decoded], int]:
    """:func:`.framing.frame` of a metadata batch's records section, then
    :func:`decode_records`: in one compiled call when it is built (``_cwalk.decode``, which
    gives the same, or leaves to this reference what it does not decode itself)."""
    if _cdecode_batch is not None:
        ctx = (_DECODERS, decoder, lazy, _NO_OP, _PARTITION)
        got = _sliced(buf, pos, end, count, base_offset, base_ts, lo, hi, batch_size, ctx) \
            if SLICE and count > SLICE else None
        if got is None:
            got = _cdecode_batch(buf, pos, end, count, base_offset, base_ts, lo, hi,
                                 batch_size, ctx)
        if got is not None:
            return got
    recs = framing.frame(buf, pos, end, count, base_offset, base_ts, batch_size=batch_size)
    return decode_records(buf, recs, lo, hi, lazy)


def set_slice(records: int) -> int:
    """Bound the records a compiled call decodes (0: none); the bound before."""
    global SLICE
    before, SLICE = SLICE, records
    return before


def _sliced(buf: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int,
            lo: int, hi: int | None, batch_size: int,
            ctx: tuple[Any, ...]) -> tuple[list[Decoded], int] | None:
    """The compiled decode of a whole batch in calls of :data:`SLICE` offsets each (each
    frames the batch again: 0.6 ms for 69,632 records), taken only when every record came
    out once: then every record was in its slice's offsets, in the order of the batch, and
    the result is the one call's. None (the caller decodes in one call, as without slices)
    for anything else: bounds that cut the batch, NoOps (never in the result), offsets out
    of order, a slice left to the reference or refused (the one call says the same, or
    what it says first)."""
    assert _cdecode_batch is not None
    if (lo >= 0 and lo > base_offset) or (hi is not None and hi < base_offset + count - 1):
        return None
    out: list[Decoded] = []
    edges = range(base_offset, base_offset + count, SLICE)
    for k, first in enumerate(edges):
        try:
            got = _cdecode_batch(buf, pos, end, count, base_offset, base_ts,
                                 lo if k == 0 else first,
                                 hi if k == len(edges) - 1 else first + SLICE - 1, batch_size,
                                 ctx)
        except Exception:  # the one call raises it again, or what comes first
            return None
        if got is None:
            return None
        out += got[0]
    if len(out) != count:
        return None
    return out, out[-1][0] if out else -1


def verify(buf: bytes, pos: int, end: int, count: int, base_offset: int,
           base_ts: int, batch_size: int = framing.NO_LIMIT) -> None:
    """Raise what replay would raise for the records section ``buf[pos:end]`` of a metadata
    batch (:func:`frame_and_decode`), without applying anything: for a reader that applies
    only some records (``changes``' sieve), so that it refuses the batches replay refuses.
    The compiled check vouches for most batches without decoding them."""
    if _ccheck_section is not None and _ccheck_section(
            buf, pos, end, count, base_offset, base_ts, batch_size,
            (_DECODERS, decoder, _NO_OP)):
        return
    frame_and_decode(buf, pos, end, count, base_offset, base_ts, batch_size=batch_size)


def first_to_read(data: bytes, heads: CheckColumns, lo: int, hi: int) -> int:
    """The first of the batches ``lo..hi-1`` of a clean stretch of ``data`` (their header
    fields in ``heads``) that :func:`verify` must read (``hi``: none): the compiled check
    passes over plain batches whose records all decode cleanly (checked without decoding
    them); compressed and control batches, and any other, are left to it. ``lo`` without
    the compiled pieces."""
    if _ccheck is None or lo >= hi:
        return lo
    return int(_ccheck(data, heads, lo, hi, (_DECODERS, decoder, _NO_OP)))


def clean(dec: Callable[..., Any], buf: bytes, pos: int, end: int) -> bool:
    """Whether ``buf[pos:end]`` decodes by ``dec`` exactly, without unknown tagged fields (a
    record that may then be held undecoded). The compiled decoders answer without making
    the dict (their check mode, the fourth argument); the Python ones decode."""
    if codec.checks(dec):
        return bool(dec(buf, pos, end, True))
    try:
        d, at = dec(buf, pos, end)
    except Exception:  # the full decode says what is wrong
        return False
    return at == end and codec.UNKNOWN_TAGS not in d


def check_lazy(lazy: Lazy) -> None:
    """Raise :class:`DecodeError` unless an undecoded PartitionRecord decodes cleanly."""
    buf, body, end, ver = lazy
    dec = decoder(_PARTITION, ver)
    if dec is None or not clean(dec, buf, body, end):
        raise DecodeError("an undecoded PartitionRecord does not decode cleanly")
