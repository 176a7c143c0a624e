"""Issue 7: damaged or foreign data never hides, and answers read like an operator's tools.

Each test reproduces one defect of the issue on a copy made here (from ``fixtures/``, or from
the corpus when present) and checks the answer now given.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mdshell.commands import Shell
from mdshell.session import load
from mdshell.source import DirectorySource
from mdshell.tree.node import RenderOptions
from mdshell.wire.batch import RecordSpec, encode_batch

from .conftest import FIXTURES, ROOT, cli, run_cli
from .test_fuzz import Case, build_case, problems, random_cases

MD = "__cluster_metadata-0"


def shell(name: str | Path, *, secrets: bool = False) -> Shell:
    source = DirectorySource(str(FIXTURES / name if isinstance(name, str) else name))
    return Shell(source, load(source), RenderOptions(show_secrets=secrets))


def copy_fixture(name: str, tmp_path: Path) -> Path:
    dest = tmp_path / name
    shutil.copytree(FIXTURES / name, dest)
    return dest


# ---------------------------------------------------------------- item 4: a topic's own log


def _topic_log(directory: Path, topic_id: str | None) -> None:
    """A real partition log of a normal topic: JSON values with keys, like an app writes."""
    directory.mkdir(parents=True)
    records = [RecordSpec(i, i, b'{"order": %d, "total": 12.5}' % i, key=b"customer-%d" % i)
               for i in range(5)]
    batch = encode_batch(0, records, base_timestamp=1_737_000_000_000, producer_id=7,
                         producer_epoch=0, base_sequence=0)
    (directory / ("0" * 20 + ".log")).write_bytes(batch + batch.replace(
        b"\0" * 8, (5).to_bytes(8, "big"), 1))
    (directory / ("0" * 20 + ".index")).write_bytes(b"")
    if topic_id is not None:
        (directory / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}")


def test_a_topic_partition_directory_is_not_read_as_metadata(tmp_path: Path) -> None:
    d = tmp_path / "orders-0"
    _topic_log(d, "ev4vqMyda7BLGPYOrriX1A")
    out = run_cli("-d", str(d), "ls", "/image")
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    msg = lines[0]
    assert "not the __cluster_metadata log" in msg
    assert "records do not frame as metadata" in msg
    assert "partition 0 of topic 'orders'" in msg
    assert "topic id ev4vqMyda7BLGPYOrriX1A" in msg and "AAAAAAAAAAAAAAAAAAAAAQ" in msg
    assert "frame version" not in msg and "newer mdshell" not in msg


def test_a_topic_log_without_partition_metadata_is_known_by_its_records(
        tmp_path: Path) -> None:
    d = tmp_path / "copy"
    _topic_log(d, None)
    out = run_cli("-d", str(d), "records")
    assert out.returncode == 1 and "records do not frame as metadata" in out.stderr
    seg = d / ("0" * 20 + ".log")
    out = run_cli("-s", str(seg), "ls", "/image")
    assert out.returncode == 1 and "not the __cluster_metadata log" in out.stderr


def test_a_metadata_log_with_longer_frame_headers_is_known_as_metadata(
        tmp_path: Path) -> None:
    """Kafka's serde reads a frame header's varints in any length (frame version 1 as
    ``81 00``), so a log whose first records are written so is a metadata log: the records
    load, and nothing calls the directory a topic's own log."""
    from .fuzz import build as b

    longer = [b"\x81\x00" + v[1:] for v in (b.feature(), b.topic("orders"), b.partition(0))]
    d = tmp_path / "copy"
    d.mkdir()
    (d / b.segment_name(0)).write_bytes(b.values_batch(0, longer))
    out = run_cli("-d", str(d), "ls", "/image/topics/byName")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["orders"]


def test_partition_metadata_of_another_topic_refuses_the_directory(tmp_path: Path) -> None:
    """Even a log that frames as metadata: Kafka's own partition.metadata says otherwise."""
    d = copy_fixture("cluster-basic", tmp_path) / MD
    (d / "partition.metadata").write_text("version: 0\ntopic_id: ev4vqMyda7BLGPYOrriX1A")
    out = run_cli("-d", str(d), "ls", "/")
    assert out.returncode == 1 and "partition.metadata gives topic id" in out.stderr


