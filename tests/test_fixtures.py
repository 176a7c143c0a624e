"""The generated fixtures: up to date, small, and what mdshell shows for each of them.

Expected messages and exit codes of the bad inputs come from fixtures/README.md (generated
from scripts/make_fixtures.py); the content checks below are written from Kafka's semantics.
"""

from __future__ import annotations

import builtins
import hashlib
import hmac
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mdshell.session import load
from mdshell.source import DirectorySource
from mdshell.wire import control as ctl
from mdshell.wire import frames
from mdshell.wire.batch import iter_records
from mdshell.wire.primitives import uuid_str

from .conftest import batches_of, cli, run_cli

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SCRIPT = ROOT / "scripts" / "make_fixtures.py"
MD = "__cluster_metadata-0"


# ---------------------------------------------------------------- helpers


def readme_rows() -> tuple[list[str], list[tuple[str, str, int, int]]]:
    """(content fixtures, [(bad fixture, message, exit, strict exit)]) from the README."""
    content, bad = [], []
    for line in (FIXTURES / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `"):
            continue
        name = cells[0].strip("`")
        if len(cells) == 2:
            content.append(name)
        else:
            bad.append((name, cells[2].strip("`"), int(cells[3]), int(cells[4])))
    return content, bad


CONTENT, BAD = readme_rows()


def run(*args: str) -> tuple[int, str, str]:
    """The real command line, in-process (fast): (exit code, stdout, stderr)."""
    r = cli(*args)
    assert "Traceback" not in r.err
    return r.code, r.out, r.err


def show(fixture: str, *command: str) -> list[str]:
    rc, out, err = run("-d", str(FIXTURES / fixture), "--show-secrets", *command)
    assert rc == 0, err
    return out.splitlines()


def ls(fixture: str, path: str) -> list[str]:
    return show(fixture, "ls", path)


def cat(fixture: str, path: str) -> str:
    (line,) = show(fixture, "cat", path)
    return line


def partition(fixture: str, topic: str, pid: int) -> dict[str, Any]:
    """A PartitionRegistration leaf, parsed into its fields."""
    text = cat(fixture, f"/image/topics/byName/{topic}/{pid}")
    m = re.fullmatch(r"PartitionRegistration\((.*)\)", text)
    assert m, text
    fields: dict[str, Any] = {}
    for key, value in re.findall(r"(\w+)=(\[[^\]]*\]|[^,]+)", m.group(1)):
        if value.startswith("["):
            items = [x for x in value[1:-1].split(", ") if x]
            fields[key] = [int(x) for x in items] if key != "directories" else items
        else:
            fields[key] = int(value) if value.lstrip("-").isdigit() else value
    return fields


def metadata_keys(path: Path) -> list[int]:
    keys = []
    for b in batches_of(path):
        if not b.is_control:
            keys += [frames.decode_metadata(r.value, 0, len(r.value))[0] for r in iter_records(b)]
    return keys


def controls(path: Path) -> list[tuple[int, Any]]:
    return [(frames.control_type(r.key), frames.decode_control(frames.control_type(r.key),
                                                                 r.value))
            for b in batches_of(path) if b.is_control for r in iter_records(b)]


# ---------------------------------------------------------------- the fixture set itself


def test_fixtures_are_generated_deterministically_and_up_to_date(tmp_path: Path) -> None:
    for out in ("a", "b"):
        r = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path / out)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr

    def tree(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
                if p.is_file()}

    first, second = tree(tmp_path / "a"), tree(tmp_path / "b")
    assert first == second
    committed = tree(FIXTURES)
    assert sorted(committed) == sorted(first), "run scripts/make_fixtures.py and commit"
    stale = [k for k in first if first[k] != committed[k]]
    assert not stale, f"stale fixtures (run scripts/make_fixtures.py): {stale[:5]}"


def test_fixtures_are_small_and_all_documented() -> None:
    total = sum(p.stat().st_size for p in FIXTURES.rglob("*") if p.is_file())
    assert total < 3_000_000
    dirs = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
    assert dirs == sorted(CONTENT + [b[0] for b in BAD])
    assert len(CONTENT) >= 8 and len(BAD) >= 7


