"""Live mode against Kafka 3.x controllers (no broker):

- 3.9.1, the newest 3.x, at its default metadata.version: everything DescribeCluster gives,
  and the image equals ``mdshell -d`` on the leader's own directory at the same offset;
- 3.7.2 at metadata.version 3.6-IV2 (below 3.7-IV0): DescribeCluster is refused with a clear
  note, the log is still read, and the image equals ``-d`` as well;
- 3.6.2, older than 3.7 (no DescribeCluster on controllers at all): the same, with a note
  naming the version needed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from mdshell.commands import Shell
from mdshell.source.live import LiveSource
from mdshell.tree.node import RenderOptions
from tests.conftest import run_cli
from tests.kafka import jars
from tests.kafka.cluster import KraftCluster

pytestmark = pytest.mark.live

OLD_MV = "3.6-IV2"
SNAPSHOT_OFTEN = {
    "metadata.log.max.record.bytes.between.snapshots": "1024",
    "metadata.log.max.snapshot.interval.ms": "1000",
}


@pytest.fixture(scope="module", params=[jars.KAFKA_39, jars.KAFKA_37, jars.KAFKA_36])
def kafka3(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    version = request.param
    old = version == jars.KAFKA_37
    cluster = KraftCluster(version, tmp_path_factory.mktemp(f"kraft{version}"),
                           with_broker=False, controller_extra=dict(SNAPSHOT_OFTEN),
                           format_args=("--release-version", OLD_MV) if old else ())
    with cluster.running():
        yield cluster


def _registered(kafka3: KraftCluster) -> LiveSource:
    """A live source once every controller has registered (RegisterControllerRecord comes
    a moment after the quorum has a leader), bounded."""
    deadline = time.monotonic() + 60
    while True:
        source = LiveSource(kafka3.bootstrap_controllers)
        old = kafka3.version in (jars.KAFKA_37, jars.KAFKA_36)
        if (old and "3.7" in " ".join(source.view.notes)) or len(source.view.controllers) == 3:
            return source
        source.close()
        assert time.monotonic() < deadline, "the controllers did not all register in 60 s"
        time.sleep(0.5)


def test_catch_up_equals_the_leader_directory(kafka3: KraftCluster) -> None:
    source = _registered(kafka3)
    try:
        shell = Shell(source, opts=RenderOptions())
        offset = source.observer.log.next_offset - 1
        tree = "\n".join(shell.run(["tree", "/image"]).lines) + "\n"
        status = source.status()
    finally:
        source.close()
    leader = kafka3.node(kafka3.leader_id())
    on_disk = run_cli("-d", str(leader.metadata_dir), "--at", str(offset), "tree", "/image")
    assert on_disk.returncode == 0, on_disk.stderr
    assert tree == on_disk.stdout
    out = run_cli("-q", kafka3.bootstrap_controllers, "cat", "/quorum/leaderId",
                  "/live/clusterId")
    assert out.returncode == 0, out.stderr
    if kafka3.version == jars.KAFKA_37:
        assert any("3.7-IV0" in n for n in status.notes)
        assert status.api_versions[1][1] == 16  # Fetch v16 on 3.7
        assert OLD_MV in tree and "3.7-IV0" in out.stderr
        assert status.cluster_id is None or status.cluster_id == kafka3.cluster_id
    elif kafka3.version == jars.KAFKA_36:
        assert any("older than Kafka 3.7" in n for n in status.notes)
        assert "upgrade the controllers to 3.7+" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
        assert status.api_versions[1][1] == 15 and 60 not in status.api_versions
        assert status.cluster_id is None and status.controllers == {}
        assert "metadata.version" in status.finalized_features  # ApiVersions
    else:
        assert status.notes == [] and out.stderr == ""
        assert status.api_versions[1][1] == 17  # Fetch v17 on 3.9
        assert status.cluster_id == kafka3.cluster_id
        assert sorted(status.controllers) == [1, 2, 3]
        assert status.controller_id == leader.node_id
    assert out.stdout.split()[0] == str(leader.node_id)
    if kafka3.version == jars.KAFKA_39:  # 3.7 here runs 3.6-IV2: its tool cannot describe
        # CurrentVoters as kafka-metadata-quorum of that version prints it (each voter with
        # its directory id and endpoints from 3.9; [1,2,3] before, from Kafka's source).
        def voters(text: str) -> str:
            return next(line.split(":", 1)[1].strip() for line in text.splitlines()
                        if line.startswith("CurrentVoters:"))

        ours = run_cli("-q", kafka3.bootstrap_controllers, "quorum")
        assert ours.returncode == 0, ours.stderr
        assert voters(ours.stdout) == voters(kafka3.quorum_tool("describe", "--status"))
