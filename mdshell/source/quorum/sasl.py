"""SASL PLAIN and SCRAM-SHA-256/512 (RFC 5802) client exchanges, standard library only.

Each mechanism is a generator of client messages fed the server's replies, so the wire part
(SaslHandshake + SaslAuthenticate) stays in :mod:`connection`. Passwords never leave this
module except inside the messages the server needs.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Generator

from .errors import LiveError

Exchange = Generator[bytes, bytes, None]


def plain(username: str, password: str) -> Exchange:
    yield b"\0" + username.encode() + b"\0" + password.encode()


def _saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _fields(msg: bytes) -> dict[str, str]:
    out = {}
    for part in msg.decode("utf-8", "replace").split(","):
        if len(part) >= 2 and part[1] == "=":
            out[part[0]] = part[2:]
    return out


def scram(mechanism: str, username: str, password: str) -> Exchange:
    algo = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    nonce = base64.b64encode(secrets.token_bytes(24)).decode().rstrip("=")
    bare = f"n={_saslname(username)},r={nonce}"
    server_first = yield f"n,,{bare}".encode()
    f = _fields(server_first)
    if "e" in f:
        raise LiveError(f"SCRAM authentication failed: {f['e']}")
    try:
        rnonce, salt, iterations = f["r"], base64.b64decode(f["s"]), int(f["i"])
    except (KeyError, ValueError):
        raise LiveError("SCRAM: the server's first message is malformed") from None
    if not rnonce.startswith(nonce):
        raise LiveError("SCRAM: the server's nonce does not extend ours (not a Kafka server?)")
    salted = hashlib.pbkdf2_hmac(algo, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", algo).digest()
    stored = hashlib.new(algo, client_key).digest()
    without_proof = f"c=biws,r={rnonce}"
    auth_message = f"{bare},{server_first.decode()},{without_proof}".encode()
    signature = hmac.new(stored, auth_message, algo).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_final = yield f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
    f = _fields(server_final)
    if "e" in f:
        raise LiveError(f"SCRAM authentication failed: {f['e']}")
    server_key = hmac.new(salted, b"Server Key", algo).digest()
    expected = hmac.new(server_key, auth_message, algo).digest()
    if not hmac.compare_digest(base64.b64decode(f.get("v", "")), expected):
        raise LiveError("SCRAM: the server's signature is wrong (not the server that holds "
                        "your credentials?)")


def exchange(mechanism: str, username: str, password: str) -> Exchange:
    if mechanism == "PLAIN":
        return plain(username, password)
    return scram(mechanism, username, password)
