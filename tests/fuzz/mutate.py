"""Seeded, structure-aware mutations of record-batch files.

Each mutator takes a random generator and a :class:`Target` (a file's bytes and their map,
:mod:`.layout`) and returns a :class:`Mutant` (the new bytes, what was done, and tags that
say what a reader owes the user for it), or None when the file has nothing it can mutate.

The damage is aimed: a length or count field is set to -1, 0, huge, an int32 or int64 edge,
written as a minimal or an over-long varint, and everything around it is made consistent
again (the record's length, the batch's length, its compression, its CRC), so that the
damage passes the checks before it and reaches the decoder of that field. The payloads of
compressed batches are decompressed, mutated and compressed again; decompression bombs
replace them.

Tags:

- ``crc-fixed``: the CRC was recomputed: the bytes are "valid", a writer's bug rather than a
  disk's; a reader may accept them when they decode.
- ``detectable``: bytes a reader can always tell are damaged (a CRC that no longer matches,
  a batch cut short, garbage after the last batch): the image must be the undamaged one or
  the verdict must not be complete.
- ``compressed``, ``bomb``, ``records``, ``frame``, ``header``, ``structure``, ``repeat``:
  what was hit, for the report.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from mdshell.wire import compression
from mdshell.wire.crc import crc32c

from .layout import (
    CRC_AT,
    CRC_FROM,
    HEADER_FIELDS,
    HEADER_SIZE,
    LOG_OVERHEAD,
    OUTSIDE_CRC,
    BatchMap,
    RecordMap,
    Span,
    map_file,
    read_varint,
)

Rng = random.Random

I64 = [0, 1, -1, -2, 2**31 - 1, -2**31, 2**31, 2**32, 2**63 - 1, 2**63 - 2, -2**63,
       -2**63 + 1]
I32 = [0, 1, -1, -2, 2**31 - 1, 2**31 - 2, -2**31, -2**31 + 1, 2**16, 48, 49, 61]
I16 = [0, 1, -1, 2**15 - 1, -2**15]
I8 = [0, 1, 2, 3, -1, 127, -128]
VARINT = [0, 1, -1, -2, 2, -3, 63, 64, -64, -65, 127, 128, 2**31 - 1, 2**31, -2**31,
          -2**31 - 1, 2**32, 2**63 - 1, -2**63, 2**64, -2**64, 10**6]
UVARINT = [0, 1, 2, 127, 128, 255, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**64 - 1, 2**70]
_EDGES = {">q": I64, ">i": I32, ">h": I16, ">b": I8, ">I": [0, 2**32 - 1]}
_RANGE = {">q": 64, ">i": 32, ">h": 16, ">b": 8, ">I": 32}


@dataclass(frozen=True, slots=True)
class Mutant:
    data: bytes
    what: str
    tags: frozenset[str]


@dataclass(slots=True)
class Target:
    """A file to mutate: its name, bytes and map (made once per seed file)."""

    name: str
    data: bytes
    maps: list[BatchMap]

    @classmethod
    def of(cls, name: str, data: bytes) -> Target:
        return cls(name, data, map_file(data))


# ---------------------------------------------------------------- encodings


def zigzag(n: int) -> int:
    return 2 * n if n >= 0 else -2 * n - 1


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def varint(n: int) -> bytes:
    return uvarint(zigzag(n))


def overlong(minimal: bytes, size: int) -> bytes:
    """The same number in ``size`` bytes (continuation bits and zero groups added)."""
    if size <= len(minimal):
        return minimal
    out = bytearray(minimal)
    out[-1] |= 0x80
    out += b"\x80" * (size - len(minimal) - 1) + b"\x00"
    return bytes(out)


def encodings(rng: Rng, raw: bytes) -> tuple[bytes, str]:
    """A varint's bytes as written: minimal mostly, over-long or unterminated sometimes."""
    r = rng.random()
    if r < 0.7:
        return raw, ""
    if r < 0.8:
        return overlong(raw, 10), " (10-byte varint)"
    if r < 0.9:
        return overlong(raw, 11), " (11-byte varint)"
    return b"\xff" * rng.choice([5, 10, 12]), " (unterminated varint)"


