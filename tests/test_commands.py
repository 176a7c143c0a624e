"""The shell's commands, text and JSON, on generated fixtures (no corpus needed)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from mdshell.commands import REGISTRY, Shell

from .conftest import FIXTURES, open_shell, run_cli


def shell(name: str, *, secrets: bool = False) -> Shell:
    return open_shell(name, secrets=secrets)


def lines(sh: Shell, *words: str) -> list[str]:
    r = sh.run(list(words))
    out = list(r.lines)
    assert r.code == 0, r.errors
    return out


# ---------------------------------------------------------------- errors and exit codes


def test_unknown_command_suggests_the_closest() -> None:
    out = run_cli("-d", str(FIXTURES / "cluster-basic"), "tre", "/image")
    assert out.returncode == 2
    assert "tre: unknown command; did you mean 'tree'?" in out.stderr


def test_usage_errors_exit_2_with_the_usage_line() -> None:
    out = run_cli("-d", str(FIXTURES / "cluster-basic"), "find", "-maxdepth", "x")
    assert out.returncode == 2
    assert "usage: find" in out.stderr and "Traceback" not in out.stderr


def test_missing_path_and_empty_glob_exit_1() -> None:
    for target in ("/image/nosuch", "/image/topics/byName/zz*"):
        out = run_cli("-d", str(FIXTURES / "cluster-basic"), "ls", target)
        assert out.returncode == 1
        assert f"ls: {target}: No such file or directory." in out.stderr


def test_cat_of_a_directory_is_an_error() -> None:
    out = run_cli("-d", str(FIXTURES / "cluster-basic"), "cat", "/image/cluster")
    assert out.returncode == 1 and "Is a directory" in out.stderr


def test_shell_only_commands_in_one_shot() -> None:
    out = run_cli("-d", str(FIXTURES / "cluster-basic"), "cd", "/image")
    assert out.returncode == 2 and "only available in the interactive shell" in out.stderr


def test_options_must_come_before_the_command() -> None:
    out = run_cli("-d", str(FIXTURES / "cluster-basic"), "ls", "/image", "-o", "json")
    assert out.returncode == 2  # "-o" belongs to ls, which has no such option


# ---------------------------------------------------------------- JSON for every command

JSON_CASES = [
    ["ls", "/image"], ["cat", "/image/provenance"], ["tree", "/image/features"],
    ["find", "/image/cluster", "-type", "f"], ["pwd"], ["help"], ["man", "diff"],
    ["records", "--limit", "3"], ["changes", "/image/topics/byName/topic-0/0"], ["health"],
    ["at", "50"], ["diff", "50", "latest", "/image/cluster"],
    ["topics"], ["brokers"], ["controllers"], ["quorum"], ["features"], ["tables"], ["nodes"],
]
# JSON of `sql` needs a Spark session: tests/test_spark.py checks it on the shared one
# (test_cli_sql_one_shot_json_and_quiet_terminal) instead of starting a JVM here.
JSON_ELSEWHERE = {"sql"}


@pytest.mark.parametrize("words", JSON_CASES, ids=[w[0] for w in JSON_CASES])
def test_every_command_has_json_output(words: list[str]) -> None:
    out = run_cli("-d", str(FIXTURES / "cluster-basic"), "-o", "json", *words)
    assert out.returncode in (0, 1), out.stderr
    data = json.loads(out.stdout)
    assert data not in (None, [], {})


def test_json_covers_the_registry() -> None:
    shell_only = {name for name, c in REGISTRY.items() if c.shell_only}
    live_only = {"save"}  # its JSON is checked against real controllers in test_live.py
    assert {w[0] for w in JSON_CASES} | shell_only | JSON_ELSEWHERE | live_only == set(REGISTRY)


def test_json_leaves_are_structured() -> None:
    sh = shell("cluster-basic")
    broker = sh.run(["cat", "/image/cluster/brokers/0"]).json()[0]["value"]
    assert broker["id"] == 0 and isinstance(broker["listeners"], list)
    assert {"listenerName", "securityProtocol", "host", "port"} <= broker["listeners"][0].keys()
    mv = sh.run(["cat", "/image/features/metadataVersion"]).json()[0]["value"]
    assert mv == {"name": "4.0-IV3", "level": 25}


# ---------------------------------------------------------------- find


def test_find_filters() -> None:
    sh = shell("cluster-basic")
    assert lines(sh, "find", "/image/cluster", "-maxdepth", "1") == [
        "/image/cluster", "/image/cluster/brokers", "/image/cluster/controllers"]
    leaves = lines(sh, "find", "/image/cluster", "-type", "f", "-name", "10*")
    assert leaves == ["/image/cluster/controllers/1000", "/image/cluster/controllers/1001",
                      "/image/cluster/controllers/1002"]
    dirs = lines(sh, "find", "/image/topics/byName", "-type", "d", "-maxdepth", "1")
    assert dirs[0] == "/image/topics/byName" and all("/" in d for d in dirs)


# ---------------------------------------------------------------- redaction


def test_secrets_are_redacted_by_default() -> None:
    sh = shell("security")
    scram = lines(sh, "cat", "/image/scram/SCRAM-SHA-256/alice")[0]
    assert scram.count("[redacted]") == 4
    # A token record holds no HMAC: Kafka's form, readable (issue 7 item 6).
    token = lines(sh, "cat", "/image/delegationToken/token-alice-1")[0]
    assert "[redacted]" not in token and "owner=User:alice" in token
    jaas = [x for x in lines(sh, "find", "/image/configs", "-type", "f") if "jaas" in x]
    assert jaas and lines(sh, "cat", jaas[0]) == ["[redacted]"]
    rec = lines(sh, "records", "--type", "UserScramCredential", "--limit", "1")[0]
    assert '"salt":"[redacted]"' in rec


def test_show_secrets_reveals_them() -> None:
    sh = shell("security", secrets=True)
    scram = lines(sh, "cat", "/image/scram/SCRAM-SHA-256/alice")[0]
    assert "[redacted]" not in scram and "iterations=" in scram
    token = lines(sh, "cat", "/image/delegationToken/token-alice-1")[0]
    assert "User:alice" in token
    rec = lines(sh, "records", "--type", "UserScramCredential", "--limit", "1")[0]
    assert "[redacted]" not in rec


# ---------------------------------------------------------------- records


def test_records_filters() -> None:
    sh = shell("cluster-basic")
    everything = lines(sh, "records")
    no_noop = lines(sh, "records", "--exclude", "NoOp")
    assert len(no_noop) < len(everything)
    assert not any("NoOpRecord" in x for x in no_noop)
    topics = lines(sh, "records", "--type", "topic,RemoveTopicRecord")
    assert topics and all("TopicRecord(" in x for x in topics)
    window = lines(sh, "records", "--from", "10", "--to", "20")
    offsets = [int(x.split()[0].split("=")[1]) for x in window]
    assert offsets == list(range(10, 21))
    grep = lines(sh, "records", "--grep", "topic-2")
    assert grep and all("topic-2" in x for x in grep)
    assert len(lines(sh, "records", "--limit", "4")) == 4


def test_records_of_the_snapshot_in_use() -> None:
    sh = shell("cluster-basic")
    snap = lines(sh, "records", "--snapshot")
    assert "SnapshotHeaderRecord" in snap[0] and "SnapshotFooterRecord" in snap[-1]


def test_records_show_control_and_unknown_records() -> None:
    sh = shell("bad-unknown-records")
    out = lines(sh, "records")
    assert any("unknown metadata record type 99" in x for x in out)
    assert any("LeaderChangeMessage" in x for x in out)


# ---------------------------------------------------------------- changes


def test_changes_of_a_partition_show_its_state_after_each_record() -> None:
    sh = shell("cluster-basic")
    out = lines(sh, "changes", "/image/topics/byName/topic-0/0")
    assert out[0].startswith("offset=15") and "TopicRecord" in out[0]
    states = [x for x in out if x.startswith("    -> ")]
    assert states and all("leader=" in s and "isr=" in s for s in states)
    assert out[-1].endswith("records")


def test_changes_follow_removed_topics_and_globs() -> None:
    sh = shell("cluster-basic")
    removed = [x for x in lines(sh, "records", "--type", "RemoveTopic")]
    assert removed
    tid = removed[0].split('"topicId":"')[1].split('"')[0]
    hist = lines(sh, "changes", f"/image/topics/byId/{tid}")
    assert "TopicRecord" in hist[0] and any("RemoveTopicRecord" in x for x in hist)
    brokers = lines(sh, "changes", "/image/cluster/brokers/*")
    assert any("RegisterBrokerRecord" in x for x in brokers)


def test_changes_outside_the_image_is_an_error() -> None:
    r = shell("cluster-basic").run(["changes", "/local"])
    assert r.code == 1 and "under /image" in r.errors[0]


# ---------------------------------------------------------------- /quorum, /log, /local


def test_quorum_with_kraft_version_1() -> None:
    sh = shell("kraft-v1")
    assert lines(sh, "cat", "/quorum/kraftVersion") == ["1"]
    voters = lines(sh, "ls", "/quorum/voters")
    assert voters == ["1", "2", "3"]
    v = sh.run(["cat", "/quorum/voters/3"]).json()[0]["value"]
    assert len(v["directoryId"]) == 22 and v["endpoints"][0]["name"] == "CONTROLLER"
    assert lines(sh, "cat", "/quorum/leaderId") == ["2"]


def test_quorum_static() -> None:
    sh = shell("security")
    assert lines(sh, "cat", "/quorum/kraftVersion") == ["0"]
    assert "static quorum" in lines(sh, "cat", "/quorum/voters/1")[0]
    cluster_id = lines(sh, "cat", "/quorum/clusterId")[0]
    props = (FIXTURES / "security" / "meta.properties").read_text()
    assert f"cluster.id={cluster_id}" in props


def test_quorum_is_what_the_last_control_record_of_each_kind_says() -> None:
    """The newest LeaderChange, KRaftVersion and Voters (read from the end: a long log has
    thousands of LeaderChange); a record that did not decode does not count."""
    from mdshell.source.base import ControlEntry
    from mdshell.source.loginfo import quorum_info
    from mdshell.wire import control as ctl
    from mdshell.wire.frames import Unknown

    def voters(ids: list[int]) -> dict:
        return {"voters": [{"voterId": i, "voterDirectoryId": bytes(16), "endpoints": [],
                            "kRaftVersionFeature": {"minSupportedVersion": 0,
                                                    "maxSupportedVersion": 1}} for i in ids]}

    def change(leader: int) -> dict:
        return {"leaderId": leader, "voters": [{"voterId": 1}, {"voterId": 2}],
                "grantingVoters": [{"voterId": leader}]}

    kinds: list[tuple[int, Any]] = [
        (ctl.LEADER_CHANGE, change(1)), (ctl.KRAFT_VERSION, {"kRaftVersion": 0}),
        (ctl.KRAFT_VOTERS, voters([1])), (ctl.LEADER_CHANGE, change(2)),
        (ctl.KRAFT_VERSION, {"kRaftVersion": 1}), (ctl.KRAFT_VOTERS, voters([1, 2])),
        (ctl.LEADER_CHANGE, Unknown(ctl.LEADER_CHANGE, 0, b"", "bad")),
        (ctl.SNAPSHOT_HEADER, {"version": 0, "lastContainedLogTimestamp": 0})]
    entries = [ControlEntry(off, off, 0, kind, value, "f") for off, (kind, value)
               in enumerate(kinds)]
    source = open_shell("kraft-v1").session.source
    q = quorum_info(source, entries, 7)
    assert q.last_leader_change is not None
    assert (q.last_leader_change.offset, q.last_leader_change.leader_id) == (3, 2)
    assert q.kraft_version == 1 and q.voters_offset == 5
    assert [v.id for v in q.voters or []] == [1, 2]
    only = quorum_info(source, entries[:1], 0)
    assert only.voters is None and only.last_leader_change is not None


def snapshot_only_copy(tmp: Path, name: str = "segments-snapshots", meta: bool = True) -> Path:
    """A copy of a fixture's log dir with its snapshots but none of its ``.log`` segments
    (a copy whose segments were not copied); without meta.properties unless ``meta``."""
    src = FIXTURES / name
    md = tmp / name / "__cluster_metadata-0"
    md.mkdir(parents=True)
    if meta:
        shutil.copyfile(src / "meta.properties", tmp / name / "meta.properties")
    for f in (src / "__cluster_metadata-0").iterdir():
        if not f.name.endswith(".log"):
            shutil.copyfile(f, md / f.name)
    return tmp / name


def test_quorum_of_a_copy_without_log(tmp_path: Path) -> None:
    """Issue 18 item 2: with snapshots and no log, LogEndOffset is the newest snapshot's end
    offset (it printed the record count of the snapshot file, and "node None")."""
    with_meta = snapshot_only_copy(tmp_path / "a")
    bare = snapshot_only_copy(tmp_path / "b", meta=False) / "__cluster_metadata-0"
    node = lines(shell("segments-snapshots"), "cat", "/quorum/nodeId")[0]
    for copy, words in ((with_meta, f"94 (this copy, node {node})"), (bare, "94 (this copy)")):
        sh = open_shell(copy)
        out = lines(sh, "quorum")
        assert f"LogEndOffset:     {words}" in out, out
        assert not any("None" in line for line in out), out
        assert sh.run(["quorum"]).json()["logEndOffset"] == 94
        assert lines(sh, "cat", "/quorum/logEndOffset") == ["94"]


# Copies that lack files, and fixtures: no text output may show a Python None.
TEXT_COMMANDS = [["quorum"], ["quorum", "--replication"], ["controllers"], ["brokers"],
                 ["topics", "--describe"], ["features"], ["health", "--all"],
                 ["tree", "/quorum"], ["tree", "/log"], ["tree", "/local"],
                 ["at", "earliest"], ["batches"], ["records", "--limit", "20"]]


@pytest.mark.parametrize("case", ["no-log", "no-log-no-meta", "kafka37-snapshot", "kraft-v1",
                                  "bad-log-gap", "controllers"])
def test_no_python_none_in_text_output(case: str, tmp_path: Path) -> None:
    if case == "no-log":
        target: Path = snapshot_only_copy(tmp_path)
    elif case == "no-log-no-meta":
        target = snapshot_only_copy(tmp_path, meta=False) / "__cluster_metadata-0"
    else:
        target = FIXTURES / case
    sh = open_shell(target)
    for words in TEXT_COMMANDS:
        r = sh.run(words)
        for line in [*r.lines, *r.errors, *r.warnings]:
            assert not re.search(r"\bNone\b", line), (words, line)


def test_no_python_none_in_live_text() -> None:
    """The live tree's texts (/live, /quorum in -q) with what a controller may leave unset."""
    from mdshell.commands.navigate import tree_lines
    from mdshell.source.quorum.discover import QuorumView, Replica
    from mdshell.source.quorum.status import LiveStatus
    from mdshell.tree.live_tree import live_node, live_quorum_node
    from mdshell.tree.node import RenderOptions

    status = LiveStatus("localhost:9093", "PLAINTEXT", None, -1, -1, None, -1, 0, None, 0, 0,
                        0, 0, 0, 0, 0, 0, 0.0, False, None, None)
    view = QuorumView(1, 5, -1, [Replica(1, None, -1, -1, -1), Replica(2, None, 10, 0, 0)],
                      [Replica(3, None, -1, -1, -1)], {})
    opts = RenderOptions()
    for node in (live_node(lambda: status), live_quorum_node(view, None)):
        for line in tree_lines(node, opts):
            assert not re.search(r"\bNone\b", line), line