@pytest.mark.parametrize("name", CONTENT)
def test_content_fixture_loads_cleanly(name: str) -> None:
    loaded = load(DirectorySource(str(FIXTURES / name)))
    assert loaded.problems == []
    assert loaded.image.metadata_version is not None
    assert loaded.complete_from_zero
    rc, out, err = run("-d", str(FIXTURES / name), "--strict", "ls", "/image")
    assert (rc, err) == (0, "")
    assert "topics" in out.split()


# ---------------------------------------------------------------- bad inputs (README table)


@pytest.mark.parametrize(("name", "message", "code", "strict_code"), BAD,
                         ids=[b[0] for b in BAD])
def test_bad_fixture_message_and_exit_code(name: str, message: str, code: int,
                                           strict_code: int) -> None:
    r = run_cli("-d", str(FIXTURES / name), "ls", "/")
    assert r.returncode == code
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    if code == 0:
        assert lines and all(x.startswith("mdshell: warning: ") for x in lines)
        assert "image" in r.stdout.split()
    else:
        assert len(lines) == 1 and lines[0].startswith("mdshell: ")
    strict = run_cli("-d", str(FIXTURES / name), "--strict", "ls", "/")
    assert strict.returncode == strict_code
    assert message in strict.stderr and "Traceback" not in strict.stderr


