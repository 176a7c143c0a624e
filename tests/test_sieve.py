"""The one-shot ``changes`` of a topic or partition replays only the records that can touch it
(``wire.sieve``, ``session.replay_sieved``): its output must equal the full path's, text and
JSON, on every fixture and corpus directory, for partitions, topics and other nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from mdshell.commands import Shell
from mdshell.commands.render import emit
from mdshell.session import Session
from mdshell.source import DirectorySource
from mdshell.tree.touched import topic_sieve
from mdshell.wire.batch import metadata_ranges
from mdshell.wire.primitives import uuid_str

from .conftest import FIXTURES, cli, corpus_dirs, open_shell
from .fuzz.mutate import overlong, uvarint

DIRS = sorted(p for p in FIXTURES.iterdir() if p.is_dir()) + corpus_dirs()


def _cases(shell: Shell) -> list[tuple[str, str]]:
    """Each kind of path once, each in one output form (text and JSON alternate, so both
    forms meet topics, partitions by name and by id, globs and other nodes): the first
    topic by name and id with two partitions and a glob, the last topic with one partition,
    another kind of node and a topic that never existed. Every case costs a replay of the
    directory's history on each side, so the cases are few and the directories many."""
    img = shell.session.latest.image
    topics = sorted(img.topics_by_name.values(), key=lambda t: t.name)
    paths = ["/image/features/metadataVersion"]  # other nodes are never sieved (below)
    if topics:
        first, tid = topics[0].name, uuid_str(topics[0].id)
        paths += [f"/image/topics/byName/{first}", f"/image/topics/byId/{tid}",
                  f"/image/topics/byName/{first}/0", f"/image/topics/byId/{tid}/0",
                  f"/image/topics/byName/{first}/1", f"/image/topics/byName/{first}/*"]
    if len(topics) > 1:
        last = topics[-1].name
        paths += [f"/image/topics/byId/{uuid_str(topics[-1].id)}",
                  f"/image/topics/byName/{last}/0"]
    paths.append("/image/topics/byName/no-such-topic/0")
    return [(path, ("text", "json")[i % 2]) for i, path in enumerate(paths)]


def _full(shell: Shell, path: str, output: str) -> tuple[str, str]:
    """``changes`` on a session loaded before the command (the path REPL and TUI take): its
    output and its error lines (a node that never existed is an error). The session is loaded
    once per directory: ``changes`` only reads it."""
    import io

    out, err = io.StringIO(), io.StringIO()
    emit(shell.run(["changes", path]), out, err, output=output)
    return out.getvalue(), "".join(line for line in err.getvalue().splitlines(True)
                                   if not line.startswith("mdshell: warning: "))


@pytest.mark.parametrize("directory", DIRS, ids=[p.name for p in DIRS])
def test_one_shot_changes_equal_the_full_path(directory: Path) -> None:
    from mdshell.problems import SourceError

    try:
        shell = open_shell(directory)
    except SourceError:
        pytest.skip("not a loadable directory (its own tests check the message)")
    latest = shell.session.latest
    replayer = latest.replayer
    # Warnings about records away from the path (unknown types, refused records) come only
    # from a full load; what the reading itself finds comes always, then the verdict (where
    # the damage left the image is said by the verdict only).
    replayed = replayer is not None and replayer.builder.problems
    said = "".join(f"mdshell: warning: {p.message}\n" for p in latest.problems
                   if p.code != "image")
    verdict = shell.session.verdict()
    if latest.problems and not verdict.sound:
        said += f"mdshell: warning: {verdict.words()}\n"
    for path, output in _cases(shell):
        run = cli("-d", str(directory), "-o", output, "changes", path)
        out, errors = _full(shell, path, output)
        assert run.out == out, (path, output)
        assert run.code == (1 if errors else 0), (path, output)
        if not replayed:
            assert run.err == said + errors, (path, output)


def test_the_sieve_is_taken_and_skips_the_load() -> None:
    """On a directory with many topics the one-shot path answers without loading."""
    session = Session.open(str(FIXTURES / "cluster-basic"), lazy=True)
    from mdshell.commands import Shell

    shell = Shell(session)
    name = "orders" if "orders" in _names(FIXTURES / "cluster-basic") else \
        _names(FIXTURES / "cluster-basic")[0]
    result = shell.run(["changes", f"/image/topics/byName/{name}/0"])
    assert result.code == 0
    assert session.spared and not session.is_loaded
    assert result.value is not None and result.value.rows


