"""Kafka as the writer and as the judge: snapshots written by Kafka's own code
(``bench/KafkaSnapshot.java``: ``RecordsSnapshotWriter`` and ``MetadataRecordSerde`` of Kafka
4.4.0), in every codec and in small and Kafka-sized batches, read by mdshell exactly as
Kafka 4.3.1's ``MetadataShell`` reads them (``tree /image``), and judged complete.

Every other oracle test reads what mdshell's own writer made (or the corpus, which holds no
compressed batch): here the batches, the record encodings and the compression are Kafka's.
The metadata.version is 4.3-IV0, the newest Kafka 4.3.1's shell loads."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli
from .kafka import jars
from .oracle import compare, kafka_tree, mdshell_tree, need_kafka

pytestmark = pytest.mark.oracle

WRITER = ROOT / "bench" / "KafkaSnapshot.java"


def kafka_snapshot(out: Path, codec: str, batch_bytes: int) -> Path:
    """A snapshot of 20 topics of 50 partitions and 30 brokers, written by Kafka's code."""
    need_kafka()
    try:
        cp = jars.classpath(jars.KAFKA_44)
    except jars.KafkaUnavailable as e:
        pytest.fail(f"Kafka 4.4.0's jars are needed to write the snapshot: {e}")
    done = subprocess.run([jars.java(), "-cp", cp, str(WRITER), str(out), "20", "50", "30",
                           str(batch_bytes), "4.3-IV0", codec], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (snapshot,) = (out / "__cluster_metadata-0").glob("*.checkpoint")
    return snapshot


@pytest.mark.parametrize("codec,batch_bytes", [
    ("none", 100_000), ("none", 8 * 1024 * 1024), ("gzip", 100_000), ("snappy", 100_000),
    ("lz4", 8 * 1024 * 1024), ("zstd", 100_000)])
def test_a_snapshot_kafka_wrote_reads_as_kafka_reads_it(tmp_path: Path, codec: str,
                                                        batch_bytes: int) -> None:
    snapshot = kafka_snapshot(tmp_path / "kafka", codec, batch_bytes)
    ours = mdshell_tree(snapshot, "4.x")
    assert "topic-00019" in ours and ours.count("PartitionRegistration(") == 2000  # byId and byName
    run = kafka_tree(jars.KAFKA_4, [snapshot], ours)
    assert compare(run, jars.KAFKA_4, ours, 0) is None
    health = run_cli("-d", str(tmp_path / "kafka"), "health")
    assert "OK    data: the image is complete as of offset 1050" in health.stdout, health.stdout
