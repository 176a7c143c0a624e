"""Record decoders in C (``_cdecode.c``), described from the same schema as codec.py's.

The C decoder is an interpreter of a "spec": nested tuples saying, per struct, the plain
fields in order, the tagged ones with their defaults, and the fields absent at the version.
It gives the generated Python decoder's results exactly, and on anything it does not decode
cleanly it runs that Python decoder, so damaged records fail with the same errors.

Without the extension (no C compiler at install, or ``MDSHELL_PURE=1``: ``native.py``),
:func:`compiled` gives None and codec.py uses its Python decoders.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from . import native
from .schema import Field, Message

_cdecode = native.piece("_cdecode")

# Field kinds, numbered as in _cdecode.c.
_KINDS = {name: i for i, name in enumerate((
    "int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "uuid",
    "bool", "string", "bytes"))}
_STRUCT = len(_KINDS)

PyDecoder = Callable[[bytes, int, int], tuple[dict[str, Any], int]]


def _field(f: Field, version: int) -> tuple[Any, ...]:
    kind = _KINDS.get(f.type, _STRUCT)
    sub = spec(f.fields, version) if kind == _STRUCT else None
    # interned: a record's dict then holds the very key objects handlers look up (a
    # constant in Python code, a name interned in C), found by identity
    return (sys.intern(f.key), kind, f.is_array, f.nullable, sub)


def spec(fields: list[Field], version: int) -> tuple[Any, ...]:
    """The C decoder's description of ``fields`` at ``version`` (see ``prog_new``)."""
    present = [f for f in fields if f.versions.contains(version)]
    plain = tuple(_field(f, version) for f in present if f.tag is None)
    tagged = tuple((f.tag, f.default_value(), *_field(f, version))
                   for f in present if f.tag is not None)
    absent = tuple((sys.intern(f.key), f.default_value()) for f in fields
                   if not f.versions.contains(version))
    return plain, tagged, absent


def compiled(msg: Message, version: int, fallback: PyDecoder | None,
             unknown_key: str) -> PyDecoder | None:
    """A C decoder of ``msg`` at ``version`` running ``fallback`` on what it does not decode
    (``fallback`` None: it returns None instead); None when the extension is not there."""
    if _cdecode is None:
        return None
    try:
        dec: PyDecoder = _cdecode.Decoder(spec(msg.fields, version), fallback, unknown_key)
    except ValueError:  # a schema beyond what the C side takes (repeated names...)
        return None
    return dec


def has_check(dec: object) -> bool:
    """Whether ``dec`` is a compiled decoder, which has a check mode (``dec(buf, pos, end,
    True)``: True when C decodes ``buf[pos:end]`` exactly, without unknown tagged fields)."""
    return _cdecode is not None and type(dec) is _cdecode.Decoder
