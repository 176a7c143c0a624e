"""A small Spark Connect client: the gRPC calls mdshell makes to a server (a query's Arrow
result, settings, temporary views of tables sent, cancelling, ending a session).

It takes the connection strings PySpark takes (``sc://HOST[:PORT][/;key=value...]``:
``use_ssl``, ``token`` (or ``$SPARK_CONNECT_AUTHENTICATE_TOKEN``), ``user_id``,
``user_agent``, ``session_id``, the ``grpc_keepalive_*`` keys; any other key is sent as a
request header), and makes its channel the way PySpark's does. Every call names its session:
one client serves several sessions of one server.

Imports grpc and nothing of pyspark or pandas: on a warm server the client's imports were
most of a one-shot ``sql``'s time (docs/performance.md#spark-connect).
"""

from __future__ import annotations

import os
import re
import urllib.parse
import uuid
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc

from .. import __version__
from . import connectwire as w

DEFAULT_PORT = 15002
MAX_MESSAGE = 128 << 20  # what PySpark's client sends and accepts (the server's default too)
ARTIFACT_CHUNK = 1 << 20  # bytes of an uploaded artifact per request
# The keys of a connection string that shape the channel (the others are request headers).
_CHANNEL_KEYS = {"use_ssl", "token", "user_id", "user_agent", "session_id",
                 "grpc_keepalive_enabled", "grpc_keepalive_time_ms",
                 "grpc_keepalive_timeout_ms", "grpc_keepalive_without_calls"}
_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")


class ConnectError(Exception):
    """A call the server refused or could not answer: its whole message (``str``), the
    first line of it, the error class that line names (``TABLE_OR_VIEW_NOT_FOUND``...; ""
    when none) and the gRPC status."""

    def __init__(self, message: str, status: str = "") -> None:
        super().__init__(message)
        self.line = next((ln.strip() for ln in message.splitlines() if ln.strip()),
                         status or "error")
        found = _CLASS.match(self.line)
        self.error_class = found.group(1) if found else ""
        self.status = status


