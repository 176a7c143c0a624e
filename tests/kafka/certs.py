"""Test certificates made with ``cryptography``: a CA and a server certificate for 127.0.0.1."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

PEM = serialization.Encoding.PEM


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_ca(cn: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return key, cert


def make_server(ca: tuple[ec.EllipticCurvePrivateKey, x509.Certificate],
                ip: str = "127.0.0.1") -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    ca_key, ca_cert = ca
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name("controller"))
            .issuer_name(ca_cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(
                ipaddress.ip_address(ip))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return key, cert


def write_pem_set(directory: Path) -> dict[str, Path]:
    """ca.pem, other-ca.pem (untrusted), server.pem and client.pem (key + chain), trust.p12."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    directory.mkdir(parents=True, exist_ok=True)
    ca = make_ca("mdshell test CA")
    other = make_ca("some other CA")
    key, cert = make_server(ca)
    client_key, client_cert = make_server(ca)
    paths = {"ca": directory / "ca.pem", "other_ca": directory / "other-ca.pem",
             "server": directory / "server.pem", "truststore_p12": directory / "trust.p12",
             "client": directory / "client.pem"}
    paths["ca"].write_bytes(ca[1].public_bytes(PEM))
    paths["other_ca"].write_bytes(other[1].public_bytes(PEM))
    key_pem = key.private_bytes(PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    paths["server"].write_bytes(key_pem + cert.public_bytes(PEM) + ca[1].public_bytes(PEM))
    paths["client"].write_bytes(client_key.private_bytes(
        PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        + client_cert.public_bytes(PEM))
    paths["truststore_p12"].write_bytes(pkcs12.serialize_key_and_certificates(
        b"ca", None, None, [ca[1]], serialization.BestAvailableEncryption(b"trust-pass")))
    return paths