def test_log_lists_segments_snapshots_and_ignored_files() -> None:
    sh = shell("segments-snapshots")
    assert len(lines(sh, "ls", "/log/segments")) == 3
    snaps = sh.run(["tree", "/log/snapshots"]).json()[0]["tree"]
    statuses = {name: v["status"] for name, v in snaps.items()}
    assert "in use" in statuses.values()
    assert any(s.startswith("bootstrap") for s in statuses.values())
    ignored = lines(sh, "ls", "/log/ignored")
    assert any(x.endswith(".checkpoint.part") for x in ignored)
    assert any(x.endswith(".checkpoint.deleted") for x in ignored)
    assert any(x.endswith(".snapshot") for x in ignored)


def test_local_shows_warnings() -> None:
    sh = shell("bad-crc")
    warnings = sh.run(["tree", "/local/warnings"]).json()[0]["tree"]
    assert any("CRC mismatch" in w for w in warnings.values())


# ---------------------------------------------------------------- more options


def test_ls_several_targets_like_kafka() -> None:
    sh = shell("cluster-basic")
    out = lines(sh, "ls", "/image/cluster", "/image/features", "/image/provenance")
    assert out[:4] == ["provenance", "", "cluster:", "brokers"]
    assert "features:" in out and out[out.index("features:") - 1] == ""


