"""mdshell's hand-encoded Spark Connect messages (mdshell/spark/connectwire.py) read by the
protocol's own generated classes (pyspark.sql.connect.proto, what PySpark's client sends and
the server parses), and the protocol's own encodings read by mdshell. No server: the field
numbers themselves are checked against the descriptors in tests/test_compat.py."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mdshell.spark import connectwire as w
from mdshell.spark.connectclient import ConnectError, ConnectURL
from mdshell.spark.connectsessions import reads_only

pytestmark = pytest.mark.spark
pb = pytest.importorskip("pyspark.sql.connect.proto")


def _stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def test_an_execute_request_of_a_limited_sql_query_reads_back() -> None:
    user = w.message("UserContext", user_id="ann")
    plan = w.query_plan(w.limit(w.sql("select * from topics"), 10001))
    data = w.message("ExecutePlanRequest", session_id="s-1", user_context=user, plan=plan,
                     client_type="mdshell", operation_id="op-1", tags=["a", "b"])
    got = pb.ExecutePlanRequest.FromString(data)
    assert (got.session_id, got.user_context.user_id, got.client_type, got.operation_id,
            list(got.tags)) == ("s-1", "ann", "mdshell", "op-1", ["a", "b"])
    assert got.plan.root.limit.limit == 10001
    assert got.plan.root.limit.input.sql.query == "select * from topics"


def test_a_view_of_sent_rows_reads_back() -> None:
    table = pa.table({"n": pa.array([1, 2], pa.int32()), "s": ["x", None]})
    got = pb.Plan.FromString(w.create_view(w.local_relation(_stream(table)), "topics"))
    view = got.command.create_dataframe_view
    assert (view.name, view.is_global, view.replace) == ("topics", False, True)
    assert pa.ipc.open_stream(view.input.local_relation.data).read_all().equals(table)
    cached = pb.Plan.FromString(w.create_view(w.cached_relation(["h1", "h2"]), "records"))
    assert list(cached.command.create_dataframe_view.input
                .chunked_cached_local_relation.dataHashes) == ["h1", "h2"]


def test_projection_count_and_settings_read_back() -> None:
    rel = pb.Relation.FromString(w.project(w.sql("q"), ["to_json(`r`) AS `r`", "`n`"]))
    assert [e.expression_string.expression for e in rel.project.expressions] == [
        "to_json(`r`) AS `r`", "`n`"]
    assert rel.project.input.sql.query == "q"
    agg = pb.Relation.FromString(w.count(w.sql("q"))).aggregate
    assert agg.group_type == pb.Aggregate.GroupType.GROUP_TYPE_GROUPBY
    assert [e.expression_string.expression for e in agg.aggregate_expressions] == [
        "count(1) AS n"]
    op = pb.ConfigRequest.Operation.FromString(w.config_set({"a": "1", "b": ""}))
    assert [(p.key, p.value) for p in op.set.pairs] == [("a", "1"), ("b", "")]
    assert pb.ConfigRequest.Operation.FromString(w.config_get_all("mdshell.")).get_all.prefix \
        == "mdshell."
    assert list(pb.ConfigRequest.Operation.FromString(w.config_unset(["k"])).unset.keys) == ["k"]


def test_responses_encoded_by_the_protocol_are_read() -> None:
    table = pa.table({"leader": pa.array([0, 1], pa.int32())})
    response = pb.ExecutePlanResponse(session_id="s", arrow_batch=pb.ExecutePlanResponse
                                      .ArrowBatch(row_count=2, data=_stream(table)))
    data = w.arrow_data(response.SerializeToString())
    assert data is not None and pa.ipc.open_stream(data).read_all().equals(table)
    done = pb.ExecutePlanResponse(session_id="s", result_complete=pb.ExecutePlanResponse
                                  .ResultComplete())
    assert w.arrow_data(done.SerializeToString()) is None
    pairs = pb.ConfigResponse(session_id="s", pairs=[pb.KeyValue(key="table.topics", value="{}"),
                                                     pb.KeyValue(key="image")])
    assert w.config_pairs(pairs.SerializeToString()) == {"table.topics": "{}", "image": ""}


def test_connection_strings_as_pyspark_takes_them() -> None:
    url = ConnectURL.parse("sc://spark.example:443/;use_ssl=true;token=abc;x-tenant=t%201")
    assert (url.host, url.port, url.endpoint, url.token) == (
        "spark.example", 443, "spark.example:443", "abc")
    assert url.params["x-tenant"] == "t 1"
    assert ConnectURL.parse("sc://[::1]").endpoint == "[::1]:15002"
    assert ConnectURL.parse("sc://h/;user_id=bob").user == "bob"
    for bad in ("http://h:1", "sc://h:1/path", "sc://h:1/;novalue", "sc://:1"):
        with pytest.raises(ValueError, match=r"^sc://|^http://|novalue"):
            ConnectURL.parse(bad)
    with pytest.raises(ValueError, match="not a UUID"):
        ConnectURL.parse("sc://h/;session_id=nope").session_id  # noqa: B018


def test_error_lines_and_classes() -> None:
    e = ConnectError("\n[PARSE_SYNTAX_ERROR] Syntax error at or near 'selec'. SQLSTATE: 42601"
                     "\n\n== SQL ==\nselec 1\n", "INTERNAL")
    assert e.line == "[PARSE_SYNTAX_ERROR] Syntax error at or near 'selec'. SQLSTATE: 42601"
    assert e.error_class == "PARSE_SYNTAX_ERROR"
    assert ConnectError("[INVALID_HANDLE.SESSION_CLOSED] closed").error_class == \
        "INVALID_HANDLE.SESSION_CLOSED"


@pytest.mark.parametrize("query,reads", [
    ("select 1", True), ("  SELECT 1", True), ("with a as (select 1) select * from a", True),
    ("(select 1) union (select 2)", True), ("-- note\nselect 1", True),
    ("/* a\nb */ show tables", True), ("describe topics", True), ("explain select 1", True),
    ("values (1)", True), ("table topics", True),
    ("set spark.sql.ansi.enabled=false", False), ("create temp view x as select 1", False),
    ("cache table topics", False), ("drop view partitions", False), ("use db", False),
    ("", False), ("-- only a comment", False), ("/* select */ reset", False),
])
def test_only_reading_statements_may_share_a_session(query: str, reads: bool) -> None:
    assert reads_only(query) is reads
