"""The few Spark Connect messages mdshell sends and reads, encoded by hand (no protobuf
library, no pyspark: a one-shot ``sql`` on a server imports neither).

Spark Connect is Spark's client-server protocol: gRPC with protobuf messages declared in
Spark's ``spark/connect/*.proto`` (pyspark ships them generated, as
``pyspark.sql.connect.proto``). Only the fields below are used, by the names those files
give them; ``tests/test_compat.py`` checks every number against pyspark's generated
descriptors, so a protocol change fails there naming the field.

Protobuf's wire format: a message is a run of fields, each a key (the field number << 3 | its
wire type) then the value: a varint (integers, booleans, enums) or a length and bytes
(strings, bytes, nested messages). A nested message is therefore passed here as its encoded
bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

# message (its name in spark/connect/*.proto; nested ones dotted) -> field -> number
FIELDS: dict[str, dict[str, int]] = {
    "UserContext": {"user_id": 1},
    "KeyValue": {"key": 1, "value": 2},
    "ExecutePlanRequest": {"session_id": 1, "user_context": 2, "plan": 3, "client_type": 4,
                           "operation_id": 6, "tags": 7},
    "ExecutePlanResponse": {"arrow_batch": 2, "schema": 7, "result_complete": 14},
    "ExecutePlanResponse.ArrowBatch": {"row_count": 1, "data": 2},
    "Plan": {"root": 1, "command": 2},
    "Relation": {"project": 3, "limit": 8, "aggregate": 9, "sql": 10, "local_relation": 11,
                 "chunked_cached_local_relation": 45},
    "SQL": {"query": 1},
    "Limit": {"input": 1, "limit": 2},
    "Project": {"input": 1, "expressions": 3},
    "Aggregate": {"input": 1, "group_type": 2, "aggregate_expressions": 4},
    "Expression": {"expression_string": 4},
    "Expression.ExpressionString": {"expression": 1},
    "LocalRelation": {"data": 1},
    "ChunkedCachedLocalRelation": {"dataHashes": 1},
    "Command": {"create_dataframe_view": 3},
    "CreateDataFrameViewCommand": {"input": 1, "name": 2, "is_global": 3, "replace": 4},
    "ConfigRequest": {"session_id": 1, "user_context": 2, "operation": 3, "client_type": 4},
    "ConfigRequest.Operation": {"set": 1, "get_all": 5, "unset": 6},
    "ConfigRequest.Set": {"pairs": 1},
    "ConfigRequest.GetAll": {"prefix": 1},
    "ConfigRequest.Unset": {"keys": 1},
    "ConfigResponse": {"pairs": 2},
    "InterruptRequest": {"session_id": 1, "user_context": 2, "client_type": 3,
                         "interrupt_type": 4, "operation_id": 6},
    "ReleaseSessionRequest": {"session_id": 1, "user_context": 2, "client_type": 3},
    "AddArtifactsRequest": {"session_id": 1, "user_context": 2, "batch": 3, "begin_chunk": 4,
                            "chunk": 5, "client_type": 6},
    "AddArtifactsRequest.Batch": {"artifacts": 1},
    "AddArtifactsRequest.SingleChunkArtifact": {"name": 1, "data": 2},
    "AddArtifactsRequest.ArtifactChunk": {"data": 1, "crc": 2},
    "AddArtifactsRequest.BeginChunkedArtifact": {"name": 1, "total_bytes": 2,
                                                 "num_chunks": 3, "initial_chunk": 4},
}
# enum -> value name -> number
ENUMS: dict[str, dict[str, int]] = {
    "Aggregate.GroupType": {"GROUP_TYPE_GROUPBY": 1},
    "InterruptRequest.InterruptType": {"INTERRUPT_TYPE_OPERATION_ID": 3},
}
SERVICE = "/spark.connect.SparkConnectService/"  # + the method: ExecutePlan, Config...

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5  # protobuf wire types
Value = str | bytes | int | bool | list[str] | list[bytes] | None


def _varint(n: int) -> bytes:
    if n < 0:
        raise ValueError(f"negative varint {n}")
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def message(kind: str, /, **fields: Value) -> bytes:
    """The encoding of message ``kind`` with these fields (None: absent; a list: a repeated
    field; a nested message: its encoded bytes)."""
    numbers = FIELDS[kind]
    out = bytearray()
    for field, value in fields.items():
        if value is None:
            continue
        number = numbers[field]
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, bool | int):
                out += _varint(number << 3 | _VARINT) + _varint(int(item))
            else:
                data = item.encode() if isinstance(item, str) else item
                out += _varint(number << 3 | _BYTES) + _varint(len(data)) + data
    return bytes(out)


def _read_varint(buf: bytes | memoryview, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, i
        shift += 7


def fields(buf: bytes | memoryview) -> Iterator[tuple[int, int | memoryview]]:
    """(field number, value) of each field of an encoded message: a varint's integer, or a
    length-delimited field's bytes (fixed-width fields as their raw bytes)."""
    view = memoryview(buf)
    i, end = 0, len(view)
    while i < end:
        key, i = _read_varint(view, i)
        kind = key & 7
        if kind == _VARINT:
            value, i = _read_varint(view, i)
            yield key >> 3, value
        elif kind == _BYTES:
            size, i = _read_varint(view, i)
            yield key >> 3, view[i:i + size]
            i += size
        elif kind in (_FIXED64, _FIXED32):
            width = 8 if kind == _FIXED64 else 4
            yield key >> 3, view[i:i + width]
            i += width
        else:
            raise ValueError(f"protobuf wire type {kind} (a group) is not read here")


