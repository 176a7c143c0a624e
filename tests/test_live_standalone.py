"""Live mode on a Kafka 4.4 quorum begun with ``kafka-storage format --standalone`` (KIP-853):
one voter, two controllers formatted ``--no-initial-controllers`` that observe until
``kafka-metadata-quorum add-controller`` makes them voters, while a session follows (issue 21,
item 6). Controller-only nodes, no broker: the cheapest quorum that shows it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mdshell.commands import Shell
from mdshell.source.live import LiveSource
from mdshell.tree.node import RenderOptions
from tests.kafka import jars
from tests.kafka.cluster import KraftCluster, Node
from tests.test_live_failover import _controllers_until, _fields

pytestmark = pytest.mark.live

VERSION = jars.KAFKA_44


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    """KIP-853's other start: node 1 formatted --standalone, 2 and 3 observers until added."""
    cluster = KraftCluster(VERSION, tmp_path_factory.mktemp("kraft-standalone"),
                           standalone=True, with_broker=False)
    with cluster.running():
        yield cluster


def _add_controller(cluster: KraftCluster, node: Node) -> None:
    """kafka-metadata-quorum add-controller, retried while the node is not caught up yet."""
    deadline = time.monotonic() + 60
    while True:
        try:
            cluster.quorum_tool("add-controller", config=node.home / "server.properties")
            return
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def test_standalone_then_add_controller_is_followed(standalone: KraftCluster) -> None:
    """Item 6: a quorum formatted --standalone grows by add-controller while a session
    follows: controllers and quorum say what Kafka's tool says after each addition."""
    source = LiveSource(standalone.bootstrap_controllers)
    shell = Shell(source, opts=RenderOptions())
    try:
        source.follow()
        # A controller writes its registration after the quorum elects it, so the fixture
        # (ready once a leader has a high watermark) can be ahead of it: wait for it.
        flags = _controllers_until(shell, lambda f: f.get(1) == "true")
        assert flags[1] == "true" and flags.get(2) != "true" and flags.get(3) != "true", flags
        for added in (2, 3):
            _add_controller(standalone, standalone.node(added))
            t0 = time.monotonic()
            flags = _controllers_until(shell, lambda f: f.get(added) == "true")  # noqa: B023
            print(f"voter {added} added: seen by controllers after {time.monotonic() - t0:.1f} s")
            assert flags.get(added) == "true", flags
            kafka = _fields(standalone.quorum_tool("describe", "--status"))
            ours = _fields("\n".join(shell.run(["quorum"]).lines))
            for key in ("LeaderId", "CurrentVoters"):
                assert ours[key] == kafka[key], key
    finally:
        source.close()
