"""Tree rendering pieces: Java formatting, globs, ls columns, redaction, leaf text."""

from __future__ import annotations

import pytest

from mdshell.commands.columns import layout
from mdshell.image import model as m
from mdshell.tree import leaves
from mdshell.tree.image_tree import quota_entity_name
from mdshell.tree.javafmt import iso_zoned_utc, java_double
from mdshell.tree.node import Node, RenderOptions, StaticDir, Value
from mdshell.tree.partitions import UNDECODABLE_PARTITION
from mdshell.tree.paths import GlobError, absolute, compile_glob, resolve
from mdshell.tree.printer import tree_data, tree_json, tree_lines
from mdshell.tree.redact import is_sensitive_config
from mdshell.tree.topic_tree import TopicDir
from mdshell.wire.primitives import uuid_str

from .conftest import open_shell


@pytest.mark.parametrize(("x", "text"), [
    (1024.0, "1024.0"), (1e7, "1.0E7"), (12345678.0, "1.2345678E7"), (0.001, "0.001"),
    (0.0001, "1.0E-4"), (9999999.0, "9999999.0"), (-3.5, "-3.5"), (0.0, "0.0"),
    (1.5e300, "1.5E300"), (100.25, "100.25"),
])
def test_java_double_to_string(x: float, text: str) -> None:
    assert java_double(x) == text


@pytest.mark.parametrize(("ms", "text"), [
    (1725787379647, "2024-09-08T09:22:59.647Z[UTC]"),
    (1758651393670, "2025-09-23T18:16:33.67Z[UTC]"),
    (0, "1970-01-01T00:00:00Z[UTC]"),
    (-1, "1969-12-31T23:59:59.999Z[UTC]"),
])
def test_iso_zoned_date_time(ms: int, text: str) -> None:
    assert iso_zoned_utc(ms) == text


def _tree() -> StaticDir:
    kids = {n: (lambda n=n: Value(n)) for n in ["a1", "a2", "b1", "c{x}", "d*"]}
    return StaticDir({"dir": lambda: StaticDir(kids), "other": lambda: Value("o")})


@pytest.mark.parametrize(("pattern", "found"), [
    ("/dir/a*", ["a1", "a2"]), ("/dir/?1", ["a1", "b1"]), ("/dir/{a1,b1}", ["a1", "b1"]),
    ("/dir/[ab]2", ["a2"]), ("/dir/[!a]1", ["b1"]), ("/dir/c\\{x\\}", ["c{x}"]),
    ("/dir/d\\*", ["d*"]), ("dir/../dir/./a1", ["a1"]), ("/../dir/a1", ["a1"]),
    ("/dir/zz*", []),
])
def test_globs(pattern: str, found: list[str]) -> None:
    assert [mt.name for mt in resolve(_tree(), "/", pattern)] == found


def test_bad_globs_raise() -> None:
    with pytest.raises(GlobError):
        compile_glob("{a,b")
    with pytest.raises(GlobError):
        compile_glob("[ab")


def test_relative_paths() -> None:
    assert absolute("/image/topics", "../cluster") == ["image", "cluster"]
    assert absolute("/image", "/local") == ["local"]


def test_ls_columns_like_kafka() -> None:
    names = [f"n{i}" for i in range(10)]
    assert layout(names, None) == names
    lines = layout(names, 20)
    assert lines[0].startswith("n0  ")
    assert all(len(line) <= 20 for line in lines)
    assert sorted(" ".join(lines).split()) == sorted(names)


@pytest.mark.parametrize(("key", "secret"), [
    ("sasl.jaas.config", True), ("ssl.keystore.password", True),
    ("listener.name.internal.scram-sha-256.sasl.jaas.config", True),
    ("listener.name.ext.ssl.key.password", True), ("delegation.token.secret.key", True),
    ("cleanup.policy", False), ("min.insync.replicas", False),
    ("delegation.token.max.lifetime.ms", False), ("retention.ms", False),
])
def test_config_redaction(key: str, secret: bool) -> None:
    assert is_sensitive_config(key) is secret


