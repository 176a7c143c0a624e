"""The writer (mdshell.synth): exact bytes, determinism, layout, and agreement with the reader."""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mdshell.session import load
from mdshell.source import DirectorySource
from mdshell.synth import ClusterBuilder, Scenario, generate
from mdshell.synth.batches import CODECS, generic_metadata_batch, metadata_batch
from mdshell.synth.catalog import scram_keys
from mdshell.synth.fastpart import frame_values, partition_value
from mdshell.synth.files import meta_properties, partition_metadata, quorum_state
from mdshell.synth.state import PState
from mdshell.wire import codec, compression, frames, rewrite
from mdshell.wire import control as ctl
from mdshell.wire.batch import (
    HEADER,
    RecordSpec,
    encode_record,
    frame_metadata_value,
    iter_records,
    parse_header,
)
from mdshell.wire.primitives import uuid_str
from mdshell.wire.records import METADATA

from .conftest import batches_of, cli

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------- helpers

# 100k partitions in one zstd snapshot (bench/synth.py times the same scenario).
BIG = Scenario(brokers=30, controllers=3, topics=100, partitions_per_topic=1000, rf=3,
               history_changes=20, snapshot_at=["setup"], log_from="snapshot",
               compression=["zstd"], seed=3)


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def image_text(path: Path) -> list[str]:
    """`tree /image` through the real CLI (in-process), without the provenance leaf."""
    r = cli("-d", str(path), "--show-secrets", "tree", "/image")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    i = lines.index("provenance:")
    return lines[:i] + lines[i + 2:]


def without_snapshots(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for p in (dst / "__cluster_metadata-0").iterdir():
        if ".checkpoint" in p.name:
            p.unlink()
    return dst


def small_cluster(out: Path, **kw: Any) -> ClusterBuilder:
    b = ClusterBuilder(str(out), **kw)
    b.elect_controller_leader()
    b.bootstrap()
    if b.versions.controller_registration:
        for c in b.controller_ids:
            b.register_controller(c)
    for i in range(1, 4):
        b.register_broker(i)
        b.unfence_broker(i)
    return b


# ---------------------------------------------------------------- fast paths == generic encoder

ints = st.lists(st.integers(0, 2**31 - 1), max_size=5).map(tuple)
uuids = st.binary(min_size=16, max_size=16)
states = st.builds(
    PState, replicas=ints, isr=ints, leader=st.integers(-1, 2**31 - 1),
    leader_epoch=st.integers(-1, 2**31 - 1), partition_epoch=st.integers(-1, 2**31 - 1),
    directories=st.lists(uuids, max_size=5).map(tuple), removing=ints, adding=ints,
    leader_recovery_state=st.sampled_from([0, 1]), elr=st.none() | ints,
    last_known_elr=st.none() | ints)


def generic_partition_value(pid: int, tid: bytes, s: PState, version: int) -> bytes:
    """The same record built field by field for the generic codec (not via synth helpers)."""
    d: dict[str, Any] = {
        "partitionId": pid, "topicId": tid, "replicas": list(s.replicas), "isr": list(s.isr),
        "removingReplicas": list(s.removing), "addingReplicas": list(s.adding),
        "leader": s.leader, "leaderRecoveryState": s.leader_recovery_state,
        "leaderEpoch": s.leader_epoch, "partitionEpoch": s.partition_epoch,
        "directories": list(s.directories),
        "eligibleLeaderReplicas": None if s.elr is None else list(s.elr),
        "lastKnownElr": None if s.last_known_elr is None else list(s.last_known_elr),
    }
    return frame_metadata_value(3, version, codec.encode(METADATA[3], version, d))


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.integers(0, 2**31 - 2), uuids, states, st.sampled_from([0, 1, 2]))
def test_fast_partition_record_equals_generic_encoder(pid: int, tid: bytes, s: PState,
                                                     version: int) -> None:
    fast = partition_value(pid, tid, s, version)
    assert fast == generic_partition_value(pid, tid, s, version)
    again = partition_value(pid + 1, tid, s, version)  # the cached tail, a new partition id
    assert again == generic_partition_value(pid + 1, tid, s, version)


