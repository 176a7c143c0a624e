"""Kafka client properties (``--config``), parsed as ``java.util.Properties.load`` does.

Rules: ``#``/``!`` comment lines, ``\\`` continues a line (the next line's leading blanks are
dropped), the key ends at the first unescaped ``=``, ``:`` or blank, escapes ``\\t \\n \\r \\f
\\uXXXX`` and ``\\x`` = ``x``. Later keys win.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from .errors import LiveError

_BLANK = " \t\f"
_ESC = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[str]:
    out: list[str] = []
    lines = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(_BLANK)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _odd_backslashes(line) and i <= len(lines):
            line = line[:-1]
            if i == len(lines):
                break
            line += lines[i].lstrip(_BLANK)
            i += 1
        out.append(line)
    return out


def _odd_backslashes(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _unescape(s: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\" or i + 1 >= len(s):
            out.append(c)
            i += 1
            continue
        nxt = s[i + 1]
        if nxt == "u":
            digits = s[i + 2:i + 6]
            if len(digits) != 4 or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise ValueError(f"malformed \\uxxxx escape: \\u{digits}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESC.get(nxt, nxt))
        i += 2
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        i = 0
        while i < len(line):
            c = line[i]
            if c == "\\":
                i += 2
                continue
            if c in "=:" or c in _BLANK:
                break
            i += 1
        key = line[:i]
        rest = line[i:].lstrip(_BLANK)
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(_BLANK)
        props[_unescape(key)] = _unescape(rest)
    return props


PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SECRET_KEYS = re.compile(r"password|secret|jaas|credential|\.key$|token", re.IGNORECASE)


ANSWER_S = 2.0  # per-request answer timeout (first bytes of the reply), in seconds


@dataclass
class ClientConfig:
    """What the live client needs from ``--config``."""

    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str = "GSSAPI"
    username: str | None = None
    password: str | None = None
    client_id: str = "mdshell"
    request_timeout_ms: int = 30000
    connect_timeout_ms: int = 10000
    ssl: dict[str, str] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    source: str | None = None

    @property
    def answer_timeout_s(self) -> float:
        """How long a request may wait for the first bytes of its answer: a few seconds,
        so that a frozen controller costs that, not the whole request timeout (which still
        bounds a complete response)."""
        return min(ANSWER_S, self.request_timeout_ms / 1000)

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")


def load_config(path: str | None) -> ClientConfig:
    if path is None:
        return ClientConfig()
    try:
        with open(path, encoding="latin-1") as f:
            text = f.read()
    except FileNotFoundError:
        raise LiveError(f"--config {path}: no such file") from None
    except OSError as e:
        raise LiveError(f"--config {path}: cannot read it ({e.strerror})") from None
    try:
        props = parse_properties(text)
    except ValueError as e:
        raise LiveError(f"--config {path}: {e}") from None
    cfg = config_from(props, path)
    if cfg.uses_tls:
        from .tls import make_context

        make_context(cfg.ssl)  # stores and PEM files checked now, before any connection
    return cfg


def _int(props: dict[str, str], key: str, default: int, path: str) -> int:
    raw = props.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise LiveError(f"--config {path}: {key}={raw!r} is not a number of milliseconds") from None
    if value <= 0:
        raise LiveError(f"--config {path}: {key} must be positive")
    return value


def config_from(props: dict[str, str], path: str = "--config") -> ClientConfig:
    cfg = ClientConfig(source=path)
    if "bootstrap.servers" in props or "bootstrap.controllers" in props:
        which = "bootstrap.servers" if "bootstrap.servers" in props else "bootstrap.controllers"
        cfg.notices.append(f"{path}: {which} is ignored; -q/--bootstrap-controller gives the "
                           "controllers to contact (KIP-919)")
    proto = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if proto not in PROTOCOLS:
        raise LiveError(f"--config {path}: security.protocol={proto} is not supported; use one "
                        f"of {', '.join(PROTOCOLS)}")
    cfg.security_protocol = proto
    cfg.client_id = props.get("client.id", "mdshell") or "mdshell"
    cfg.request_timeout_ms = _int(props, "request.timeout.ms", 30000, path)
    cfg.connect_timeout_ms = _int(props, "socket.connection.setup.timeout.ms", 10000, path)
    cfg.ssl = {k: v for k, v in props.items() if k.startswith("ssl.")}
    if cfg.uses_sasl:
        _sasl(cfg, props, path)
    return cfg


def _sasl(cfg: ClientConfig, props: dict[str, str], path: str) -> None:
    mech = props.get("sasl.mechanism", "GSSAPI").strip().upper()
    if mech not in MECHANISMS:
        raise LiveError(f"--config {path}: sasl.mechanism={mech} is not supported by mdshell; "
                        "use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (a controller listener can "
                        "enable one of them beside the current one)")
    cfg.sasl_mechanism = mech
    jaas = props.get("sasl.jaas.config")
    if not jaas:
        raise LiveError(f"--config {path}: sasl.jaas.config is missing; add e.g. sasl.jaas."
                        "config=org.apache.kafka.common.security.plain.PlainLoginModule "
                        "required username=\"USER\" password=\"PASSWORD\";")
    module, options = parse_jaas(jaas, path)
    want = "PlainLoginModule" if mech == "PLAIN" else "ScramLoginModule"
    if not module.endswith(want):
        raise LiveError(f"--config {path}: sasl.mechanism={mech} needs the {want} in "
                        f"sasl.jaas.config, not {module.rsplit('.', 1)[-1]}")
    cfg.username, cfg.password = options.get("username"), options.get("password")
    if cfg.username is None or cfg.password is None:
        raise LiveError(f"--config {path}: sasl.jaas.config needs username=\"...\" and "
                        "password=\"...\"")


_JAAS_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([;=])|([^\s;="]+))', re.S)


def parse_jaas(text: str, path: str = "--config") -> tuple[str, dict[str, str]]:
    """One login module of ``sasl.jaas.config``: ``Module flag key=value ...;``."""
    tokens: list[tuple[str, str]] = []  # (kind, text): kind q=quoted, p=punct, w=word
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _JAAS_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        if m.group(1) is not None:
            tokens.append(("q", re.sub(r"\\(.)", r"\1", m.group(1))))
        elif m.group(2) is not None:
            tokens.append(("p", m.group(2)))
        elif m.group(3) is not None:
            tokens.append(("w", m.group(3)))
    bad = LiveError(f"--config {path}: sasl.jaas.config is malformed; expected "
                    "'<LoginModule class> required key=\"value\" ...;'")
    if len(tokens) < 3 or tokens[0][0] != "w" or tokens[1][0] != "w":
        raise bad
    if tokens[-1] != ("p", ";"):
        raise LiveError(f"--config {path}: sasl.jaas.config must end with ';'")
    if tokens.count(("p", ";")) > 1:
        raise LiveError(f"--config {path}: sasl.jaas.config must hold exactly one login module")
    if tokens[1][1].lower() not in ("required", "requisite", "sufficient", "optional"):
        raise bad
    options: dict[str, str] = {}
    body = tokens[2:-1]
    if len(body) % 3:
        raise bad
    for i in range(0, len(body), 3):
        k, eq, v = body[i], body[i + 1], body[i + 2]
        if k[0] != "w" or eq != ("p", "=") or v[0] == "p":
            raise bad
        options[k[1]] = v[1]
    return tokens[0][1], options


def describe_config(cfg: ClientConfig) -> str:
    """A one-line summary without secrets (for /live)."""
    parts = [cfg.security_protocol]
    if cfg.uses_sasl:
        parts.append(f"{cfg.sasl_mechanism} as {cfg.username}")
    if cfg.source:
        parts.append(f"from {os.path.basename(cfg.source)}")
    return ", ".join(parts)