def test_a_renamed_metadata_directory_still_loads(tmp_path: Path) -> None:
    """The name alone never refuses: copies get renamed."""
    src = copy_fixture("bad-log-gap", tmp_path) / MD
    renamed = src.rename(tmp_path / "backup-3")
    out = run_cli("-d", str(renamed), "ls", "/image")
    assert out.returncode == 0, out.stderr


# ---------------------------------------------------------------- item 6: delegation tokens


KAFKA_TOKEN = ("DelegationTokenDatatokenId=token-alice-1(owner=User:alice"
               "(tokenRequester=User:alice(renewers=User:bob User:carol, issueTimestamp={i}, "
               "maxTimestamp={m}), expiryTimestamp={e}")


def test_delegation_tokens_read_like_kafka_without_redaction() -> None:
    """The record holds no HMAC (Kafka derives it from the id and the controllers' secret),
    so nothing is redacted: owner, renewers and times are readable, in Kafka's form."""
    sh = shell("security")
    text = "\n".join(sh.run(["cat", "/image/delegationToken/token-alice-1"]).lines)
    data = sh.run(["cat", "/image/delegationToken/token-alice-1"]).json()[0]["value"]
    assert text == KAFKA_TOKEN.format(i=data["issueTimestamp"], m=data["maxTimestamp"],
                                      e=data["expiryTimestamp"])
    assert data["owner"] == "User:alice" and data["renewers"] == ["User:bob", "User:carol"]
    revealed = shell("security", secrets=True)
    assert list(revealed.run(["tree", "/image/delegationToken"]).lines) == list(
        sh.run(["tree", "/image/delegationToken"]).lines)
    rec = "\n".join(sh.run(["records", "--type", "DelegationToken", "--limit", "1"]).lines)
    assert '"owner":"User:alice"' in rec and "[redacted]" not in rec
    # SCRAM stays redacted
    assert "[redacted]" in "".join(sh.run(["cat", "/image/scram/SCRAM-SHA-256/alice"]).lines)


# ---------------------------------------------------------------- item 7: forms and errors


def test_diff_prints_java_booleans() -> None:
    sh = shell("health-fenced")
    first = sh.run(["records", "--type", "FenceBroker,UnfenceBroker,BrokerRegistrationChange"])
    offsets = [j["offset"] for j in first.json()]
    assert offsets, "the fixture fences a broker"
    r = sh.run(["diff", str(offsets[0] - 1), "latest", "/image/cluster/brokers"])
    text = "\n".join(r.lines)
    assert "fenced: " in text
    assert "True" not in text and "False" not in text and "None" not in text
    assert "false -> true" in text or "true -> false" in text


def test_negative_and_malformed_offsets_are_usage_errors() -> None:
    sh = shell("cluster-basic")
    r = sh.run(["at", "-1"])
    assert r.code == 2 and "offsets are 0 or more" in r.errors[0]
    assert "deleted" not in r.errors[0]
    d = str(FIXTURES / "cluster-basic")
    for bad in ("abc", "-5"):
        out = run_cli("-d", d, "--at", bad, "ls", "/")
        assert out.returncode == 2, (bad, out.stderr)