def test_tree_several_targets_and_leaf() -> None:
    sh = shell("cluster-basic")
    out = lines(sh, "tree", "/image/provenance", "/image/producerIds")
    assert out[0].startswith("offset ") and out[1] == "nextProducerId:"


def test_health_all_lists_every_item() -> None:
    sh = shell("cluster-basic")
    r = sh.run(["health", "--all"])
    assert not any("more (health --all)" in x for x in r.lines)


def test_global_at_option() -> None:
    out = run_cli("-d", str(FIXTURES / "cluster-basic"), "--at", "50", "cat", "/local/atOffset",
                  "/image/provenance")
    assert out.returncode == 0
    assert out.stdout.splitlines()[0] == "50"
    assert out.stdout.splitlines()[1].startswith("offset 50,")
    bad = run_cli("-d", str(FIXTURES / "cluster-basic"), "--at", "99999", "ls")
    assert bad.returncode == 1 and "after the end of the log" in bad.stderr


def test_snapshot_flag_reads_one_file() -> None:
    cp = sorted((FIXTURES / "cluster-basic" / "__cluster_metadata-0").glob("*.checkpoint"))[-1]
    out = run_cli("-s", str(cp), "cat", "/local/sourceKind", "/image/features/metadataVersion")
    assert out.returncode == 0 and out.stdout.split() == ["file", "4.0-IV3"]


