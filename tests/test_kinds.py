"""Record kinds by name: RecordKind generated from the schemas, one table per concern keyed by
it (replay's HANDLERS, the tree paths of ``changes``), secrets marked once in the schemas, and no
bare record type numbers outside the wire layer."""

from __future__ import annotations

import ast
import importlib.util

import pytest

from mdshell.image.replay import HANDLERS, TRANSACTION_MARKERS
from mdshell.tree.leaves import scram_data, scram_text
from mdshell.tree.recordjson import record_data
from mdshell.tree.redact import secret_fields
from mdshell.tree.touched import PATHS
from mdshell.wire.kinds import KINDS as BY_NAME
from mdshell.wire.kinds import RecordKind
from mdshell.wire.records import METADATA, NAME_TO_KEY, constant_name
from mdshell.wire.schema import ALWAYS, parse_schemas

from .conftest import ROOT

PACKAGE = ROOT / "mdshell"
KINDS = set(BY_NAME.values())
NAMES = {key: name for name, key in BY_NAME.items()}
K = RecordKind


def _make_kinds() -> object:
    spec = importlib.util.spec_from_file_location("make_kinds", ROOT / "scripts" / "make_kinds.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kinds_py_is_generated_from_todays_schemas() -> None:
    make = _make_kinds()
    assert (PACKAGE / "wire" / "kinds.py").read_text() == make.source(), (  # type: ignore[attr-defined]
        "mdshell/wire/kinds.py is out of date: run python scripts/make_kinds.py")


def test_every_schema_record_has_a_kind_named_after_it() -> None:
    assert constant_name("PartitionChangeRecord") == "PARTITION_CHANGE"
    assert constant_name("UserScramCredentialRecord") == "USER_SCRAM_CREDENTIAL"
    assert constant_name("NoOpRecord") == "NO_OP"
    assert set(METADATA) == KINDS and len(BY_NAME) == len(METADATA)
    for name, key in NAME_TO_KEY.items():
        assert getattr(RecordKind, constant_name(name)) == key
    assert K.PARTITION == 3 and K.CLEAR_ELR == 28


def test_every_kind_has_a_handler_row() -> None:
    """Replay's table covers every kind (None: no effect); only the transaction markers,
    which replay handles itself, are left out."""
    assert set(HANDLERS) | TRANSACTION_MARKERS == KINDS
    assert not set(HANDLERS) & TRANSACTION_MARKERS
    ignored = {NAMES[k] for k, h in HANDLERS.items() if h is None}
    assert ignored == {"NO_OP"}


def test_every_kind_has_a_touched_paths_row() -> None:
    assert set(PATHS) == KINDS
    # a record that changes the image changes some node of the tree, and the reverse
    changes_image = {k for k, h in HANDLERS.items() if h is not None}
    assert {k for k, p in PATHS.items() if p is not None} == changes_image


def test_the_secret_marker() -> None:
    msgs = parse_schemas("1 A 0 credential\n  Plain string\n  Hidden bytes secret\n"
                         "  Maybe string? secret=config\n2 B 0\n  Plain string\n")
    assert msgs[1].secret_fields == {"hidden": ALWAYS, "maybe": "config"}
    assert msgs[1].credential and msgs[1].holds_secrets
    assert not msgs[2].credential and not msgs[2].holds_secrets
    with pytest.raises(ValueError):
        parse_schemas("1 A 0 secrets\n")
    scram = METADATA[K.USER_SCRAM_CREDENTIAL]
    assert secret_fields(K.USER_SCRAM_CREDENTIAL) == {"salt", "storedKey", "serverKey",
                                                     "iterations"}
    assert scram.credential and METADATA[K.DELEGATION_TOKEN].credential
    assert METADATA[K.CONFIG].secret_fields == {"value": "config"}
    # a delegation token record holds no HMAC: nothing of it is secret once decoded
    assert not METADATA[K.DELEGATION_TOKEN].secret_fields
    holding = {NAMES[k] for k, msg in METADATA.items() if msg.holds_secrets}
    assert holding == {"CONFIG", "DELEGATION_TOKEN", "USER_SCRAM_CREDENTIAL"}
    # every policy the schemas name is one the readers know
    policies = {p for msg in METADATA.values() for p in msg.secret_fields.values()}
    assert policies <= {ALWAYS, "config"}


def test_records_redact_what_the_schemas_mark() -> None:
    scram = METADATA[K.USER_SCRAM_CREDENTIAL]
    d = {"name": "alice", "mechanism": 1, "salt": b"\x01", "storedKey": b"\x02",
         "serverKey": b"\x03", "iterations": 4096}
    assert record_data(scram, 0, d, show_secrets=False) == {
        "name": "alice", "mechanism": 1, "salt": "[redacted]", "storedKey": "[redacted]",
        "serverKey": "[redacted]", "iterations": "[redacted]"}
    assert record_data(scram, 0, d, show_secrets=True)["salt"] == "01"
    config = METADATA[K.CONFIG]
    pw = {"resourceType": 4, "resourceName": "1", "name": "ssl.key.password", "value": "s3"}
    plain = {**pw, "name": "retention.ms", "value": "100"}
    assert record_data(config, 0, pw, show_secrets=False)["value"] == "[redacted]"
    assert record_data(config, 0, {**pw, "value": None}, show_secrets=False)["value"] is None
    assert record_data(config, 0, plain, show_secrets=False)["value"] == "100"
    token = METADATA[K.DELEGATION_TOKEN]
    t = {"owner": "User:a", "requester": "User:a", "renewers": ["User:b"],
         "issueTimestamp": 1, "maxTimestamp": 2, "expirationTimestamp": 3, "tokenId": "id"}
    assert record_data(token, 0, t, show_secrets=False)["owner"] == "User:a"


def test_tree_leaves_redact_what_the_schema_marks() -> None:
    from mdshell.image.model import ScramCredential
    cred = ScramCredential(b"\x01", b"\x02", b"\x03", 4096)
    assert scram_text(cred, False) == ("ScramCredentialData(salt=[redacted], "
                                       "storedKey=[redacted], serverKey=[redacted], "
                                       "iterations=[redacted])")
    assert scram_text(cred, True) == ("ScramCredentialData(salt=01, storedKey=02, "
                                      "serverKey=03, iterations=4096)")
    assert scram_data(cred, True) == {"salt": "01", "storedKey": "02", "serverKey": "03",
                                      "iterations": 4096}
    assert set(scram_data(cred, False).values()) == {"[redacted]"}


# ---------------------------------------------------------------- no bare type numbers

# Names under which code holds a record's api key (compared with ``==`` / ``in``).
_KEY_NAMES = ("key", "kind", "api_key", "rtype", "record_type")
# Tables and schemas indexed by api key.
_KEYED = ("METADATA", "HANDLERS", "PATHS")


def _is_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value in KINDS


def _ints_in(node: ast.AST) -> bool:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_is_int(e) for e in node.elts)
    return _is_int(node)


