"""``-o json`` of ``tree`` and ``cat`` is written in pieces, partitions' JSON looked up by
their record bytes (:func:`mdshell.commands.jsonform.json_chunks`); it must be the very text
of the straightforward path (the whole result as dicts, then ``json.dumps``) on every
fixture and corpus directory, with secrets shown and hidden, in both layouts."""

from __future__ import annotations

import io
from dataclasses import fields, replace
from pathlib import Path

import pytest

from mdshell.commands import Shell
from mdshell.commands.jsonform import json_chunks, json_text, json_value
from mdshell.commands.render import emit
from mdshell.commands.results import Table
from mdshell.commands.textform import table_lines, text_lines
from mdshell.image import model as m
from mdshell.tree.jsontext import dumps
from mdshell.tree.node import RenderOptions
from mdshell.tree.partitions import UNDECODABLE_PARTITION
from mdshell.tree.printer import tree_data
from mdshell.tree.topic_tree import PartitionLeaf, TopicDir

from .conftest import FIXTURES, corpus_dirs, open_shell

# Subtrees at several depths: the partitions' JSON is kept by the depth it is placed at.
COMMANDS = [
    ["tree", "/image"], ["tree", "/"], ["tree", "/image/topics/byName/*"],
    ["tree", "/image/topics/byId", "/image/cluster"], ["cat", "/image/topics/byName/*/*"],
    ["cat", "/image/topics/byId/*/0"], ["cat", "/image/provenance", "/local/version"],
]

# The fixtures that hold a metadata log or snapshot (one holds neither, on purpose).
DIRS = sorted(p for p in FIXTURES.iterdir()
              if any((p / "__cluster_metadata-0").glob("*.log"))
              or any((p / "__cluster_metadata-0").glob("*.checkpoint")))


def _straight(sh: Shell, words: list[str]) -> tuple[str, list[str]]:
    """The straightforward JSON text and the notes the rendering added."""
    value = sh.run(words).value
    return json_text(json_value(value)), sh.session.new_notes()


def _streamed(sh: Shell, words: list[str]) -> tuple[str, list[str]]:
    chunks = json_chunks(sh.run(words).value)
    assert chunks is not None, words
    return "".join(chunks), sh.session.new_notes()


def _check(path: Path, layouts: tuple[str, ...] = ("3.7", "4.x"),
           commands: list[list[str]] = COMMANDS) -> None:
    for secrets in (False, True):
        for layout in layouts:
            straight = open_shell(path, secrets=secrets, layout=layout)
            streamed = open_shell(path, secrets=secrets, layout=layout)
            for words in commands:
                want = _straight(straight, words)
                # Twice: the second time from what the first kept.
                assert _streamed(streamed, words) == want, (path.name, secrets, layout, words)
                assert _streamed(streamed, words)[0] == want[0], (path.name, words)


@pytest.mark.parametrize("path", DIRS, ids=[p.name for p in DIRS])
def test_streamed_json_is_the_straightforward_json_on_fixtures(path: Path) -> None:
    _check(path)


@pytest.mark.corpus
def test_streamed_json_is_the_straightforward_json_on_the_corpus() -> None:
    dirs = corpus_dirs()
    if not dirs:
        pytest.skip("the shared corpus is absent")
    for path in dirs:  # the layouts differ in ACLs and features only: the fixtures have them
        _check(path, ("3.7",), [["tree", "/"], ["cat", "/image/topics/byName/*/*"]])


def test_a_topic_in_one_go_is_its_children_as_dicts() -> None:
    """A topic's ``subtree_json`` and a partition leaf's ``data_json`` (looked up by record
    bytes or decoded fields) are the JSON of their data: undecoded, decoded and damaged
    records (the note said both ways), numbers sorted as names (-1, 10 before 2), at two
    depths, found afresh then ready-made."""
    img = open_shell("kafka37-snapshot").session.latest.image
    source = max(img.topics_by_name.values(), key=lambda t: len(t.partitions))
    lazy = [p for p in source.partitions.values() if isinstance(p, tuple)]
    decoded = next(p for t in img.topics_by_name.values() for p in t.partitions.values()
                   if not isinstance(p, tuple))
    buf, body, end, version = lazy[0]
    damaged = (buf, body, end - 3, version)
    # The decoded partition with each field changed in turn: none may share its JSON.
    changed = {}
    for i, f in enumerate(fields(m.Partition)):
        v = getattr(decoded, f.name)
        more = bytes(range(16)) if f.name == "directories" else 7
        changed[20 + i] = replace(decoded, **{f.name: v + 1 if isinstance(v, int)
                                               else [*v, more]})
    opts = RenderOptions()
    for attempt in range(2):
        for level in (1, 4):
            notes = m.Notes()
            topic = m.Topic("t\u00e9\"", source.id, {
                -1: lazy[0], 2: lazy[1], 10: decoded, 3: damaged, **changed,
                **{100 + i: p for i, p in enumerate(lazy)}}, notes)
            node = TopicDir(topic)
            made = "".join(node.subtree_json(opts, level) or [])
            assert made == dumps(tree_data(node, opts), level), (attempt, level)
            assert UNDECODABLE_PARTITION in made
            assert any("-3 does not decode" in n for n in notes.messages), attempt
            for pid in topic.partitions:
                leaf = PartitionLeaf(topic, pid)
                assert leaf.data_json(opts, level) == dumps(leaf.data(opts), level), pid


