"""--config parsing (Java .properties rules, sasl.jaas.config) and SCRAM, without Kafka."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from mdshell.source.quorum.config import config_from, load_config, parse_jaas, parse_properties
from mdshell.source.quorum.errors import LiveError
from mdshell.source.quorum.sasl import scram
from mdshell.source.quorum.tls import make_context
from tests.conftest import run_cli


def test_properties_follow_java_rules() -> None:
    text = ("# comment\n! also a comment\n  key1 = value one  \nkey2:value2\nkey3 value3\n"
            "multi=first \\\n    second \\\n\tthird\n"
            "esc\\ aped\\=key=a\\tb\\u0041\\\\\n"
            "empty=\n"
            "# trailing backslash in a comment does not continue \\\n"
            "after=yes\n"
            "even=ends with two \\\\\n"
            "next=separate\r\n"
            "dup=1\ndup=2\n")
    props = parse_properties(text)
    assert props["key1"] == "value one  "
    assert props["key2"] == "value2" and props["key3"] == "value3"
    assert props["multi"] == "first second third"
    assert props["esc aped=key"] == "a\tbA\\"
    assert props["empty"] == "" and props["after"] == "yes"
    assert props["even"] == "ends with two \\" and props["next"] == "separate"
    assert props["dup"] == "2"
    with pytest.raises(ValueError):
        parse_properties("bad=\\u12\n")


def test_jaas_config() -> None:
    module, opts = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule '
                              'required username="a\\"b" password=secret;')
    assert module.endswith("PlainLoginModule") and opts == {"username": 'a"b',
                                                            "password": "secret"}
    for bad in ("PlainLoginModule required username=x", "X required a=b; Y required;",
                "X maybe a=b;"):
        with pytest.raises(LiveError):
            parse_jaas(bad)


def test_security_settings_and_refusals() -> None:
    cfg = config_from({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                       "sasl.jaas.config": 'org.apache.kafka.common.security.scram.'
                       'ScramLoginModule required username="u" password="p";',
                       "request.timeout.ms": "1500", "client.id": "ops",
                       "bootstrap.servers": "b:9092"})
    assert cfg.uses_sasl and cfg.uses_tls and cfg.username == "u" and cfg.password == "p"
    assert cfg.request_timeout_ms == 1500 and cfg.client_id == "ops"
    assert "bootstrap.servers is ignored" in cfg.notices[0]
    with pytest.raises(LiveError, match="GSSAPI is not supported"):
        config_from({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"})
    with pytest.raises(LiveError, match=r"security\.protocol"):
        config_from({"security.protocol": "TLS"})
    with pytest.raises(LiveError, match="PKCS12"):
        make_context({"ssl.truststore.type": "JKS", "ssl.truststore.location": "x.jks"})
    with pytest.raises(LiveError, match="not a number"):
        config_from({"request.timeout.ms": "soon"})
    with pytest.raises(LiveError, match="no such file"):
        load_config("/nonexistent/client.properties")


def test_scram_exchange_matches_rfc5802() -> None:
    """The client proof verifies against the server side computed independently."""
    password, salt, iterations = "pencil", b"salty-salt", 4096
    steps = scram("SCRAM-SHA-256", "user", password)
    first = next(steps).decode()
    assert first.startswith("n,,n=user,r=")
    nonce = first.split("r=", 1)[1]
    server_first = f"r={nonce}srv,s={base64.b64encode(salt).decode()},i={iterations}"
    final = steps.send(server_first.encode()).decode()
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored = hashlib.sha256(client_key).digest()
    without = final.rsplit(",p=", 1)[0]
    auth = f"n=user,r={nonce},{server_first},{without}".encode()
    sig = hmac.new(stored, auth, "sha256").digest()
    proof = base64.b64decode(final.rsplit(",p=", 1)[1])
    recovered = bytes(a ^ b for a, b in zip(proof, sig, strict=True))
    assert hashlib.sha256(recovered).digest() == stored
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()
    v = base64.b64encode(hmac.new(server_key, auth, "sha256").digest()).decode()
    with pytest.raises(StopIteration):
        steps.send(f"v={v}".encode())


def test_usage_errors() -> None:
    both = run_cli("-d", "/tmp", "-q", "127.0.0.1:1", "ls")
    assert both.returncode == 2
    bad = run_cli("-q", "no-port-here", "ls")
    assert bad.returncode == 1 and "HOST:PORT" in bad.stderr
