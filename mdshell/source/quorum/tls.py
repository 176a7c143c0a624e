"""TLS for live mode: an ``ssl.SSLContext`` from Kafka's ``ssl.*`` client properties.

PEM files (``ssl.*.type=PEM``, or inline ``ssl.truststore.certificates`` /
``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``) and PKCS12 stores (read with the
``cryptography`` package). JKS is refused with a hint. Hostname verification is on unless
``ssl.endpoint.identification.algorithm`` is empty, as in Kafka.

Python's ``ssl`` reads a client key only from a file: the key goes to a private temporary file
encrypted with a random one-time password (never in the clear), removed once loaded.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import ssl
import tempfile
from typing import TYPE_CHECKING

from .errors import LiveError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

# One PEM block; group 1 is its label ("CERTIFICATE", "PRIVATE KEY", "RSA PRIVATE KEY", ...).
_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----.*?-----END \1-----\s*", re.S)


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise LiveError(f"{what} {path}: cannot read it ({e.strerror})") from None


def _store_type(props: dict[str, str], key: str, location: str | None) -> str:
    kind = props.get(key, "").strip().upper()
    if not kind and location:
        low = location.lower()
        kind = "PKCS12" if low.endswith((".p12", ".pfx", ".pkcs12")) else (
            "JKS" if low.endswith(".jks") else "PEM" if low.endswith((".pem", ".crt")) else "")
    if kind == "JKS":
        raise LiveError(f"{key}=JKS is not supported by mdshell; convert the store to PKCS12 "
                        "(keytool -importkeystore -srcstoretype JKS -deststoretype PKCS12 ...) "
                        "or PEM and set the type accordingly")
    return kind or "PKCS12"  # Kafka 3.x+ default keystore type


def _pkcs12(data: bytes, password: str | None,
            what: str) -> tuple[PrivateKeyTypes | None, bytes | None, list[bytes]]:
    """(key, cert PEM, extra certs PEM) from a PKCS12 store."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        key, cert, extra = pkcs12.load_key_and_certificates(
            data, password.encode() if password else None)
    except ValueError:
        raise LiveError(f"{what}: cannot open the PKCS12 store (wrong password or not a "
                        "PKCS12 file)") from None
    pem = serialization.Encoding.PEM
    return (key, None if cert is None else cert.public_bytes(pem),
            [c.public_bytes(pem) for c in extra or []])


def _truststore(ctx: ssl.SSLContext, props: dict[str, str]) -> None:
    inline = props.get("ssl.truststore.certificates")
    location = props.get("ssl.truststore.location") or None
    if inline:
        ctx.load_verify_locations(cadata=inline)
        return
    if not location:
        ctx.load_default_certs()
        return
    kind = _store_type(props, "ssl.truststore.type", location)
    data = _read(location, "ssl.truststore.location")
    if kind == "PEM":
        try:
            ctx.load_verify_locations(cadata=data.decode("ascii", "replace"))
        except ssl.SSLError as e:
            raise LiveError(f"ssl.truststore.location {location}: no usable PEM certificate "
                            f"({e.reason})") from None
        return
    _, cert, extra = _pkcs12(data, props.get("ssl.truststore.password"),
                             f"ssl.truststore.location {location}")
    pems = [c for c in [cert, *extra] if c]
    if not pems:
        raise LiveError(f"ssl.truststore.location {location}: the store holds no certificate")
    ctx.load_verify_locations(cadata=b"".join(pems).decode("ascii"))


def _keystore(ctx: ssl.SSLContext, props: dict[str, str]) -> None:
    location = props.get("ssl.keystore.location") or None
    key_inline, chain_inline = props.get("ssl.keystore.key"), props.get(
        "ssl.keystore.certificate.chain")
    key_password = props.get("ssl.key.password") or None
    if key_inline and chain_inline:
        _load_pem(ctx, (chain_inline + "\n" + key_inline).encode(), key_password,
                  "ssl.keystore.key")
        return
    if not location:
        return
    kind = _store_type(props, "ssl.keystore.type", location)
    data = _read(location, "ssl.keystore.location")
    if kind != "PEM":
        key, cert, extra = _pkcs12(data, props.get("ssl.keystore.password"),
                                   f"ssl.keystore.location {location}")
        if not key or not cert:
            raise LiveError(f"ssl.keystore.location {location}: the store needs a private key "
                            "and its certificate")
        _load_chain(ctx, cert + b"".join(extra), key, f"ssl.keystore.location {location}")
        return
    _load_pem(ctx, data, key_password, f"ssl.keystore.location {location}")


def _load_pem(ctx: ssl.SSLContext, pem: bytes, password: str | None, what: str) -> None:
    """A PEM text holding the certificate chain and the private key (in any order)."""
    from cryptography.hazmat.primitives import serialization

    certs, keys = b"", []
    for block in _PEM_BLOCK.finditer(pem):
        if block.group(1).endswith(b"PRIVATE KEY"):
            keys.append(block.group(0))
        else:
            certs += block.group(0)
    if len(keys) != 1:
        raise LiveError(f"{what}: cannot use the key and certificate (the PEM text needs "
                        f"one private key, it holds {len(keys)})")
    try:
        key = serialization.load_pem_private_key(
            keys[0], password.encode() if password else None)
    except (ValueError, TypeError) as e:
        raise LiveError(f"{what}: cannot use the key and certificate ({_first_line(e)}; is "
                        "ssl.key.password right?)") from None
    _load_chain(ctx, certs, key, what)


def _first_line(e: Exception) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0].rstrip(".")


def _load_chain(ctx: ssl.SSLContext, certs: bytes, key: PrivateKeyTypes, what: str) -> None:
    """load_cert_chain wants a file: a private temporary one holding the key encrypted with a
    random one-time password, removed at once."""
    from cryptography.hazmat.primitives import serialization

    once = secrets.token_urlsafe(32)
    sealed = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                               serialization.BestAvailableEncryption(once.encode()))
    fd, path = tempfile.mkstemp(prefix="mdshell-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(certs + sealed)
        ctx.load_cert_chain(path, password=once)
    except ssl.SSLError as e:
        raise LiveError(f"{what}: cannot use the key and certificate ({e.reason}; is "
                        "ssl.key.password right?)") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def make_context(props: dict[str, str]) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = bool(props.get("ssl.endpoint.identification.algorithm", "https"))
    ctx.verify_mode = ssl.CERT_REQUIRED
    _truststore(ctx, props)
    _keystore(ctx, props)
    return ctx


def explain_handshake(err: ssl.SSLError, endpoint: str) -> str:
    """One line for a failed TLS handshake: certificate, hostname or protocol."""
    if isinstance(err, ssl.SSLCertVerificationError):
        detail = err.verify_message or str(err)
        if "mismatch" in detail.lower() or "hostname" in detail.lower():
            return (f"{endpoint}: TLS hostname verification failed ({detail}); connect with the "
                    "name in the controller's certificate, or set ssl.endpoint.identification."
                    "algorithm= (empty) to skip the check")
        return (f"{endpoint}: the controller's TLS certificate is not trusted ({detail}); set "
                "ssl.truststore.location to the CA that signed it")
    reason = getattr(err, "reason", None) or str(err)
    return (f"{endpoint}: TLS handshake failed ({reason}); check that the listener speaks "
            "SSL/SASL_SSL and that ssl.* settings match it")