def test_the_fixtures_reach_the_partitions_ways() -> None:
    """Undecoded records (by their bytes) and partitions changed after the snapshot
    (decoded, by their fields) are both among the fixtures compared above."""
    kinds: set[str] = set()
    for path in DIRS:
        img = open_shell(path).session.latest.image
        for topic in img.topics_by_name.values():
            kinds |= {type(p).__name__ for p in topic.partitions.values()}
    assert {"tuple", "Partition"} <= kinds, kinds


def test_emit_writes_the_streamed_json() -> None:
    sh = open_shell("cluster-basic")
    out = io.StringIO()
    assert emit(sh.run(["tree", "/image"]), out, output="json") == 0
    assert out.getvalue() == json_text(json_value(sh.run(["tree", "/image"]).value)) + "\n"
    empty = io.StringIO()
    assert emit(sh.run(["cat", "/image/nothing"]), empty, io.StringIO(), output="json") == 1
    assert empty.getvalue() == "[]\n"


# The views that stream their rows (tables, paths, listings, records, diffs): their JSON in
# pieces is the straightforward JSON, and a streamed table's text is the aligned table.
VIEWS = [
    ["topics", "--describe"], ["topics", "--describe", "--under-replicated"],
    ["topics", "--describe", "--offline"], ["topics", "--describe", "--under-min-isr"],
    ["topics", "--describe", "*-1"], ["find", "/image"], ["find", "/", "-type", "f"],
    ["ls", "/image/topics/byName/*", "/", "/image/cluster"], ["records"],
    ["records", "--batches"], ["diff", "earliest", "latest"], ["diff", "0", "latest", "/image"],
]


def _check_views(path: Path, secrets_too: bool = True, views: list[list[str]] = VIEWS) -> None:
    for secrets in (False, True) if secrets_too else (False,):
        straight = open_shell(path, secrets=secrets)
        streamed = open_shell(path, secrets=secrets)
        for words in views:
            value = straight.run(words).value
            if value is None:  # an error (no such offset or topic here)
                continue
            want = json_text(json_value(value)), straight.session.new_notes()
            got = _streamed(streamed, words)
            assert got == want, (path.name, secrets, words)
            if isinstance(value, Table):
                cells = list(value.cells)
                text = list(text_lines(value))
                assert text == ([] if not cells and not value.header_when_empty
                                else table_lines(value.columns, cells)), (path.name, words)
                assert len(value.cells) == len(cells) and bool(value.cells) == bool(cells)
                assert value.cells[:2] == cells[:2] and value.cells[-1:] == cells[-1:]


@pytest.mark.parametrize("path", DIRS, ids=[p.name for p in DIRS])
def test_streamed_views_are_the_straightforward_views_on_fixtures(path: Path) -> None:
    _check_views(path)


def test_streamed_views_are_the_straightforward_views_on_the_corpus() -> None:
    dirs = corpus_dirs()
    if not dirs:
        pytest.skip("the shared corpus is absent")
    # Five directories, records left to the fixtures (the corpus logs are long).
    for path in dirs[::12]:
        _check_views(path, False, [v for v in VIEWS if v[0] != "records"])


def test_describe_looks_partitions_up_by_their_record_bytes() -> None:
    """``topics --describe`` rows of undecoded partitions (one decode per distinct record),
    decoded ones, and damaged ones (left out, each one noted, however many share bytes)
    are the rows made partition by partition from :meth:`Topic.partition`."""
    sh = open_shell("kafka37-snapshot")
    img = sh.session.latest.image
    topic = max(img.topics_by_name.values(), key=lambda t: len(t.partitions))
    lazy = [p for p in topic.partitions.values() if isinstance(p, tuple)]
    buf, body, end, version = lazy[0]
    damaged = (buf, body, end - 3, version)
    n = len(topic.partitions)
    topic.partitions[n] = topic.partitions[n + 1] = damaged
    topic.partitions[n + 2] = lazy[-1]
    rows = sh.run(["topics", "--describe", topic.name]).json()
    notes = sh.session.new_notes()
    assert [r["partition"] for r in rows] == sorted(set(range(n + 3)) - {n, n + 1})
    assert sum(f"{topic.name}-{n}" in x or f"{topic.name}-{n + 1}" in x for x in notes) == 2
    for row in rows:
        p = topic.partition(row["partition"])
        assert p is not None
        assert (row["replicas"], row["isr"], row["elr"], row["lastKnownElr"]) == (
            p.replicas, p.isr, p.elr, p.last_known_elr), row
        assert row["leader"] == (None if p.leader == m.NO_LEADER else p.leader)


def test_emit_writes_a_streamed_table_in_runs() -> None:
    """``topics --describe`` is written a run of lines at a time: the same text."""
    sh = open_shell("health-under-replicated")
    for words in (["topics", "--describe"], ["topics", "--describe", "--under-replicated"],
                  ["topics", "--describe", "--offline"]):
        out = io.StringIO()
        assert emit(sh.run(words), out, io.StringIO()) == 0
        lines = list(sh.run(words).lines)
        assert out.getvalue() == "".join(f"{line}\n" for line in lines), words
