"""No silent empty answers, one style of error line (issue 18, items 6 and 9): a name that
names nothing is an error, completion offers only what a command accepts, usage errors exit 2
in one line, ``--help`` says what works, and empty tables say why they are empty."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mdshell.repl import complete

from .conftest import FIXTURES, ROOT, cli, open_shell, run_cli

BASIC = str(FIXTURES / "cluster-basic")


def _topic_id(name: str) -> str:
    from mdshell.wire.primitives import uuid_str

    return uuid_str(open_shell("cluster-basic").session.latest.image.topics_by_name[name].id)


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if not line.startswith("mdshell: warning: ")]


# ---------------------------------------------------------------- unknown names


@pytest.mark.parametrize("topic", ["nosuch", "nos*", "AAAAAAAAAAAAAAAAAAAAAA"])
def test_records_of_an_unknown_topic_is_an_error(topic: str) -> None:
    for output in ("text", "json"):
        run = cli("-d", BASIC, "-o", output, "records", "--topic", topic)
        assert run.code == 1, (topic, output, run.err)
        assert run.out == ("[]\n" if output == "json" else "")
        assert _errors(run.err) == [run.err.strip()]
        assert run.err.startswith(f"mdshell: records: --topic {topic}: no such topic")
        assert "`topics` lists the topics" in run.err


def test_records_topic_takes_a_name_glob_id_or_completed_path() -> None:
    by_name = cli("-d", BASIC, "records", "--topic", "topic-0")
    assert by_name.code == 0 and by_name.out.count("\n") > 3
    for word in ("topic-0/", _topic_id("topic-0"), "topic-[0]", "topic-0*"):
        run = cli("-d", BASIC, "records", "--topic", word)
        assert (run.code, run.out, run.err) == (0, by_name.out, by_name.err), word
    both = cli("-d", BASIC, "records", "--topic", "topic-[01]")
    assert '"name":"topic-0"' in both.out and '"name":"topic-1"' in both.out


def test_records_of_a_removed_topic_still_answer() -> None:
    """A topic no longer in the image is known from its TopicRecord in the log."""
    sh = open_shell("cluster-basic")
    removed = next(iter(sh.run(["records", "--type", "RemoveTopic"]).lines))
    tid = removed.split('"topicId":"')[1].split('"')[0]
    created = [x for x in sh.run(["records", "--type", "Topic"]).lines if tid in x]
    name = created[0].split('"name":"')[1].split('"')[0]
    assert name not in sh.session.latest.image.topics_by_name
    result = sh.run(["records", "--topic", name])
    rows = list(result.lines)
    assert result.code == 0 and rows and any("RemoveTopicRecord" in x for x in rows)


def test_topics_of_an_unknown_name_is_an_error_and_ids_work() -> None:
    run = cli("-d", BASIC, "topics", "nosuch")
    assert run.code == 1 and run.out == ""
    assert run.err.startswith("mdshell: topics: nosuch: no such topic")
    by_id = cli("-d", BASIC, "topics", _topic_id("topic-1"), "topic-0/")
    assert by_id.code == 0
    assert [x.split()[0] for x in by_id.out.splitlines()] == ["TOPIC", "topic-0", "topic-1"]


def test_changes_of_a_node_that_never_existed_is_an_error() -> None:
    """A partition that never existed is touched by its topic's record only: that is not an
    answer, and '1 records' was not English."""
    for path in ("/image/topics/byName/topic-0/99", "/image/topics/byName/nosuch",
                 f"/image/topics/byId/{_topic_id('topic-0')}/99"):
        run = cli("-d", BASIC, "changes", path)
        assert run.code == 1 and run.out == "", path
        assert run.err.startswith(f"mdshell: changes: {path}: no such node"), run.err
        assert "`ls /image/topics/by" in run.err
    one = cli("-d", BASIC, "changes", "/image/topics/byName/topic-0/id")
    assert one.code == 0 and one.out.splitlines()[-1] == "1 record"
    untouched = cli("-d", BASIC, "changes", "/image/features/zkMigrationState")  # a default
    assert untouched.code == 0 and untouched.out == (
        "no record touched /image/features/zkMigrationState from offset 0 to offset 158: it "
        "shows what an image holds before any record (Kafka's default)\n")
    moved = cli("-d", BASIC, "changes", "/image/provenance")  # every record moves it
    assert moved.code == 1 and "every record moves" in moved.err and moved.out == ""


def test_diff_and_record_types_refuse_unknown_names() -> None:
    run = cli("-d", BASIC, "diff", "10", "20", "/image/topics/byName/nosuch")
    assert run.code == 1 and run.err.startswith("mdshell: diff: ")
    bad = cli("-d", BASIC, "records", "--type", "NoSuchType")
    assert bad.code == 2 and bad.err.startswith("mdshell: records: unknown record type")


# ---------------------------------------------------------------- completion


def _texts(line: str, cwd: str = "/") -> list[str]:
    sh = open_shell("cluster-basic")
    sh.session.cwd = cwd
    return [c.text for c in complete(sh, line)]


def test_completion_offers_only_what_the_command_accepts() -> None:
    names = ["topic-0 ", "topic-1 ", "topic-2 ", "topic-3 "]
    # Under byName a path completion offered "topic-0/", which --topic took for no topic.
    assert _texts("records --topic ", "/image/topics/byName") == names
    assert _texts("records --topic topic-1") == ["topic-1 "]
    assert _texts("topics --describe t") == names
    assert _texts("records --type topicr") == ["TopicRecord "]
    assert _texts("records --exclude NoOp,Par") == ["NoOp,PartitionChangeRecord ",
                                                    "NoOp,PartitionRecord "]
    assert _texts("at l") == ["latest "] and _texts("diff 3 ") == ["earliest ", "latest "]
    assert _texts("diff 3 4 /image/top") == ["/image/topics/"]
    assert _texts("find / -type ") == ["d ", "f "]
    for line in ("health ", "records ", "records --from ", "pwd ", "changes /image /im",
                 "brokers "):
        assert _texts(line) == [], line
    assert _texts("cd /image/topics/byName ") == []
    assert "topics " in _texts("man to") and "topics " in _texts("help to")


def test_every_completed_topic_word_is_accepted() -> None:
    """Completion and the commands agree: each word offered runs without an error."""
    sh = open_shell("cluster-basic")
    sh.session.cwd = "/image/topics/byName"
    for line in ("records --topic ", "topics "):
        for text in _texts(line, sh.session.cwd):
            words = [*line.split(), text.strip()]
            result = sh.run(words)
            assert result.code == 0 and list(result.lines) and not result.errors, words


# ---------------------------------------------------------------- usage errors and help


@pytest.mark.parametrize("bootstrap", ["garbage", "127.0.0.1:99999", ",", "host:"])
def test_a_malformed_bootstrap_is_a_usage_error(bootstrap: str) -> None:
    run = cli("-q", bootstrap, "topics")
    assert run.code == 2 and run.out == ""
    assert len(run.err.splitlines()) == 1 and run.err.startswith("mdshell: -q"), run.err


def test_option_errors_are_one_line() -> None:
    run = cli("--bogus", "-d", BASIC, "topics")
    assert run.code == 2
    assert run.err.splitlines() == [
        "mdshell: unrecognized arguments: --bogus (mdshell --help lists the options)"]


def test_help_says_what_works_and_keeps_the_examples_apart() -> None:
    run = run_cli("--help")
    assert run.returncode == 0
    text = run.stdout
    assert "(soon)" not in text and "live controller quorum" in " ".join(text.split())
    assert "--at OFFSET|TIME" in text
    examples = text.split("examples:\n")[1].splitlines()
    assert len(examples) >= 4 and all(x.startswith("  mdshell -") for x in examples)
    assert "|" not in "".join(examples)


def test_every_error_line_has_the_one_prefix() -> None:
    """One-shot command errors, load errors, usage errors and the line shell: ``mdshell: ``."""
    runs = [cli("-d", BASIC, *words) for words in (
        ["tre"], ["cat", "/image"], ["ls", "/nosuch"], ["topics", "nosuch"],
        ["records", "--from", "9", "--to", "1"], ["at", "x"])]
    runs.append(cli("-d", str(FIXTURES / "nosuch-dir"), "ls"))
    for run in runs:
        assert run.code in (1, 2) and run.err, run
        assert all(x.startswith("mdshell: ") for x in run.err.splitlines()), run.err
    script = run_cli("-d", BASIC, stdin="pwd\nls /nosuch\n")
    assert script.stderr.startswith("mdshell: line 2: ls: /nosuch: ")


def test_health_json_is_what_the_readme_says() -> None:
    run = cli("-o", "json", "-d", str(FIXTURES / "health-offline"), "health")
    data = json.loads(run.out)
    assert set(data) == {"ok", "summary", "status", "verdict", "checks"}
    keys = {k for c in data["checks"] for k in c}
    item_keys = {k for c in data["checks"] for it in c["items"] for k in it}
    assert keys == {"name", "status", "summary", "items"}
    assert {"check", "status", "message"} <= item_keys
    commands = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    row = next(x for x in commands.splitlines() if x.startswith("| `health [--all]` |"))
    for key in (*keys, "ok", "checks", "check", "message", "verdict"):
        assert f"`{key}`" in row, key
    assert "`details`" not in row  # the key it once had


# ---------------------------------------------------------------- empty or partial answers


def test_a_damaged_snapshot_file_says_to_read_the_directory(tmp_path: Path) -> None:
    source = FIXTURES / "bad-half-snapshot" / "__cluster_metadata-0"
    copy = tmp_path / "copy"
    shutil.copytree(source, copy)
    damaged = copy / "00000000000000000023-0000000001.checkpoint"
    run = cli("-s", str(damaged), "topics")
    said = next(x for x in run.err.splitlines() if "snapshot 0000" in x)
    assert "snapshot 00000000000000000023-0000000001.checkpoint" in said
    assert run.err.splitlines()[-1].startswith("mdshell: warning: the image may be wrong")
    assert f"-d {copy}" in said and "read from the log" not in said
    assert "older snapshot and the log" in said
    assert cli("--strict", "-s", str(damaged), "topics").code == 1


def test_controllers_before_3_7_say_where_the_voters_are(tmp_path: Path) -> None:
    from mdshell.synth import Scenario, generate

    generate(Scenario(brokers=3, controllers=3, topics=2, history_changes=5,
                      metadata_version=11), str(tmp_path / "d"))
    run = cli("-d", str(tmp_path / "d"), "controllers")
    assert run.code == 0
    assert run.out == ("no controller registrations: metadata.version 3.5-IV2 is before "
                       "3.7-IV0, when controllers began to register (KIP-919); the voters are "
                       "1000, 1001, 1002 (`quorum` shows them)\n")
    assert json.loads(cli("-o", "json", "-d", str(tmp_path / "d"), "controllers").out) == []
    registered = cli("-d", BASIC, "controllers")  # 4.0: the table, no note
    assert registered.out.startswith("ID ") and "no controller registrations" not in registered.out
