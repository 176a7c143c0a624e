"""The front door (issue 35): help without a source, options that would be ignored, exit
statuses of scripts, a reader that goes away, and the words a newcomer reads first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mdshell.commands import REGISTRY

from .conftest import FIXTURES, ROOT, cli, run_cli

BASIC = str(FIXTURES / "cluster-basic")


# ---------------------------------------------------------------- help (item 1)


def _help_commands(text: str) -> list[str]:
    """The command names of ``mdshell --help``'s commands section."""
    section = text.split("\ncommands (", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in section.splitlines() if re.match(r"  \S", line)]


def _documented_commands() -> set[str]:
    """Every command docs/commands.md's Commands table names (a row may name several:
    ``cd [PATH]``, ``pwd``)."""
    text = (ROOT / "docs" / "commands.md").read_text()
    section = text.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]
    names: set[str] = set()
    for row in rows:
        first = row.split(" | ")[0]
        names.update(m.split()[0] for m in re.findall(r"`([^`]+)`", first))
    return names - {"CMD"}


def test_help_lists_every_command_one_line_each(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # COLUMNS set: cut at that width
    out = cli("--help")
    assert out.code == 0
    assert _help_commands(out.out) == sorted(REGISTRY)
    section = out.out.split("\ncommands (", 1)[1].split("\n\n", 1)[0]
    rows = section.splitlines()[1:]  # after the heading: a command a line when piped
    assert len(rows) == len(REGISTRY)
    for line in rows:
        name = line.split()[0]
        assert REGISTRY[name].summary in line


def test_help_and_commands_md_name_the_same_commands() -> None:
    assert _documented_commands() == set(REGISTRY) == set(_help_commands(cli("--help").out))


@pytest.mark.parametrize("words", [["help"], ["help", "health"], ["man", "diff"],
                                   ["health", "--help"], ["records", "--help"]])
def test_help_needs_no_source(words: list[str]) -> None:
    out = cli(*words)
    assert out.code == 0, out.err
    assert out.err == ""
    name = words[-1] if words[0] in ("help", "man") and len(words) > 1 else words[0]
    first = out.out.splitlines()[0]
    assert first.startswith("Commands (" if words == ["help"] else f"{name}: ")


def test_help_without_source_keeps_its_usage_errors() -> None:
    out = cli("help", "nosuch")
    assert out.code == 2 and "not a command" in out.err
    assert cli("man").code == 2
    # Any other command still needs a source.
    out = cli("ls")
    assert out.code == 2 and "no metadata source" in out.err
    assert out.err.rstrip().endswith("mdshell --help lists the options and commands")


# ---------------------------------------------------------------- options (item 2)


@pytest.mark.parametrize(("args", "words"), [
    (["-d", BASIC, "--config", "/nonexistent", "ls", "/image"], "--config is for -q"),
    (["-s", str(FIXTURES / "cluster-basic/bootstrap.checkpoint"), "--config",
      str(ROOT / "pyproject.toml"), "topics"], "--config is for -q"),
    (["-d", BASIC, "--spark-master", "local[1]", "health"], "--spark-master is for sql"),
    (["-d", BASIC, "--repl", "ls"], "--repl opens the line shell"),
])
def test_options_that_would_be_ignored_are_refused(args: list[str], words: str) -> None:
    out = cli(*args)
    assert out.code == 2 and out.out == ""
    assert out.err.startswith(f"mdshell: {words}") and len(out.err.splitlines()) == 1


def test_config_that_cannot_be_read_is_an_error(tmp_path: Path) -> None:
    out = run_cli("-d", BASIC, "--config", str(tmp_path / "none.properties"),
                  stdin="ls /image/topics\n")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == f"mdshell: --config {tmp_path / 'none.properties'}: no such file\n"
    props = tmp_path / "spark.properties"
    props.write_text("spark.driver.memory=1g\n")
    ok = run_cli("-d", BASIC, "--config", str(props), stdin="ls /image/topics\n")
    assert ok.returncode == 0 and ok.stdout.split() == ["byId", "byName"], ok.stderr


@pytest.mark.parametrize(("option", "said"), [(["-o", "json"], "-o json"),
                                              (["--layout", "4.x"], "--layout 4.x"),
                                              (["--strict"], "--strict")])
def test_full_screen_refuses_what_it_would_ignore(option: list[str], said: str) -> None:
    """On a terminal without a command the full-screen interface would open: an output
    option it does not use is refused before it starts."""
    primary, secondary = os.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "mdshell", "-d", BASIC, *option],
                              stdin=secondary, stdout=secondary, stderr=subprocess.PIPE,
                              text=True, timeout=60, cwd=ROOT)
    finally:
        os.close(primary)
        os.close(secondary)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"mdshell: {said} applies to commands and the line shell")


