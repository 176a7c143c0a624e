"""Kafka's published jars, installed by package name from Maven Central into a cache.

One installer for every test that runs Kafka (the oracle tests and the live-mode tests): a
tiny generated pom and ``mvn dependency:copy-dependencies`` into
``$MDSHELL_CACHE/kafka/<version>`` (default ``~/.cache/mdshell``), outside the repository.
A finished install is marked by a ``.complete`` file, so an interrupted one is redone.
Without Java or Maven the caller gets :class:`KafkaUnavailable` naming what to install:
these tests must fail loudly in CI, never skip.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

# Pinned versions: the newest 4.x and the newest 3.7.x (the golden outputs are 3.7.0's), and
# the newest 3.x for live tests against an older controller, and the newest 3.6.x (controllers
# before 3.7 have no DescribeCluster: live mode says so).
KAFKA_4 = "4.3.1"
KAFKA_44 = "4.4.0"  # live tests on a combined-mode dynamic quorum (issue 21)
KAFKA_37 = "3.7.2"
KAFKA_39 = "3.9.1"
KAFKA_36 = "3.6.2"
ARTIFACTS = ("kafka_2.13", "kafka-tools", "kafka-shell")

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>mdshell.test</groupId><artifactId>kafka-jars</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""
_DEP = ("    <dependency><groupId>org.apache.kafka</groupId><artifactId>{a}</artifactId>"
        "<version>{v}</version></dependency>")


class KafkaUnavailable(RuntimeError):
    """Java, Maven or the jars cannot be had: the message says what to install."""


def cache_root() -> Path:
    from mdshell.files import cache_dir

    return Path(cache_dir())


def java() -> str:
    """The java executable (JAVA_HOME first)."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    found = shutil.which("java")
    if found is None:
        raise KafkaUnavailable("java is not installed: install a JDK 17+ (Debian: apt-get "
                               "install -y openjdk-17-jdk-headless) to run Kafka in the tests")
    return found


def jars(version: str) -> Path:
    """The directory holding Kafka ``version``'s jars and their dependencies."""
    target = cache_root() / "kafka" / version
    if (target / ".complete").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # The tests and the oracle's background run may both install it: one at a time.
    with open(target.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").exists():
            return target
        return _install(version, target)


def _install(version: str, target: Path) -> Path:
    java()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaUnavailable("mvn is not installed: install Maven (Debian: apt-get install -y "
                               "maven) so the tests can fetch Kafka's jars from Maven Central")
    target.mkdir(parents=True, exist_ok=True)
    # Kafka 4.4.0 publishes no kafka-shell artifact (checked on Maven Central).
    wanted = [a for a in ARTIFACTS if not (a == "kafka-shell" and version == KAFKA_44)]
    deps = "\n".join(_DEP.format(a=a, v=version) for a in wanted)
    with tempfile.TemporaryDirectory() as tmp:
        pom = Path(tmp) / "pom.xml"
        pom.write_text(_POM.format(deps=deps), encoding="utf-8")
        out = subprocess.run([mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
                              f"-DoutputDirectory={target}"], capture_output=True, text=True,
                             timeout=900)
    if out.returncode != 0:
        tail = (out.stdout + out.stderr).strip().splitlines()[-5:]
        raise KafkaUnavailable(f"Maven could not fetch Kafka {version}: " + " | ".join(tail))
    (target / ".complete").write_text("ok\n", encoding="utf-8")
    return target


def classpath(version: str) -> str:
    return str(jars(version) / "*")
