"""One codec for every flexible message declared in the schema language.

Decoding is the hot path of a load (a million PartitionRecords for a large snapshot), so
decoders are generated per (message, version) as straight-line Python from the schema: runs
of fixed-width fields become a single ``struct.unpack_from``, one-byte varints take an inline
fast path. When the optional C extension is built, :func:`decoder_for` gives a C decoder
described from the same schema (``cdecoder.py``) that falls back on this one. Encoding walks
the schema (writing is for fixtures, benchmarks and round trips).

Decoded messages are plain dicts keyed by camelCase field names; every field declared for the
message is present (absent ones at their default), so code downstream can index any field.
Unknown tagged fields are kept, as ``{tag: raw bytes}``, under :data:`UNKNOWN_TAGS`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from . import cdecoder
from .codecache import compiled
from .primitives import DecodeError, read_uvarint, uvarint_bytes
from .schema import Field, Message

UNKNOWN_TAGS = "_unknownTaggedFields"

Decoder = Callable[[bytes, int, int], tuple[dict[str, Any], int]]

_FIXED = {
    "int8": ("b", 1), "int16": ("h", 2), "int32": ("i", 4), "int64": ("q", 8),
    "uint16": ("H", 2), "uint32": ("I", 4), "float64": ("d", 8), "uuid": ("16s", 16),
}


_SMALL = 32  # arrays shorter than this (replica lists...) use a prebuilt Struct


def _uvarint_slow(buf: bytes, pos: int) -> tuple[int, int]:
    return read_uvarint(buf, pos)


class _Gen:
    """Builds the source of one decoder function and the helpers it needs."""

    def __init__(self, version: int = 0) -> None:
        self.version = version
        self.lines: list[str] = []
        self.env: dict[str, Any] = {
            "_uv": _uvarint_slow, "_DE": DecodeError, "_unpack": struct.unpack_from,
            "_UT": UNKNOWN_TAGS,
        }
        self.counter = 0

    def tmp(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def uvarint(self, ind: str, target: str) -> None:
        self.lines += [
            f"{ind}{target} = buf[pos]",
            f"{ind}if {target} < 128: pos += 1",
            f"{ind}else: {target}, pos = _uv(buf, pos)",
        ]

    def array_structs(self, fmt: str) -> str:
        """A table of Structs for arrays of 0.._SMALL-1 items of ``fmt`` (no format parsing)."""
        name = f"_A_{fmt}".replace("16s", "uuid")
        if name not in self.env:
            # "3i" is three ints but "316s" one string: a uuid run is "16s" repeated
            each = (lambda i: fmt * i) if fmt == "16s" else (lambda i: f"{i}{fmt}")
            self.env[name] = [struct.Struct(">" + each(i)) for i in range(_SMALL)]
        return name

    def null_or(self, f: Field, ind: str, target: str, what: str) -> str:
        """Read a compact length (0 = null) and open the ``else:`` for a present value;
        returns the variable holding length + 1."""
        n = self.tmp("n")
        self.uvarint(ind, n)
        self.lines.append(f"{ind}if {n} == 0:")
        if f.nullable:
            self.lines.append(f"{ind}    {target} = None")
        else:
            self.lines.append(f"{ind}    raise _DE('null {what} for non-nullable field {f.name}')")
        self.lines.append(f"{ind}else:")
        return n

    def struct_obj(self, fmt: str) -> str:
        name = self.tmp("_S")
        self.env[name] = struct.Struct(">" + fmt)
        return name

    def scalar(self, f: Field, ind: str, target: str) -> None:
        """Decode one non-array value of field ``f`` into ``target``."""
        L = self.lines
        if f.type in _FIXED:
            fmt, size = _FIXED[f.type]
            s = self.struct_obj(fmt)
            L.append(f"{ind}{target} = {s}.unpack_from(buf, pos)[0]; pos += {size}")
        elif f.type == "bool":
            L.append(f"{ind}{target} = buf[pos] != 0; pos += 1")
        elif f.type in ("string", "bytes"):
            n = self.null_or(f, ind, target, "value")
            if f.type == "string":
                L.append(f"{ind}    {target} = buf[pos:pos + {n} - 1].decode('utf-8')")
            else:
                L.append(f"{ind}    {target} = bytes(buf[pos:pos + {n} - 1])")
            L.append(f"{ind}    pos += {n} - 1")
        else:  # struct
            fn = self.struct_fn(f)
            L.append(f"{ind}{target}, pos = {fn}(buf, pos, end)")

    def value(self, f: Field, ind: str, target: str) -> None:
        """Decode field ``f`` (array or scalar) into ``target``."""
        if not f.is_array:
            self.scalar(f, ind, target)
            return
        L = self.lines
        n = self.null_or(f, ind, target, "array")
        ind2 = ind + "    "
        L.append(f"{ind2}{n} -= 1")
        # A damaged length must not make a billion-item list: every item takes bytes.
        least = _FIXED[f.type][1] if f.type in _FIXED else 1
        L.append(f"{ind2}if {n} * {least} > end - pos: "
                 f"raise _DE('array {f.name} is longer than the record')")
        if f.type in _FIXED and f.type != "uuid":
            fmt, size = _FIXED[f.type]
            table = self.array_structs(fmt)
            L.append(f"{ind2}if {n} == 0: {target} = []")
            L.append(f"{ind2}elif {n} < {_SMALL}: "
                     f"{target} = list({table}[{n}].unpack_from(buf, pos))")
            L.append(f"{ind2}else: {target} = list(_unpack('>%d{fmt}' % {n}, buf, pos))")
            L.append(f"{ind2}pos += {n} * {size}")
        elif f.type == "uuid":
            table = self.array_structs("16s")  # bytes items, like a slice of the buffer
            L.append(f"{ind2}if {n} < {_SMALL}: "
                     f"{target} = list({table}[{n}].unpack_from(buf, pos))")
            L.append(f"{ind2}else: "
                     f"{target} = [buf[p:p + 16] for p in range(pos, pos + 16 * {n}, 16)]")
            L.append(f"{ind2}pos += 16 * {n}")
        else:
            item = self.tmp("x")
            L.append(f"{ind2}{target} = []")
            L.append(f"{ind2}for _ in range({n}):")
            elem = Field(f.name, f.type, nullable=False, fields=f.fields)
            self.scalar(elem, ind2 + "    ", item)
            L.append(f"{ind2}    {target}.append({item})")

    def struct_fn(self, f: Field) -> str:
        """A helper decoding one struct value of field ``f`` (its members at this version)."""
        sub = _Gen()
        sub.counter = self.counter + 1000
        name = self.tmp("_struct")
        members, absent = _with_defaults(f.fields, self.version)
        sub.version = self.version
        sub.body(name, members, absent)
        ns: dict[str, Any] = dict(sub.env)
        exec(compiled("\n".join(sub.lines), "<mdshell decoder>"), ns)
        self.env[name] = ns[name]
        return name

    def body(self, fname: str, fields: list[Field], absent: dict[str, Any]) -> None:
        """Emit a function ``fname(buf, pos, end) -> (dict, pos)`` for these fields."""
        L = self.lines
        L.append(f"def {fname}(buf, pos, end):")
        ind = "    "
        values: dict[str, str] = {}
        plain = [f for f in fields if f.tag is None]
        tagged = [f for f in fields if f.tag is not None]
        i = 0
        while i < len(plain):
            # Batch runs of fixed-width scalars into one struct call.
            run: list[Field] = []
            while (i < len(plain) and not plain[i].is_array
                   and (plain[i].type in _FIXED or plain[i].type == "bool")):
                run.append(plain[i])
                i += 1
            if len(run) > 1:
                fmt = "".join("?" if f.type == "bool" else _FIXED[f.type][0] for f in run)
                size = sum(1 if f.type == "bool" else _FIXED[f.type][1] for f in run)
                s = self.struct_obj(fmt)
                names = [self.tmp("v") for _ in run]
                L.append(f"{ind}{', '.join(names)}, = {s}.unpack_from(buf, pos); pos += {size}")
                for f, v in zip(run, names, strict=True):
                    values[f.key] = v
                continue
            if run:
                f = run[0]
            else:
                f = plain[i]
                i += 1
            v = self.tmp("v")
            self.value(f, ind, v)
            values[f.key] = v
        # Tagged fields: defaults first, then the tagged section overrides them.
        for f in tagged:
            v = self.tmp("t")
            default = f.default_value()
            dn = self.tmp("_D")
            self.env[dn] = default
            copy = "list({0}) if {0} is not None else None" if f.is_array else "{0}"
            L.append(f"{ind}{v} = {copy.format(dn)}")
            values[f.key] = v
        unk = self.tmp("u")
        L.append(f"{ind}{unk} = None")
        nt = self.tmp("n")
        self.uvarint(ind, nt)
        L.append(f"{ind}for _ in range({nt}):")
        ind2 = ind + "    "
        # Each tagged field takes bytes of the record: a damaged count must not read on past
        # it (to the end of the batch, record after record).
        L.append(f"{ind2}if pos >= end: raise _DE('more tagged fields than the record holds')")
        tg, sz = self.tmp("tg"), self.tmp("sz")
        self.uvarint(ind2, tg)
        self.uvarint(ind2, sz)
        L.append(f"{ind2}stop = pos + {sz}")
        first = True
        for f in tagged:
            kw = "if" if first else "elif"
            first = False
            L.append(f"{ind2}{kw} {tg} == {f.tag}:")
            self.value(f, ind2 + "    ", values[f.key])
            L.append(f"{ind2}    if pos != stop: raise _DE('bad size for tagged field {f.name}')")
        body = ind2 + ("else:" if tagged else "if True:")
        L.append(body)
        L.append(f"{ind2}    if {unk} is None: {unk} = {{}}")
        L.append(f"{ind2}    {unk}[{tg}] = bytes(buf[pos:stop]); pos = stop")
        items = ", ".join(f"{k!r}: {v}" for k, v in values.items())
        L.append(f"{ind}d = {{{items}}}")
        L.append(f"{ind}if {unk} is not None: d[_UT] = {unk}")
        for k, default in absent.items():
            dn = self.tmp("_D")
            self.env[dn] = default
            copy = "list({0})" if isinstance(default, list) else "{0}"
            L.append(f"{ind}d[{k!r}] = {copy.format(dn)}")
        L.append(f"{ind}return d, pos")


def _with_defaults(msg_fields: list[Field], version: int) -> tuple[list[Field], dict[str, Any]]:
    """Fields present at ``version`` (recursively), and defaults for the ones that are not."""
    present: list[Field] = []
    absent: dict[str, Any] = {}
    for f in msg_fields:
        if f.versions.contains(version):
            present.append(f)
        else:
            absent[f.key] = f.default_value()
    return present, absent


_DECODERS: dict[tuple[int, str, int], Decoder] = {}
_PY_DECODERS: dict[tuple[int, str, int], Decoder] = {}


def decoder_for(msg: Message, version: int) -> Decoder:
    """The decoder of ``msg`` at ``version`` (cached): compiled (``cdecoder``) when the
    extension is there, else the generated Python one; both give the same results."""
    cache_key = (msg.key, msg.name, version)
    dec = _DECODERS.get(cache_key)
    if dec is None:
        py = python_decoder_for(msg, version)
        dec = cdecoder.compiled(msg, version, py, UNKNOWN_TAGS) or py
        _DECODERS[cache_key] = dec
    return dec


def python_decoder_for(msg: Message, version: int) -> Decoder:
    """The generated Python decoder of ``msg`` at ``version`` (cached)."""
    cache_key = (msg.key, msg.name, version)
    dec = _PY_DECODERS.get(cache_key)
    if dec is not None:
        return dec
    present, absent = _with_defaults(msg.fields, version)
    gen = _Gen(version)
    gen.body("_decode", present, absent)
    ns: dict[str, Any] = dict(gen.env)
    exec(compiled("\n".join(gen.lines), "<mdshell decoder>"), ns)
    dec = ns["_decode"]
    _PY_DECODERS[cache_key] = dec
    return dec


def decode(msg: Message, version: int, buf: bytes, pos: int, end: int) -> dict[str, Any]:
    """Decode exactly ``buf[pos:end]`` as ``msg`` at ``version``; trailing bytes are an error."""
    return decode_with(decoder_for(msg, version), msg.name, version, buf, pos, end)


def decode_with(dec: Decoder, name: str, version: int, buf: bytes, pos: int,
                end: int, *, exact: bool = True) -> dict[str, Any]:
    """:func:`decode` by the decoder ``dec`` of message ``name``: every error a
    :class:`DecodeError` naming it. ``exact=False`` passes over bytes after the message
    (as Kafka's control record reader leaves them)."""
    try:
        d, at = dec(buf, pos, end)
    except DecodeError:
        raise
    except (IndexError, struct.error, UnicodeDecodeError, ValueError, OverflowError) as e:
        raise DecodeError(f"malformed {name} v{version}: {e}") from None
    if at != end and (exact or at > end):
        raise DecodeError(f"{name} v{version}: {end - at} unexpected trailing bytes"
                          if at < end else f"{name} v{version}: truncated")
    return d


def checks(dec: Decoder) -> bool:
    """Whether ``dec`` has a check mode (``dec(buf, pos, end, True)``: decodes cleanly?)."""
    return cdecoder.has_check(dec)


# ---------------------------------------------------------------- encoding


def _enc_scalar(f: Field, v: Any, out: bytearray, version: int) -> None:
    if f.type in _FIXED:
        fmt = _FIXED[f.type][0]
        out += struct.pack(">" + fmt, v)
    elif f.type == "bool":
        out.append(1 if v else 0)
    elif f.type in ("string", "bytes"):
        if v is None:
            if not f.nullable:
                raise ValueError(f"{f.name} is not nullable")
            out.append(0)
            return
        raw = v.encode("utf-8") if f.type == "string" else bytes(v)
        out += uvarint_bytes(len(raw) + 1)
        out += raw
    else:
        _enc_fields(f.fields, v, out, version)


def _enc_value(f: Field, v: Any, out: bytearray, version: int) -> None:
    if not f.is_array:
        _enc_scalar(f, v, out, version)
        return
    if v is None:
        if not f.nullable:
            raise ValueError(f"{f.name} is not nullable")
        out.append(0)
        return
    out += uvarint_bytes(len(v) + 1)
    elem = Field(f.name, f.type, nullable=False, fields=f.fields)
    for item in v:
        _enc_scalar(elem, item, out, version)


def _is_default(f: Field, v: Any) -> bool:
    return bool(v == f.default_value())


def _enc_fields(fields: list[Field], d: dict[str, Any], out: bytearray, version: int) -> None:
    tagged: list[tuple[int, bytes]] = []
    for f in fields:
        if not f.versions.contains(version):
            continue
        v = d.get(f.key, f.default_value())
        if f.tag is None:
            _enc_value(f, v, out, version)
        elif not _is_default(f, v):
            buf = bytearray()
            _enc_value(f, v, buf, version)
            tagged.append((f.tag, bytes(buf)))
    for tag, raw in (d.get(UNKNOWN_TAGS) or {}).items():
        tagged.append((tag, raw))
    tagged.sort()
    out += uvarint_bytes(len(tagged))
    for tag, raw in tagged:
        out += uvarint_bytes(tag)
        out += uvarint_bytes(len(raw))
        out += raw


def encode(msg: Message, version: int, d: dict[str, Any]) -> bytes:
    """Encode a message dict at ``version`` (tagged fields at their default are omitted)."""
    out = bytearray()
    _enc_fields(msg.fields, d, out, version)
    return bytes(out)