# ---------------------------------------------------------------- scripts (items 8, 12)


@pytest.mark.parametrize(("script", "code"), [
    ("ls /nosuch\nfoo\nhealth\n", 2),   # usage error over failures
    ("foo\nls /nosuch\n", 2),           # whatever the order
    ("ls /nosuch\npwd\n", 1),           # a failure, then success
    ("pwd\nhealth\n", 1),               # health fails on this fixture
    ("pwd\nls /image\n", 0),
])
def test_a_script_exits_with_its_worst_line(script: str, code: int) -> None:
    out = run_cli("-d", str(FIXTURES / "health-offline"), stdin=script)
    assert out.returncode == code, out.stderr


def _reader_leaves(args: list[str], first: str, later: str) -> subprocess.CompletedProcess[str]:
    """Run mdshell with ``first`` on stdin, read one line of its output and close the pipe,
    then send ``later``: what it does when its reader went away."""
    proc = subprocess.Popen([sys.executable, "-m", "mdshell", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(first)
    proc.stdin.flush()
    assert proc.stdout.readline()
    proc.stdout.close()
    proc.stdin.write(later)
    proc.stdin.close()
    err = proc.stderr.read()
    return subprocess.CompletedProcess(args, proc.wait(timeout=60), "", err)


def test_a_reader_that_goes_away_ends_a_script_quietly() -> None:
    done = _reader_leaves(["-d", BASIC], "ls /image\n", "tree /image\nls /image\n" * 3)
    assert done.returncode == 0 and done.stderr == ""


def test_a_reader_that_goes_away_ends_one_command_quietly() -> None:
    proc = subprocess.run(f"{sys.executable} -m mdshell -d {BASIC} records | head -1",
                          shell=True, capture_output=True, text=True, cwd=ROOT, timeout=60,
                          executable="/bin/bash")
    assert proc.stdout.count("\n") == 1 and proc.stderr == ""
    piped = subprocess.run(f"set -o pipefail; {sys.executable} -m mdshell -d {BASIC} records "
                           "| head -1 >/dev/null", shell=True, capture_output=True, text=True,
                           cwd=ROOT, timeout=60, executable="/bin/bash")
    assert piped.returncode == 0 and piped.stderr == ""


# ---------------------------------------------------------------- answers past the data (3)


def test_records_past_the_end_of_the_log_say_so() -> None:
    for words in (["records", "--from", "99999999"],
                  ["records", "--batches", "--from", "99999999"]):
        out = cli("-d", BASIC, *words)
        assert out.code == 1 and out.out == ""
        assert out.err == ("mdshell: records: --from 99999999 is after the end of the log "
                           "(its last offset is 158); nothing to show\n")
    gap = cli("-d", str(FIXTURES / "bad-log-gap"), "records", "--to", "3")
    assert gap.code == 1 and gap.err.splitlines()[-1] == (
        "mdshell: records: --to 3 is before the log's first offset 15 (the records before "
        "it are not in this copy)")
    # Inside the log, a filter that keeps nothing is an empty answer, not an error.
    none = cli("-d", BASIC, "records", "--from", "150", "--type", "TopicRecord")
    assert none.code == 0 and none.out == "" and none.err == ""


def test_changes_of_a_node_no_record_touched_names_what_was_read() -> None:
    out = cli("-d", BASIC, "--at", "50", "changes", "/image/acls")
    assert out.code == 0
    assert out.out == ("no record touched /image/acls from offset 0 to offset 50 (time "
                       "travel: the image shown): it shows what an image holds before any "
                       "record (Kafka's default)\n")


def _old_cluster(base: Path) -> Path:
    """A 3.6-IV2 cluster (metadata.version 14): controllers did not register yet."""
    from mdshell.synth import ClusterBuilder

    b = ClusterBuilder(str(base), seed=3, metadata_version=14, controllers=(1, 2, 3))
    b.bootstrap()
    b.register_broker(1)
    b.create_topic("orders")
    b.finish()
    return base


def test_empty_json_controllers_say_why_on_stderr(tmp_path: Path) -> None:
    d = str(_old_cluster(tmp_path / "old"))
    text = cli("-d", d, "controllers")
    assert text.code == 0 and text.out.startswith("no controller registrations: "
                                                  "metadata.version 3.6-IV2 is before 3.7-IV0")
    js = cli("-d", d, "-o", "json", "controllers")
    assert js.code == 0 and js.out == "[]\n"
    assert js.err == f"mdshell: note: {text.out}"


# ---------------------------------------------------------------- causes (4, 13)


def test_time_travel_into_a_transaction_says_it_cut_it() -> None:
    said = ("offset 2 (time travel) is inside the metadata transaction begun at offset 1: "
            "its record is not applied (Kafka applies them only when the "
            "EndTransactionRecord arrives)")
    for strict in ([], ["--strict"]):
        out = cli("-d", str(FIXTURES / "transactions"), "--at", "2", *strict, "ls", "/image")
        assert out.code == 0
        assert out.err == f"mdshell: warning: {said}\n"  # a notice: --strict keeps it one


def test_strict_keeps_warning_on_what_does_not_fail() -> None:
    out = cli("-d", str(FIXTURES / "bad-empty-log"), "--strict", "ls", "/")
    assert out.code == 0
    assert out.err == ("mdshell: warning: 00000000000000000000.log: empty segment (nothing "
                       "written yet); skipped\n")
    # What fails it is said as an error.
    bad = cli("-d", str(FIXTURES / "bad-crc"), "--strict", "ls", "/")
    assert bad.code == 1 and not any(line.startswith("mdshell: warning:")
                                     for line in bad.err.splitlines())


def test_a_directory_of_text_is_not_a_record_batch_file(tmp_path: Path) -> None:
    md = tmp_path / "logs" / "__cluster_metadata-0"
    md.mkdir(parents=True)
    log = md / "00000000000000000000.log"
    log.write_text("these are notes someone saved under the segment's name\n")
    alone = cli("-s", str(log), "ls")
    assert alone.code == 1 and "not a Kafka record batch file" in alone.err
    out = cli("-d", str(tmp_path / "logs"), "ls", "/image/topics")
    assert out.code == 1 and out.out == ""
    assert out.err == (f"mdshell: {log}: not a Kafka record batch file (a .log segment or a "
                       ".checkpoint snapshot of __cluster_metadata-0); the directory holds no "
                       "metadata to read\n")


def test_an_unfinished_transaction_is_not_control_records_only(tmp_path: Path) -> None:
    from mdshell.synth import ClusterBuilder

    b = ClusterBuilder(str(tmp_path / "logs"), seed=5)
    b.elect_controller_leader()
    b.begin_transaction("create orders")
    b.set_config("BROKER", "", "log.retention.ms", "1000")
    b.set_config("BROKER", "", "log.segment.bytes", "1048576")
    b.finish()
    log = next((tmp_path / "logs" / "__cluster_metadata-0").glob("*.log"))
    out = cli("-s", str(log), "ls", "/image/configs")
    assert out.code == 0 and out.out == ""
    assert "control records only" not in out.err
    assert out.err == ("mdshell: warning: the log ends inside the metadata transaction "
                       "begun at offset 1: its 2 records are not applied (Kafka applies them "
                       "only when the EndTransactionRecord arrives)\n")


def _stepping_back(base: Path) -> tuple[Path, dict[str, int]]:
    """Topics a, b, c created in that order, c stamped before b (the clock stepped back,
    as on a new leader whose clock is behind), then a snapshot (its last record is c's) and
    topic d; the times of each topic's batch."""
    from mdshell.synth import ClusterBuilder

    b = ClusterBuilder(str(base), seed=9)
    b.bootstrap()
    b.register_broker(1)
    times: dict[str, int] = {}
    for name, step in (("a", 1000), ("b", 2000), ("c", -1000), ("d", 3000)):
        if name == "d":
            b.snapshot()
        b.clock += step
        b.create_topic(name)
        times[name] = b.log.last_timestamp
    b.finish()
    return base, times


def test_at_a_time_stops_before_the_first_record_written_after_it(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    d, t = _stepping_back(tmp_path / "logs")
    assert t["a"] < t["c"] < t["b"] < t["d"]

    def topics_at(ms: int) -> list[str]:
        when = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")
        out = cli("-d", str(d), "--at", when, "ls", "/image/topics/byName")
        assert out.code == 0, out.err
        return out.out.split()

    # Between c's time and b's: c was written before that time, but after b, which was
    # written after it: neither is in the image (nor is the snapshot, whose last record is c).
    assert topics_at(t["c"] + 1) == ["a"]
    assert topics_at(t["b"]) == ["a", "b", "c"]
    assert topics_at(t["d"] - 1) == ["a", "b", "c"]
    assert topics_at(t["d"]) == ["a", "b", "c", "d"]


def test_the_time_rule_is_the_same_in_help_and_docs() -> None:
    rule = "the image just before the first record written after it"
    assert rule in " ".join(cli("man", "at").out.split())
    assert rule in " ".join(cli("--help").out.split())
    docs = " ".join((ROOT / "docs" / "commands.md").read_text().split())
    assert "just before the first record written after that time" in docs
    assert "times" in cli("diff", "--help").out


# ---------------------------------------------------------------- where the data is (5, 6)


def test_a_parent_of_log_dirs_names_them(tmp_path: Path) -> None:
    import shutil

    for name in ("east", "west"):
        shutil.copytree(FIXTURES / "cluster-basic", tmp_path / "two" / name)
    shutil.copytree(FIXTURES / "elr", tmp_path / "one" / "node-1" / "data" / "kafka")
    two = cli("-d", str(tmp_path / "two"), "ls")
    assert two.code == 1 and two.err == (
        f"mdshell: {tmp_path / 'two'}: no metadata log segments (.log) or snapshots "
        "(.checkpoint) here, but east, west hold __cluster_metadata-0: give one of them to "
        "-d\n")
    one = cli("-d", str(tmp_path / "one"), "ls")
    assert one.code == 1 and one.err.endswith(
        f"but node-1/data/kafka holds __cluster_metadata-0: -d "
        f"{tmp_path / 'one' / 'node-1' / 'data' / 'kafka'}\n")
    (tmp_path / "none").mkdir()
    assert "give the __cluster_metadata-0 directory" in cli("-d", str(tmp_path / "none")).err


def _closed_ports(n: int) -> list[int]:
    """Loopback ports nothing listens on (bound, then closed)."""
    import socket

    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def test_refused_everywhere_is_known_after_one_round() -> None:
    """Every endpoint refuses the connection and none ever answered: one round of attempts,
    not the backoff loop of the request timeout (it took 5-6 s to say so)."""
    from mdshell.source.quorum.client import Client
    from mdshell.source.quorum.config import ClientConfig
    from mdshell.source.quorum.errors import LiveError

    ports = _closed_ports(2)
    client = Client(",".join(f"127.0.0.1:{p}" for p in ports), ClientConfig())
    with pytest.raises(LiveError, match="connection refused"):
        client.any_node(lambda conn: conn)
    assert client.connects == 2
    # Once an endpoint answered, a refusal may be a restart: retried within the budget.
    client.answered = True
    with pytest.raises(LiveError, match="connection refused"):
        client.any_node(lambda conn: conn, budget_s=1.0)
    assert client.connects > 4
    client.close()


# ---------------------------------------------------------------- one word for one thing (7)


@pytest.mark.parametrize(("fixture", "path"), [("cluster-basic", "/image/topics"),
                                               ("security", "/image"), ("elr", "/image")])
def test_changes_and_records_give_a_record_the_same_json(fixture: str, path: str) -> None:
    import json

    d = str(FIXTURES / fixture)
    changes = json.loads(cli("-d", d, "-o", "json", "changes", path).out)
    records = {r["offset"]: r for r in json.loads(cli("-d", d, "-o", "json", "records").out)}
    logged = [e for e in changes if e["offset"] is not None]
    assert logged
    for e in logged:
        assert e["data"] == records[e["offset"]]["data"], e["type"]
    if fixture != "security":  # partition changes: their unset tagged fields are null
        assert any(v is None for e in logged for v in e["data"].values())


def test_a_truncated_batch_has_one_size_in_every_warning() -> None:
    """The load and the batch listing said 343 and 331 bytes (the batch, its length field)
    of one batch cut short: one message now, said once."""
    d = str(FIXTURES / "bad-truncated-tail")
    for args in (["-d", d], ["-s", f"{d}/__cluster_metadata-0/00000000000000000000.log"]):
        out = cli(*args, "records", "--batches")
        sizes = set(re.findall(r"(\d+) bytes\)", out.err)) | set(
            re.findall(r"has length (\d+)", out.err))
        assert sizes == {"343"}, out.err
        assert out.err.count("is incomplete (171 of 343 bytes)") == 1, out.err


def test_show_secrets_help_and_docs_agree_on_tokens() -> None:
    helped = " ".join(cli("--help").out.split())
    said = helped.split("--show-secrets print", 1)[1].split("--layout", 1)[0]
    assert said.startswith(" SCRAM credentials and password-type configs")
    assert "tokens hold no secret" in said and "never hidden" in said
    docs = " ".join((ROOT / "docs" / "commands.md").read_text().split())
    assert "Delegation tokens print in Kafka's form with nothing hidden" in docs


def test_an_unfenced_broker_is_unfenced_in_every_front_end() -> None:
    """The brokers table and health said "unfenced", the TUI "active": one word."""
    import json

    from mdshell.session import Session
    from mdshell.tui.plain import broker_state

    d = str(FIXTURES / "health-fenced")
    table = {r["id"]: r["state"] for r in
             json.loads(cli("-d", d, "-o", "json", "brokers").out)}
    image = Session.open(directory=d).latest.image
    tui = {b.id: broker_state(b) for b in image.brokers.values()}
    unfenced = [i for i, s in table.items() if s == "unfenced"]
    assert unfenced and all(tui[i] == "unfenced" for i in unfenced)


# ---------------------------------------------------------------- Spark missing (9)

# An interpreter in which the spark extra's packages cannot be imported, as in an install
# without the extra (the README's first command): a finder ahead of all others refuses them.
_WITHOUT_SPARK = """
import sys
HIDDEN = {hidden!r}
class Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Hidden())
from mdshell.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _without(hidden: set[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _WITHOUT_SPARK.format(hidden=hidden), *args],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_tables_needs_no_spark() -> None:
    everything = {"pyspark", "pyarrow", "pandas", "numpy"}
    for fmt in ("text", "json"):
        alone = _without(everything, "-d", BASIC, "-o", fmt, "tables")
        assert alone.returncode == 0 and alone.stderr == "", alone.stderr
        assert alone.stdout == cli("-d", BASIC, "-o", fmt, "tables").out
        if fmt == "text":
            assert "partitions: partitions of the image" in alone.stdout


@pytest.mark.parametrize(("hidden", "named"), [
    ({"pyspark", "pyarrow", "pandas", "numpy"}, "pyspark, pyarrow, pandas and numpy are"),
    ({"pyarrow"}, "pyarrow is"),
])
def test_sql_without_spark_names_every_missing_package(hidden: set[str], named: str) -> None:
    out = _without(hidden, "-d", BASIC, "sql", "select 1")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr == (f"mdshell: sql: Spark queries need the spark extra, and {named} not "
                          "installed: pip install 'mdshell[spark]' (in a clone of mdshell: pip "
                          "install -e '.[spark]'); Spark also needs Java 17 or later\n")


# ---------------------------------------------------------------- README (11)


def test_readme_starts_from_a_clone_and_installs_spark_there() -> None:
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    clone = quick.index("git clone ")
    commands = [line.strip() for line in quick.splitlines() if line.startswith("    ")]
    assert len(commands) == 2 and clone < quick.index(commands[0])  # .ci/run's rule holds
    assert "&& cd mdshell" in quick.splitlines()[quick[:clone].count("\n")]
    ci = subprocess.run([str(ROOT / ".ci" / "run"), "--print"], capture_output=True,
                        text=True, timeout=30)
    assert ci.returncode == 0 and ci.stdout.strip() == commands[1]
    assert ".venv/bin/pip install -e '.[spark]'" in readme
    assert "mdshell --help" in quick


# ---------------------------------------------------------------- stopped or failing (10)


def _stopping(base: Path, lose: bool) -> tuple[Path, int]:
    """Three brokers; 1 and 2 stopped by a controlled shutdown (then fenced), 3 as well or
    (``lose``) fenced without one, as when its session is lost. The time of the last
    registration change of 1 and 2."""
    from mdshell.synth import ClusterBuilder

    b = ClusterBuilder(str(base), seed=11)
    b.bootstrap()
    for i in (1, 2, 3):
        b.register_broker(i)
        b.unfence_broker(i)
    b.create_topic("orders", partitions=3, rf=3)
    for i in (1, 2):
        b.controlled_shutdown(i)
        b.fence_broker(i)
    stopped = b.log.last_timestamp
    if not lose:
        b.controlled_shutdown(3)
    b.fence_broker(3)
    if not lose:
        stopped = b.log.last_timestamp
    b.noop(3)
    b.finish()
    return base, stopped


def _utc(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def test_a_stopped_cluster_is_told_from_a_failing_one(tmp_path: Path) -> None:
    d, last = _stopping(tmp_path / "stopped", lose=False)
    out = cli("-d", str(d), "health", "--all").out.splitlines()
    fenced = next(i for i, line in enumerate(out) if "fenced brokers" in line)
    assert out[fenced] == (
        "WARN  fenced brokers: 3 of 3 registered brokers are fenced: every one was stopped "
        f"after a controlled shutdown (the last at {_utc(last)}): a stopped cluster, not a "
        "failing one")
    assert all("stopped after a controlled shutdown (its last registration change at"
               in line for line in out[fenced + 1:fenced + 4])
    assert not any("controlled shutdown:" in line for line in out)  # done, not under way


def test_a_lost_broker_still_fails(tmp_path: Path) -> None:
    d, last = _stopping(tmp_path / "lost", lose=True)
    out = cli("-d", str(d), "health").out.splitlines()
    line = next(x for x in out if "fenced brokers" in x)
    assert line == ("FAIL  fenced brokers: 3 of 3 registered brokers are fenced: 1 broker lost "
                    "its session, 2 were stopped after a controlled shutdown (the last at "
                    f"{_utc(last)})")
    assert any("broker 3" in x and "without a controlled shutdown: it lost its session" in x
               for x in out)


@pytest.mark.corpus
def test_stopped_corpus_clusters_say_when_they_stopped() -> None:
    """The real directories whose brokers were all fenced after a controlled shutdown (they
    read FAIL fenced and WARN in controlled shutdown, as a failing cluster would): each is a
    stopped cluster now, with the time of its last registration change."""
    import json

    from .conftest import corpus_dirs, need_corpus

    need_corpus()
    seen = 0
    for d in corpus_dirs():
        data = json.loads(cli("-d", str(d), "-o", "json", "health").out)
        fenced = next((c for c in data["checks"] if c["name"] == "fenced brokers"), None)
        if fenced is None or not fenced["items"] or not all(
                i["controlledShutdown"] for i in fenced["items"]):
            continue
        seen += 1
        assert fenced["status"] == "warn", d.name
        assert all(i["lastChangeMs"] is not None for i in fenced["items"]), d.name
        assert not any(c["name"] == "controlled shutdown" for c in data["checks"]), d.name
    assert seen >= 20


# ---------------------------------------------------------------- a person typing, output piped


def _typed_with_output_piped(lines: str, home: Path) -> tuple[int, str, str]:
    """``mdshell -d BASIC > pipe`` typed at a terminal: stdin and stderr a pseudo-terminal,
    stdout a pipe. Types ``lines`` once the prompt shows, then Ctrl-D; returns the exit
    status, what stdout got and what the terminal showed."""
    import pty
    import select
    import time

    master, slave = pty.openpty()
    env = {**os.environ, "HOME": str(home), "MDSHELL_HISTORY": str(home / "history")}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "mdshell", "-d", BASIC], stdin=slave,
                            stdout=subprocess.PIPE, stderr=slave, cwd=ROOT, env=env)
    os.close(slave)
    shown = b""

    def plain() -> bytes:
        return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", shown)

    def read_until(text: bytes, seconds: float) -> None:
        nonlocal shown
        end = time.monotonic() + seconds
        while text not in plain() and time.monotonic() < end:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    shown += os.read(master, 65536)
                except OSError:
                    return
    try:
        read_until(b":/>", 30)
        for line in lines.splitlines():
            os.write(master, line.encode() + b"\r")
            read_until(line.encode(), 5)
        os.write(master, b"\x04")
        out = proc.stdout.read().decode() if proc.stdout else ""
        code = proc.wait(timeout=30)
        read_until(b"\0", 0.5)
    finally:
        proc.kill()
        os.close(master)
    return code, out, plain().decode(errors="replace")


def test_typed_commands_with_output_piped_prompt_on_the_terminal(tmp_path: Path) -> None:
    """stdin a terminal, stdout a file or pipe (``mdshell -d DIR > out.txt``, ``| tee``): the
    prompt, the banner and the line editing are drawn on stderr's terminal, and stdout holds
    only the commands' output, as a pipe gets it (one name a line, no escape codes). Before,
    the prompt-toolkit session drew into the file and the terminal stayed blank."""
    code, out, shown = _typed_with_output_piped("ls /image/topics/byName\n", tmp_path)
    assert code == 0
    assert out.splitlines() == ["topic-0", "topic-1", "topic-2", "topic-3"]
    assert "mdshell:cluster-basic:/>" in shown and "'help' lists commands" in shown


# ---------------------------------------------------------------- -d on the wrong kind of path


def test_a_link_that_leads_nowhere_is_said_as_such(tmp_path: Path) -> None:
    """A symlink loop or a dangling link exists (``ls`` shows it): "no such directory" sent
    the user looking for a typo. The one line says it is a link and where it leads."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    (tmp_path / "gone").symlink_to(tmp_path / "unmounted" / "kafka-logs")
    loop = cli("-d", str(tmp_path / "a"), "ls")
    assert loop.code == 1 and loop.err.count("\n") == 1
    assert "symbolic link" in loop.err and "loop" in loop.err
    gone = cli("-d", str(tmp_path / "gone"), "ls")
    assert gone.code == 1 and gone.err.count("\n") == 1
    assert "symbolic link" in gone.err and str(tmp_path / "unmounted" / "kafka-logs") in gone.err


def test_a_fifo_given_to_d_is_not_sent_to_s(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = cli("-d", str(fifo), "ls")
    assert out.code == 1 and "FIFO" in out.err and "-s FILE" not in out.err


def test_a_topic_partition_directory_without_segments_names_the_log_dir(tmp_path: Path) -> None:
    """A broker's ``orders-0/`` holding only ``partition.metadata`` (its segments deleted, or
    left out of a copy, as in the corpus): the line says whose partition it is and gives the
    log dir beside it, which holds ``__cluster_metadata-0``."""
    from .conftest import three_brokers

    b = three_brokers(tmp_path / "logdir", seed=9)
    b.create_topic("orders", 2, 3)
    b.finish(partition_dirs=True)
    part = tmp_path / "logdir" / "orders-1"
    assert sorted(p.name for p in part.iterdir()) == ["partition.metadata"]
    out = cli("-d", str(part), "ls")
    assert out.code == 1 and out.err.count("\n") == 1
    assert "partition 1 of topic 'orders'" in out.err
    assert f"-d {tmp_path / 'logdir'}" in out.err


# ---------------------------------------------------------------- help on a narrow terminal


def _words(lines: list[str]) -> list[str]:
    return " ".join(lines).split()


@pytest.mark.parametrize("words", [["help"], ["man", "health"], ["man", "records"]])
def test_help_wraps_at_the_terminal_width_by_words(words: list[str]) -> None:
    """On a terminal, ``help`` and ``man CMD`` wrap at its width between words (a summary
    under itself, past the names), never cutting a word; piped, lines stay whole."""
    import io

    from mdshell.commands.render import emit

    from .conftest import open_shell

    sh = open_shell("cluster-basic")
    result = REGISTRY[words[0]].run(sh, words[1:])
    whole, narrow = io.StringIO(), io.StringIO()
    emit(result, whole)
    emit(result, narrow, width=60)
    lines = narrow.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 60
    assert _words(lines) == _words(whole.getvalue().splitlines())
    assert max(len(line) for line in whole.getvalue().splitlines()) > 60
    if words == ["help"]:
        indent = {len(line) - len(line.lstrip()) for line in lines} - {0}  # 0: the heading
        assert len(indent) == 2, indent  # names at 2, a wrapped summary under its start


def test_help_option_wraps_the_commands_at_columns() -> None:
    out = run_cli("--help", env={"COLUMNS": "64"})
    section = out.stdout.split("\ncommands (", 1)[1].split("\n\n", 1)[0]
    assert max(len(line) for line in section.splitlines()) <= 64
    assert _help_commands(out.stdout) == _help_commands(run_cli("--help").stdout)


# ---------------------------------------------------------------- a time given as epoch numbers


@pytest.mark.parametrize(("value", "time"), [
    ("1714000031490", "2024-04-24T23:07:11.490Z"), ("1714000031", "2024-04-24T23:07:11Z")])
def test_an_epoch_time_past_the_log_is_told_as_a_time(value: str, time: str) -> None:
    """Kafka's tools take times in epoch milliseconds (kafka-get-offsets --time): given to
    --at or at, such a number is far past any metadata log's end, and the error says what
    time it would be and how to give it."""
    out = cli("-d", BASIC, "--at", value, "ls")
    assert out.code == 1 and out.err.count("\n") == 1
    assert "is after the end of the log" in out.err
    assert time in out.err and "ISO 8601" in out.err
    near = cli("-d", BASIC, "--at", "159", "ls")  # just past the end: no such guess
    assert near.code == 1 and "epoch" not in near.err


# ---------------------------------------------------------------- closed standard streams


def _closed(stream: int, *args: str) -> subprocess.CompletedProcess[str]:
    """``mdshell ARGS`` with standard stream ``stream`` (0 stdin, 2 stderr) closed, as cron
    or a service manager may start it."""
    redirect = f"{stream}<&-" if stream == 0 else f"{stream}>&-"
    line = " ".join([sys.executable, "-m", "mdshell", *args, redirect])
    return subprocess.run(line, shell=True, capture_output=stream != 2, text=True, cwd=ROOT,
                          timeout=60, executable="/bin/bash",
                          stdout=subprocess.PIPE if stream == 2 else None)


def test_stdin_closed_without_a_command_is_a_usage_error() -> None:
    out = _closed(0, "-d", BASIC)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "standard input is closed" in out.stderr
    assert "internal error" not in out.stderr
    ran = _closed(0, "-d", BASIC, "ls")  # a command needs no stdin
    assert ran.returncode == 0 and ran.stdout.split() == ["image", "local", "log", "quorum"]


def test_stderr_closed_keeps_errors_out_of_the_output() -> None:
    out = _closed(2, "-d", BASIC, "ls", "/image/cluster", "/nope")
    assert out.returncode == 1
    assert out.stdout.split() == ["brokers", "controllers"]  # the error went nowhere


# ---------------------------------------------------------------- usage errors say where


@pytest.mark.parametrize(("args", "line"), [
    (["at", "foo"], "mdshell: at: 'foo' is not an offset"),
    (["diff", "a", "latest"], "mdshell: diff: 'a' is not an offset"),
    (["--at", "abc", "ls"], "mdshell: --at 'abc' is not an offset"),
    (["--at", "99999", "ls"], "mdshell: --at offset 99999 is after the end of the log"),
    (["records", "--type", "Bogus,NoOp"], "mdshell: records: unknown record type Bogus (known:"),
])
def test_usage_errors_name_the_command_or_option(args: list[str], line: str) -> None:
    """Every error line starts with what it is about: the command (``at: ...``), or the
    option (``--at ...``) when the user typed no ``at``; names as typed."""
    out = cli("-d", BASIC, *args)
    assert out.code in (1, 2) and out.err.startswith(line), out.err


# ---------------------------------------------------------------- options after the command


@pytest.mark.parametrize(("args", "option"), [
    (["ls", "-d", BASIC], "-d"), (["-d", BASIC, "health", "-o", "json"], "-o"),
    (["-d", BASIC, "ls", "--strict"], "--strict"),
    (["-d", BASIC, "topics", "--at", "5"], "--at"),
])
def test_an_option_of_mdshell_after_the_command_says_where_it_goes(
        args: list[str], option: str) -> None:
    """Options come before the command. ``mdshell ls -d DIR`` said "no metadata source" and
    ``health -o json`` "unrecognized arguments": the line now says the option is mdshell's
    and goes before the command."""
    out = cli(*args)
    assert out.code == 2 and out.err.count("\n") == 1
    assert f"{option} is an option of mdshell" in out.err and "before the command" in out.err


def test_options_a_command_takes_or_values_are_not_moved() -> None:
    assert cli("-d", BASIC, "diff", "--at", "5", "--node", "1", "--node", "2").err.count(
        "option of mdshell") == 0
    out = cli("-d", BASIC, "records", "--grep", "-o", "--limit", "1")  # -o: a value
    assert "option of mdshell" not in out.err


def test_a_double_dash_ends_the_options() -> None:
    out = cli("-d", BASIC, "--", "ls", "/image/cluster")
    assert out.code == 0 and out.out.split() == ["brokers", "controllers"]


def test_a_short_text_file_given_to_s_is_not_a_batch_file() -> None:
    """``-s leader-epoch-checkpoint`` (8 bytes of text, a file beside the segments) was read
    as a record batch cut short: exit 0 on an empty image. Text shorter than a batch header
    is no batch (a real one starts with its base offset's high bytes, 0 below 2^56)."""
    f = FIXTURES / "cluster-basic" / "__cluster_metadata-0" / "leader-epoch-checkpoint"
    assert len(f.read_bytes()) < 17
    out = cli("-s", str(f), "ls", "/image")
    assert out.code == 1 and out.err.count("\n") == 1
    assert "not a Kafka record batch file" in out.err


def test_a_followed_directory_that_goes_away_is_named_once(tmp_path: Path) -> None:
    """The line of a followed directory that can no longer be read named it twice
    ("stopped following D: D: no such directory")."""
    import shutil

    from mdshell.session.appends import Follow

    from .conftest import open_shell

    d = tmp_path / "copy"
    shutil.copytree(FIXTURES / "cluster-basic", d)
    sh = open_shell(d)
    sh.session.follow = Follow()
    shutil.rmtree(d)
    r = sh.run(["health"])
    line = next(c for c in r.json()["checks"] if c["name"] == "data")["summary"]
    where = str(d / "__cluster_metadata-0")
    assert f"stopped following {where}: no such directory" in line and line.count(where) == 1
