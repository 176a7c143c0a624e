"""Live mode over SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256/512) and SSL (PEM, PKCS12) against real
Kafka controllers with an authorizer: three controller listeners per node (the quorum talks
PLAINTEXT among itself; mdshell uses the SASL and SSL listeners).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mdshell.source.live import LiveSource
from mdshell.source.quorum.errors import LiveError
from tests.conftest import run_cli
from tests.kafka import jars
from tests.kafka.certs import write_pem_set
from tests.kafka.cluster import KraftCluster, free_ports, grant

pytestmark = pytest.mark.live

VERSION = jars.KAFKA_4
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


class Secure:
    def __init__(self, cluster: KraftCluster, sasl: dict[int, int], ssl: dict[int, int],
                 sasl_ssl: dict[int, int], certs: dict[str, Path], tmp: Path) -> None:
        self.cluster, self.certs, self.tmp = cluster, certs, tmp
        self.sasl = ",".join(f"127.0.0.1:{p}" for p in sasl.values())
        self.ssl = ",".join(f"127.0.0.1:{p}" for p in ssl.values())
        self.ssl_localhost = ",".join(f"localhost:{p}" for p in ssl.values())
        self.sasl_ssl = ",".join(f"127.0.0.1:{p}" for p in sasl_ssl.values())

    def config(self, name: str, text: str) -> str:
        path = self.tmp / name
        path.write_text(text, encoding="utf-8")
        return str(path)


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    tmp = tmp_path_factory.mktemp("secure")
    certs = write_pem_set(tmp / "certs")
    ports = free_ports(9)
    sasl = {i: ports[i - 1] for i in (1, 2, 3)}
    ssl = {i: ports[i + 2] for i in (1, 2, 3)}
    sasl_ssl = {i: ports[i + 5] for i in (1, 2, 3)}
    common = {
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl.plain.sasl.jaas.config":
            f'{PLAIN} required user_admin="admin-secret" user_alice="alice-secret" '
            'user_carol="carol-secret";',
        "listener.name.sasl.scram-sha-256.sasl.jaas.config": f"{SCRAM} required;",
        "listener.name.sasl.scram-sha-512.sasl.jaas.config": f"{SCRAM} required;",
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.keystore.location": str(certs["server"]),
        # SASL_SSL with mutual TLS: the client shows a PEM key and certificate too.
        "listener.name.saslssl.plain.sasl.jaas.config":
            f'{PLAIN} required user_admin="admin-secret";',
        "listener.name.saslssl.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.saslssl.ssl.keystore.type": "PEM",
        "listener.name.saslssl.ssl.keystore.location": str(certs["server"]),
        "listener.name.saslssl.ssl.truststore.type": "PEM",
        "listener.name.saslssl.ssl.truststore.location": str(certs["ca"]),
        "listener.name.saslssl.ssl.client.auth": "required",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS;User:admin;User:bob;User:erin",
    }
    cluster = KraftCluster(VERSION, tmp / "kraft", controller_extra=common, with_broker=False,
                           format_args=("--add-scram",
                                        "SCRAM-SHA-256=[name=bob,password=bob-secret]",
                                        "--add-scram",
                                        "SCRAM-SHA-512=[name=erin,password=erin-secret]"))
    for n in cluster.controllers:
        i = n.node_id
        n.props.update({
            "controller.listener.names": "CONTROLLER,SASL,SSL,SASLSSL",
            "listeners": f"CONTROLLER://127.0.0.1:{n.port},SASL://127.0.0.1:{sasl[i]},"
                         f"SSL://127.0.0.1:{ssl[i]},SASLSSL://127.0.0.1:{sasl_ssl[i]}",
            "listener.security.protocol.map":
                "CONTROLLER:PLAINTEXT,SASL:SASL_PLAINTEXT,SSL:SSL,SASLSSL:SASL_SSL",
        })
    with cluster.running():
        grant(cluster, "carol", "Describe", "Alter")  # everything but ClusterAction
        yield Secure(cluster, sasl, ssl, sasl_ssl, certs, tmp)


def _sasl_config(mech: str, user: str, password: str) -> str:
    module = PLAIN if mech == "PLAIN" else SCRAM
    return ("security.protocol=SASL_PLAINTEXT\n"
            f"sasl.mechanism={mech}\n"
            "# a continuation, as Kafka's Properties allow\n"
            f"sasl.jaas.config={module} required \\\n"
            f'    username="{user}" \\\n'
            f'    password="{password}";\n'
            "bootstrap.servers=ignored:9092\n")


@pytest.mark.parametrize("mech,user,password", [
    ("PLAIN", "admin", "admin-secret"), ("SCRAM-SHA-256", "bob", "bob-secret"),
    ("SCRAM-SHA-512", "erin", "erin-secret")])
def test_sasl_plaintext(secure: Secure, mech: str, user: str, password: str) -> None:
    conf = secure.config(f"{mech}.properties", _sasl_config(mech, user, password))
    out = run_cli("-q", secure.sasl, "--config", conf, "cat", "/live/security",
                  "/image/cluster/controllers/1")
    assert out.returncode == 0, out.stderr
    assert f"{mech} as {user}" in out.stdout and "ControllerRegistration(id=1" in out.stdout
    assert "bootstrap.servers is ignored" in out.stderr
    assert password not in out.stdout + out.stderr


@pytest.mark.parametrize("mech,user", [("PLAIN", "admin"), ("SCRAM-SHA-256", "bob")])
def test_wrong_password(secure: Secure, mech: str, user: str) -> None:
    conf = secure.config(f"wrong-{mech}.properties", _sasl_config(mech, user, "not-it"))
    out = run_cli("-q", secure.sasl, "--config", conf, "ls", "/")
    assert out.returncode == 1
    err = out.stderr.strip()
    assert "authentication failed" in err and len(err.splitlines()) == 1
    assert "not-it" not in err


def test_without_cluster_action_the_view_degrades(secure: Secure) -> None:
    conf = secure.config("alice.properties", _sasl_config("PLAIN", "alice", "alice-secret"))
    out = run_cli("-q", secure.sasl, "--config", conf, "cat", "/live/degraded",
                  "/live/finalizedFeatures/metadata.version")
    assert out.returncode == 1, out.stderr  # printed, but the image is incomplete
    assert "CLUSTER_ACTION" in out.stdout and "CLUSTER_ACTION" in out.stderr
    assert "ALTER" in out.stderr  # DescribeCluster's ACL is named too
    assert "empty segment" not in out.stderr and ".log" not in out.stderr  # none exists live
    nothing = run_cli("-q", secure.sasl, "--config", conf, "save", str(secure.tmp / "empty"))
    assert nothing.returncode == 1 and "nothing was fetched" in nothing.stderr


def test_cluster_action_alone_missing_degrades_to_describe_views(secure: Secure) -> None:
    """carol has Describe and Alter on the cluster, not ClusterAction: the log cannot be
    fetched (named exactly), DescribeCluster, DescribeQuorum and ApiVersions still show."""
    conf = secure.config("carol.properties", _sasl_config("PLAIN", "carol", "carol-secret"))
    out = run_cli("-q", secure.sasl, "--config", conf, "-o", "json", "cat", "/live/degraded",
                  "/live/clusterId", "/live/activeController", "/live/authorizedOperations",
                  "/live/finalizedFeatures/metadata.version", "/quorum/leaderId")
    assert out.returncode == 1, out.stderr  # everything printed; the image is not there
    err = out.stderr
    assert "CLUSTER_ACTION operation on the CLUSTER resource" in err
    assert "--operation ClusterAction" in err
    assert "ALTER" not in err and "DESCRIBE " not in err  # those two are granted
    assert "Traceback" not in err
    values = {v["path"]: v["value"] for v in json.loads(out.stdout)}
    leader = secure.cluster.leader_id()
    assert "CLUSTER_ACTION" in values["/live/degraded"]
    assert values["/live/clusterId"] == secure.cluster.cluster_id  # DescribeCluster
    assert values["/live/activeController"] == leader
    granted = values["/live/authorizedOperations"].split(", ")
    assert {"ALTER", "DESCRIBE"} <= set(granted) and "CLUSTER_ACTION" not in granted
    assert values["/live/finalizedFeatures/metadata.version"] > 0  # ApiVersions
    assert values["/quorum/leaderId"] == leader  # DescribeQuorum
    dirs = run_cli("-q", secure.sasl, "--config", conf, "ls", "/live/controllers",
                   "/quorum/voters", "/image/topics/byName")
    assert dirs.returncode == 1, dirs.stderr
    assert dirs.stdout.split() == ["controllers:", "1", "2", "3", "voters:", "1", "2", "3",
                                   "byName:"]


def test_without_cluster_action_the_image_is_incomplete(secure: Secure) -> None:
    """An image that could not be fetched is not a healthy empty cluster: health fails (text
    and JSON), topics and brokers exit 1 after their (empty) tables, and one error line says
    why (the other lines are warnings)."""
    conf = secure.config("carol2.properties", _sasl_config("PLAIN", "carol", "carol-secret"))
    base = ("-q", secure.sasl, "--config", conf)
    health = run_cli(*base, "health")
    assert health.returncode == 1, health.stdout + health.stderr
    assert "healthy" not in health.stdout
    assert "FAIL  data: the image is incomplete" in health.stdout
    report = run_cli(*base, "-o", "json", "health")
    assert report.returncode == 1
    data = json.loads(report.stdout)
    assert data["ok"] is False
    assert [c["status"] for c in data["checks"] if c["name"] == "data"] == ["fail"]
    for command in ("topics", "brokers"):
        out = run_cli(*base, command)
        assert out.returncode == 1, (command, out.stderr)
        errors = [line for line in out.stderr.splitlines()
                  if not line.startswith("mdshell: warning: ")]
        assert len(errors) == 1 and "CLUSTER_ACTION" in errors[0], (command, out.stderr)
        assert errors[0].startswith("mdshell: ") and "the image is empty" in errors[0]
        assert "empty segment" not in out.stderr  # the virtual directory's, not news


def test_ssl_pem_and_pkcs12(secure: Secure) -> None:
    pem = secure.config("ssl.properties", "security.protocol=SSL\nssl.truststore.type=PEM\n"
                        f"ssl.truststore.location={secure.certs['ca']}\n")
    out = run_cli("-q", secure.ssl, "--config", pem, "cat", "/live/security", "/quorum/leaderId")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("SSL")
    p12 = secure.config("p12.properties", "security.protocol=SSL\nssl.truststore.type=PKCS12\n"
                        f"ssl.truststore.location={secure.certs['truststore_p12']}\n"
                        "ssl.truststore.password=trust-pass\n")
    out = run_cli("-q", secure.ssl, "--config", p12, "ls", "/image/cluster/controllers")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "2", "3"]


def test_wrong_ca_and_wrong_hostname(secure: Secure) -> None:
    other = secure.config("other.properties", "security.protocol=SSL\n"
                          "ssl.truststore.type=PEM\n"
                          f"ssl.truststore.location={secure.certs['other_ca']}\n")
    out = run_cli("-q", secure.ssl, "--config", other, "ls", "/")
    assert out.returncode == 1
    assert "not trusted" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    good = secure.config("host.properties", "security.protocol=SSL\nssl.truststore.type=PEM\n"
                         f"ssl.truststore.location={secure.certs['ca']}\n")
    out = run_cli("-q", secure.ssl_localhost, "--config", good, "ls", "/")
    assert out.returncode == 1
    assert "hostname verification failed" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    skip = secure.config("nohost.properties", "security.protocol=SSL\n"
                         "ssl.endpoint.identification.algorithm=\n"
                         f"ssl.truststore.location={secure.certs['ca']}\nssl.truststore.type=PEM\n")
    out = run_cli("-q", secure.ssl_localhost, "--config", skip, "ls", "/image/cluster")
    assert out.returncode == 0, out.stderr


def test_sasl_to_a_tls_listener_is_one_clear_line(secure: Secure) -> None:
    conf = secure.config("mismatch.properties", "request.timeout.ms=3000\n")
    out = run_cli("-q", secure.ssl, "--config", conf, "ls", "/")
    assert out.returncode == 1
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_sasl_ssl_with_a_client_certificate(secure: Secure) -> None:
    base = ("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
            f"sasl.jaas.config={PLAIN} required username=admin password=admin-secret;\n"
            f"ssl.truststore.type=PEM\nssl.truststore.location={secure.certs['ca']}\n")
    mtls = secure.config("mtls.properties", base + "ssl.keystore.type=PEM\n"
                         f"ssl.keystore.location={secure.certs['client']}\n")
    out = run_cli("-q", secure.sasl_ssl, "--config", mtls, "cat", "/live/security",
                  "/quorum/leaderId")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("SASL_SSL, PLAIN as admin")
    no_cert = secure.config("nocert.properties", base + "request.timeout.ms=5000\n")
    out = run_cli("-q", secure.sasl_ssl, "--config", no_cert, "ls", "/")
    assert out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1


def test_plaintext_client_on_a_sasl_listener_is_told_at_once(secure: Secure) -> None:
    """Issue 21 item 4: Kafka closes the connection after ApiVersions; say why, at once."""
    out = run_cli("-q", secure.sasl, "ls", "/")
    err = out.stderr.strip()
    assert out.returncode == 1 and len(err.splitlines()) == 1, err
    assert "SASL listener" in err and "security.protocol=SASL_PLAINTEXT" in err
    t0 = time.monotonic()
    with pytest.raises(LiveError, match="SASL listener"):
        LiveSource(secure.sasl)
    took = time.monotonic() - t0
    print(f"PLAINTEXT client on a SASL listener: told after {took:.2f} s")
    assert took < 4, took  # was 5 s of retries (then a vague message)