def test_fast_partition_record_decodes_to_its_state() -> None:
    s = PState((3, 1, 2), (3, 1), 3, 7, 9, (b"\x01" * 16, b"\x02" * 16, b"\x03" * 16),
               elr=(2,), last_known_elr=())
    raw = partition_value(42, b"\x09" * 16, s, 2)
    key, version, d = frames.decode_metadata(raw, 0, len(raw))
    assert (key, version) == (3, 2)
    assert isinstance(d, dict)
    assert d["partitionId"] == 42 and d["replicas"] == [3, 1, 2] and d["isr"] == [3, 1]
    assert (d["leader"], d["leaderEpoch"], d["partitionEpoch"]) == (3, 7, 9)
    assert d["eligibleLeaderReplicas"] == [2] and d["lastKnownElr"] == []


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=40), st.integers(0, 20000))
def test_fast_record_framing_equals_encode_record(values: list[bytes], first: int) -> None:
    raw, count = frame_values(values, first)
    assert count == len(values)
    assert raw == b"".join(encode_record(RecordSpec(first + i, 0, v))
                           for i, v in enumerate(values))


@pytest.mark.parametrize("codec_name", sorted(CODECS))
def test_metadata_batch_equals_generic_batch(codec_name: str) -> None:
    rng = random.Random(7)
    values = [rng.randbytes(rng.randint(0, 200)) for _ in range(50)]
    c = CODECS[codec_name]
    fast = metadata_batch(1234, values, epoch=5, timestamp=1_700_000_000_123, codec=c)
    assert fast == generic_metadata_batch(1234, values, epoch=5, timestamp=1_700_000_000_123,
                                          codec=c)
    b = parse_header(fast, 0)
    assert (b.base_offset, b.last_offset, b.count, b.epoch) == (1234, 1234 + 49, 50, 5)
    assert b.compression == c.code and b.crc_ok()
    assert [r.value for r in iter_records(b)] == values
    if codec_name == "snappy":
        assert fast[HEADER.size:HEADER.size + 8] == compression.XERIAL_MAGIC
    if codec_name == "snappy-raw":
        assert fast[HEADER.size:HEADER.size + 8] != compression.XERIAL_MAGIC


# ---------------------------------------------------------------- round trip and determinism


def reencode(path: Path) -> bytes:
    """Decode every batch and write it again with the generic encoder only."""
    return b"".join(rewrite.reencode(b) for b in batches_of(path))