@dataclass
class ConnectURL:
    """A parsed ``sc://`` connection string."""

    host: str
    port: int
    params: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, url: str) -> ConnectURL:
        """ValueError (one line) when ``url`` is not a Spark Connect connection string."""
        if not url.startswith("sc://"):
            raise ValueError(f"{url}: not a Spark Connect URL (sc://HOST:PORT)")
        parts = urllib.parse.urlparse("http" + url[2:])
        if parts.path not in ("", "/") or not parts.hostname:
            raise ValueError(f"{url}: not a Spark Connect URL (sc://HOST:PORT)")
        params: dict[str, str] = {}
        for item in filter(None, parts.params.split(";")):
            key, eq, value = item.partition("=")
            if not eq or "=" in value:
                raise ValueError(f"{url}: '{item}' is not key=value")
            params[key] = urllib.parse.unquote(value)
        try:
            port = parts.port or DEFAULT_PORT
        except ValueError:
            raise ValueError(f"{url}: not a Spark Connect URL (sc://HOST:PORT)") from None
        return cls(parts.hostname, port, params)

    @property
    def token(self) -> str | None:
        return self.params.get("token", os.environ.get("SPARK_CONNECT_AUTHENTICATE_TOKEN"))

    @property
    def endpoint(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def user(self) -> str:
        return self.params.get("user_id") or os.environ.get(
            "SPARK_USER", os.environ.get("USER", ""))

    @property
    def session_id(self) -> str | None:
        """The session the string names (``session_id``), checked to be a UUID."""
        given = self.params.get("session_id")
        if given is not None:
            try:
                uuid.UUID(given)
            except ValueError:
                raise ValueError(f"session_id={given}: not a UUID") from None
        return given


class ConnectClient:
    """One channel to a Spark Connect server."""

    def __init__(self, url: ConnectURL) -> None:
        self.url = url
        self._channel = _channel(url)
        self._metadata = [(k, v) for k, v in url.params.items() if k not in _CHANNEL_KEYS]
        agent = url.params.get("user_agent", "mdshell")
        self._client_type = f"{agent} mdshell/{__version__}"
        self._user = w.message("UserContext", user_id=url.user or None)
        call = self._channel.unary_unary
        self._config = call(w.SERVICE + "Config")
        self._interrupt = call(w.SERVICE + "Interrupt")
        self._release = call(w.SERVICE + "ReleaseSession")
        self._execute = self._channel.unary_stream(w.SERVICE + "ExecutePlan")
        self._artifacts = self._channel.stream_unary(w.SERVICE + "AddArtifacts")

    def close(self) -> None:
        self._channel.close()

    def _head(self, session: str) -> dict[str, Any]:
        return {"session_id": session, "user_context": self._user,
                "client_type": self._client_type}

    def execute(self, session: str, plan: bytes, operation_id: str,
                tags: Iterable[str] = ()) -> list[bytes]:
        """Run a plan; the Arrow IPC streams of its result, in order (none for a command
        without one)."""
        request = w.message("ExecutePlanRequest", **self._head(session), plan=plan,
                            operation_id=operation_id, tags=list(tags) or None)
        try:
            return [data for response in self._execute(request, metadata=self._metadata)
                    if (data := w.arrow_data(response)) is not None]
        except grpc.RpcError as e:
            raise _error(e) from None

    def config(self, session: str, operation: bytes) -> dict[str, str]:
        """A settings request (``connectwire.config_set``, ``config_get_all``); the
        settings the answer holds."""
        request = w.message("ConfigRequest", **self._head(session), operation=operation)
        try:
            return w.config_pairs(self._config(request, metadata=self._metadata))
        except grpc.RpcError as e:
            raise _error(e) from None

    def interrupt(self, session: str, operation_id: str) -> None:
        kind = w.ENUMS["InterruptRequest.InterruptType"]["INTERRUPT_TYPE_OPERATION_ID"]
        request = w.message("InterruptRequest", **self._head(session), interrupt_type=kind,
                            operation_id=operation_id)
        try:
            self._interrupt(request, metadata=self._metadata, timeout=10)
        except grpc.RpcError as e:
            raise _error(e) from None

    def release(self, session: str) -> None:
        """End a session on the server (its views, settings and artifacts go with it)."""
        request = w.message("ReleaseSessionRequest", **self._head(session))
        try:
            self._release(request, metadata=self._metadata, timeout=10)
        except grpc.RpcError as e:
            raise _error(e) from None

    def cache(self, session: str, blobs: list[bytes]) -> list[str]:
        """Upload blobs as the session's cached artifacts (``cache/<sha256>``, as PySpark
        names them for a relation's data); their hashes."""
        import hashlib

        hashes = [hashlib.sha256(b).hexdigest() for b in blobs]
        try:
            self._artifacts(self._uploads(session, zip(hashes, blobs, strict=True)),
                            metadata=self._metadata)
        except grpc.RpcError as e:
            raise _error(e) from None
        return hashes

    def _uploads(self, session: str, items: Iterable[tuple[str, bytes]]) -> Iterator[bytes]:
        head = self._head(session)
        for digest, blob in items:
            name = f"cache/{digest}"
            chunks = [blob[i:i + ARTIFACT_CHUNK]
                      for i in range(0, len(blob), ARTIFACT_CHUNK)] or [b""]
            if len(chunks) == 1:
                one = w.message("AddArtifactsRequest.SingleChunkArtifact", name=name,
                                data=_chunk(chunks[0]))
                yield w.message("AddArtifactsRequest", **head, batch=w.message(
                    "AddArtifactsRequest.Batch", artifacts=[one]))
                continue
            yield w.message("AddArtifactsRequest", **head, begin_chunk=w.message(
                "AddArtifactsRequest.BeginChunkedArtifact", name=name, total_bytes=len(blob),
                num_chunks=len(chunks), initial_chunk=_chunk(chunks[0])))
            for chunk in chunks[1:]:
                yield w.message("AddArtifactsRequest", **head, chunk=_chunk(chunk))


def _chunk(data: bytes) -> bytes:
    return w.message("AddArtifactsRequest.ArtifactChunk", data=data, crc=zlib.crc32(data))


def _channel(url: ConnectURL) -> grpc.Channel:
    """The channel as PySpark's client makes it: plain, or TLS (``use_ssl``, or a token:
    on ``localhost`` without ``use_ssl``, gRPC's local credentials)."""
    params = url.params
    options: list[tuple[str, Any]] = [("grpc.max_send_message_length", MAX_MESSAGE),
                                      ("grpc.max_receive_message_length", MAX_MESSAGE)]
    if params.get("grpc_keepalive_enabled", "true").lower() == "true":
        options += [
            ("grpc.keepalive_time_ms", int(params.get("grpc_keepalive_time_ms", 60_000))),
            ("grpc.keepalive_timeout_ms", int(params.get("grpc_keepalive_timeout_ms", 20_000))),
            ("grpc.keepalive_permit_without_calls",
             int(params.get("grpc_keepalive_without_calls", "true").lower() == "true"))]
    ssl = params.get("use_ssl", "").lower() == "true"
    token = url.token
    if not ssl and token is None:
        return grpc.insecure_channel(url.endpoint, options=options)
    creds = (grpc.local_channel_credentials() if not ssl and url.host == "localhost"
             else grpc.ssl_channel_credentials())
    if token is not None:
        creds = grpc.composite_channel_credentials(
            creds, grpc.access_token_call_credentials(token))
    return grpc.secure_channel(url.endpoint, creds, options=options)


def _error(e: grpc.RpcError) -> ConnectError:
    """The server's message in one line (Spark's error class first, as it writes it)."""
    code = e.code() if hasattr(e, "code") else None
    status = code.name if code is not None else ""
    details = (e.details() if hasattr(e, "details") else None) or str(e)
    return ConnectError(details, status)
