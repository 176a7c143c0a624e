"""Decoded records as JSON-ready data, typed by their schema, with secrets redacted.

UUIDs become Kafka's base64 strings and byte fields hex; the fields the schemas mark ``secret``
(SCRAM material) and ``secret=config`` (a config value whose key is a password) become
``[redacted]`` unless secrets are shown (a delegation token record holds no secret: its HMAC is
never written to the log).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..wire.codec import UNKNOWN_TAGS
from ..wire.primitives import uuid_str
from ..wire.schema import Field, Message
from .redact import REDACTED, is_secret

Convert = Callable[[Any], Any] | None  # None: the value as it is

# (fields, version) -> which fields to write, and how: made once per schema and version, as
# a log repeats a few record types millions of times. Keyed by the list's id, which the
# entry keeps alive (schemas are loaded once and never freed).
_PLANS: dict[tuple[int, int], tuple[list[Field], list[tuple[str, Convert]]]] = {}


def _plan(fields: list[Field], version: int) -> list[tuple[str, Convert]]:
    entry = _PLANS.get((id(fields), version))
    if entry is None or entry[0] is not fields:
        entry = _PLANS[(id(fields), version)] = (fields, [
            (f.key, _convert(f, version)) for f in fields if f.versions.contains(version)])
    return entry[1]


def _convert(f: Field, version: int) -> Convert:
    """How a field's non-null value becomes JSON-ready."""
    if f.is_array:
        each = _convert(Field(f.name, f.type, fields=f.fields), version)
        if each is None:
            return list
        return lambda v: [None if x is None else each(x) for x in v]
    if f.type == "uuid":
        return uuid_str
    if f.type == "bytes":
        return lambda v: v.hex()
    if f.is_struct:
        return lambda v: _fields(f.fields, v, version)
    return None


def _fields(fields: list[Field], d: dict[str, Any], version: int) -> dict[str, Any]:
    get = d.get
    out = {}
    for key, convert in _plan(fields, version):
        v = get(key)
        out[key] = v if v is None or convert is None else convert(v)
    if d.get(UNKNOWN_TAGS):
        out[UNKNOWN_TAGS] = {str(t): raw.hex() for t, raw in d[UNKNOWN_TAGS].items()}
    return out


def record_data(msg: Message, version: int, d: dict[str, Any], *,
                show_secrets: bool, metadata: bool = True) -> dict[str, Any]:
    """The fields of ``msg`` present at ``version``, JSON-ready."""
    out = _fields(msg.fields, d, version)
    if show_secrets or not metadata:
        return out
    for key, policy in msg.secret_fields.items():
        if key in out and is_secret(policy, out[key], out):
            out[key] = REDACTED
    return out