def test_quota_entity_names_are_kafkas() -> None:
    e = (("client-id", "app(1)"), ("user", "alice"))
    assert quota_entity_name(e) == "clientId(app\\(1\\))_user(alice)"
    assert quota_entity_name((("user", None),)) == "user(<default>)"


def test_leaf_text_formats() -> None:
    b = m.BrokerRegistration(
        1, 914, bytes(16), {"PLAINTEXT": m.Endpoint("PLAINTEXT", "localhost", 9092, 0)},
        {"metadata.version": (1, 20)}, None, True, True, False, [])
    assert leaves.broker_text(b) == (
        "BrokerRegistration(id=1, epoch=914, incarnationId=AAAAAAAAAAAAAAAAAAAAAA, "
        "listeners=[Endpoint(listenerName='PLAINTEXT', securityProtocol=PLAINTEXT, "
        "host='localhost', port=9092)], supportedFeatures={metadata.version: 1-20}, "
        "rack=Optional.empty, fenced=true, inControlledShutdown=true, "
        "isMigratingZkBroker=false, directories=[])")
    assert leaves.version_range(3, 3) == "3" and leaves.version_range(1, 32767) == "1+"
    s = m.ScramCredential(b"\x01", b"\x02", b"\x03", 4096)
    assert "salt=01" in leaves.scram_text(s, True)
    assert leaves.scram_text(s, False).count("[redacted]") == 4


def test_layout_4x_is_kafka_43s() -> None:
    """``--layout 4.x``: ACLs under byId as Java records, no zkMigrationState, an Optional
    metadata version and the brokers' cordoned directories; nothing else changes."""
    from .conftest import FIXTURES, run_cli

    log = FIXTURES / "security" / "__cluster_metadata-0" / "00000000000000000000.log"
    old = run_cli("-s", str(log), "tree", "/image").stdout.splitlines()
    new = run_cli("-s", str(log), "--layout", "4.x", "tree", "/image").stdout.splitlines()

    def section(lines: list[str], start: str, end: str) -> list[str]:
        return lines[lines.index(start) + 1:lines.index(end)]

    acls_37, acls_4 = section(old, "acls:", "clientQuotas:"), section(new, "acls:", "clientQuotas:")
    assert len(acls_37) == 10 and acls_4[0] == "  byId:"
    assert acls_4[1:] == ["  " + line.replace("StandardAcl(", "StandardAcl[")[:-1] + "]"
                          if "StandardAcl(" in line else "  " + line for line in acls_37]
    features_37, features_4 = section(old, "features:", "producerIds:"), \
        section(new, "features:", "producerIds:")
    assert features_37[:4] == ["  metadataVersion:", "    3.9-IV0", "  zkMigrationState:",
                               "    NONE"]
    assert features_4[:2] == ["  metadataVersion:", "    Optional[3.9-IV0]"]
    assert features_4[2:] == features_37[4:]
    rest_37 = old[old.index("clientQuotas:"):old.index("features:")]
    rest_4 = new[new.index("clientQuotas:"):new.index("features:")]
    assert [line.replace(", cordonedDirectories=null)", ")") for line in rest_4] == rest_37
    assert sum(", cordonedDirectories=null)" in line for line in rest_4) == 3
    assert old[old.index("producerIds:"):] == new[new.index("producerIds:"):]


def _walked(node: Node, opts: RenderOptions, pad: str) -> list[str]:
    """A topic's lines made child by child, the way every other directory prints."""
    out: list[str] = []
    for name in sorted(node.names()):
        child = node.child(name)
        assert child is not None and not child.is_dir
        out += [f"{pad}{name}:", f"{pad}  {child.text(opts)}"]
    return out