def test_missing_path_is_one_line_exit_1(tmp_path: Path) -> None:
    r = run_cli("-d", str(tmp_path / "nope"), "ls", "/")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    (line,) = r.stderr.splitlines()
    assert "no such directory" in line and str(tmp_path / "nope") in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_directory_really_chmod(tmp_path: Path) -> None:
    d = shutil.copytree(FIXTURES / "codecs", tmp_path / "c")
    (d / MD).chmod(0)
    try:
        r = run_cli("-d", str(d), "ls", "/")
    finally:
        (d / MD).chmod(0o755)
    assert r.returncode == 1 and "permission denied" in r.stderr
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.fixture
def deny(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make one path unreadable for this process, as chmod 000 would for a normal user."""
    denied: set[str] = set()
    real_open, real_listdir = builtins.open, os.listdir

    def fake_open(file: Any, *a: Any, **kw: Any) -> Any:
        if os.path.abspath(str(file)) in denied:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *a, **kw)

    def fake_listdir(path: Any = ".") -> list[str]:
        if os.path.abspath(str(path)) in denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real_listdir(path)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "listdir", fake_listdir)
    return denied


def test_unreadable_directory_is_one_line_exit_1(deny: set[str]) -> None:
    deny.add(str(FIXTURES / "codecs" / MD))
    rc, out, err = run("-d", str(FIXTURES / "codecs"), "ls", "/")
    assert rc == 1 and out == ""
    (line,) = err.splitlines()
    assert "permission denied" in line


def test_unreadable_segment_warns_and_keeps_what_came_before(deny: set[str]) -> None:
    segs = sorted((FIXTURES / "codecs" / MD).glob("*.log"))
    deny.add(str(segs[3]))
    rc, out, err = run("-d", str(FIXTURES / "codecs"), "ls", "/image/topics/byName")
    assert rc == 0
    assert "permission denied" in err and err.startswith("mdshell: warning: ")
    assert out.split() == ["topic-gzip", "topic-none"]  # segments 1 and 2 of 7
    rc, _, err = run("-d", str(FIXTURES / "codecs"), "--strict", "ls", "/")
    assert rc == 1 and "permission denied" in err


def test_bad_truncated_tail_keeps_everything_before_the_cut() -> None:
    assert ls("bad-truncated-tail", "/image/topics/byName") == ["kept-topic"]


def test_bad_crc_stops_at_the_damaged_batch() -> None:
    rc, out, err = run("-d", str(FIXTURES / "bad-crc"), "ls", "/image/topics/byName")
    assert rc == 0 and out.split() == ["before-crc"]
    assert "later segments after 00000000000000000000.log are not applied" in err


def test_bad_log_gap_applies_the_tail_it_has() -> None:
    loaded = load(DirectorySource(str(FIXTURES / "bad-log-gap")))
    assert not loaded.complete_from_zero
    assert sorted(loaded.image.topics_by_name) == ["late"]


def test_bad_unknown_records_are_reported_and_skipped() -> None:
    rc, out, err = run("-d", str(FIXTURES / "bad-unknown-records"), "ls",
                       "/image/topics/byName")
    assert rc == 0
    assert out.split() == ["after-unknown", "before-unknown"]
    assert "unknown metadata record type 99" in err
    assert "unknown version 7 of TopicRecord" in err
    # Each once, then once what they mean for the image (records it does not hold).
    assert err.splitlines()[2:] == [
        "mdshell: warning: the image may be wrong because of an unknown record type or version "
        "(not applied) at offset 14 (and 1 more problem); it is as of offset 17"]


def test_bad_half_snapshot_falls_back_to_the_older_snapshot() -> None:
    d = FIXTURES / "bad-half-snapshot"
    snaps = sorted((d / MD).glob("*.checkpoint"))
    assert len(snaps) == 2
    loaded = load(DirectorySource(str(d)))
    assert loaded.snapshot is not None and loaded.snapshot.name == snaps[0].name
    assert sorted(loaded.image.topics_by_name) == ["first", "second", "third"]


def test_bad_empty_log_is_an_empty_image() -> None:
    rc, out, err = run("-d", str(FIXTURES / "bad-empty-log"), "ls", "/image/topics/byName")
    assert (rc, out) == (0, "")
    assert "empty segment" in err


# ---------------------------------------------------------------- content


def test_codecs_each_segment_uses_its_codec() -> None:
    segs = sorted((FIXTURES / "codecs" / MD).glob("*.log"))
    expected = ["none", "gzip", "snappy", "snappy-raw", "lz4", "zstd"]
    codes = {"none": 0, "gzip": 1, "snappy": 2, "snappy-raw": 2, "lz4": 3, "zstd": 4}
    assert len(segs) == 1 + len(expected)  # setup segment, then one per codec
    for seg, name in zip(segs[1:], expected, strict=True):
        data = [b for b in batches_of(seg) if not b.is_control]
        assert data and {b.compression for b in data} == {codes[name]}, seg.name
        if name.startswith("snappy"):
            xerial = {b.buf[b.pos + 61:b.pos + 69] == b"\x82SNAPPY\x00" for b in data}
            assert xerial == {name == "snappy"}
    assert ls("codecs", "/image/topics/byName") == sorted(f"topic-{n}" for n in expected)
    for name in expected:
        assert ls("codecs", f"/image/topics/byName/topic-{name}") == ["0", "1", "2", "id",
                                                                       "name"]
        assert cat("codecs", f"/image/configs/TOPIC:topic-{name}/retention.ms") == "86400000"
        assert cat("codecs", f"/image/clientQuotas/clientId(client-{name})/producer_byte_rate"
                   ) == "1048576.0"
        p0 = partition("codecs", f"topic-{name}", 0)
        assert p0["leader"] == p0["replicas"][1] and p0["leaderEpoch"] == 1


def test_kraft_v1_voters_and_quorum_state() -> None:
    d = FIXTURES / "kraft-v1"
    md = d / MD
    qs = json.loads((md / "quorum-state").read_text())
    assert qs["data_version"] == 1 and set(qs) == {"leaderId", "leaderEpoch", "votedId",
                                                    "votedDirectoryId", "data_version"}
    assert (qs["leaderId"], qs["leaderEpoch"]) == (2, 2)
    props = dict(x.split("=", 1) for x in (d / "meta.properties").read_text().splitlines()
                 if "=" in x)
    boot = controls(md / "00000000000000000000-0000000000.checkpoint")
    assert [t for t, _ in boot] == [ctl.SNAPSHOT_HEADER, ctl.KRAFT_VERSION, ctl.KRAFT_VOTERS,
                                    ctl.SNAPSHOT_FOOTER]
    assert [v["voterId"] for v in boot[2][1]["voters"]] == [1, 2]
    loaded = load(DirectorySource(str(d)))
    assert loaded.problems == []
    voters = [c.value for c in loaded.controls if c.ctype == ctl.KRAFT_VOTERS]
    versions = [c.value for c in loaded.controls if c.ctype == ctl.KRAFT_VERSION]
    assert versions and all(v["kRaftVersion"] == 1 for v in versions)
    latest = voters[-1]["voters"]
    assert [v["voterId"] for v in latest] == [1, 2, 3]
    assert [e["host"] for v in latest for e in v["endpoints"]] == [
        "controller-1.kafka.internal", "controller-2.kafka.internal",
        "controller-3.kafka.internal"]
    dir_ids = [uuid_str(v["voterDirectoryId"]) for v in latest]
    assert len(set(dir_ids)) == 3 and dir_ids[0] == props["directory.id"]
    (snap,) = md.glob("*[1-9]*-*.checkpoint")
    assert [t for t, _ in controls(snap)][:3] == [ctl.SNAPSHOT_HEADER, ctl.KRAFT_VERSION,
                                                  ctl.KRAFT_VOTERS]
    leaders = [c.value["leaderId"] for c in loaded.controls if c.ctype == ctl.LEADER_CHANGE]
    assert leaders[-1] == 2
    assert ls("kraft-v1", "/image/cluster/controllers") == ["1", "2", "3"]
    assert cat("kraft-v1", "/image/configs/TOPIC:events/retention.ms") == "3600000"


def test_transactions_commit_and_abort() -> None:
    seg = FIXTURES / "transactions" / MD / "00000000000000000000.log"
    keys = metadata_keys(seg)
    assert keys.count(23) == 4 and keys.count(24) == 3 and keys.count(25) == 1
    assert ls("transactions", "/image/topics/byName") == ["big-topic", "orders"]
    assert len(ls("transactions", "/image/topics/byName/big-topic")) == 52
    assert ls("transactions", "/image/configs/TOPIC:orders") == ["cleanup.policy"]
    assert ls("transactions", "/image/scram/SCRAM-SHA-256") == ["carol"]
    assert ls("transactions", "/image/clientQuotas") == []
    (acl,) = ls("transactions", "/image/acls")
    assert cat("transactions", f"/image/acls/{acl}") == (
        "StandardAcl(resourceType=TOPIC, resourceName=orders, patternType=LITERAL, "
        "principal=User:carol, host=*, operation=WRITE, permissionType=ALLOW)")
    big_batches = [b for b in batches_of(seg) if not b.is_control and b.count > 1]
    assert sum(b.count for b in big_batches[-4:]) >= 52  # split over several batches


def test_elr_set_and_cleared() -> None:
    for topic in ("elr-a", "elr-b"):
        for pid in (0, 1):
            p = partition("elr", topic, pid)
            assert (p["elr"], p["lastKnownElr"]) == ([], []), (topic, pid)
    a0 = partition("elr", "elr-a", 0)
    assert a0["isr"] == [a0["leader"]] and a0["partitionEpoch"] == 2  # change, then clear
    c0, c1 = partition("elr", "elr-c", 0), partition("elr", "elr-c", 1)
    assert c0["elr"] == [] and c0["partitionEpoch"] == 2
    assert c1["elr"] == [c1["replicas"][1]] and c1["lastKnownElr"] == [c1["replicas"][2]]
    assert c1["isr"] == [c1["leader"]]
    assert 28 in metadata_keys(FIXTURES / "elr" / MD / "00000000000000000000.log")


def test_controller_unregistered_is_absent() -> None:
    d = FIXTURES / "controllers"
    assert ls("controllers", "/image/cluster/controllers") == ["1", "3"]
    seg = min((d / MD).glob("*.log"))
    assert 29 in metadata_keys(seg)
    incarnations = []
    for b in batches_of(seg):
        for r in ([] if b.is_control else iter_records(b)):
            key, _, v = frames.decode_metadata(r.value, 0, len(r.value))
            if key == 27 and v["controllerId"] == 3:
                incarnations.append(uuid_str(v["incarnationId"]))
    assert len(set(incarnations)) == 2
    leaf = cat("controllers", "/image/cluster/controllers/3")
    assert leaf.startswith(f"ControllerRegistration(id=3, incarnationId={incarnations[-1]}, ")
    assert cat("controllers", "/image/features/metadataVersion") == "4.4-IV2"
    loaded = load(DirectorySource(str(d)))
    assert loaded.snapshot is not None and sorted(loaded.image.controllers) == [1, 3]


PASSWORDS = {"alice": "alice-pass", "dave": "dave-pass-2"}  # see scripts/make_fixtures.py


@pytest.mark.parametrize(("mechanism", "user", "iterations"), [
    ("SCRAM-SHA-256", "alice", 4096), ("SCRAM-SHA-512", "alice", 4096),
    ("SCRAM-SHA-512", "dave", 8192)])
def test_scram_leaf_holds_real_rfc5802_keys(mechanism: str, user: str, iterations: int) -> None:
    leaf = cat("security", f"/image/scram/{mechanism}/{user}")
    m = re.fullmatch(r"ScramCredentialData\(salt=([0-9a-f]+), storedKey=([0-9a-f]+), "
                     r"serverKey=([0-9a-f]+), iterations=(\d+)\)", leaf)
    assert m, leaf
    salt, stored, server = (bytes.fromhex(m.group(i)) for i in (1, 2, 3))
    assert int(m.group(4)) == iterations
    h = "sha256" if mechanism.endswith("256") else "sha512"
    salted = hashlib.pbkdf2_hmac(h, PASSWORDS[user].encode(), salt, iterations)
    assert stored == hashlib.new(h, hmac.new(salted, b"Client Key", h).digest()).digest()
    assert server == hmac.new(salted, b"Server Key", h).digest()


def test_security_scram_acls_quotas_tokens() -> None:
    assert ls("security", "/image/scram/SCRAM-SHA-256") == ["alice"]
    assert ls("security", "/image/scram/SCRAM-SHA-512") == ["alice", "dave"]
    acls = {cat("security", f"/image/acls/{a}") for a in ls("security", "/image/acls")}
    row = ("StandardAcl(resourceType={}, resourceName={}, patternType={}, principal={}, "
           "host={}, operation={}, permissionType={})")
    assert acls == {
        row.format("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        row.format("TOPIC", "orders-", "PREFIXED", "User:alice", "*", "WRITE", "ALLOW"),
        row.format("GROUP", "billing", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        row.format("CLUSTER", "kafka-cluster", "LITERAL", "User:admin", "*", "ALTER", "ALLOW"),
        row.format("TOPIC", "*", "LITERAL", "User:mallory", "10.0.0.66", "ALL", "DENY"),
    }
    q = "/image/clientQuotas"
    assert cat("security", f"{q}/user(alice)/producer_byte_rate") == "1048576.0"
    assert cat("security", f"{q}/user(alice)/consumer_byte_rate") == "2097152.0"
    assert cat("security", f"{q}/clientId(billing-app)/request_percentage") == "50.0"
    assert cat("security", f"{q}/ip(10.0.0.1)/connection_creation_rate") == "20.0"
    assert cat("security", f"{q}/clientId(billing-app)_user(alice)/request_percentage") == (
        "1.0E-4")
    assert not any("bob" in name for name in ls("security", q))
    quotas = load(DirectorySource(str(FIXTURES / "security"))).image.client_quotas
    assert quotas[(("user", None),)] == {"producer_byte_rate": 1024.0}
    assert quotas[(("client-id", None),)] == {"consumer_byte_rate": 4096.0}
    assert len(quotas) == 6
    assert ls("security", "/image/delegationToken") == ["token-alice-1"]
    token = cat("security", "/image/delegationToken/token-alice-1")
    m = re.fullmatch(r"DelegationTokenDatatokenId=token-alice-1\(owner=User:alice"
                     r"\(tokenRequester=User:alice\(renewers=User:bob User:carol, "
                     r"issueTimestamp=(\d+), maxTimestamp=(\d+)\), expiryTimestamp=(\d+)", token)
    assert m, token
    issue, max_ts, expiry = map(int, m.groups())
    assert (max_ts - issue, expiry - issue) == (7 * 86_400_000, 86_400_000)


def test_security_secrets_are_redacted_by_default() -> None:
    d = str(FIXTURES / "security")
    jaas = "/image/configs/BROKER/listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config"
    rc, out, _ = run("-d", d, "cat", "/image/scram/SCRAM-SHA-256/alice", jaas)
    assert rc == 0
    assert "[redacted]" in out and "User:alice" not in out and "ScramLoginModule" not in out
    assert "ScramLoginModule required;" in cat("security", jaas)
    assert cat("security", "/image/configs/BROKER:1/log.retention.ms") == "172800000"


def image_lines(path: Path, *, warnings: bool = False) -> list[str]:
    """`tree /image` of a directory, without the provenance leaf (it names the snapshot)."""
    rc, out, err = run("-d", str(path), "--show-secrets", "tree", "/image")
    assert rc == 0 and (warnings or err == "")
    lines = out.splitlines()
    i = lines.index("provenance:")
    return lines[:i] + lines[i + 2:]


@pytest.mark.parametrize("name", ["cluster-basic", "kraft-v1", "controllers",
                                  "segments-snapshots", "bad-half-snapshot"])
def test_snapshot_plus_tail_equals_whole_log(tmp_path: Path, name: str) -> None:
    """The newest usable snapshot and the log after it give the image the whole log gives."""
    d = FIXTURES / name
    assert [p for p in (d / MD).iterdir() if p.name.endswith(".checkpoint")]
    full = shutil.copytree(d, tmp_path / "log-only")
    for p in (full / MD).iterdir():
        if ".checkpoint" in p.name:
            p.unlink()
    assert load(DirectorySource(str(full))).problems == []
    assert image_lines(d, warnings=name.startswith("bad-")) == image_lines(full)


@pytest.mark.parametrize("at", [30, 67, 68, 93, 94, 101])
def test_time_travel_across_snapshots_equals_the_whole_log(tmp_path: Path, at: int) -> None:
    """`--at N` gives the same image (provenance included) with or without the snapshots."""
    d = FIXTURES / "segments-snapshots"
    full = shutil.copytree(d / MD, tmp_path / MD)
    for p in full.iterdir():
        if ".checkpoint" in p.name:
            p.unlink()
    snaps = sorted(int(p.name[:20]) for p in (d / MD).glob("*.checkpoint"))
    assert snaps[1:] == [68, 94]  # the offsets above straddle both usable snapshots
    with_snaps = run("-d", str(d), "--at", str(at), "--show-secrets", "tree", "/image")
    log_only = run("-d", str(tmp_path), "--at", str(at), "--show-secrets", "tree", "/image")
    assert with_snaps[0] == 0 and with_snaps == log_only
    assert f"offset {at}," in with_snaps[1] or f"offset {at - 1}," in with_snaps[1]


def test_cluster_basic_quick_start() -> None:
    tree = show("cluster-basic", "tree", "/image/cluster")
    assert [x.strip() for x in tree if x.endswith(":")] == [
        "brokers:", "0:", "1:", "2:", "controllers:", "1000:", "1001:", "1002:"]
    assert cat("cluster-basic", "/image/features/metadataVersion") == "4.0-IV3"


def test_segments_and_snapshots_load_newest_usable_snapshot() -> None:
    d = FIXTURES / "segments-snapshots"
    md = d / MD
    names = sorted(p.name for p in md.iterdir())
    ready = sorted(n for n in names if n.endswith(".checkpoint") and not n.startswith("0" * 20))
    assert len(ready) == 2
    assert any(n.endswith(".checkpoint.part") for n in names)
    assert any(n.endswith(".checkpoint.deleted") for n in names)
    assert "00000000000000000000-0000000000.checkpoint" in names
    assert len([n for n in names if n.endswith(".log")]) >= 3
    assert [n for n in names if n.endswith(".snapshot")]
    loaded = load(DirectorySource(str(d)))
    assert loaded.problems == []
    assert loaded.snapshot is not None and loaded.snapshot.name == ready[-1]
    epochs = {int(n[21:31]) for n in ready}
    assert len(epochs) == 2
    topics = ls("segments-snapshots", "/image/topics/byName")
    assert "early-0" not in topics and "tail-1" in topics and len(topics) == 10
    for t in topics:  # brokers' partition.metadata agree with the image
        tid = cat("segments-snapshots", f"/image/topics/byName/{t}/id")
        assert (d / f"{t}-0" / "partition.metadata").read_text() == (
            f"version: 0\ntopic_id: {tid}")


def test_kafka37_snapshot_with_overlapping_batches_of() -> None:
    md = FIXTURES / "kafka37-snapshot" / MD
    (snap,) = md.glob("*.checkpoint")
    header, *data, footer = batches_of(snap)
    assert header.is_control and footer.is_control and not any(b.is_control for b in data)
    # Kafka 3.7's non-atomic appends of 10-record chunks: each batch starts at a chunk's first
    # offset, with offset deltas from 0, so some repeat offsets of the batch before.
    assert all((b.base_offset - 1) % 10 == 0 for b in data)
    assert all(b.last_offset - b.base_offset + 1 == b.count for b in data)
    assert any(b.base_offset <= a.last_offset for a, b in itertools.pairwise(data))
    assert any(b.last_offset <= a.last_offset for a, b in itertools.pairwise(data))
    assert sum(b.count for b in data) == footer.base_offset - 1  # every record, once
    assert int(min(md.glob("*.log")).stem) == int(snap.name[:20])
    assert ls("kafka37-snapshot", "/image/topics/byName") == [
        "after-snapshot", "topic-0", "topic-1", "topic-2", "topic-3"]
    for i in range(4):
        assert len(ls("kafka37-snapshot", f"/image/topics/byName/topic-{i}")) == 12
    p0 = partition("kafka37-snapshot", "topic-0", 0)
    assert p0["leader"] == p0["replicas"][1] and p0["leaderEpoch"] == 1
    brokers = load(DirectorySource(str(md.parent))).image.brokers
    assert p0["directories"] == [uuid_str(brokers[r].directories[0]) for r in p0["replicas"]]
    assert cat("kafka37-snapshot", "/image/features/metadataVersion") == "3.7-IV4"
    # Kafka's own shell reads the snapshot file alone too (-s).
    rc, out, err = run("-s", str(snap), "ls", "/image/topics/byName")
    assert rc == 0 and err == "" and out.split() == ["topic-0", "topic-1", "topic-2", "topic-3"]


def test_damage_messages_state_what_the_image_is(tmp_path: Path) -> None:
    """Issue 7 item 5: a zeroed region does not claim "offset 0", and after damage one line
    says what the image actually is (not what the damaged file's tail would have been)."""
    d = tmp_path / "zeroed"
    shutil.copytree(FIXTURES / "cluster-basic", d)
    log = next((d / "__cluster_metadata-0").glob("*.log"))
    data = bytearray(log.read_bytes())
    first = batches_of(log)
    cut = first[len(first) // 2]
    data[cut.pos:cut.pos + 40] = bytes(40)  # a zeroed region in the middle
    log.write_bytes(bytes(data))
    loaded = load(DirectorySource(str(d)))
    corrupt = next(p for p in loaded.problems if p.code == "corrupt")
    assert "(offset 0)" not in corrupt.message
    assert f"after offset {first[len(first) // 2 - 1].last_offset}" in corrupt.message
    assert corrupt.offset == cut.base_offset and corrupt.position == cut.pos
    summary = loaded.problems[-1]
    prov = loaded.image.provenance
    assert summary.code == "image" and f"as of offset {prov.offset}" in summary.message