def fix_crc(buf: bytearray, pos: int) -> None:
    length = struct.unpack_from(">i", buf, pos + 8)[0]
    struct.pack_into(">I", buf, pos + CRC_AT, crc32c(bytes(buf[pos + CRC_FROM:pos + LOG_OVERHEAD
                                                                 + length])))


def rebuild(data: bytes, b: BatchMap, payload: bytes, *, count: int | None = None) -> bytes:
    """The file with batch ``b``'s records section replaced by ``payload`` (compressed again
    with the batch's codec), its length and CRC made right."""
    stored = compression.compress(b.codec, payload) if b.codec else payload
    head = bytearray(data[b.pos:b.pos + HEADER_SIZE])
    struct.pack_into(">i", head, 8, HEADER_SIZE - LOG_OVERHEAD + len(stored))
    if count is not None:
        struct.pack_into(">i", head, 57, count)
    batch = head + stored
    fix_crc(batch, 0)
    return data[:b.pos] + bytes(batch) + data[b.end:]


def _pick_records(rng: Rng, t: Target) -> tuple[BatchMap, RecordMap] | None:
    cands = [b for b in t.maps if b.records and (not b.codec or rng.random() < 0.5)] or [
        b for b in t.maps if b.records]
    if not cands:
        return None
    b = rng.choice(cands)
    return b, rng.choice(b.records)


def _replace(payload: bytes, rec: RecordMap, span: Span, new: bytes,
             fix_length: bool) -> bytes:
    """``payload`` with one field of ``rec`` replaced; the record's length written anew
    (``fix_length``) so that it still frames."""
    body = payload[rec.body:span.start] + new + payload[span.end:rec.end]
    length = payload[rec.start:rec.body]
    if fix_length:
        length = varint(len(body))
    return payload[:rec.start] + length + body + payload[rec.end:]


def _with_lengths(payload: bytes, rec: RecordMap, span: Span, new: bytes) -> bytes:
    """Replace a byte range inside the value (or a header), fixing the value length (or
    the header's length) and the record length."""
    owner = "valueLength" if span.start >= _value_start(rec) else None
    out = payload[:span.start] + new + payload[span.end:]
    delta = len(new) - (span.end - span.start)
    if owner is not None:
        vl = rec.span("valueLength")
        assert vl is not None
        got = read_varint(payload, vl.start, vl.end)
        assert got is not None
        new_vl = varint(got[0] + delta)
        out = out[:vl.start] + new_vl + out[vl.end:]
        delta += len(new_vl) - (vl.end - vl.start)
    body_len = rec.end - rec.body + delta
    return out[:rec.start] + varint(body_len) + out[rec.body:]


def _value_start(rec: RecordMap) -> int:
    v = rec.span("value")
    return v.start if v is not None else 1 << 62


# ---------------------------------------------------------------- mutators


def flip(rng: Rng, t: Target) -> Mutant | None:
    """A few bits flipped anywhere; the CRC left as it is."""
    if not t.data:
        return None
    buf = bytearray(t.data)
    spots = sorted(rng.randrange(len(buf)) for _ in range(rng.randint(1, 4)))
    for i in spots:
        buf[i] ^= 1 << rng.randrange(8)
    covered = all(any(b.pos + CRC_AT <= i < b.end for b in t.maps) for i in spots)
    return Mutant(bytes(buf), f"bits flipped at bytes {spots}",
                  frozenset({"detectable"} if covered and buf != t.data else set()))


def flip_fixed(rng: Rng, t: Target) -> Mutant | None:
    """Bytes inside one batch changed, its CRC recomputed: the damage reaches the decoder."""
    if not t.maps:
        return None
    b = rng.choice(t.maps)
    buf = bytearray(t.data)
    spots = sorted(rng.randrange(b.pos + CRC_FROM, b.end) for _ in range(rng.randint(1, 3)))
    for i in spots:
        buf[i] = rng.choice([rng.randrange(256), buf[i] ^ (1 << rng.randrange(8)), 0, 0xFF])
    fix_crc(buf, b.pos)
    return Mutant(bytes(buf), f"batch@{b.pos}: bytes {spots} changed (CRC fixed)",
                  frozenset({"crc-fixed"}))