@pytest.fixture(scope="module")
def rich_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every codec, kraft.version 1, ELR, overlapping snapshot batches, several segments."""
    out = tmp_path_factory.mktemp("rich")
    sc = Scenario(brokers=5, controllers=3, topics=6, partitions_per_topic=5, history_changes=250,
                  snapshot_at=["setup", "60%"], compression=sorted(CODECS),
                  snapshot_compression="zstd", metadata_version=25, kraft_version=1,
                  segment_bytes=16384, seed=11)
    generate(sc, str(out))
    return out


def test_decode_and_reencode_reproduces_every_file(rich_dir: Path) -> None:
    md = rich_dir / "__cluster_metadata-0"
    logs = sorted(md.glob("*.log"))
    checkpoints = sorted(md.glob("*.checkpoint"))
    assert len(logs) > 1 and len(checkpoints) >= 3  # two snapshots + the bootstrap one
    codes = {b.compression for p in logs for b in batches_of(p) if not b.is_control}
    assert codes == set(range(5))
    for path in [*logs, *checkpoints, rich_dir / "bootstrap.checkpoint"]:
        assert reencode(path) == path.read_bytes(), path.name


def test_non_atomic_snapshot_batches_as_kafka_37_lays_them_out(tmp_path: Path) -> None:
    """Kafka 3.7's ``BatchAccumulator.append(isAtomic=false)``: a batch begun inside a chunk
    starts at that chunk's first offset with deltas from 0, so offsets repeat; the records and
    their order are those of the atomic layout, and the image is the same."""
    b = small_cluster(tmp_path / "o", metadata_version=19)
    b.create_topic("t", 30, 3)
    b.finish()
    snap = Path(b.snapshot(max_batch_bytes=600, chunk_records=5))
    atomic = batches_of(snap)

    def images() -> tuple[list[str], list[str]]:
        loaded = load(DirectorySource(str(tmp_path / "o")))
        assert loaded.snapshot is not None and loaded.snapshot.name == snap.name
        alone = cli("-s", str(snap), "--show-secrets", "tree", "/image")
        assert alone.code == 0 and alone.err == ""
        lines = alone.out.splitlines()
        i = lines.index("provenance:")
        return image_text(tmp_path / "o"), lines[:i] + lines[i + 2:]

    atomic_images = images()
    assert Path(b.snapshot(non_atomic=True, max_batch_bytes=600, chunk_records=5)) == snap
    split = batches_of(snap)
    header = atomic[0].last_offset + 1
    data = [x for x in split if not x.is_control]
    assert len(data) > 3 and len(data) >= len(atomic) - 2
    assert all((x.base_offset - header) % 5 == 0 for x in data)  # a chunk's first offset
    assert all(x.last_offset - x.base_offset + 1 == x.count for x in data)  # deltas from 0
    assert any(x.base_offset <= w.last_offset for w, x in itertools.pairwise(data))
    assert any(x.last_offset <= w.last_offset for w, x in itertools.pairwise(data))
    assert split[-1].base_offset == atomic[-1].base_offset  # the footer: the true end

    def values(batches: list[Any]) -> list[bytes]:
        return [r.value for x in batches for r in iter_records(x)]

    assert values(split) == values(atomic)
    assert [r.offset for x in data for r in iter_records(x)] != list(
        range(header, atomic[-1].base_offset))
    assert images() == atomic_images
    assert reencode(snap) == snap.read_bytes()


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    def make(name: str, seed: int) -> dict[str, bytes]:
        sc = Scenario(brokers=4, controllers=3, topics=3, history_changes=120,
                      snapshot_at=["50%"], compression=["zstd", "gzip", "lz4", "snappy"],
                      kraft_version=1, partition_dirs=True, seed=seed)
        generate(sc, str(tmp_path / name))
        return files_of(tmp_path / name)

    a, b, c = make("a", 5), make("b", 5), make("c", 6)
    assert a == b
    assert a.keys() != c.keys() or any(a[k] != c[k] for k in a)


# ---------------------------------------------------------------- the model agrees with the reader


@pytest.mark.parametrize("level", [4, 7, 14, 19, 21, 25, 33])
def test_snapshot_image_equals_full_log_image(tmp_path: Path, level: int) -> None:
    """The writer's model, written as a snapshot, gives the image the whole log gives."""
    out = tmp_path / "d"
    generate(Scenario(brokers=5, controllers=3, topics=4, history_changes=300,
                      snapshot_at=["end"], metadata_version=level, seed=level), str(out))
    loaded = load(DirectorySource(str(out)))
    assert loaded.problems == [] and loaded.snapshot is not None
    assert loaded.snapshot.end_offset == loaded.image.provenance.offset + 1
    assert image_text(out) == image_text(without_snapshots(out, tmp_path / "log-only"))


# ---------------------------------------------------------------- layout of what is written


def test_snapshot_file_layout(tmp_path: Path) -> None:
    b = small_cluster(tmp_path / "s", kraft_version=1, controllers=[1, 2, 3],
                      metadata_version=21)
    b.create_topic("t", 4, 3)
    b.elect_controller_leader(2)
    b.noop(2)
    end, epoch, last_ts = b.next_offset, b.log.epoch, b.log.last_timestamp
    snap = Path(b.snapshot())
    assert snap.name == f"{end:020d}-{epoch:010d}.checkpoint"
    batches = batches_of(snap)
    head, foot = batches[0], batches[-1]
    assert head.is_control and foot.is_control and head.base_offset == 0
    types = [frames.control_type(r.key) for r in iter_records(head)]
    assert types == [ctl.SNAPSHOT_HEADER, ctl.KRAFT_VERSION, ctl.KRAFT_VOTERS]
    header = frames.decode_control(ctl.SNAPSHOT_HEADER, next(iter_records(head)).value)
    assert isinstance(header, dict) and header["lastContainedLogTimestamp"] == last_ts
    voters = frames.decode_control(ctl.KRAFT_VOTERS, list(iter_records(head))[2].value)
    assert isinstance(voters, dict)
    assert [v["voterId"] for v in voters["voters"]] == [1, 2, 3]
    assert voters["voters"][0]["endpoints"][0]["port"] == 9093
    assert [frames.control_type(r.key) for r in iter_records(foot)] == [ctl.SNAPSHOT_FOOTER]
    offsets = [r.offset for x in batches for r in iter_records(x)]
    assert offsets == list(range(len(offsets)))  # offsets start at 0 inside the file


