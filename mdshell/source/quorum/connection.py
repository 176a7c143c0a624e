"""One connection to a controller: TCP (+TLS), Kafka framing, ApiVersions, SASL, requests.

Requests and responses are kio messages. Every socket operation has a deadline; failures
become :class:`LiveError` (or :class:`RetriableError` for what another try may fix), one line.
"""

from __future__ import annotations

import contextlib
import io
import select
import socket
import ssl
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from ... import __version__
from .config import ClientConfig
from .errors import KIP919, LiveError, NoAnswer, Refused, RetriableError

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, METADATA = 18, 17, 36, 3
FETCH, FETCH_SNAPSHOT, DESCRIBE_QUORUM, DESCRIBE_CLUSTER = 1, 59, 55, 60
# The versions mdshell speaks (kio 0.6.5 has all of them).
OURS = {FETCH: (13, 18), FETCH_SNAPSHOT: (0, 1), DESCRIBE_QUORUM: (0, 2),
        DESCRIBE_CLUSTER: (1, 2), SASL_HANDSHAKE: (1, 1), SASL_AUTHENTICATE: (0, 2)}
MAX_RESPONSE = 64 * 1024 * 1024
_INT = struct.Struct(">i")


def split_endpoint(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise LiveError(f"-q {text!r}: expected HOST:PORT (e.g. controller1:9093)")
    if not 0 < int(port) < 65536:
        raise LiveError(f"-q {text!r}: port {port} is out of range (1-65535)")
    return host.strip("[]"), int(port)


@dataclass
class Stats:
    bytes_in: int = 0
    bytes_out: int = 0
    requests: int = 0


@dataclass
class Connection:
    """A connected, authenticated controller connection."""

    host: str
    port: int
    config: ClientConfig
    sock: socket.socket | None = None
    versions: dict[int, tuple[int, int]] = field(default_factory=dict)
    api_versions: Any = None  # the ApiVersions response
    stats: Stats = field(default_factory=Stats)
    _corr: int = 0

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    # -- opening ---------------------------------------------------------------------------

    def open(self) -> Connection:
        cfg = self.config
        timeout = cfg.connect_timeout_ms / 1000
        try:
            raw = socket.create_connection((self.host, self.port), timeout=timeout)
        except socket.gaierror as e:
            raise RetriableError(f"{self.endpoint}: cannot resolve the host ({e.strerror})") \
                from None
        except ConnectionRefusedError:
            raise Refused(f"{self.endpoint}: connection refused (is a controller "
                          "listening there?)") from None
        except TimeoutError:
            raise RetriableError(f"{self.endpoint}: no TCP connection within {timeout:g} s "
                                 "(socket.connection.setup.timeout.ms)") from None
        except OSError as e:
            raise RetriableError(f"{self.endpoint}: cannot connect ({e.strerror or e})") \
                from None
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = raw
        try:
            if cfg.uses_tls:
                self._tls(raw, timeout)
            self._api_versions()
            if METADATA in self.versions:  # only brokers serve Metadata (whatever --config)
                raise LiveError(f"{self.endpoint} {KIP919}")
            if cfg.uses_sasl:
                self._sasl()
        except BaseException:
            self.close()
            raise
        return self

    def _tls(self, raw: socket.socket, timeout: float) -> None:
        from .tls import explain_handshake, make_context

        ctx = make_context(self.config.ssl)
        raw.settimeout(timeout)
        try:
            self.sock = ctx.wrap_socket(raw, server_hostname=self.host)
        except ssl.SSLError as e:
            raise LiveError(explain_handshake(e, self.endpoint)) from None
        except TimeoutError:
            raise RetriableError(f"{self.endpoint}: no TLS handshake within {timeout:g} s (a "
                                 "PLAINTEXT listener, or not Kafka?)") from None
        except OSError as e:
            raise RetriableError(f"{self.endpoint}: the connection dropped during the TLS "
                                 f"handshake ({e.strerror or e}); does the listener speak SSL?"
                                 ) from None

    def _api_versions(self) -> None:
        from kio.schema.api_versions.v3.request import ApiVersionsRequest

        req = ApiVersionsRequest(client_software_name="mdshell",
                                 client_software_version=__version__)
        resp = self.request(req)
        if resp.error_code != 0:
            raise LiveError(f"{self.endpoint}: ApiVersions failed ({_code_name(resp.error_code)})")
        self.api_versions = resp
        self.versions = {int(k.api_key): (int(k.min_version), int(k.max_version))
                         for k in resp.api_keys}

    def _sasl(self) -> None:
        from .sasl import exchange

        cfg = self.config
        mech = cfg.sasl_mechanism
        hs = self.request(_request(SASL_HANDSHAKE, 1, mechanism=mech))
        if hs.error_code != 0 and not hs.mechanisms:
            raise LiveError(f"{self.endpoint}: the listener does not use SASL (it offers no "
                            "mechanism: a PLAINTEXT or SSL listener); set security.protocol "
                            "to the listener's")
        if hs.error_code != 0:
            offered = ", ".join(hs.mechanisms)
            raise LiveError(f"{self.endpoint}: the listener does not accept SASL mechanism "
                            f"{mech} (it offers: {offered}); set sasl.mechanism accordingly")
        auth_version = self.version(SASL_AUTHENTICATE)
        steps = exchange(mech, cfg.username or "", cfg.password or "")
        reply: bytes | None = None
        try:
            while True:
                out = steps.send(reply) if reply is not None else next(steps)
                resp = self.request(_request(SASL_AUTHENTICATE, auth_version, auth_bytes=out))
                if resp.error_code != 0:
                    detail = resp.error_message or _code_name(resp.error_code)
                    raise LiveError(f"{self.endpoint}: SASL {mech} authentication failed as "
                                    f"{cfg.username!r} ({detail}); check the user name and "
                                    "password in sasl.jaas.config")
                reply = bytes(resp.auth_bytes)
        except StopIteration:
            return

    # -- requests --------------------------------------------------------------------------

    def version(self, api_key: int) -> int:
        """The highest version both sides speak; LiveError when there is none."""
        lo, hi = OURS[api_key]
        theirs = self.versions.get(api_key)
        if theirs is None or theirs[1] < lo or theirs[0] > hi:
            raise UnsupportedApi(api_key, theirs, self.endpoint)
        return min(hi, theirs[1])

    def request(self, payload: Any, timeout_ms: int | None = None,
                wait_ms: int = 0) -> Any:
        """Send ``payload`` and read its answer: the first bytes within the answer timeout
        (plus ``wait_ms``, a long poll's own wait), the whole of it within the request
        timeout (``timeout_ms``)."""
        if self.sock is None:
            raise RetriableError(f"{self.endpoint}: not connected")
        self._corr += 1
        corr = self._corr
        api_key, version = int(payload.__api_key__), int(payload.__version__)
        header_type = payload.__header_schema__
        header = header_type(request_api_key=api_key, request_api_version=version,
                             correlation_id=corr, client_id=self.config.client_id)
        buf = io.BytesIO()
        buf.write(b"\0\0\0\0")
        entity_writer(header_type)(buf, header)
        entity_writer(type(payload))(buf, payload)
        data = buf.getbuffer()
        _INT.pack_into(data, 0, len(data) - 4)
        timeout = (timeout_ms or self.config.request_timeout_ms) / 1000
        start = time.monotonic()
        deadline = start + timeout
        answer = min(timeout, self.config.answer_timeout_s + wait_ms / 1000)
        what = f"{self.endpoint}: {type(payload).__name__.removesuffix('Request')}"
        sock = self.sock
        try:
            try:
                sock.settimeout(timeout)
                sock.sendall(data)
            except OSError as e:
                raise RetriableError(f"{what}: cannot send ({e.strerror or e})") from None
            self.stats.bytes_out += len(data)
            size = _INT.unpack(self._read(4, start + answer, what, answer))[0]
            if size < 4 or size > MAX_RESPONSE:
                raise LiveError(f"{what}: a response of {size} bytes makes no sense (not a "
                                "Kafka listener?)")
            body = self._read(size, deadline, what)
        except Closed:
            self.close()
            if self.stats.requests == 1 and not self.config.uses_sasl:
                # Only ApiVersions answered: what a SASL listener does to a client that
                # skips authentication (Kafka closes at the first other request).
                raise LiveError(f"{what}: the connection was closed right after ApiVersions, "
                                "as a SASL listener does to a client that does not "
                                f"authenticate (security.protocol="
                                f"{self.config.security_protocol}); set security.protocol="
                                "SASL_PLAINTEXT or SASL_SSL, sasl.mechanism and "
                                "sasl.jaas.config") from None
            raise
        except BaseException:
            self.close()
            raise
        self.stats.bytes_in += size + 4
        self.stats.requests += 1
        got = _INT.unpack_from(body, 0)[0]
        if got != corr:
            self.close()
            raise RetriableError(f"{what}: correlation id {got} does not match {corr}")
        pos = 4
        if payload.__flexible__ and api_key != API_VERSIONS:
            pos = _skip_tags(body, pos)
        resp_type = load_response_schema(api_key, version)
        try:
            resp, _ = entity_reader(resp_type)(body, pos)
        except Exception as e:  # kio raises various errors on malformed input
            raise LiveError(f"{what}: cannot decode the response ({type(e).__name__}: {e})") \
                from None
        return resp

    def _read(self, n: int, deadline: float, what: str, answer: float | None = None) -> bytes:
        """``n`` bytes by ``deadline``; ``answer``: this is the first read, so a timeout
        means the peer never answered (frozen, or not Kafka)."""
        sock = self.sock
        if sock is None:
            raise RetriableError(f"{what}: the connection was closed")
        late = (f"{what}: no answer within {answer:g} s (a frozen or overloaded controller, "
                "or not Kafka)" if answer is not None else
                f"{what}: no complete response within the request timeout (request.timeout.ms)")
        chunks: list[bytes] = []
        left = n
        while left:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise (NoAnswer if answer is not None else RetriableError)(late)
            sock.settimeout(remaining)
            try:
                chunk = sock.recv(min(left, 1 << 20))
            except TimeoutError:
                raise (NoAnswer if answer is not None else RetriableError)(late) from None
            except ssl.SSLError as e:
                raise RetriableError(f"{what}: TLS error while reading ({e.reason})") from None
            except OSError as e:
                raise RetriableError(f"{what}: connection lost ({e.strerror or e})") from None
            if not chunk:
                raise Closed(f"{what}: the connection was closed mid-response (an "
                                     "authentication failure, a TLS/plaintext mismatch, or "
                                     "the controller went away)")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def alive(self) -> bool:
        """Whether an idle connection is still open. The peer may have closed it meanwhile
        (a controller restarted, Kafka's connections.max.idle.ms); a request sent on it would
        fail as if the controller were down. Nothing is due on an idle connection, so
        anything readable is its end (TLS: unless it is only the protocol's own records)."""
        sock = self.sock
        if sock is None:
            return False
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return False
        if not readable:
            return True
        if isinstance(sock, ssl.SSLSocket):
            sock.setblocking(False)
            try:
                sock.recv(1)  # data or the end: either way not a connection to reuse
            except ssl.SSLWantReadError:
                return True  # a TLS 1.3 session ticket, say: nothing for the application
            except OSError:
                pass
        return False

    def close(self) -> None:
        sock, self.sock = self.sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked reading it
            sock.close()


class Closed(RetriableError):
    """The peer closed the connection before the whole answer."""


class UnsupportedApi(LiveError):
    def __init__(self, api_key: int, theirs: tuple[int, int] | None, endpoint: str) -> None:
        self.api_key = api_key
        names = {FETCH: "Fetch", FETCH_SNAPSHOT: "FetchSnapshot", DESCRIBE_QUORUM:
                 "DescribeQuorum", DESCRIBE_CLUSTER: "DescribeCluster", SASL_HANDSHAKE:
                 "SaslHandshake", SASL_AUTHENTICATE: "SaslAuthenticate"}
        lo, hi = OURS[api_key]
        have = "not offered" if theirs is None else f"v{theirs[0]}-v{theirs[1]}"
        need = "Fetch v13+ needs Kafka 3.1+" if api_key == FETCH else (
            "DescribeCluster on controllers needs Kafka 3.7+" if api_key == DESCRIBE_CLUSTER
            else f"v{lo}-v{hi} needed")
        super().__init__(f"{endpoint}: {names.get(api_key, api_key)} is {have} there ({need})")


def _request(api_key: int, version: int, **kw: Any) -> Any:
    return load_request_schema(api_key, version)(**kw)


def _skip_tags(body: bytes, pos: int) -> int:
    count, pos = _uvarint(body, pos)
    for _ in range(count):
        _, pos = _uvarint(body, pos)
        size, pos = _uvarint(body, pos)
        pos += size
    return pos


def _uvarint(b: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = b[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _code_name(code: int) -> str:
    from kio.schema.errors import ErrorCode

    try:
        return f"{ErrorCode(code).name.upper()} ({int(code)})"
    except ValueError:
        return f"error {int(code)}"