def truncate(rng: Rng, t: Target) -> Mutant | None:
    if not t.data:
        return None
    at = rng.randrange(len(t.data))
    start = max([0, *(b.end for b in t.maps if b.end <= at)])
    # a cut at a batch's end leaves a valid log; one that leaves only zero bytes of the next
    # batch looks like a preallocated tail (Kafka ignores a header cut short too)
    boundary = not t.data[start:at].strip(b"\0")
    return Mutant(t.data[:at], f"cut at byte {at} of {len(t.data)}",
                  frozenset(set() if boundary else {"detectable"}))


def insert(rng: Rng, t: Target) -> Mutant | None:
    at = rng.randrange(len(t.data) + 1)
    junk = rng.choice([rng.randbytes(rng.randint(1, 64)), bytes(rng.randint(1, 16)),
                       b"\xff" * rng.randint(1, 16)])
    zero = not junk.strip(b"\0")
    tail = at == len(t.data)
    tags = set() if zero and tail else {"detectable"}
    return Mutant(t.data[:at] + junk + t.data[at:], f"{len(junk)} bytes inserted at {at}",
                  frozenset(tags))


def append(rng: Rng, t: Target) -> Mutant | None:
    """Bytes after the last batch: zeros (a preallocated tail, harmless) or garbage."""
    junk = rng.choice([bytes(rng.randint(1, 100)), rng.randbytes(rng.randint(1, 100)),
                       t.data[:rng.randint(1, 60)]])
    tags = {"detectable"} if junk.strip(b"\0") else set()
    return Mutant(t.data + junk, f"{len(junk)} bytes appended", frozenset(tags))


def header_edge(rng: Rng, t: Target) -> Mutant | None:
    """One header field of one batch set to an edge of its type (CRC fixed when the CRC
    covers it)."""
    if not t.maps:
        return None
    b = rng.choice(t.maps)
    name, at, fmt = rng.choice(HEADER_FIELDS)
    old = struct.unpack_from(fmt, t.data, b.pos + at)[0]
    values = _EDGES[fmt] + [old + 1, old - 1]
    if name == "attributes":
        values += [old ^ 0x20, old ^ 0x10, (old & ~7) | rng.randrange(8), 0x7FFF]
    if name == "baseOffset":
        values += [2**63 - 1 - rng.randrange(8), old + 2**62]
    if name == "lastOffsetDelta":
        values += [old + 1000, old * 2 + 1]
    bits = _RANGE[fmt]
    lo, hi = (0, 2**bits - 1) if fmt == ">I" else (-(2**(bits - 1)), 2**(bits - 1) - 1)
    value = min(hi, max(lo, rng.choice(values)))
    if value == old:
        return None
    buf = bytearray(t.data)
    struct.pack_into(fmt, buf, b.pos + at, value)
    tags = {"header"}
    base, delta = struct.unpack_from(">q", t.data, b.pos)[0], struct.unpack_from(
        ">i", t.data, b.pos + 23)[0]
    last = value + delta if name == "baseOffset" else base + value if (
        name == "lastOffsetDelta") else base + delta
    if not -2**63 <= last < 2**63 - 1:  # the batch's last offset (or the next) past int64
        tags.add("overflow")
    if name in OUTSIDE_CRC:
        tags.add("outside-crc")
    elif name != "crc":
        fix_crc(buf, b.pos)
        tags.add("crc-fixed")
    else:
        tags.add("detectable")
    return Mutant(bytes(buf), f"batch@{b.pos}: {name} {old} -> {value}", frozenset(tags))


_RECORD_VARINTS = ("length", "timestampDelta", "offsetDelta", "keyLength", "valueLength",
                   "headerCount")


