"""One record read from the log, as JSON-ready data (``records``, the Spark tables)."""

from __future__ import annotations

from typing import Any

from ..source.logscan import LogRecord, schema_of
from ..wire import frames
from ..wire.records import METADATA
from .javafmt import iso_zoned_utc
from .recordjson import record_data


def record_payload(r: LogRecord, show_secrets: bool) -> Any:
    """The record's fields, redacted; an undecodable record as its reason and raw bytes."""
    if isinstance(r.value, frames.Unknown):
        # An unknown version of a credential record may hold secrets we cannot locate.
        msg = None if r.control else METADATA.get(r.key)
        secret = msg is not None and msg.credential and not show_secrets
        return {"unknown": r.value.reason,
                "raw": "[redacted]" if secret else r.value.raw.hex()}
    msg = schema_of(r)
    version = r.value.get("version", 0) if r.control else r.version
    return record_data(msg, version, r.value, show_secrets=show_secrets,
                       metadata=not r.control)


def record_json(r: LogRecord, show_secrets: bool) -> dict[str, Any]:
    return {"offset": r.offset, "epoch": r.epoch, "timestamp": r.timestamp,
            "time": iso_zoned_utc(r.timestamp), "file": r.file, "control": r.control,
            "type": r.name, "version": r.version, "data": record_payload(r, show_secrets)}
