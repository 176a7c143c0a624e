"""Typed results and the one renderer: commands return data, ``commands.textform`` and
``commands.jsonform`` make the text and the JSON; ``records --grep`` matches decoded field
values; usage errors are 2 in the shell too."""

from __future__ import annotations

import io
import json

from mdshell.commands import Result, Shell
from mdshell.commands import results as r
from mdshell.commands.jsonform import json_value
from mdshell.commands.render import emit
from mdshell.commands.textform import text_lines
from mdshell.repl import run_script

from .conftest import FIXTURES, run_cli
from .test_commands import shell


def test_commands_return_typed_values_that_the_renderer_prints() -> None:
    sh = shell("cluster-basic")
    res = sh.run(["ls", "/image"])
    assert isinstance(res.value, r.Listing)
    assert [(d.path, d.name) for d in res.value.dirs] == [("/image", "image")]
    assert list(text_lines(res.value)) == list(res.lines) == res.value.dirs[0].children
    assert json_value(res.value) == res.json()
    assert json_value(res.value)[0]["children"] == res.value.dirs[0].children
    kinds = {"pwd": r.WorkingDir, "cat /image/provenance": r.Leaves, "tree /local": r.Tree,
             "find /local": r.Paths, "records --limit 2": r.Records, "help": r.Help,
             "man ls": r.Manual, "health": r.Health, "diff 1 latest": r.Diff,
             "changes /image/cluster": r.Changes, "records --batches": r.Batches,
             "topics": r.Table, "brokers": r.Table, "features": r.Table, "quorum": r.Fields}
    for line, kind in kinds.items():
        assert isinstance(sh.run_line(line).value, kind), line


def test_the_width_is_the_front_ends() -> None:
    sh = shell("cluster-basic")
    res = sh.run(["ls", "/image"])
    names = res.value.dirs[0].children
    wide = list(text_lines(res.value, 200))
    assert len(wide) == 1 and wide[0].split() == names  # one line of columns
    out = io.StringIO()
    assert emit(res, out, width=200) == 0 and out.getvalue() == wide[0] + "\n"
    out = io.StringIO()
    emit(res, out, output="json")
    assert json.loads(out.getvalue()) == res.json()


def test_plain_results_keep_working() -> None:
    """Commands that make their own lines and JSON (tables, sql) give a ``Text``."""
    res = Result(value=r.Text(["a", "b"], {"k": 1}))
    assert list(res.lines) == ["a", "b"]
    assert res.json() == {"k": 1} and res.code == 0
    lazy = Result(value=r.Text(iter(["x"]), lambda: [1, 2]))
    assert lazy.json() == [1, 2] and list(lazy.lines) == ["x"]
    assert Result().value is None and list(Result().lines) == [] and Result().json() is None
    failed = Result(errors=["boom"])
    err = io.StringIO()
    assert emit(failed, io.StringIO(), err) == 1 and err.getvalue() == "mdshell: boom\n"


def test_records_grep_matches_field_values_not_the_line() -> None:
    sh = shell("cluster-basic")
    every = sh.run(["records"]).json()
    by_value = sh.run(["records", "--grep", "topic-2"]).json()
    # a TopicRecord names it; partition records and changes carry its name beside the id
    assert by_value and {j["type"] for j in by_value} >= {"TopicRecord", "PartitionRecord"}
    assert all("topic-2" in json.dumps(j["data"]) for j in by_value)
    # field names, type names and offsets are in the line, not in the values
    for text in ("topicId", "PartitionRecord", "offset="):
        assert any(text in line for line in sh.run(["records"]).lines)
        assert sh.run(["records", "--grep", text]).json() == [], text
    # numbers and booleans match as JSON writes them
    fenced = sh.run(["records", "--type", "RegisterBroker", "--grep", "true"]).json()
    assert fenced and all(j["data"]["fenced"] is True for j in fenced)
    port = sh.run(["records", "--type", "RegisterBroker", "--grep", "9092"]).json()
    assert port and all(e["port"] == 9092 for j in port for e in j["data"]["endPoints"])
    assert len(by_value) < len(every)


def test_help_records_says_what_grep_matches() -> None:
    text = "\n".join(shell("cluster-basic").run(["help", "records"]).lines)
    assert "--grep keeps records where one field value contains TEXT" in text


def test_a_malformed_offset_is_a_usage_error_in_the_shell_too() -> None:
    sh = shell("cluster-basic")
    err = io.StringIO()
    code = run_script(sh, io.StringIO("at abc\n"), io.StringIO(), err)
    assert code == 2 and "not an offset" in err.getvalue()
    out = run_cli("-d", str(FIXTURES / "cluster-basic"), stdin="at abc\npwd\n")
    assert out.returncode == 2 and "line 1: at: 'abc' is not an offset" in out.stderr
    assert out.stdout == "/\n"


def test_the_shell_has_no_front_end_state() -> None:
    sh = shell("cluster-basic")
    assert isinstance(sh, Shell) and not hasattr(sh, "width") and not hasattr(sh, "output")