def offset_overflow(rng: Rng, t: Target) -> Mutant | None:
    """Offsets near the int64 edge: from one batch on, base offsets that follow on from
    2**63 - 1 - k, so that some batch's last offset passes 2**63 - 1 (or sits on it)."""
    if not t.maps:
        return None
    i = rng.randrange(len(t.maps))
    buf = bytearray(t.data)
    base = start = 2**63 - 1 - rng.choice([0, 0, 1, 2, 5])
    for b in t.maps[i:]:
        delta = struct.unpack_from(">i", buf, b.pos + 23)[0]
        struct.pack_into(">q", buf, b.pos, (base + 2**63) % 2**64 - 2**63)
        base += max(delta, 0) + 1
    return Mutant(bytes(buf), f"from batch@{t.maps[i].pos}: base offsets from {start} on, "
                  "past 2**63 - 1 (written wrapped)",
                  frozenset({"header", "outside-crc", "overflow"}))


def record_varint(rng: Rng, t: Target) -> Mutant | None:
    """A varint of a record's framing (length, deltas, key/value length, header count and
    header key/value lengths) set to an edge value; the batch made consistent around it."""
    picked = _pick_records(rng, t)
    if picked is None:
        return None
    b, rec = picked
    spans = [s for s in rec.fields if s.kind == "varint"]
    span = rng.choice(spans)
    got = read_varint(b.payload, span.start, span.end)
    old = got[0] if got else 0
    value = rng.choice([*VARINT, old + 1, old - 1, old + 2, -old, old * 2 + 3, old + 1000])
    raw, how = encodings(rng, varint(value))
    fix_length = span.name != "length" and rng.random() < 0.8
    payload = _replace(b.payload, rec, span, raw, fix_length)
    out = rebuild(t.data, b, payload)
    tags = {"records", "crc-fixed"} | ({"compressed"} if b.codec else set())
    return Mutant(out, f"batch@{b.pos} record@{rec.start}: {span.name} {old} -> {value}{how}"
                  f"{'' if fix_length else ', record length kept'} (CRC fixed)",
                  frozenset(tags))


