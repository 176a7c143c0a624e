"""The image advances: chunked feeding, held images that never change, the session's signal."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mdshell.commands import Shell
from mdshell.commands.navigate import tree_lines
from mdshell.image.history import Replayer
from mdshell.image.model import Image, Topic
from mdshell.image.replay import ImageBuilder
from mdshell.session import Loaded, Session, load
from mdshell.source import DirectorySource
from mdshell.tree.node import RenderOptions
from mdshell.tree.paths import lookup
from mdshell.tree.root import RootInfo, root_node
from mdshell.wire.batch import Batch

from .conftest import FIXTURES

SHOW = RenderOptions(show_secrets=True)
# Logs from offset 0: plain, with transactions, several segments and snapshots, ELR, codecs.
CHUNKED = ["cluster-basic", "transactions", "segments-snapshots", "elr", "codecs", "security",
           "controllers", "kraft-v1"]


def image_text(image: Image) -> list[str]:
    node = lookup(root_node(image, RootInfo("test", "directory")), ["image"])
    assert node is not None
    return list(tree_lines(node, SHOW))


def log_batches(source: DirectorySource) -> list[Batch]:
    stream = source.log_stream(0)
    batches = [loc.batch for loc in stream]
    assert not stream.problems
    return batches


def chunks(batches: list[Batch], n: int) -> list[list[Batch]]:
    size = max(1, len(batches) // n)
    return [batches[i:i + size] for i in range(0, len(batches), size)]


@pytest.mark.parametrize("name", CHUNKED)
def test_chunked_feeding_equals_a_fresh_load(name: str) -> None:
    """After each chunk the published image equals a fresh load up to that offset, and the
    images published before are unchanged."""
    source = DirectorySource(str(FIXTURES / name))
    batches = log_batches(source)
    assert batches and batches[0].base_offset == 0
    replayer = Replayer(ImageBuilder(), every=7)
    held: list[tuple[Image, list[str]]] = []
    for chunk in chunks(batches, 5):
        image = replayer.feed(chunk)
        upto = chunk[-1].last_offset
        fresh = load(source, upto=upto)
        text = image_text(image)
        assert text == image_text(fresh.image), f"{name} up to offset {upto}"
        held.append((image, text))
        for earlier, before in held:
            assert image_text(earlier) == before
    assert image_text(replayer.current) == image_text(load(source).image)
    # The checkpoints kept along the way are images as of their offsets, too.
    for offset, image in zip(replayer.history.offsets, replayer.history.images, strict=True):
        assert image_text(image) == image_text(load(source, upto=offset).image), offset


def test_reading_lazy_partitions_changes_no_held_image() -> None:
    loaded = load(DirectorySource(str(FIXTURES / "cluster-basic")))
    image = loaded.image
    lazy = {(t.name, pid): p for t in image.topics_by_id.values()
            for pid, p in t.partitions.items() if isinstance(p, tuple)}
    assert lazy, "the fixture should hold undecoded partitions"
    before = image_text(image)
    maps = {t.name: dict(t.partitions) for t in image.topics_by_id.values()}
    assert image_text(image) == before  # every partition decoded and rendered twice
    for t in image.topics_by_id.values():
        assert t.partitions == maps[t.name]
        assert all(t.partitions[pid] is p for pid, p in maps[t.name].items())
    assert image.notes.messages == []


def test_an_undecodable_partition_is_reported_not_deleted() -> None:
    topic = Topic("t", bytes(16))
    topic.partitions[0] = (b"\x00\x00\x00\x00" + bytes(16) + b"\xff\xff", 0, 22, 0)
    image = Image()
    topic.notes = image.notes
    assert topic.partition(0) is None
    assert 0 in topic.partitions and isinstance(topic.partitions[0], tuple)
    assert len(image.notes.messages) == 1 and "t-0" in image.notes.messages[0]
    assert topic.partition(0) is None and len(image.notes.messages) == 1  # reported once


def _tail_session(tmp_path: Path, name: str = "cluster-basic") -> tuple[Session, list[Batch]]:
    """A session over the first half of a log; the rest is returned to feed."""
    source = DirectorySource(str(FIXTURES / name))
    batches = log_batches(source)
    half = batches[len(batches) // 2].base_offset - 1
    return Session(source, load(source, upto=half)), [
        b for b in batches if b.base_offset > half]


def test_session_feed_tells_subscribers(tmp_path: Path) -> None:
    session, rest = _tail_session(tmp_path)
    seen: list[Loaded] = []
    unsubscribe = session.subscribe(lambda s, loaded: seen.append(loaded))
    first = session.loaded
    held = image_text(first.image)
    session.feed(rest[:3])
    assert len(seen) == 1 and seen[0] is session.latest is session.loaded
    assert seen[0].image.provenance.offset > first.image.provenance.offset
    session.feed(rest[3:])
    assert len(seen) == 2
    full = load(session.source)
    assert image_text(session.latest.image) == image_text(full.image)
    assert image_text(first.image) == held  # the image published before did not change
    unsubscribe()
    session.feed([])
    assert len(seen) == 2


def test_feed_keeps_a_time_travelled_view(tmp_path: Path) -> None:
    session, rest = _tail_session(tmp_path)
    shell = Shell(session, opts=SHOW)
    assert shell.run(["at", "3"]).code == 0
    viewed = session.loaded
    session.feed(rest)
    assert session.loaded is viewed and session.latest is not viewed
    assert shell.run(["at", "latest"]).code == 0
    assert image_text(session.loaded.image) == image_text(load(session.source).image)


def test_advance_reads_what_kafka_appended(tmp_path: Path) -> None:
    """A directory that grows (Kafka still writing): ``advance`` applies the new batches."""
    copy = tmp_path / "kafka"
    shutil.copytree(FIXTURES / "cluster-basic", copy)
    log = next((copy / "__cluster_metadata-0").glob("*.log"))
    data = log.read_bytes()
    batches = log_batches(DirectorySource(str(copy)))
    cut = batches[len(batches) // 2].pos
    log.write_bytes(data[:cut])
    session = Session(DirectorySource(str(copy)))
    seen: list[int] = []
    session.subscribe(lambda s, loaded: seen.append(loaded.image.provenance.offset))
    assert not session.advance()  # nothing new yet
    log.write_bytes(data)
    assert session.advance()
    assert seen and image_text(session.latest.image) == image_text(
        load(DirectorySource(str(copy))).image)


def _changes(shell: Shell, path: str) -> list[object]:
    result = shell.run(["changes", path])
    assert result.code == 0, result.errors
    return [list(result.lines), result.json()]


def _synth_dir(tmp_path: Path) -> Path:
    """A snapshot taken after setup and a log from there (the shape of the benchmarks)."""
    import subprocess
    import sys

    out = tmp_path / "gen"
    subprocess.run([sys.executable, "-m", "mdshell.synth", "--out", str(out), "--topics", "6",
                    "--brokers", "4", "--controllers", "1", "--partitions-per-topic", "5",
                    "--rf", "3", "--history-changes", "60", "--snapshot-at", "setup",
                    "--log-from", "snapshot", "--seed", "3"], check=True, capture_output=True)
    return out


@pytest.mark.parametrize("where", ["kafka37-snapshot", "synth"])
def test_changes_from_the_kept_snapshot_equal_a_full_replay(
        where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``changes`` reads the snapshot's records from what the load kept; a full replay (the
    slow path, forced by dropping the index) gives the same lines and data."""
    directory = _synth_dir(tmp_path) if where == "synth" else FIXTURES / where
    source = DirectorySource(str(directory))
    fast = Shell(source, load(source), SHOW)
    assert fast.session.latest.index is not None
    slow = Shell(source, load(source), SHOW)
    slow.session.latest.index = None
    topics = sorted(fast.session.latest.image.topics_by_name)
    paths = ["/image", "/image/topics", "/image/cluster/brokers/*", "/image/configs",
             f"/image/topics/byName/{topics[0]}", f"/image/topics/byName/{topics[-1]}/1",
             "/image/topics/byName/*/0", "/image/topics/byId/*"]
    import mdshell.session.changes as session_module  # where the replays of `changes` load

    replays: list[int] = []
    real_load = session_module.load

    def counted(*args: object, **kwargs: object) -> Loaded:
        replays.append(1)
        return real_load(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(session_module, "load", counted)
    for path in paths:
        before = len(replays)
        quick = _changes(fast, path)
        assert len(replays) == before  # no replay of the snapshot
        assert quick == _changes(slow, path), path
        assert len(replays) == before + 1
    snapshot_lines = [line for line in _changes(fast, "/image/topics")[0]
                      if isinstance(line, str) and line.startswith("snapshot=")]
    assert snapshot_lines


def test_the_session_asks_the_source_what_it_can_do() -> None:
    """Follow, poll and staleness are what a source declares (a file's defaults: nothing),
    not guessed from its class: any source that declares them is followed and judged so."""
    from mdshell.image.verdict import LIVE_STALE
    from mdshell.source import FileSource

    directory = str(FIXTURES / "cluster-basic")
    plain = DirectorySource(directory)
    assert not plain.follows and plain.poll() is None and plain.staleness() is None
    assert plain.status() is None and plain.quorum() is None and plain.fetched() is None
    assert plain.disk_layout() is plain.layout
    snapshot = next((FIXTURES / "kafka37-snapshot").rglob("*.checkpoint"))
    assert FileSource(str(snapshot)).disk_layout() is None

    class Stopped(DirectorySource):
        follows = True
        polled = 0

        def poll(self) -> str | None:
            self.polled += 1
            return None

        def staleness(self) -> str | None:
            return "the leader stopped answering"

    stopped = Stopped(directory)
    session = Session(stopped)
    assert LIVE_STALE not in Session(plain).verdict().badges
    assert LIVE_STALE in session.verdict().badges
    assert session.poll_source() is False and stopped.polled == 1


def test_a_followed_directory_whose_unread_log_a_snapshot_replaced_loads_afresh(
        tmp_path: Path) -> None:
    """A controller far behind replaces its log by the leader's snapshot: the offsets the
    followed session had not read yet are gone, the snapshot holds them. Following loads
    afresh (as live mode does on a newer snapshot) and is complete, not INCOMPLETE."""
    from mdshell.session.appends import Follow

    d = tmp_path / "c"
    shutil.copytree(FIXTURES / "cluster-basic", d)
    md = d / "__cluster_metadata-0"
    log = next(md.glob("*.log"))
    snapshot = next(md.glob("*.checkpoint"))  # 96: it holds offsets < 96
    data, held = log.read_bytes(), snapshot.read_bytes()
    starts, pos = {}, 0
    while pos + 12 <= len(data):
        starts[int.from_bytes(data[pos:pos + 8], "big")] = pos
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    early = max(b for b in starts if b < 60)
    snapshot.unlink()
    log.write_bytes(data[:starts[early]])  # read so far: the log up to an early offset
    session = Session.open(str(d))
    session.follow = Follow()
    assert session.latest.next_offset == early
    log.unlink()  # Kafka: the log replaced by the snapshot and what follows it
    snapshot.write_bytes(held)
    (md / f"{96:020d}.log").write_bytes(data[starts[96]:])
    assert session.poll_source() and session.follow.error is None
    assert session.verdict().sound
    whole = Session.open(str(FIXTURES / "cluster-basic"))
    assert image_text(session.latest.image) == image_text(whole.latest.image)


def test_an_image_let_go_is_freed_by_its_counts() -> None:
    """A session, its image and its tree's root hold no reference cycle: dropped, they are
    freed at once (the one-shot command and the TUI freeze what a load made, where a cycle
    would keep an image for good)."""
    import gc
    import weakref

    def images() -> int:
        return sum(type(o) is Image for o in gc.get_objects())

    enabled = gc.isenabled()
    gc.disable()
    try:
        before = images()  # other tests' sessions may still be held
        session = Session.open(str(FIXTURES / "cluster-basic"))
        assert session.root is not None and session.history is not None
        builder = weakref.ref(session.latest.replayer.builder)  # type: ignore[union-attr]
        assert images() > before
        del session
        assert builder() is None and images() == before
    finally:
        if enabled:
            gc.enable()


@pytest.mark.parametrize("name", ["cluster-basic", "segments-snapshots", "transactions"])
def test_a_session_without_marks_answers_as_one_with_them(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``marks=False`` (a one-shot command that does not travel in time) keeps no images
    for time travel; the latest image, its problems and an image at any offset (loaded
    again) are the same as a session that keeps them (a mark every 5 records) gives."""
    import sys

    monkeypatch.setattr(sys.modules["mdshell.session.load"], "CHECKPOINT_RECORDS", 5)
    directory = str(FIXTURES / name)
    kept, bare = Session.open(directory), Session.open(directory, marks=False)
    assert len(kept.history.offsets) > 1 and len(bare.history.offsets) <= 1
    assert image_text(bare.latest.image) == image_text(kept.latest.image)
    assert [p.message for p in bare.latest.problems] == [p.message for p in kept.latest.problems]
    first, last = kept.offset_range()
    assert first is not None and last is not None
    for at in (first, (first + last) // 2, last - 1):
        assert image_text(bare.load_at(at).image) == image_text(kept.load_at(at).image), at


def test_one_shot_commands_keep_marks_only_to_travel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-shot front door opens its session without marks but for the commands that
    travel in time (``at``, ``diff``, ``changes``) and ``--at``."""
    from mdshell import cli

    opened: list[bool] = []
    real = Session.open.__func__  # type: ignore[attr-defined]

    def spy(cls: type[Session], *args: object, **kwargs: object) -> Session:
        opened.append(bool(kwargs.get("marks", True)))
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(Session, "open", classmethod(spy))
    d = str(FIXTURES / "cluster-basic")
    for argv, marks in ((["cat", "/image/provenance"], False), (["health"], False),
                        (["at", "3"], True), (["diff", "1", "3"], True),
                        (["--at", "3", "ls", "/"], True), (["changes", "/image"], True)):
        opened.clear()
        cli.main(["-d", d, *argv])
        assert opened == [marks], argv