def test_piped_commands_run_in_order() -> None:
    out = run_cli("-d", str(FIXTURES / "cluster-basic"),
                  stdin="cd /image/topics\nls\npwd\nnosuch\n")
    assert out.stdout.splitlines() == ["byId", "byName", "/image/topics"]
    assert "line 4: nosuch: unknown command" in out.stderr and out.returncode == 2


def test_diff_reports_secret_changes_without_revealing_them() -> None:
    sh = shell("security")
    out = lines(sh, "diff", "18", "19", "/image/scram")
    assert "~ /image/scram/SCRAM-SHA-512/dave" in out
    assert "    a secret value changed (--show-secrets shows it)" in out
    assert not any("salt: " in x for x in out)
    shown = lines(shell("security", secrets=True), "diff", "18", "19", "/image/scram")
    assert any(x.startswith("    salt: ") for x in shown)


def test_records_rejects_bad_filters() -> None:
    sh = shell("cluster-basic")
    for words, text in ((["records", "--type", "Bogus"], "unknown record type Bogus"),
                        (["records", "--limit", "0"], "invalid positive number")):
        r = sh.run(words)
        assert r.code == 2 and text in r.errors[0]


def test_find_prints_plain_paths_as_typed_and_globs_as_matched() -> None:
    sh = shell("cluster-basic")
    sh.session.cwd = "/image"
    assert lines(sh, "find", "cluster", "-maxdepth", "1")[1] == "cluster/brokers"
    assert lines(sh, "find", "c*", "-maxdepth", "0") == [
        "/image/clientQuotas", "/image/cluster", "/image/configs"]


