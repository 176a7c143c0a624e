"""Live mode against Kafka 3.7.2 controllers whose metadata.version is 3.6-IV2 (below
3.7-IV0): DescribeCluster is refused with a clear note, the log is still read, and the image
equals ``mdshell -d`` on the leader's own directory at the same offset.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mdshell.commands import Shell
from mdshell.source.live import LiveSource
from mdshell.tree.node import RenderOptions
from tests.conftest import run_cli
from tests.kafka import jars
from tests.kafka.cluster import KraftCluster

VERSION = jars.KAFKA_37


@pytest.fixture(scope="module")
def kafka3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    try:
        jars.jars(VERSION)
    except jars.KafkaUnavailable as e:
        pytest.fail(str(e))
    cluster = KraftCluster(VERSION, tmp_path_factory.mktemp("kraft37"), with_broker=False,
                           format_args=("--release-version", "3.6-IV2"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def test_old_metadata_version_is_named_and_the_log_still_read(kafka3: KraftCluster) -> None:
    source = LiveSource(kafka3.bootstrap_controllers)
    try:
        shell = Shell(source, opts=RenderOptions())
        offset = source.observer.log.next_offset - 1
        tree = "\n".join(shell.run(["tree", "/image"]).lines) + "\n"
        status = source.status()
    finally:
        source.close()
    assert any("3.7-IV0" in n for n in status.notes)
    assert status.api_versions[1][1] == 16  # Fetch v16 on 3.7
    assert "3.6-IV2" in tree
    leader = kafka3.node(kafka3.leader_id())
    on_disk = run_cli("-d", str(leader.metadata_dir), "--at", str(offset), "tree", "/image")
    assert on_disk.returncode == 0, on_disk.stderr
    assert tree == on_disk.stdout
    out = run_cli("-q", kafka3.bootstrap_controllers, "cat", "/quorum/leaderId")
    assert out.returncode == 0 and "3.7-IV0" in out.stderr
    assert out.stdout.strip() == str(leader.node_id)