def decode(name: str, buf: bytes | memoryview) -> dict[str, list[int | memoryview]]:
    """The fields of message ``name`` that :data:`FIELDS` knows, by name (each a list: a
    field may repeat); the others are skipped."""
    names = {n: f for f, n in FIELDS[name].items()}
    out: dict[str, list[int | memoryview]] = {}
    for number, value in fields(buf):
        field = names.get(number)
        if field is not None:
            out.setdefault(field, []).append(value)
    return out


def data(value: int | memoryview) -> memoryview:
    """A length-delimited field's bytes (a string, bytes or a nested message)."""
    if isinstance(value, int):
        raise ValueError("a length-delimited field held a varint")
    return value


def text(value: int | memoryview) -> str:
    return bytes(data(value)).decode()


# ------------------------------------------------------------------ plans


def sql(query: str) -> bytes:
    """A relation: the result of a SQL statement (commands run as Spark runs them)."""
    return message("Relation", sql=message("SQL", query=query))


def limit(relation: bytes, n: int) -> bytes:
    return message("Relation", limit=message("Limit", input=relation, limit=n))


def project(relation: bytes, expressions: list[str]) -> bytes:
    """``relation`` with columns given as SQL expressions (``to_json(`c`) AS `c```)."""
    return message("Relation", project=message(
        "Project", input=relation, expressions=[_expression(e) for e in expressions]))


def count(relation: bytes) -> bytes:
    """One row: how many rows ``relation`` has (column ``n``)."""
    return message("Relation", aggregate=message(
        "Aggregate", input=relation, group_type=ENUMS["Aggregate.GroupType"]["GROUP_TYPE_GROUPBY"],
        aggregate_expressions=[_expression("count(1) AS n")]))


def _expression(sql_text: str) -> bytes:
    return message("Expression", expression_string=message("Expression.ExpressionString",
                                                           expression=sql_text))


def local_relation(arrow_stream: bytes) -> bytes:
    """A relation of rows sent with the plan: one Arrow IPC stream."""
    return message("Relation", local_relation=message("LocalRelation", data=arrow_stream))


def cached_relation(hashes: list[str]) -> bytes:
    """A relation of Arrow IPC streams uploaded before as artifacts (``cache/<sha256>``)."""
    return message("Relation", chunked_cached_local_relation=message(
        "ChunkedCachedLocalRelation", dataHashes=hashes))


def query_plan(relation: bytes) -> bytes:
    return message("Plan", root=relation)


def create_view(relation: bytes, name: str) -> bytes:
    """A plan: ``CREATE OR REPLACE TEMPORARY VIEW name`` of a relation."""
    return message("Plan", command=message("Command", create_dataframe_view=message(
        "CreateDataFrameViewCommand", input=relation, name=name, is_global=False,
        replace=True)))


def config_set(pairs: dict[str, str]) -> bytes:
    return message("ConfigRequest.Operation", set=message("ConfigRequest.Set", pairs=[
        message("KeyValue", key=k, value=v) for k, v in pairs.items()]))


def config_unset(keys: list[str]) -> bytes:
    return message("ConfigRequest.Operation", unset=message("ConfigRequest.Unset", keys=keys))


def config_get_all(prefix: str) -> bytes:
    return message("ConfigRequest.Operation", get_all=message("ConfigRequest.GetAll",
                                                              prefix=prefix))


def config_pairs(response: bytes) -> dict[str, str]:
    """The settings a ConfigResponse holds."""
    out: dict[str, str] = {}
    for pair in decode("ConfigResponse", response).get("pairs", []):
        kv = decode("KeyValue", data(pair))
        out[text(kv["key"][0])] = text(kv["value"][0]) if "value" in kv else ""
    return out


def arrow_data(response: bytes) -> bytes | None:
    """The Arrow IPC stream an ExecutePlanResponse carries, if it carries one."""
    batch = decode("ExecutePlanResponse", response).get("arrow_batch")
    if not batch:
        return None
    stream = decode("ExecutePlanResponse.ArrowBatch", data(batch[0])).get("data")
    return bytes(data(stream[0])) if stream else None
