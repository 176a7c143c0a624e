"""Decoded records as JSON-ready data, typed by their schema, with secrets redacted.

UUIDs become Kafka's base64 strings and byte fields hex; the fields the schemas mark ``secret``
(SCRAM material) and ``secret=config`` (a config value whose key is a password) become
``[redacted]`` unless secrets are shown (a delegation token record holds no secret: its HMAC is
never written to the log).
"""

from __future__ import annotations

from typing import Any

from ..wire.codec import UNKNOWN_TAGS
from ..wire.primitives import uuid_str
from ..wire.schema import Field, Message
from .redact import REDACTED, is_secret


def _value(f: Field, v: Any, version: int) -> Any:
    if v is None:
        return None
    if f.is_array:
        elem = Field(f.name, f.type, fields=f.fields)
        return [_value(elem, x, version) for x in v]
    if f.type == "uuid":
        return uuid_str(v)
    if f.type == "bytes":
        return v.hex()
    if f.is_struct:
        return _fields(f.fields, v, version)
    return v


def _fields(fields: list[Field], d: dict[str, Any], version: int) -> dict[str, Any]:
    out = {f.key: _value(f, d.get(f.key), version) for f in fields
           if f.versions.contains(version)}
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
