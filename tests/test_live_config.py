"""--config parsing (Java .properties rules, sasl.jaas.config) and SCRAM, without Kafka."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

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
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr  # a usage error


def test_separators_and_escapes_in_keys() -> None:
    """Java's Properties: the key ends at the first unescaped '=', ':' or blank; blanks around
    the separator go; a blank-only or empty line ends nothing; comments only at line start."""
    props = parse_properties("a : b\nc:=d\ne \t= f\ng\\:h=i\\:j\n   # indented comment\n"
                             "   \nk=v # not a comment\nlone\n\\#notcomment=x\n")
    assert props["a"] == "b" and props["c"] == "=d" and props["e"] == "f"
    assert props["g:h"] == "i:j" and props["k"] == "v # not a comment"
    assert props["lone"] == "" and props["#notcomment"] == "x"
    assert "# indented comment" not in props and len(props) == 7


def test_continuation_skips_leading_blanks_and_ends_at_eof() -> None:
    props = parse_properties("sasl.jaas.config=X required \\\n   username=\"u\" \\\n"
                             "\t password=\"p\";\nlast=trailing \\")
    assert props["sasl.jaas.config"] == 'X required username="u" password="p";'
    assert props["last"] == "trailing "


def test_refusals_say_what_to_use_instead(tmp_path: Path) -> None:
    plain = "org.apache.kafka.common.security.plain.PlainLoginModule"
    scram_module = "org.apache.kafka.common.security.scram.ScramLoginModule"
    with pytest.raises(LiveError, match=r"OAUTHBEARER is not supported.*use PLAIN, SCRAM-SHA-256"
                       r" or SCRAM-SHA-512"):
        config_from({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"})
    with pytest.raises(LiveError, match="needs the ScramLoginModule"):
        config_from({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                     "sasl.jaas.config": f"{plain} required username=u password=p;"})
    with pytest.raises(LiveError, match=r"sasl\.jaas\.config is missing; add e\.g\."):
        config_from({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"})
    with pytest.raises(LiveError, match="needs username"):
        config_from({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
                     "sasl.jaas.config": f"{scram_module} required username=u;"})
    for key, loc in (("ssl.keystore.type", "client.jks"), ("ssl.truststore.type", "ca.jks")):
        with pytest.raises(LiveError, match=r"JKS is not supported.*convert the store to "
                           r"PKCS12.*or PEM"):
            make_context({key.replace("type", "location"): loc, key: "JKS"})
    with pytest.raises(LiveError, match="JKS is not supported"):  # known by its extension
        make_context({"ssl.truststore.location": "/etc/kafka/truststore.jks"})
    # End to end: one line on stderr, exit 1, nothing contacted (the config is read first).
    conf = tmp_path / "jks.properties"
    conf.write_text("security.protocol=SSL\nssl.truststore.location=/x/ca.jks\n"
                    "ssl.truststore.type=JKS\nssl.truststore.password=secret-pw\n")
    out = run_cli("-q", "127.0.0.1:1", "--config", str(conf), "ls", "/")
    err = out.stderr.strip()
    assert out.returncode == 1 and len(err.splitlines()) == 1 and "PKCS12" in err
    assert "secret-pw" not in err


def test_hostname_verification_on_unless_empty() -> None:
    assert make_context({}).check_hostname is True
    assert make_context({"ssl.endpoint.identification.algorithm": "https"}).check_hostname
    assert make_context({"ssl.endpoint.identification.algorithm": ""}).check_hostname is False


def test_defaults_and_bootstrap_notices() -> None:
    cfg = config_from({})
    assert cfg.security_protocol == "PLAINTEXT" and not cfg.uses_tls and not cfg.uses_sasl
    assert cfg.client_id == "mdshell" and cfg.request_timeout_ms == 30000
    assert cfg.connect_timeout_ms == 10000 and cfg.notices == []
    cfg = config_from({"bootstrap.controllers": "c:9093",
                       "socket.connection.setup.timeout.ms": "250"})
    assert cfg.connect_timeout_ms == 250
    assert cfg.notices and "bootstrap.controllers is ignored" in cfg.notices[0]
    with pytest.raises(LiveError, match="must be positive"):
        config_from({"socket.connection.setup.timeout.ms": "0"})


def test_a_file_source_with_q_is_a_usage_error() -> None:
    out = run_cli("-s", "/tmp/x.checkpoint", "-q", "127.0.0.1:1", "ls")
    assert out.returncode == 2 and "only one of" in out.stderr