def test_unfinalized_features_do_not_exist() -> None:
    r = shell("cluster-basic").run(["cat", "/image/features/finalized_nosuch.version"])
    assert r.code == 1


def test_at_moves_the_working_directory_to_what_exists() -> None:
    sh = shell("cluster-basic")
    sh.interactive = True
    sh.session.cwd = "/image/topics/byName/topic-0"
    out = lines(sh, "at", "5")
    assert out[-1] == "the working directory did not exist then: now /image/topics/byName"
    assert sh.session.cwd == "/image/topics/byName"


def test_ls_json_gives_leaf_paths() -> None:
    data = shell("cluster-basic").run(["ls", "/image/provenance"]).json()
    assert data == [{"path": "/image/provenance", "type": "file", "name": "provenance"}]


def test_a_snapshot_kafka_is_writing_is_ignored_not_unrecognized(tmp_path: Path) -> None:
    """Kafka writes a snapshot to a temporary file named by Snapshots.createTempFile,
    ``<offset>-<epoch>-<random digits>.checkpoint.part`` (seen in a running controller's
    directory): a snapshot being written, ignored like any ``.part``, and the image stays
    complete (it was "incomplete" because of an unrecognized file)."""
    import shutil

    from mdshell.session import Session
    from mdshell.tree.node import RenderOptions

    d = tmp_path / "__cluster_metadata-0"
    shutil.copytree(FIXTURES / "cluster-basic" / "__cluster_metadata-0", d)
    (d / "00000000000000000058-0000000001-18329077803386615030.checkpoint.part").write_bytes(
        b"\0" * 100)
    session = Session.open(str(d))
    assert session.verdict().sound, session.verdict().words()
    sh = Shell(session, opts=RenderOptions())
    assert any(x.startswith("00000000000000000058-0000000001-") for x in
               lines(sh, "ls", "/log/ignored"))