def _names(directory: Path) -> list[str]:
    return sorted(open_shell(directory).session.latest.image.topics_by_name)


def test_sieve_picks_every_record_of_the_topic() -> None:
    """Every record whose bytes hold the topic id is picked; a partition record of another
    topic in the same batch is not."""
    directory = FIXTURES / "cluster-basic"
    img = open_shell(directory).session.latest.image
    topic = sorted(img.topics_by_name.values(), key=lambda t: t.name)[0]
    sieve = topic_sieve(["image", "topics", "byName", topic.name])
    assert sieve is not None
    src = DirectorySource(str(directory))
    picked = total = holding = 0
    streams = [src.snapshot_stream(c) for c in src.snapshots()[:1]] + [src.log_stream(0)]
    for stream in streams:
        for loc in stream:
            if loc.batch.is_control:
                continue
            buf, framed = sieve(loc.batch)
            _, every = metadata_ranges(loc.batch)
            total += len(every)
            picked += len(framed)
            holding += sum(1 for r in every if topic.id in bytes(buf[r[1]:r[2]]))
            assert set(framed) <= set(every)
    assert holding > 0 and picked >= holding


def test_only_topic_and_partition_paths_are_sieved() -> None:
    assert topic_sieve(["image", "topics", "byName", "t"]) is not None
    assert topic_sieve(["image", "topics", "byName", "t", "0"]) is not None
    assert topic_sieve(["image", "topics", "byName", "t*"]) is None
    assert topic_sieve(["image", "topics", "byId", "not-an-id", "0"]) is None
    assert topic_sieve(["image", "cluster", "brokers"]) is None


def test_warnings_of_a_damaged_directory_still_come() -> None:
    """Where reading finds damage, the full load runs and says so, as before."""
    directory = FIXTURES / "bad-crc"
    names = _names(directory)
    run = cli("-d", str(directory), "changes", f"/image/topics/byName/{names[0]}")
    assert "warning" in run.err
    assert run.out == _full(open_shell(directory), f"/image/topics/byName/{names[0]}", "text")[0]


def test_a_picked_record_that_cannot_be_applied_takes_the_full_path() -> None:
    """bad-unknown-records holds a TopicRecord v7 (unknown version) naming
    ``from-the-future``: the sieve picks it by its name, cannot apply it, so the full load
    runs and warns, as before. A topic whose records are all known is answered by the sieve
    without the warnings about the records it stepped over."""
    directory = FIXTURES / "bad-unknown-records"
    path = "/image/topics/byName/from-the-future"
    run = cli("-d", str(directory), "changes", path)
    assert "unknown version 7 of TopicRecord" in run.err
    full = _full(open_shell(directory), path, "text")[0]
    assert (run.out, run.code) == (full, 1)  # never in the image
    session = Session.open(str(directory), lazy=True)
    from mdshell.commands import Shell

    result = Shell(session).run(["changes", "/image/topics/byName/after-unknown"])
    assert result.code == 0 and session.spared and not session.is_loaded


@pytest.fixture(scope="module")
def tail_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A snapshot, then a log tail of one-record batches in several segments: NoOps among
    them, topics made and removed, metadata transactions, every third data batch gzip'd."""
    from mdshell.synth import Scenario, generate

    out = tmp_path_factory.mktemp("sieved-tail") / "d"
    generate(Scenario(brokers=5, topics=8, partitions_per_topic=4, history_changes=500,
                      noops_per_change=2, segment_bytes=40_000, snapshot_at=("setup",),
                      log_from="snapshot", compression=("none", "none", "gzip"), seed=5),
             str(out))
    return out