def record_attributes(rng: Rng, t: Target) -> Mutant | None:
    picked = _pick_records(rng, t)
    if picked is None:
        return None
    b, rec = picked
    span = rec.span("attributes")
    assert span is not None
    value = rng.choice([1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
    payload = b.payload[:span.start] + bytes([value]) + b.payload[span.end:]
    return Mutant(rebuild(t.data, b, payload),
                  f"batch@{b.pos} record@{rec.start}: attributes -> {value} (CRC fixed)",
                  frozenset({"records", "crc-fixed"}))


def frame_varint(rng: Rng, t: Target) -> Mutant | None:
    """A metadata value's frame varint (frame version, api key, record version) set to an
    edge, minimal or over-long; the value, record and batch lengths made right."""
    cands = [(b, r) for b in t.maps for r in b.records if r.span("frame.apiKey")]
    if not cands:
        return None
    b, rec = rng.choice(cands)
    span = rng.choice([s for s in rec.fields if s.name.startswith("frame.")])
    value = rng.choice([*UVARINT, rng.randrange(40), rng.randrange(300)])
    raw, how = encodings(rng, uvarint(value))
    payload = _with_lengths(b.payload, rec, span, raw)
    tags = {"frame", "crc-fixed"} | ({"compressed"} if b.codec else set())
    return Mutant(rebuild(t.data, b, payload),
                  f"batch@{b.pos} record@{rec.start}: {span.name} -> {value}{how} (CRC fixed)",
                  frozenset(tags))


def value_body(rng: Rng, t: Target) -> Mutant | None:
    """Inside a record's value (a message body, or a control record's value): a byte set
    to an edge, a one-byte varint made huge, bytes inserted or removed; lengths and CRC
    made right so that the schema's decoder meets it."""
    cands = [(b, r) for b in t.maps for r in b.records
             if r.span("value.body") or r.span("value")]
    if not cands:
        return None
    b, rec = rng.choice(cands)
    span = rec.span("value.body") or rec.span("value")
    assert span is not None
    i = rng.randrange(span.start, span.end)
    op = rng.randrange(5)
    if op == 0:
        new, what = bytes([rng.choice([0, 1, 0x7F, 0x80, 0xFF])]), "byte set"
        cut = Span("x", i, i + 1, "bytes")
    elif op == 1:
        new = rng.choice([uvarint(v) for v in UVARINT[4:]] + [b"\xff" * 10])
        what, cut = "varint made huge", Span("x", i, i + 1, "bytes")
    elif op == 2:
        new, what = rng.randbytes(rng.randint(1, 8)), "bytes inserted"
        cut = Span("x", i, i, "bytes")
    elif op == 3:
        n = rng.randint(1, max(1, span.end - i))
        new, what, cut = b"", f"{n} bytes removed", Span("x", i, i + n, "bytes")
    else:
        new, what, cut = b"", "value cut short", Span("x", i, span.end, "bytes")
    payload = _with_lengths(b.payload, rec, cut, new)
    tags = {"records", "crc-fixed"} | ({"compressed"} if b.codec else set())
    return Mutant(rebuild(t.data, b, payload),
                  f"batch@{b.pos} record@{rec.start}: value byte {i - span.start}: {what} "
                  "(CRC fixed)", frozenset(tags))


def add_key_or_headers(rng: Rng, t: Target) -> Mutant | None:
    """A record given a key, or headers (well formed or with edge lengths): bytes a reader
    that skips a section and one that checks it would judge differently."""
    picked = _pick_records(rng, t)
    if picked is None:
        return None
    b, rec = picked
    if rng.random() < 0.4:
        span = rec.span("keyLength")
        assert span is not None
        key = rng.choice([b"", b"k", b"\x00\x00\x00\x03", rng.randbytes(rng.randint(1, 9))])
        old = rec.span("key")
        end = old.end if old else span.end
        new = varint(len(key)) + key
        payload = _replace(b.payload, rec, Span("key", span.start, end, "bytes"), new, True)
        what = f"key {key!r}"
    else:
        span = rec.span("headerCount")
        assert span is not None
        n = rng.randint(1, 3)
        heads = b"".join(
            rng.choice([varint(1) + b"h" + varint(2) + b"hv", varint(0) + varint(-1),
                        varint(-2) + varint(-1), varint(5) + b"ab",
                        varint(2**31 - 1) + b"x", varint(1) + b"h" + varint(-3)])
            for _ in range(n))
        count = rng.choice([n, n, n + 1, -1, 2**31 - 1])
        new = varint(count) + heads
        payload = _replace(b.payload, rec, Span("h", span.start, rec.end, "bytes"), new, True)
        what = f"{n} headers, count {count}"
    tags = {"records", "crc-fixed"} | ({"compressed"} if b.codec else set())
    return Mutant(rebuild(t.data, b, payload),
                  f"batch@{b.pos} record@{rec.start}: {what} (CRC fixed)", frozenset(tags))


def codec_bits(rng: Rng, t: Target) -> Mutant | None:
    """The attributes' codec bits changed (CRC fixed): a plain payload read as gzip or zstd,
    a compressed one read as plain, codecs 5-7 that do not exist."""
    if not t.maps:
        return None
    b = rng.choice(t.maps)
    buf = bytearray(t.data)
    old = struct.unpack_from(">h", buf, b.pos + 21)[0]
    codec = rng.choice([c for c in range(8) if c != old & 7])
    struct.pack_into(">h", buf, b.pos + 21, (old & ~7) | codec)
    fix_crc(buf, b.pos)
    return Mutant(bytes(buf), f"batch@{b.pos}: codec {old & 7} -> {codec} (CRC fixed)",
                  frozenset({"compressed", "crc-fixed"}))


def compressed_garbage(rng: Rng, t: Target) -> Mutant | None:
    """A compressed payload cut short, changed or replaced by random bytes (CRC fixed)."""
    cands = [b for b in t.maps if b.codec] or t.maps
    if not cands:
        return None
    b = rng.choice(cands)
    codec = b.codec or rng.randint(1, 4)
    stored = t.data[b.pos + HEADER_SIZE:b.end]
    good = compression.compress(codec, b.payload) if b.payload else stored
    op = rng.randrange(3)
    if op == 0 and good:
        new, what = good[:rng.randrange(len(good))], "cut short"
    elif op == 1 and good:
        buf = bytearray(good)
        i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
        new, what = bytes(buf), f"bit flipped at {i}"
    else:
        new, what = rng.randbytes(rng.randint(0, 200)), "random bytes"
    head = bytearray(t.data[b.pos:b.pos + HEADER_SIZE])
    struct.pack_into(">h", head, 21, (struct.unpack_from(">h", head, 21)[0] & ~7) | codec)
    struct.pack_into(">i", head, 8, HEADER_SIZE - LOG_OVERHEAD + len(new))
    batch = head + new
    fix_crc(batch, 0)
    return Mutant(t.data[:b.pos] + bytes(batch) + t.data[b.end:],
                  f"batch@{b.pos}: {compression.NAMES[codec]} payload {what} (CRC fixed)",
                  frozenset({"compressed", "crc-fixed"}))


# What a bomb of each codec expands to: zstd and gzip members (frames) concatenate, so a
# bomb is one small member repeated.
BOMBS = {compression.ZSTD: 1 << 30, compression.GZIP: 256 << 20, compression.LZ4: 64 << 20,
         compression.SNAPPY: 32 << 20}


@cache
def bomb(codec: int, size: int) -> bytes:
    """A payload that decompresses to ``size`` zero bytes (1 MiB members repeated)."""
    if codec == compression.SNAPPY:
        import cramjam

        block = bytes(cramjam.snappy.compress_raw(bytes(1 << 20)))
        head = compression.XERIAL_MAGIC + struct.pack(">ii", 1, 1)
        return head + (struct.pack(">i", len(block)) + block) * (size >> 20)
    member = compression.compress(codec, bytes(1 << 20))
    return member * (size >> 20)


def decompression_bomb(rng: Rng, t: Target) -> Mutant | None:
    """A batch whose payload expands to hundreds of MiB (CRC fixed, count kept)."""
    if not t.maps:
        return None
    b = rng.choice(t.maps)
    codec = rng.choice(sorted(BOMBS))
    size = BOMBS[codec] >> rng.choice([0, 0, 2])
    payload = bomb(codec, size)
    head = bytearray(t.data[b.pos:b.pos + HEADER_SIZE])
    struct.pack_into(">h", head, 21, (struct.unpack_from(">h", head, 21)[0] & ~7) | codec)
    struct.pack_into(">i", head, 8, HEADER_SIZE - LOG_OVERHEAD + len(payload))
    batch = head + payload
    fix_crc(batch, 0)
    return Mutant(t.data[:b.pos] + bytes(batch) + t.data[b.end:],
                  f"batch@{b.pos}: {compression.NAMES[codec]} bomb of {size >> 20} MiB "
                  f"in {len(payload)} bytes (CRC fixed)",
                  frozenset({"compressed", "bomb", "crc-fixed"}))


def records_bomb(rng: Rng, t: Target) -> Mutant | None:
    """A batch whose real records are followed by a long run of zeros, compressed: a
    payload that decompresses big, frames badly, and is cheap to store."""
    cands = [b for b in t.maps if b.records]
    if not cands:
        return None
    b = rng.choice(cands)
    codec = rng.choice([compression.ZSTD, compression.GZIP])
    pad = rng.choice([1 << 20, 64 << 20, 512 << 20])
    head = bytearray(t.data[b.pos:b.pos + HEADER_SIZE])
    payload = compression.compress(codec, b.payload) + bomb(codec, pad)
    struct.pack_into(">h", head, 21, (struct.unpack_from(">h", head, 21)[0] & ~7) | codec)
    struct.pack_into(">i", head, 8, HEADER_SIZE - LOG_OVERHEAD + len(payload))
    batch = head + payload
    fix_crc(batch, 0)
    return Mutant(t.data[:b.pos] + bytes(batch) + t.data[b.end:],
                  f"batch@{b.pos}: records then {pad >> 20} MiB of zeros, "
                  f"{compression.NAMES[codec]} (CRC fixed)",
                  frozenset({"compressed", "bomb", "crc-fixed"}))


def splice(rng: Rng, t: Target) -> Mutant | None:
    """Whole batches moved: one repeated, removed, or two swapped."""
    if len(t.maps) < 2:
        return None
    i = rng.randrange(len(t.maps) - 1)
    a, c = t.maps[i], t.maps[i + 1]
    one, two = t.data[a.pos:a.end], t.data[c.pos:c.end]
    op = rng.randrange(3)
    if op == 0:
        new, what = t.data[:c.pos] + one + t.data[c.pos:], f"batch@{a.pos} repeated"
    elif op == 1:
        new, what = t.data[:a.pos] + t.data[a.end:], f"batch@{a.pos} removed"
    else:
        new, what = t.data[:a.pos] + two + one + t.data[c.end:], f"batches@{a.pos} swapped"
    return Mutant(new, what, frozenset({"structure"}))


def repeat(rng: Rng, t: Target) -> Mutant | None:
    """From a batch boundary on, one chunk repeated to tens of KiB: a batch, its header,
    or one byte (the shape that makes a search for a log's true end cost the square of the
    bytes)."""
    if not t.maps:
        return None
    b = rng.choice(t.maps)
    chunk = rng.choice([t.data[b.pos:b.end], t.data[b.pos:b.pos + HEADER_SIZE],
                        t.data[b.pos:b.pos + 12], b"\x01", bytes(rng.randrange(1, 9))])
    total = rng.choice([16 << 10, 64 << 10, 256 << 10])
    body = (chunk * (total // max(1, len(chunk)) + 1))[:total]
    head = bytearray(t.data[:b.pos] + body)
    if rng.random() < 0.5 and len(head) >= b.pos + 12:  # the first one's length made huge
        struct.pack_into(">i", head, b.pos + 8, rng.choice([total, 2**31 - 1, 48 + total]))
    return Mutant(bytes(head), f"from byte {b.pos}: {len(chunk)}-byte chunk repeated to "
                  f"{total} bytes", frozenset({"repeat"}))


MUTATORS: dict[str, Callable[[Rng, Target], Mutant | None]] = {
    f.__name__.replace("_", "-"): f for f in (
        flip, flip_fixed, truncate, insert, append, header_edge, offset_overflow,
        record_varint,
        record_attributes, frame_varint, value_body, add_key_or_headers, codec_bits,
        compressed_garbage, decompression_bomb, records_bomb, splice, repeat)}
# How often each is picked (the ones aimed at the decoders most).
WEIGHTS = {"flip": 3, "flip-fixed": 3, "truncate": 2, "insert": 2, "append": 1,
           "header-edge": 5, "offset-overflow": 1, "record-varint": 8,
           "record-attributes": 1, "frame-varint": 3,
           "value-body": 5, "add-key-or-headers": 3, "codec-bits": 2,
           "compressed-garbage": 2, "decompression-bomb": 1, "records-bomb": 1, "splice": 2,
           "repeat": 1}


def mutate(rng: Rng, t: Target, kind: str | None = None) -> tuple[str, Mutant] | None:
    """One mutation of ``t`` (of ``kind``, or one picked by weight; two stacked now and
    then). None when nothing applies."""
    names = sorted(MUTATORS)
    for _ in range(8):
        name = kind or rng.choices(names, [WEIGHTS[n] for n in names])[0]
        m = MUTATORS[name](rng, t)
        if m is None or m.data == t.data:
            if kind is not None:
                return None
            continue
        if kind is None and rng.random() < 0.1 and "bomb" not in m.tags:
            second = rng.choice(["flip", "flip-fixed", "header-edge", "truncate"])
            m2 = MUTATORS[second](rng, Target.of(t.name, m.data))
            if m2 is not None:
                m = Mutant(m2.data, f"{m.what}; then {m2.what}",
                           m.tags & m2.tags | (m.tags | m2.tags) - {"detectable"})
                name = f"{name}+{second}"
        return name, m
    return None