# ---------------------------------------------------------------- names with odd characters


ODD_CLIENTS = ("br[ack]", "{x,y}", "star*", "a/b", "..", "app one", "new\nline", "bell\x1b[2J")


@pytest.fixture(scope="module")
def odd_names(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cluster whose client ids and SCRAM users hold what Kafka allows in them and a path
    treats specially: glob characters, ``/``, ``..``, a space."""
    from .conftest import three_brokers

    out = tmp_path_factory.mktemp("odd") / "logdir"
    b = three_brokers(out, seed=5)
    for i, client in enumerate(ODD_CLIENTS):
        b.set_quota({"client-id": client}, "request_percentage", 10.0 + i)
    b.upsert_scram("svc/orders")
    b.finish()
    return out


def _escaped(name: str) -> str:
    """A name as a path component that means only it (as the docs tell a user to write it)."""
    return re.sub(r"([][*?{}\\/])", r"\\\1", name)


def _odd_shell(odd_names: Path) -> Shell:
    sh = open_shell(odd_names)
    sh.interactive = True
    return sh


def test_every_node_listed_can_be_reached_escaped(odd_names: Path) -> None:
    """Whatever a name holds, ``\\`` before its special characters reaches it alone, by
    ``cd`` and every path command, and the working directory then resolves relative paths
    (it is not read again as a glob: ``cd`` into ``clientId(br[ack])`` then ``ls`` failed)."""
    sh = _odd_shell(odd_names)
    names = lines(sh, "ls", "/image/clientQuotas")
    assert sorted(names) == sorted(f"clientId({c})" for c in ODD_CLIENTS)
    for name in names:
        value = f"{10.0 + ODD_CLIENTS.index(name[9:-1])}"
        assert lines(sh, "cat", f"/image/clientQuotas/{_escaped(name)}/request_percentage") \
            == [value]
        assert lines(sh, "cd", f"/image/clientQuotas/{_escaped(name)}") == []
        assert lines(sh, "pwd") == [f"/image/clientQuotas/{name}"]
        assert lines(sh, "ls") == ["request_percentage"]
        assert lines(sh, "cat", "request_percentage") == [value]
        assert lines(sh, "cd", "..") == [] and lines(sh, "pwd") == ["/image/clientQuotas"]
    user = "/image/scram/SCRAM-SHA-256/svc\\/orders"
    assert lines(sh, "ls", user) == ["svc/orders"]
    assert lines(sh, "cat", user)[0].startswith("ScramCredentialData(")


def test_a_glob_that_matches_nothing_is_the_name_as_typed(odd_names: Path) -> None:
    """Kafka's shell has no ``[...]`` ranges: ``clientId(br[ack])`` is a name there, and a
    script that uses it keeps working (a POSIX shell's rule: a glob matching nothing stands
    for itself); a glob that matches still matches."""
    sh = _odd_shell(odd_names)
    assert lines(sh, "cat", "/image/clientQuotas/clientId(br[ack])/request_percentage") == [
        "10.0"]
    assert lines(sh, "ls", "/image/clientQuotas/clientId({x,y})") == ["request_percentage"]
    assert lines(sh, "ls", "/image/clientQuotas/clientId(st*)") == ["request_percentage"]
    changed = sh.run(["changes", "/image/clientQuotas/clientId(br[ack])"])
    assert changed.code == 0 and "br[ack]" in "\n".join(changed.lines)
    r = sh.run(["ls", "/image/clientQuotas/clientId(zz*)"])
    assert r.code == 1 and "No such file or directory" in r.errors[0]


def test_diff_takes_an_escaped_name(odd_names: Path) -> None:
    sh = _odd_shell(odd_names)
    out = lines(sh, "diff", "earliest", "latest", "/image/clientQuotas/clientId(a\\/b)")
    assert out[-1] == "1 added, 0 removed, 0 changed"
    assert "+ /image/clientQuotas/clientId(a/b)" in "\n".join(out)


# ---------------------------------------------------------------- records of a cleaned log


@pytest.fixture
def cleaned(tmp_path: Path) -> Path:
    """``segments-snapshots`` as Kafka leaves it once it deleted the first segment, which
    its snapshots cover: the log starts at offset 37 and the image is complete."""
    d = tmp_path / "__cluster_metadata-0"
    shutil.copytree(FIXTURES / "segments-snapshots" / "__cluster_metadata-0", d)
    (d / ("0" * 20 + ".log")).unlink()
    return d


def test_records_from_before_a_cleaned_log_start_where_it_starts(cleaned: Path) -> None:
    """``records --from 0`` on a log Kafka cleaned (every long-lived cluster's) said "offsets
    0-36 are missing, so the image is incomplete" of a complete image: records reach back
    as far as the log does, and say nothing of the image."""
    out = run_cli("-d", str(cleaned), "records", "--from", "0", "--limit", "1")
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout.startswith("offset=37 ")
    before = run_cli("-d", str(cleaned), "records", "--from", "3", "--to", "10")
    assert before.returncode == 1
    assert before.stderr.splitlines() == [
        "mdshell: records: --to 10 is before the log's first offset 37 (the records before "
        "it were deleted after a snapshot, or not copied; records --snapshot lists the "
        "snapshot in use)"]


def test_find_name_reads_globs_as_paths_do(odd_names: Path) -> None:
    """``find -name`` matches a node's name with the glob paths use: ``{a,b}`` groups, ``\\``
    escapes, and a glob that matches nothing is the name as typed."""
    sh = _odd_shell(odd_names)
    found = lines(sh, "find", "/image/clientQuotas", "-name", "clientId({br,st}*")
    assert found == ["/image/clientQuotas/clientId(br[ack])", "/image/clientQuotas/clientId(star*)"]
    assert lines(sh, "find", "/image", "-name", "clientId(br[ack])") == [
        "/image/clientQuotas/clientId(br[ack])"]
    assert lines(sh, "find", "/image", "-name", "clientId(star\\*)") == [
        "/image/clientQuotas/clientId(star*)"]
    r = sh.run(["find", "/image", "-name", "{a"])
    assert r.code == 2 and "unterminated" in r.errors[0]


def test_ls_on_a_terminal_shows_control_characters_as_question_marks(odd_names: Path) -> None:
    """A name may hold a newline or an escape sequence (a client id is any string): on a
    terminal ``ls`` shows each control character as ``?``, as GNU ls does, so the columns
    hold and the terminal is not driven by the data; piped, names stay byte for byte."""
    import io

    from mdshell.commands.render import emit

    sh = _odd_shell(odd_names)
    shown, piped = io.StringIO(), io.StringIO()
    emit(sh.run(["ls", "/image/clientQuotas"]), shown, width=100)
    emit(sh.run(["ls", "/image/clientQuotas"]), piped)
    text = shown.getvalue()
    assert "\x1b" not in text and "clientId(new?line)" in text and "clientId(bell?[2J)" in text
    assert len(text.splitlines()) < len(ODD_CLIENTS)  # in columns, a name a cell
    assert "clientId(new\nline)" in piped.getvalue()
    assert "clientId(bell\x1b[2J)" in piped.getvalue()


def test_changes_of_a_name_holding_a_slash(odd_names: Path) -> None:
    """``changes`` of a client id or user holding ``/`` finds its records (it found none:
    the paths a record touches were split on every ``/``); those paths are written as they
    are typed, ``\\/`` inside a name."""
    sh = _odd_shell(odd_names)
    r = sh.run(["changes", "/image/clientQuotas/clientId(a\\/b)"])
    assert r.code == 0 and r.json(), r.errors
    (rec,) = r.json()
    assert rec["data"]["entity"][0]["entityName"] == "a/b"
    assert rec["paths"] == ["/image/clientQuotas/clientId(a\\/b)/request_percentage"]
    user = sh.run(["changes", "/image/scram/SCRAM-SHA-256/svc\\/orders"])
    assert user.code == 0 and len(user.json()) == 1