def test_segments_roll_at_the_size_limit_and_are_named_by_base_offset(tmp_path: Path) -> None:
    b = small_cluster(tmp_path / "r", segment_bytes=2048, producer_snapshots=True)
    for i in range(8):
        b.create_topic(f"t{i}", 3, 3)
    b.finish()
    md = tmp_path / "r" / "__cluster_metadata-0"
    segs = sorted(md.glob("*.log"))
    assert len(segs) >= 3
    expected_next = 0
    for seg in segs:
        batches = batches_of(seg)
        assert int(seg.stem) == batches[0].base_offset == expected_next
        assert seg.stat().st_size <= 2048 or len(batches) == 1
        expected_next = batches[-1].last_offset + 1
    assert len(list(md.glob("*.snapshot"))) == len(segs) - 1


def test_large_operations_are_split_inside_a_transaction(tmp_path: Path) -> None:
    b = small_cluster(tmp_path / "t", max_records_per_batch=10)
    start = b.next_offset
    b.create_topic("wide", 35, 3)
    b.finish()
    seg = tmp_path / "t" / "__cluster_metadata-0" / "00000000000000000000.log"
    keys = []
    for x in batches_of(seg):
        if x.base_offset >= start:
            assert x.count <= 10
            for r in iter_records(x):
                keys.append(frames.decode_metadata(r.value, 0, len(r.value))[0])
    assert keys[0] == 23 and keys[-1] == 24  # Begin ... End
    assert keys.count(3) == 35 and keys.count(2) == 1


def test_side_files(tmp_path: Path) -> None:
    v0 = json.loads(quorum_state(data_version=0, leader_id=2, leader_epoch=7, voters=[1, 2, 3]))
    assert v0 == {"clusterId": "", "leaderId": 2, "leaderEpoch": 7, "votedId": -1,
                  "appliedOffset": 0, "currentVoters": [{"voterId": 1}, {"voterId": 2},
                                                        {"voterId": 3}], "data_version": 0}
    v1 = json.loads(quorum_state(data_version=1, leader_id=2, leader_epoch=7))
    assert v1 == {"leaderId": 2, "leaderEpoch": 7, "votedId": -1,
                  "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA", "data_version": 1}
    assert partition_metadata(bytes(range(16))) == b"version: 0\ntopic_id: AAECAwQFBgcICQoLDA0ODw"
    props = meta_properties(cluster_id="abc", node_id=3, directory_id=bytes(16),
                            written_ms=0).decode()
    assert props.splitlines() == ["#", "#Thu Jan 01 00:00:00 GMT 1970", "cluster.id=abc",
                                  "directory.id=AAAAAAAAAAAAAAAAAAAAAA", "node.id=3",
                                  "version=1"]