def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def bare_numbers(tree: ast.AST) -> list[int]:
    """Lines where a record type is a bare number: compared with a key, indexing a keyed
    table, a key of a dict of functions, or bound to a name that says it is a record."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and all(
                isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
            sides = [node.left, *node.comparators]
            if ((any(_last_name(s).lower() in _KEY_NAMES for s in sides)
                    and any(_ints_in(s) for s in sides)) or _kind_set(node)):
                lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and _last_name(node.value) in _KEYED:
            if _is_int(node.slice):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if (node.func.attr == "get" and _last_name(node.func.value) in _KEYED
                    and node.args and _is_int(node.args[0])):
                lines.append(node.lineno)
        elif isinstance(node, ast.Dict):
            if any(k is not None and _is_int(k) for k in node.keys) and all(
                    isinstance(v, (ast.Name, ast.Lambda)) for v in node.values):
                lines.append(node.lineno)
        elif isinstance(node, ast.Assign):
            names = [_last_name(t) for t in node.targets]
            names += [_last_name(e) for t in node.targets if isinstance(t, ast.Tuple)
                      for e in t.elts]
            if any(_is_record_name(n) for n in names) and _ints_in(node.value):
                lines.append(node.lineno)
    return sorted(lines)


def _kind_set(node: ast.Compare) -> bool:
    """``x in (3, 5)``: membership in two or more record type numbers, whatever ``x`` is
    (``(0, 1)`` is left alone: it is how flags are tested)."""
    for op, right in zip(node.ops, node.comparators, strict=True):
        if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.Set)):
            values = {e.value for e in right.elts if _is_int(e)}  # type: ignore[attr-defined]
            if len(values) == len(right.elts) >= 2 and values != {0, 1}:
                return True
    return False


def _is_record_name(name: str) -> bool:
    upper = name.strip("_").upper()
    return (upper in BY_NAME or upper.endswith(("_RECORD", "_RECORDS"))
            or upper in ("NOOP", "BEGIN_TXN", "END_TXN", "ABORT_TXN"))


def test_the_checker_sees_the_forms_bare_numbers_took() -> None:
    for text in ("if key == 3: pass", "x = r.key in (4, 10, 11)", "m = METADATA[3]",
                 "h = HANDLERS.get(5)", "T = {0: f, 1: g}", "NOOP, PARTITION = 20, 3",
                 "_PARTITION_RECORD, _PARTITION_CHANGE = 3, 5", "SCRAM_RECORD = 11",
                 "SECRET_RECORDS = {10, 11}",
                 "y = 1 if r.key != 2 else 0", "e = [x for x in y if x[2] not in (3, 5)]"):
        assert bare_numbers(ast.parse(text)), text
    for text in ("if key < 0: pass", "if key == RecordKind.TOPIC: pass", "n = len(x) == 3",
                 "NO_LEADER = -1", "records_applied = 0",
                 "_RECORD_OVERHEAD = 8", "ok = value[0] in (0, 1)", "n = len(p) in (2, 40)",
                 "m = METADATA[RecordKind.PARTITION]"):
        assert not bare_numbers(ast.parse(text)), text


def test_no_bare_record_type_numbers_outside_wire() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "wire":
            continue
        found += [f"{rel}:{n}" for n in bare_numbers(ast.parse(path.read_text()))]
    assert found == [], "use RecordKind (mdshell.wire.kinds) instead of bare numbers: " + \
        ", ".join(found)



def test_an_undecodable_credential_record_hides_its_bytes() -> None:
    """An unknown version of a record the schemas mark ``credential`` may hold secrets no
    schema locates: ``records`` shows its raw bytes only with --show-secrets."""
    from mdshell.source.logscan import LogRecord
    from mdshell.tree.logrecord import record_payload
    from mdshell.wire.frames import Unknown

    def payload(kind: int, show: bool) -> object:
        raw = Unknown(kind, 99, b"\x01\x02", "unknown version 99")
        return record_payload(LogRecord(5, 1, 0, "f.log", False, kind, 99, raw), show)

    for kind in (K.USER_SCRAM_CREDENTIAL, K.DELEGATION_TOKEN):
        assert payload(kind, False) == {"unknown": "unknown version 99", "raw": "[redacted]"}
        assert payload(kind, True) == {"unknown": "unknown version 99", "raw": "0102"}
    assert payload(K.TOPIC, False) == {"unknown": "unknown version 99", "raw": "0102"}