def test_missing_snapshot_file_is_a_plain_no_such_file(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such.checkpoint"
    out = run_cli("-s", str(missing), "ls", "/")
    assert out.returncode == 1
    assert out.stderr.strip() == f"mdshell: {missing}: no such file"


def test_a_full_disk_is_a_write_error_not_an_internal_error() -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "mdshell", "-d",
                               str(FIXTURES / "cluster-basic"), "tree", "/image"],
                              stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                              timeout=60)
    assert proc.returncode == 1
    assert "cannot write the output" in proc.stderr and "internal error" not in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_closed_stdout_is_a_write_error() -> None:
    proc = subprocess.run(
        f"{sys.executable} -m mdshell -d {FIXTURES / 'cluster-basic'} ls / >&-",
        shell=True, stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 1
    assert "cannot write the output" in proc.stderr and "internal error" not in proc.stderr


def test_json_is_valid_utf8_for_undecodable_file_names(tmp_path: Path) -> None:
    odd = os.fsdecode(bytes(tmp_path) + b"/caf\xe9-\xff")
    shutil.copytree(FIXTURES / "cluster-basic", odd)
    proc = subprocess.run([sys.executable, "-m", "mdshell", "-d", odd, "-o", "json", "tree",
                           "/local", "/log"], capture_output=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode("utf-8")  # strict: raises on invalid UTF-8
    data = json.loads(text)
    assert data[0]["tree"]["source"].endswith("caf\udce9-\udcff/__cluster_metadata-0")
    # text output gives the name back byte for byte
    proc = subprocess.run([sys.executable, "-m", "mdshell", "-d", odd, "cat", "/local/source"],
                          capture_output=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0 and b"caf\xe9-\xff" in proc.stdout


def test_unknown_values_are_null_with_a_reason() -> None:
    sh = shell("cluster-basic")
    data = sh.run(["cat", "/quorum/highWatermark", "/quorum/observers"]).json()
    for leaf in data:
        assert leaf["value"]["value"] is None and "live connection" in leaf["value"]["reason"]
    text = list(sh.run(["cat", "/quorum/highWatermark"]).lines)
    assert text[0].startswith("unknown offline")


# ---------------------------------------------------------------- item 8: small things


def test_meta_properties_version_0_gives_the_node_id(tmp_path: Path) -> None:
    d = copy_fixture("cluster-basic", tmp_path)
    (d / "meta.properties").write_text("#\nversion=0\nbroker.id=7\ncluster.id=abc\n")
    sh = shell(d)
    assert list(sh.run(["cat", "/quorum/nodeId"]).lines) == ["7"]


def test_find_with_a_negative_maxdepth_is_a_usage_error() -> None:
    r = shell("cluster-basic").run(["find", "/image", "-maxdepth", "-1"])
    assert r.code == 2 and "-maxdepth" in r.errors[0]


def test_man_of_an_unknown_command_exits_2() -> None:
    out = run_cli("-d", str(FIXTURES / "cluster-basic"), "man", "nosuch")
    assert out.returncode == 2 and "nosuch: unknown command" in out.stderr


def test_help_cmd_and_cmd_help_show_the_command_help() -> None:
    sh = shell("cluster-basic")
    man = list(sh.run(["man", "ls"]).lines)
    assert list(sh.run(["help", "ls"]).lines) == man
    r = sh.run(["ls", "--help"])
    assert r.code == 0 and list(r.lines) == man
    assert list(sh.run(["records", "--help"]).lines) == list(sh.run(["man", "records"]).lines)


def test_pipes_in_the_shell_say_they_are_not_supported() -> None:
    out = run_cli("-d", str(FIXTURES / "cluster-basic"), stdin="ls /image | head\nls '|'\n")
    err = out.stderr.splitlines()
    assert any("pipes (|) are not supported" in line for line in err), out.stderr
    assert "line 2: ls: |: No such file or directory." in out.stderr  # quoted: literal


def test_health_grammar_for_one_and_for_none() -> None:
    from mdshell.image import model as m
    from mdshell.image.health import run_checks

    img = shell("health-fenced").session.loaded.image
    two = m.Image(brokers={4: img.brokers[4], 5: img.brokers[5]})
    summaries = {c.name: c.summary for c in run_checks(two, None)}
    assert summaries["fenced brokers"] == "1 of 2 registered brokers is fenced"
    assert summaries["controlled shutdown"] == "1 broker is in controlled shutdown"
    assert summaries["offline partitions"] == "there are no partitions"
    assert not any("all 0" in s or "all 1 " in s for s in summaries.values())


# ---------------------------------------------------------------- item 13: health as data


def test_health_json_items_are_objects() -> None:
    out = run_cli("-d", str(FIXTURES / "health-under-min-isr"), "-o", "json", "health")
    data = json.loads(out.stdout)
    check = next(c for c in data["checks"] if c["name"] == "under-min-ISR partitions")
    item = check["items"][0]
    assert check["items"] == [{"check": "under-min-ISR partitions", "status": "fail",
                               "message": item["message"], "topic": "payments",
                               "partition": 0, "isr": item["isr"],
                               "minIsr": 2, "minIsrSource": "topic config"}]
    assert item["message"].startswith("payments-0: isr [") and "details" not in check
    out = run_cli("-d", str(FIXTURES / "health-unsupported-feature"), "-o", "json", "health")
    check = next(c for c in json.loads(out.stdout)["checks"] if c["name"] == "feature support")
    assert check["items"] == [{"check": "feature support", "status": check["status"],
                               "message": "broker 4 supports metadata.version 1-19, but the "
                                          "finalized level is 21 (3.9-IV0)",
                               "broker": 4, "feature": "metadata.version", "minSupported": 1,
                               "maxSupported": 19, "finalized": 21}]


# ---------------------------------------------------------------- item 11: records --batches


def _dump_log(files: list[Path]) -> dict[str, list[str]]:
    """Kafka 3.7's kafka-dump-log batch lines, per file path."""
    from .kafka import jars

    cp = jars.classpath(jars.KAFKA_37)
    proc = subprocess.run([jars.java(), "-cp", cp, "kafka.tools.DumpLogSegments", "--files",
                           ",".join(map(str, files))], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, list[str]] = {}
    name = ""
    for line in proc.stdout.splitlines():
        if line.startswith("Dumping "):
            name = line[len("Dumping "):]
            out[name] = []
        elif line.startswith("baseOffset: "):
            out[name].append(line)
    return out


@pytest.mark.oracle
def test_records_batches_match_kafka_dump_log(tmp_path: Path) -> None:
    """Every codec, control and transactional batches, and a batch with a bad CRC."""
    dirs = [FIXTURES / "codecs", FIXTURES / "transactions", FIXTURES / "bad-crc"]
    files = [f for d in dirs for f in sorted((d / MD).glob("*.log"))]
    kafka = _dump_log(files)
    for d in dirs:
        r = shell(d).run(["records", "--batches"])
        ours: dict[str, list[str]] = {}
        name = ""
        for line in r.lines:
            if line.startswith("Dumping "):
                name = line[len("Dumping "):]
                ours[name] = []
            else:
                ours[name].append(line)
        for f in sorted((d / MD).glob("*.log")):
            assert ours[f.name] == kafka[str(f)], f
    flags = shell("transactions").run(["records", "--batches"]).json()
    assert any(b["isControl"] for b in flags) and {b["compressCodec"] for b in shell(
        "codecs").run(["records", "--batches"]).json()} >= {"gzip", "snappy", "lz4", "zstd"}
    bad = shell("bad-crc").run(["records", "--batches", "--from", "15", "--to", "17"]).json()
    assert [(b["baseOffset"], b["crcValid"], b["position"]) for b in bad] == [(15, False, 1661)]


# ---------------------------------------------------------------- item 9: topic names


def test_records_name_the_topic_beside_its_id_and_filter_by_topic() -> None:
    sh = shell("cluster-basic")
    ids = {d: next(iter(sh.run(["cat", f"/image/topics/byName/{d}/id"]).lines))
           for d in ("topic-0", "topic-1")}
    rows = sh.run(["records", "--topic", "topic-1"]).json()
    kinds = {r["type"] for r in rows}
    assert {"TopicRecord", "PartitionRecord", "PartitionChangeRecord", "ConfigRecord"} <= kinds
    for r in rows:
        d = r["data"]
        if "topicId" in d:
            assert d["topicId"] == ids["topic-1"]
            if r["type"] != "TopicRecord":
                assert d["topicName"] == "topic-1"
        else:
            assert d["resourceName"] == "topic-1" and d["resourceType"] == 2
    everything = sh.run(["records", "--type", "PartitionChange"]).json()
    about = [r for r in everything if r["data"]["topicId"] == ids["topic-1"]]
    assert about == [r for r in rows if r["type"] == "PartitionChangeRecord"]
    text = next(iter(sh.run(["records", "--type", "PartitionChange", "--limit", "1"]).lines))
    assert '"topicName":"topic-' in text


def test_changes_of_a_topic_include_its_configs_and_names() -> None:
    sh = shell("cluster-basic")
    found = sh.run(["changes", "/image/topics/byName/topic-1"]).json()
    configs = [e for e in found if e["type"] == "ConfigRecord"]
    assert configs and all(e["data"]["resourceName"] == "topic-1" for e in configs)
    assert all(e["data"].get("topicName") == "topic-1" for e in found
               if e["type"].startswith("Partition"))
    tid = next(iter(sh.run(["cat", "/image/topics/byName/topic-1/id"]).lines))
    by_id = sh.run(["changes", f"/image/topics/byId/{tid}"]).json()
    assert [e["offset"] for e in by_id] == [e["offset"] for e in found]
    # a partition's history stays about the partition
    part = sh.run(["changes", "/image/topics/byName/topic-1/0"]).json()
    assert not any(e["type"] == "ConfigRecord" for e in part)


def test_diff_and_completion_name_topics_under_by_id() -> None:
    from mdshell.repl import complete

    sh = shell("cluster-basic")
    lines = list(sh.run(["diff", "100", "latest", "/image/topics/byId"]).lines)
    changed = [x for x in lines if x.startswith("~ /image/topics/byId/")]
    assert changed and all(x.endswith(")") and " (topic topic-" in x for x in changed)
    data = sh.run(["diff", "100", "latest", "/image/topics/byId"]).json()
    assert all(c["topicName"].startswith("topic-") for c in data["changes"])
    metas = {c.display.rstrip("/"): c.meta for c in complete(sh, "ls /image/topics/byId/")}
    for name in ("topic-0", "topic-1", "topic-2", "topic-3"):
        tid = next(iter(sh.run(["cat", f"/image/topics/byName/{name}/id"]).lines))
        assert metas[tid] == name


# ---------------------------------------------------------------- item 10: table views


def test_topics_view_like_kafka_topics_describe() -> None:
    sh = shell("transactions")
    rows = sh.run(["topics"]).json()
    assert [r["topic"] for r in rows] == sorted(r["topic"] for r in rows)
    big = next(r for r in rows if r["topic"] == "big-topic")
    assert big["partitionCount"] == 50 and big["replicationFactor"] == 2
    assert big["topicId"] == next(iter(sh.run(["cat", "/image/topics/byName/big-topic/id"]).lines))
    lines = list(sh.run(["topics", "--describe", "big-topic"]).lines)
    header = lines[0]
    assert header.split() == ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "ELR", "LAST",
                              "KNOWN", "ELR", "ADDING", "REMOVING"]
    pids = [int(line.split()[1]) for line in lines[1:]]
    assert pids == list(range(50))  # numeric order, not /image's 0, 1, 10, 11...
    assert all(line.index(line.split()[1]) == header.index("PARTITION") for line in lines[1:])
    # configs set on a topic (the image holds only those that differ from the defaults)
    cb = shell("cluster-basic").run(["topics", "topic-1"]).json()
    assert cb[0]["configs"] == {"retention.ms": "604800000", "segment.bytes": "104857600"}


@pytest.mark.parametrize(("fixture", "flag", "expected"), [
    ("health-offline", "--offline", [("orders", 1)]),
    ("health-under-replicated", "--under-replicated", [("orders", 2)]),
    ("health-under-min-isr", "--under-min-isr", [("payments", 0)]),
])
def test_topics_filters(fixture: str, flag: str, expected: list[tuple[str, int]]) -> None:
    sh = shell(fixture)
    rows = sh.run(["topics", flag]).json()
    assert [(r["topic"], r["partition"]) for r in rows] == expected
    text = list(sh.run(["topics", flag]).lines)
    assert len(text) == 1 + len(expected)
    assert list(shell("cluster-basic").run(["topics", "--offline"]).lines) == []


def test_brokers_and_controllers_views() -> None:
    sh = shell("health-fenced")
    rows = sh.run(["brokers"]).json()
    states = {r["id"]: r["state"] for r in rows}
    assert states[4] == "fenced" and states[5] == "shutting-down" and states[1] == "unfenced"
    assert rows[0]["endpoints"] == ["PLAINTEXT://broker-1.kafka.internal:9092"]
    assert rows[0]["rack"] == "rack-1"
    assert rows[0]["supportedFeatures"]["metadata.version"] == {"min": 1, "max": 21}
    lines = list(sh.run(["brokers"]).lines)
    assert lines[0].split()[:3] == ["ID", "STATE", "EPOCH"]
    assert "PLAINTEXT://broker-1.kafka.internal:9092" in lines[1]
    assert "metadata.version=1-21" in lines[1]
    stale = shell("health-stale-controller").run(["controllers"]).json()
    assert {r["id"]: r["voter"] for r in stale}[4] is False
    assert all(r["voter"] for r in stale if r["id"] != 4)
    assert stale[0]["endpoints"][0].startswith("CONTROLLER://")


def test_quorum_view_like_kafka_metadata_quorum() -> None:
    sh = shell("kraft-v1")
    status = sh.run(["quorum"]).json()
    assert status["leaderId"] == 2 and status["highWatermark"] is None
    assert "highWatermark" in status["unknown"]
    assert [v["id"] for v in status["currentVoters"]] == [1, 2, 3]
    lines = list(sh.run(["quorum", "--status"]).lines)
    assert lines[0].startswith("ClusterId:") and any(
        x.startswith("HighWatermark:") and "unknown offline" in x for x in lines)
    assert len({line.index(line.split(":", 1)[1].strip()) for line in lines}) == 1  # aligned
    rep = sh.run(["quorum", "--replication"]).json()
    assert [(r["nodeId"], r["status"]) for r in rep] == [(1, "Follower"), (2, "Leader"),
                                                         (3, "Follower")]
    assert rep[0]["logEndOffset"] == status["logEndOffset"] and rep[1]["logEndOffset"] is None


def test_features_view_like_kafka_features_describe() -> None:
    rows = shell("health-unsupported-feature").run(["features"]).json()
    mv = next(r for r in rows if r["feature"] == "metadata.version")
    # broker 4 supports only up to 19: that is the ceiling for the whole cluster
    assert (mv["finalizedLevel"], mv["supportedMax"]) == (21, 19)
    lines = list(shell("kraft-v1").run(["features"]).lines)
    assert lines[0].split()[0] == "FEATURE"
    assert any(x.split()[0] == "metadata.version" and "3.9-IV0 (21)" in x for x in lines)
    assert any(x.split() == ["kraft.version", "0", "1", "1"] for x in lines)


@pytest.mark.corpus
def test_views_on_the_corpus_agree_with_partition_metadata() -> None:
    from .conftest import corpus_dirs, need_corpus

    need_corpus()
    checked = 0
    for d in corpus_dirs():
        dirs = [p for p in d.iterdir() if (p / "partition.metadata").is_file()
                and p.name != MD]
        if not dirs:
            continue
        rows = {r["topic"]: r["topicId"] for r in shell(d).run(["topics"]).json()}
        for p in dirs:
            topic = p.name.rsplit("-", 1)[0]
            tid = next(line.split(":", 1)[1].strip() for line in
                       (p / "partition.metadata").read_text().splitlines()
                       if line.startswith("topic_id"))
            if topic in rows:
                assert rows[topic] == tid, (d.name, topic)
                checked += 1
    assert checked > 0


# ---------------------------------------------------------------- item 12: at, older snapshots


def _image_without_provenance(sh: Shell) -> list[str]:
    out = list(sh.run(["tree", "/image"]).lines)
    i = out.index("provenance:")
    return out[:i] + out[i + 2:]


def test_at_travels_back_to_snapshots_below_a_deleted_log(tmp_path: Path) -> None:
    """The segments below the newest snapshots are deleted (as Kafka does after a snapshot):
    the older snapshot still gives an exact image, equal to replaying the full log to it."""
    full = shell("segments-snapshots", secrets=True)
    d = copy_fixture("segments-snapshots", tmp_path)
    for seg in ("00000000000000000000.log", "00000000000000000037.log"):
        (d / MD / seg).unlink()
    sh = shell(d, secrets=True)
    r = sh.run(["at", "earliest"])
    assert r.code == 0 and next(iter(r.lines)).startswith("image as of offset 67 "), r.errors
    assert list(sh.run(["tree", "/local/warnings"]).lines) == []  # nothing is missing
    assert full.run(["at", "67"]).code == 0
    assert _image_without_provenance(sh) == _image_without_provenance(full)
    # between the snapshot and the log there is nothing to rebuild from: refused, with help
    r = sh.run(["at", "80"])
    assert r.code == 1 and "offsets 68-77 are missing from this copy's log" in r.errors[0]
    assert "the nearest images are the snapshots at offsets 67 and 93" in r.errors[0]


def test_at_takes_a_time() -> None:
    from mdshell.tree.javafmt import iso_zoned_utc

    from .conftest import batches_of

    sh = shell("cluster-basic", secrets=True)
    batches = [b for f in sorted((FIXTURES / "cluster-basic" / MD).glob("*.log"))
               for b in batches_of(f)]
    middle = batches[len(batches) // 2]
    when = iso_zoned_utc(middle.max_timestamp + 1)[:-5]  # ...T23:06:50.1Z
    expected = max(b.last_offset for b in batches if b.max_timestamp <= middle.max_timestamp + 1)
    r = sh.run(["at", when])
    assert r.code == 0, r.errors
    assert next(iter(r.lines)).startswith(f"image as of offset {expected} ")
    by_time = _image_without_provenance(sh)
    sh.run(["at", str(expected)])
    assert by_time == _image_without_provenance(sh)
    r = sh.run(["at", "2000-01-01"])
    assert r.code == 1 and "before the oldest data" in r.errors[0]
    out = run_cli("-d", str(FIXTURES / "cluster-basic"), "--at", when, "cat", "/local/atOffset")
    assert out.returncode == 0 and out.stdout.strip() == str(expected)


def test_at_a_time_before_the_log_uses_the_newest_older_snapshot(tmp_path: Path) -> None:
    from mdshell.source.batchscan import snapshot_points
    from mdshell.tree.javafmt import iso_zoned_utc

    d = copy_fixture("segments-snapshots", tmp_path)
    for seg in ("00000000000000000000.log", "00000000000000000037.log"):
        (d / MD / seg).unlink()
    sh = shell(d)
    points = snapshot_points(sh.session.source)
    assert [p.offset for p in points] == [67, 93]
    t = points[0].time_ms
    assert t is not None
    r = sh.run(["at", iso_zoned_utc(t + 1)[:-5]])
    assert r.code == 0, r.errors
    lines = list(r.lines)
    assert lines[0].startswith("image as of offset 67 ") and "newest snapshot" in lines[1]


# ---------------------------------------------------------------- item 14: the README and docs


def test_readme_documents_commands_options_python_and_shared_data() -> None:
    import re
    import tomllib

    from mdshell.cli import build_parser
    from mdshell.commands import REGISTRY

    from .conftest import GOLDEN

    readme = (ROOT / "README.md").read_text()
    commands = (ROOT / "docs" / "commands.md").read_text()
    table = commands.split("## Commands", 1)[1].split("\n## ", 1)[0]
    for name in REGISTRY:
        assert re.search(rf"`{name}\b", table), f"{name} is not in docs/commands.md's table"
    usage = commands.split("## Using it", 1)[1].split("```", 2)[1]
    for action in build_parser()._actions:
        for opt in action.option_strings:
            if opt.startswith("--") and any(o.startswith("-") and not o.startswith("--")
                                            for o in action.option_strings):
                continue  # the short form stands for both
            assert opt in usage, f"{opt} is missing from docs/commands.md's usage line"
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11" and "Python 3.11 or newer" in readme
    development = (ROOT / "docs" / "development.md").read_text()
    assert "MDSHELL_SHARED" in development and "../shared" in development
    assert "docs/development.md" in readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    if GOLDEN.is_dir():
        ok = [p for p in GOLDEN.glob("*/*.tree.rc") if p.read_text().strip() == "0"]
        assert f"{len(ok)} reference outputs" in (ROOT / "docs" / "fidelity.md").read_text()


def test_health_lists_partitions_in_numeric_order() -> None:
    """Outside /image partitions sort as numbers (2 before 10), not as Kafka's tree names."""
    from mdshell.image import model as m
    from mdshell.image.health import run_checks

    topic = m.Topic("orders", b"\1" * 16)
    for pid in (10, 2, 1, 11, 0):
        topic.partitions[pid] = m.Partition([1, 2], [b"\0" * 16] * 2, [1], [], [], [], [], 1,
                                            0, 0, 0)
    img = m.Image(topics_by_id={topic.id: topic}, topics_by_name={"orders": topic})
    check = next(c for c in run_checks(img, None) if c.name == "under-replicated partitions")
    assert [d["partition"] for d in check.details()] == [0, 1, 2, 10, 11]
    assert [i.split(":")[0] for i in check.items] == [f"orders-{p}" for p in (0, 1, 2, 10, 11)]


# ---------------------------------------------------------------- the new commands on damage


NEW_COMMANDS: list[list[str]] = [
    ["topics", "--describe"], ["-o", "json", "topics"], ["brokers"], ["controllers"],
    ["quorum"], ["quorum", "--replication"], ["-o", "json", "features"],
    ["records", "--batches"], ["records", "--topic", "orders"],
    ["at", "2024-04-24T23:06:50Z"], ["at", "earliest"],
]


def _damage_cases() -> list[object]:
    return [pytest.param(c, id=c.id) for c in random_cases()[::2]]


@pytest.mark.parametrize("case", _damage_cases())
def test_new_commands_on_damaged_copies(case: Case, tmp_path: Path) -> None:
    """The fuzz suite's damaged copies (every other case): exit 0 or 1, never a crash, JSON
    that parses."""
    log_dir, what = build_case(case, tmp_path)
    bad: list[str] = []
    for cmd in NEW_COMMANDS:
        bad += problems(["-d", str(log_dir), *cmd])
    assert not bad, f"damage: {what}\n" + "\n".join(bad)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_one_shot_says_a_load_warning_once(fmt: str) -> None:
    """The load and `records` read the same empty segment: the warning is printed once."""
    run = cli("-d", str(FIXTURES / "bad-empty-log"), "-o", fmt, "records")
    assert run.code == 0
    assert run.err.count("empty segment (nothing written yet)") == 1, run.err


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_script_says_a_load_warning_once(fmt: str) -> None:
    """Commands read line by line (stdin not a terminal): the load's warning is not said
    again by `records`, however often it runs; the listing of `records --batches` says a
    truncated batch in the load's words and size (it gave the batch's length field, 12 bytes
    less), so that is said once too."""
    run = run_cli("-d", str(FIXTURES / "bad-empty-log"), "-o", fmt,
                  stdin="records\nls /\nrecords\n")
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("empty segment (nothing written yet)") == 1, run.stderr
    run = run_cli("-d", str(FIXTURES / "bad-truncated-tail"), "-o", fmt,
                  stdin="records --batches\nrecords --batches\n")
    assert run.stderr.count("is incomplete (171 of 343 bytes)") == 1, run.stderr
    assert "the listing stops there" not in run.stderr and "331" not in run.stderr


# ---------------------------------------------------------------- a segment's sparse tail


def _limited_cli(limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    """mdshell with its address space bounded to ``limit`` bytes."""
    import resource

    def bound() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([sys.executable, "-m", "mdshell", *args], capture_output=True,
                          text=True, cwd=ROOT, preexec_fn=bound, timeout=120)


def test_a_segment_with_gigabytes_of_hole_is_read_without_them(tmp_path: Path) -> None:
    """A segment whose rest is a hole (preallocated, as Kafka does with file.preallocate,
    or extended without writing) reads as zeros: nothing more was written. Every reader
    says what it says of the segment without the hole, in bounded memory (it used to read
    the whole file, and copy its tail to check it: 2x its size)."""
    d = copy_fixture("cluster-basic", tmp_path / "sparse") / MD
    seg = sorted(d.glob("*.log"))[-1]
    with open(seg, "rb") as f:
        if os.lseek(f.fileno(), 0, os.SEEK_HOLE) < seg.stat().st_size:
            pytest.skip("the file system has no holes to show")
    os.truncate(seg, 8 << 30)
    with open(seg, "rb") as f:
        if os.lseek(f.fileno(), 0, os.SEEK_HOLE) >= 8 << 30:
            pytest.skip("the file system does not say where a hole is (SEEK_HOLE)")
    plain = FIXTURES / "cluster-basic" / MD
    for args in (("-o", "json", "health"), ("tree", "/image"), ("records", "--limit", "40")):
        want = run_cli("-d", str(plain), *args)
        got = _limited_cli(2 << 30, "-d", str(d), *args)
        assert want.returncode == 0 and want.stdout, (args, want.stderr)
        assert (got.returncode, got.stdout) == (0, want.stdout.replace(str(plain), str(d))), (
            args, got.stderr[-500:])
    got = _limited_cli(2 << 30, "-s", str(seg), "records", "--limit", "3")
    assert got.returncode == 0 and got.stdout.count("offset=") == 3, got.stderr[-500:]