def test_sieved_stretches_pass_over_what_they_cannot_pick(
        tail_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-shot ``changes`` passes over the batches of a clean stretch whose bytes hold
    no needle without reading them (``load._Picks``), and says what the full path says for
    every topic (those made in the log too: their ids are learnt mid-stretch) and a
    partition of each."""
    import importlib

    ld = importlib.import_module("mdshell.session.load")  # the package has a load() too
    passed: list[int] = []
    real = ld._Picks.passed

    def counted(self: object, k: int) -> int:
        got = real(self, k)
        passed.append(got - k)
        return got
    monkeypatch.setattr(ld._Picks, "passed", counted)
    shell = open_shell(tail_dir)
    names = sorted(shell.session.latest.image.topics_by_name)
    assert any(n.startswith("history-") for n in names), names  # made in the log
    for name in names:
        for path, output in ((f"/image/topics/byName/{name}", "text"),
                             (f"/image/topics/byName/{name}/0", "json")):
            passed.clear()
            run = cli("-d", str(tail_dir), "-o", output, "changes", path)
            assert (run.out, run.code) == (_full(shell, path, output)[0], 0), path
            assert sum(passed) > 100, (path, sum(passed))  # most batches passed over


def test_passing_over_unpicked_batches_leaves_the_replay_as_reading_them(
        tail_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sieved load with the batches it cannot pick passed over ends where reading each of
    them ends: the records observed and the image's provenance when each was, the
    provenance at the end, the marks kept, at every ``upto``."""
    import importlib

    ld = importlib.import_module("mdshell.session.load")
    source = DirectorySource(str(tail_dir))
    low, high = source.offset_range()
    assert high is not None

    def replay(name: str, upto: int | None) -> tuple[object, ...]:
        seen: list[tuple[int, ...]] = []  # each record, and where the image was then
        sieve = topic_sieve(["image", "topics", "byName", name])
        loaded = ld.load(source, upto=upto, history=True, sieve=sieve, every=7,
                         observer=lambda b, key, ver, d, off: seen.append(
                             (key, ver, off, b.image.provenance.offset)))
        prov = loaded.image.provenance
        replayer = loaded.replayer
        return (seen, (prov.offset, prov.epoch, prov.time_ms),
                replayer.history.offsets if replayer is not None else None)

    names = sorted(open_shell(tail_dir).session.latest.image.topics_by_name)
    for name in (names[0], names[-1]):
        for upto in (None, high - 3, (low + high) // 2):
            picked = replay(name, upto)
            monkeypatch.setattr(ld, "ByteSieve", type(None))  # every batch read
            read = replay(name, upto)
            monkeypatch.undo()
            assert picked == read, (name, upto)
            assert picked[0] or upto is not None, name  # the topic's records were seen


def test_flagged_batches_are_found_in_the_attributes(tail_dir: Path) -> None:
    """The compressed and control batches a sieved stretch always reads, found by bytes
    (``load._flagged``), are those the attributes say, on every file of a log with both."""
    import importlib

    from mdshell.source import cleanwalk
    from mdshell.wire.batch import COMPRESSION_MASK, CONTROL_FLAG

    ld = importlib.import_module("mdshell.session.load")
    kinds = set()
    for path in sorted((tail_dir / "__cluster_metadata-0").iterdir()):
        if path.suffix not in (".log", ".checkpoint"):
            continue
        h = cleanwalk.scan(path.read_bytes())
        want = [i for i, a in enumerate(h.attrs) if a & (CONTROL_FLAG | COMPRESSION_MASK)]
        assert ld._flagged(h) == want, path.name
        kinds |= {h.attrs[i] & (CONTROL_FLAG | COMPRESSION_MASK) for i in want}
    assert CONTROL_FLAG in kinds and any(k & COMPRESSION_MASK for k in kinds), kinds


def test_needles_are_found_where_find_finds_them() -> None:
    """Every needle's places in a buffer, two-byte ones by one regular expression (or by
    ``find`` where one match could hide another), are ``bytes.find``'s, in any range."""
    import random

    from mdshell.wire.sieve import Sieve, _finds

    rng = random.Random(7)
    for needles in ([b"\x01\x17", b"\x01\x18", b"\x01\x19", b"\x01\x1a", b"topic-1"],
                    [b"\x01\x02", b"\x02\x01", b"ab"],  # a match may hide another: by find
                    [b"\x01\x01", b"\x01\x02"], [b"\x05\x06", b"\x07\x06", b"\x05\x07"]):
        data = bytes(rng.choice(b"\x01\x02\x05\x06\x07\x17\x18abtopic-1") for _ in range(5000))
        sieve = Sieve(needles)
        for _ in range(50):
            start = rng.randrange(len(data))
            end = rng.randrange(start, len(data) + 1)
            want = sorted(i for n in needles for i in _finds(data, n, start, end))
            assert sorted(sieve._hits(data, start, end)) == want, (needles, start, end)


def _spoil_a_record(directory: Path, key: int) -> int:
    """Make the value body of the middle one-record batch of kind ``key`` in the newest
    segment bytes that do not decode (CRC recomputed, so only the record says it); its
    offset."""
    import struct

    from mdshell.wire.batch import parse_header
    from mdshell.wire.crc import crc32c

    log = sorted((directory / "__cluster_metadata-0").glob("*.log"))[-1]
    data = bytearray(log.read_bytes())
    found, pos = [], 0
    while pos + 61 <= len(data):
        b = parse_header(bytes(data), pos)
        if b.count == 1 and not b.attributes & 0x27:
            _buf, recs = metadata_ranges(b)
            if recs and recs[0][3] == key:
                found.append((pos, b.size, recs[0]))
        pos += b.size
    at, size, (off, _vpos, vend, _k, _v, body) = found[len(found) // 2]
    data[body:vend] = b"\xff" * (vend - body)
    data[at + 17:at + 21] = struct.pack(">I", crc32c(bytes(data[at + 21:at + size])))
    log.write_bytes(bytes(data))
    return off  # type: ignore[no-any-return]


def test_damage_the_sieve_cannot_pick_is_said_as_the_full_path_says(
        tail_dir: Path, tmp_path: Path) -> None:
    """A CRC-valid batch whose record does not decode, not touching the topic asked: the
    one-shot ``changes`` (which passes over the batches it cannot pick) stops there and
    says so exactly as the full load does, and shows the same changes."""
    import shutil

    d = tmp_path / "d"
    shutil.copytree(tail_dir, d)
    off = _spoil_a_record(d, 5)  # a PartitionChangeRecord
    shell = open_shell(d)
    said = [p for p in shell.session.latest.problems if p.code == "corrupt"]
    assert said and said[0].offset == off
    names = sorted(shell.session.latest.image.topics_by_name)
    for name in (names[0], names[-1]):
        path = f"/image/topics/byName/{name}"
        run = cli("-d", str(d), "changes", path)
        assert f"offsets {off}-{off}" in run.err and "do not decode" in run.err, run.err
        assert run.out == _full(shell, path, "text")[0], name


def _header_forms(key: int) -> list[bytes]:
    """Frame headers Kafka's serde reads as frame version 1, type ``key``: each varint in
    every length up to 5 bytes, and with bits past 32 set in a fifth byte (dropped)."""
    def forms(n: int) -> list[bytes]:
        out = [overlong(uvarint(n), size) for size in range(len(uvarint(n)), 6)]
        return out + [out[-1][:-1] + bytes([out[-1][-1] | high]) for high in (0x10, 0x70)]
    return [f + t + v for f in forms(1) for t in forms(key) for v in forms(0)[:2]]


@pytest.mark.parametrize("key", [0, 23, 24, 25, 28, 127, 128, 200, 0x7FFF])
def test_frame_needles_begin_every_header_kafka_reads_as_the_kind(key: int) -> None:
    """Each form begins with a needle, and is read as ``key`` by the one header reading
    (so the forms are ones Kafka reads); the needles are found where ``find`` finds them."""
    from mdshell.wire.frames import peek_frame
    from mdshell.wire.sieve import _pairs, frame_needles

    needles = frame_needles(key)
    heads = _header_forms(key)
    for head in heads:
        assert peek_frame(head + b"\x00", 0)[:2] == (key, 0), head.hex()
        assert any(head.startswith(n) for n in needles), head.hex()
    buf = b"\x05".join(heads) + bytes(range(256)) * 4
    got = _pairs(buf, needles)
    for n in needles:
        want, i = [], buf.find(n)
        while i >= 0:
            want.append(i)
            i = buf.find(n, i + 1)
        assert got[n] == want, n.hex()