def test_topic_made_in_one_go_matches_child_by_child() -> None:
    """A topic's ``subtree`` (partition text looked up by record bytes) prints exactly what
    its children print: lazy and decoded partitions, numbers sorted as names (-1, 10 before
    2), and a record that does not decode (its text and the note both ways)."""
    img = open_shell("kafka37-snapshot").session.latest.image
    source = max(img.topics_by_name.values(), key=lambda t: len(t.partitions))
    lazy = [p for p in source.partitions.values() if isinstance(p, tuple)]
    decoded = next(t.partition(pid) for t in img.topics_by_name.values()
                   for pid, p in t.partitions.items() if not isinstance(p, tuple))
    buf, body, end, version = lazy[0]
    damaged = (buf, body, end - 3, version)
    opts = RenderOptions()
    for attempt in range(2):  # texts found afresh, then ready-made
        notes = m.Notes()
        topic = m.Topic("t", source.id, {-1: lazy[0], 2: lazy[1], 10: decoded, 3: damaged,
                                         **{100 + i: p for i, p in enumerate(lazy)}}, notes)
        made = TopicDir(topic).subtree(opts, 2)
        assert made == _walked(TopicDir(topic), opts, "    "), attempt
        assert made[:6] == ["    -1:", made[1], "    10:", made[3], "    100:", made[5]]
        assert made[-4:] == ["    id:", f"      {uuid_str(source.id)}", "    name:", "      t"]
        assert f"      {UNDECODABLE_PARTITION}" in made
        assert any("t-3 does not decode" in n for n in notes.messages), attempt


def _count_made(monkeypatch: pytest.MonkeyPatch, method: str) -> list[str]:
    """The names of the topics whose ``TopicDir.<method>`` runs from here on."""
    made: list[str] = []
    real = getattr(TopicDir, method)

    def counted(self: TopicDir, opts: RenderOptions, depth: int) -> list[str]:
        made.append(self.topic.name)
        return real(self, opts, depth)
    monkeypatch.setattr(TopicDir, method, counted)
    return made


def test_tree_json_makes_a_topic_once_and_writes_it_twice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """byId and byName hold the same topic objects: each one's JSON is made once (its pieces
    kept) and written under both, the whole as json.dumps writes the data."""
    import json

    shell = open_shell("kafka37-snapshot")
    topics = shell.session.root.child("image").child("topics")
    made = _count_made(monkeypatch, "subtree_json")
    text = "".join(tree_json(topics, RenderOptions()))
    img = shell.session.latest.image
    assert sorted(made) == sorted(img.topics_by_name) and len(img.topics_by_name) > 1
    assert text == json.dumps(tree_data(topics, RenderOptions()), indent=2, ensure_ascii=False)


def test_tree_prints_a_topic_twice_the_same() -> None:
    """byId and byName hold the same topic objects: printed once each, identical below."""
    shell = open_shell("kafka37-snapshot")
    topics = shell.session.root.child("image").child("topics")
    lines = "\n".join(tree_lines(topics, RenderOptions()))
    by_id, by_name = lines.split("\nbyName:\n")
    topic = max(shell.session.latest.image.topics_by_name.values(),
                key=lambda t: len(t.partitions))
    body = "\n".join(TopicDir(topic).subtree(RenderOptions(), 2))
    assert f"  {topic.name}:\n{body}" in by_name
    assert f"  {uuid_str(topic.id)}:\n{body}" in by_id


def test_tree_keeps_shared_lines_within_a_small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A topic's lines are mostly shared strings: keeping them for ``byName`` costs their
    own lines and a 32nd of the shared ones, so a budget below the line count still keeps
    every topic (each made once); none at all makes each twice, the text the same."""
    from mdshell.tree import printer

    shell = open_shell("kafka37-snapshot")
    topics = shell.session.root.child("image").child("topics")
    made = _count_made(monkeypatch, "subtree")
    text = list(tree_lines(topics, RenderOptions()))  # texts found ready-made from here on
    names = sorted(shell.session.latest.image.topics_by_name)
    lines = sum(1 for line in text if line.startswith("      ")) // 2  # byName's partitions
    for budget, times in ((lines // 2, 1), (0, 2)):
        monkeypatch.setattr(printer, "MEMO_LINES", budget)
        made.clear()
        assert list(tree_lines(topics, RenderOptions())) == text
        assert sorted(made) == sorted(names * times), budget