def test_scram_keys_match_rfc7677_example() -> None:
    """RFC 7677's SCRAM-SHA-256 exchange (user 'user', password 'pencil')."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    stored, server = scram_keys("pencil", salt, 4096, "sha256")
    nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    auth = (f"n=user,r=rOprNGfwEbeRWgbNEkqO,r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
            f"c=biws,r={nonce}").encode()
    signature = hmac.new(server, auth, hashlib.sha256).digest()
    assert base64.b64encode(signature) == b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_key = bytes(a ^ b for a, b in zip(
        proof, hmac.new(stored, auth, hashlib.sha256).digest(), strict=True))
    assert hashlib.sha256(client_key).digest() == stored


def test_synth_imports_only_the_wire_layer_and_the_standard_library() -> None:
    """Layering: generated data must check the reader, not reuse it."""
    import ast

    allowed_stdlib = set(sys.stdlib_module_names)
    for path in sorted((ROOT / "mdshell" / "synth").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level == 1:
                    continue  # mdshell.synth itself
                names = [("." * node.level) + (node.module or "")]
            else:
                continue
            for name in names:
                ok = (name.split(".")[0] in allowed_stdlib or name == "..wire"
                      or name.startswith("..wire.") or name.startswith("mdshell.wire"))
                assert ok, f"{path.name} imports {name}"


# ---------------------------------------------------------------- the command line


def synth(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mdshell.synth", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def test_cli_writes_a_loadable_log_dir(tmp_path: Path) -> None:
    out = tmp_path / "cli"
    r = synth("--brokers", "7", "--controllers", "3", "--topics", "12",
              "--partitions-per-topic", "5", "--rf", "3", "--history-changes", "0",
              "--snapshot-at", "setup", "--compression", "zstd", "--kraft-version", "1",
              "--partition-dirs", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "60 partitions" in r.stdout
    md = out / "__cluster_metadata-0"
    assert (out / "meta.properties").is_file() and (out / "bootstrap.checkpoint").is_file()
    assert json.loads((md / "quorum-state").read_text())["data_version"] == 1
    assert (md / "00000000000000000000-0000000000.checkpoint").is_file()
    loaded = load(DirectorySource(str(out)))
    assert loaded.problems == []
    img = loaded.image
    assert sorted(img.brokers) == list(range(7)) and sorted(img.controllers) == [1000, 1001, 1002]
    assert len(img.topics_by_name) == 12
    assert all(len(t.partitions) == 5 for t in img.topics_by_name.values())
    for t in img.topics_by_name.values():
        for p in t.partitions:
            text = (out / f"{t.name}-{p}" / "partition.metadata").read_text()
            assert text == f"version: 0\ntopic_id: {uuid_str(t.id)}"
    props = dict(line.split("=", 1) for line in (out / "meta.properties").read_text().splitlines()
                 if "=" in line)
    assert len(props["cluster.id"]) == 22 and props["node.id"] == "1000"


def test_cli_log_from_snapshot_starts_segments_at_the_snapshot(tmp_path: Path) -> None:
    out = tmp_path / "tail"
    r = synth("--brokers", "4", "--topics", "3", "--history-changes", "40", "--snapshot-at",
              "setup", "--log-from", "snapshot", "--out", str(out))
    assert r.returncode == 0, r.stderr
    md = out / "__cluster_metadata-0"
    (snap,) = md.glob("*.checkpoint")
    first = min(md.glob("*.log"))
    assert int(first.stem) == int(snap.name.split("-")[0]) > 0
    assert load(DirectorySource(str(out))).problems == []


@pytest.mark.parametrize(("args", "message"), [
    (["--rf", "4", "--brokers", "3"], "replication factor 4 needs at least 4 brokers"),
    (["--compression", "brotli"], "unknown codec 'brotli'"),
    (["--snapshot-at", "500", "--history-changes", "10"], "outside 0..10"),
    (["--log-from", "snapshot"], "needs a snapshot"),
])
def test_cli_rejects_bad_arguments(tmp_path: Path, args: list[str], message: str) -> None:
    r = synth(*args, "--out", str(tmp_path / "x"))
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr


def test_cli_refuses_a_non_empty_output_dir(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    r = synth("--out", str(tmp_path))
    assert r.returncode == 2 and "not an empty directory" in r.stderr
    assert os.listdir(tmp_path) == ["keep.txt"]


# ---------------------------------------------------------------- scale
# How fast this goes is measured by bench/synth.py, not asserted here.


def test_hundred_thousand_partitions_snapshot(tmp_path: Path) -> None:
    r = generate(BIG, str(tmp_path / "big"))
    assert r.partitions >= 100_000  # history may create a few more
    loaded = load(DirectorySource(str(tmp_path / "big")))
    assert loaded.problems == []
    assert sum(len(t.partitions) for t in loaded.image.topics_by_id.values()) == r.partitions
    (snap,) = (tmp_path / "big" / "__cluster_metadata-0").glob("*.checkpoint")
    assert sum(x.count for x in batches_of(snap) if not x.is_control) > 100_000
