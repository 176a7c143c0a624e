"""History keeps what changed: images rebuilt at its marks are the images replay was at there,
down to the order of every map, and its memory does not depend on how records are batched."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from mdshell.image import model as m
from mdshell.image.journal import MapLog
from mdshell.image.replay import ImageBuilder
from mdshell.problems import SourceError
from mdshell.session import load
from mdshell.source import DirectorySource
from mdshell.synth import Scenario, generate
from mdshell.synth.batches import NONE, metadata_batch
from mdshell.wire.batch import iter_records

from .conftest import FIXTURES, corpus_dirs

FIXTURE_DIRS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


def shape(image: m.Image) -> list[Any]:
    """Everything an image holds, maps as lists of items (so their order counts too)."""
    out: list[Any] = [image.provenance, image.metadata_version, image.zk_migration_state,
                      image.next_producer_id]
    for name in ("finalized_features", "brokers", "controllers", "configs", "client_quotas",
                 "acls", "scram", "delegation_tokens"):
        out.append([(k, list(v.items()) if isinstance(v, dict) else v)
                    for k, v in getattr(image, name).items()])
    for name in ("topics_by_id", "topics_by_name"):
        out.append([(k, t.name, t.id, list(t.partitions.items()))
                    for k, t in getattr(image, name).items()])
    # a name names the very topic its id does
    assert all(image.topics_by_id.get(t.id) is t for t in image.topics_by_name.values())
    return out


def check_history(path: Path, every: int, most: int = 40) -> int:
    """Each mark's rebuilt image against replay published at the mark (the way history
    kept whole images before); returns how many marks were compared."""
    source = DirectorySource(str(path))
    loaded = load(source, every=every)
    assert loaded.replayer is not None
    history = loaded.replayer.history
    if not history.offsets:
        return 0
    first, start = history.offsets[0], history.images[0]
    wanted = set(history.offsets[1:][:: max(1, len(history.offsets) // most)])
    wanted.add(history.offsets[-1])
    builder = ImageBuilder(start, eager=source.eager)
    published = {}
    for loc in source.log_stream(first + 1, None, loaded.snapshot):
        if loc.batch.is_control:
            continue
        try:
            builder.apply_batch(loc.batch)
        except Exception:
            break  # the load stopped there too
        if loc.batch.last_offset in wanted and builder.txn is None:
            published[loc.batch.last_offset] = builder.publish()
    compared = 0
    for i, offset in enumerate(history.offsets):
        if offset in published:
            assert shape(history.image(i)) == shape(published[offset]), (path.name, offset)
            compared += 1
    assert shape(history.image(len(history.offsets) - 1)) == shape(loaded.image)
    return compared


@pytest.mark.parametrize("name", FIXTURE_DIRS)
def test_rebuilt_images_are_the_images_replay_was_at(name: str) -> None:
    try:
        check_history(FIXTURES / name, every=3)
    except SourceError as e:
        pytest.skip(f"not a metadata directory: {e}")


@pytest.mark.corpus
def test_rebuilt_images_on_the_corpus() -> None:
    dirs = corpus_dirs()
    if not dirs:
        pytest.skip("the shared corpus is absent")
    assert sum(check_history(d, every=50, most=6) for d in dirs) > 50


def test_rebuilt_images_over_random_history(tmp_path: Path) -> None:
    """Topics deleted and made again, configs, quotas, SCRAM users, ACLs, brokers
    unregistered: every kind of change, marked every few records."""
    out = tmp_path / "d"
    generate(Scenario(brokers=6, topics=30, partitions_per_topic=4, history_changes=3000,
                      seed=11), str(out))
    assert check_history(out, every=4, most=200) > 100


def test_map_log_keeps_the_order_replay_leaves() -> None:
    rng = random.Random(5)
    for _ in range(300):
        start = {k: k for k in rng.sample(range(12), rng.randrange(8))}
        replayed, log = dict(start), MapLog()
        for _ in range(rng.randrange(12)):
            key = rng.randrange(12)
            if rng.random() < 0.4:
                if key in replayed:
                    del replayed[key]
                    log.drop(key)
            else:
                replayed[key] = value = rng.random()
                log.put(key, value)
        rebuilt = dict(start)
        log.apply(rebuilt)
        assert list(rebuilt.items()) == list(replayed.items())


# ---------------------------------------------------------------- memory


def rebatch(src: Path, dst: Path, size: int) -> None:
    """A copy of the log dir ``src`` whose log has the same records (offsets, values,
    epochs) in metadata batches of ``size`` records (control batches stay as they are)."""
    for f in src.rglob("*"):
        if f.is_file():
            (dst / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            (dst / f.relative_to(src)).write_bytes(f.read_bytes())
    source = DirectorySource(str(src))
    (seg,) = source.layout.segments
    out = bytearray()
    pending: list[tuple[int, int, int, bytes]] = []

    def flush() -> None:
        while pending:
            chunk, pending[:] = pending[:size], pending[size:]
            out.extend(metadata_batch(chunk[0][0], [v for _, _, _, v in chunk],
                                      epoch=chunk[0][1], timestamp=chunk[-1][2], codec=NONE))

    for loc in source.log_stream(0):
        b = loc.batch
        if pending and b.epoch != pending[0][1]:
            flush()
        if b.is_control:
            flush()
            out.extend(b.raw())
            continue
        for r in iter_records(b):
            assert r.value is not None
            pending.append((r.offset, b.epoch, b.max_timestamp, r.value))
    flush()
    (dst / Path(seg.path).relative_to(src)).write_bytes(bytes(out))


def loaded_bytes(path: Path) -> int:
    """Memory held by a load of ``path`` (traced allocations still alive, file bytes
    included)."""
    tracemalloc.start()
    try:
        loaded = load(DirectorySource(str(path)))
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert loaded.image.topics_by_id
    return held


def test_memory_does_not_grow_with_the_batch_count(tmp_path: Path) -> None:
    """The same records in batches of 100 and of 20,000: what a load holds (the image, its
    history, the file) differs by less than 10%."""
    made = tmp_path / "made"
    generate(Scenario(brokers=6, topics=300, partitions_per_topic=50, history_changes=3000,
                      seed=3), str(made))
    held = {}
    for size in (100, 20_000):
        root = tmp_path / f"b{size}"
        rebatch(made, root, size)
        held[size] = loaded_bytes(root)
    small, big = held[100], held[20_000]
    assert abs(small - big) < 0.1 * big, held


def _partition(tid: bytes, pid: int, leader: int) -> dict[str, Any]:
    return {"partitionId": pid, "topicId": tid, "replicas": [1, 2], "isr": [1, 2],
            "removingReplicas": [], "addingReplicas": [], "leader": leader,
            "leaderRecoveryState": 0, "leaderEpoch": 0, "partitionEpoch": 0,
            "directories": [], "eligibleLeaderReplicas": None, "lastKnownElr": None}


@pytest.mark.parametrize("remove", [False, True])
def test_a_topic_made_again_under_its_id_starts_without_partitions(remove: bool) -> None:
    """A TopicRecord for an id that exists (damaged or odd logs) replaces the topic: the
    partitions set before, in the same stretch between marks, are not the new topic's."""
    from mdshell.image.history import Replayer
    from mdshell.wire.kinds import RecordKind as K

    replayer = Replayer(ImageBuilder(), every=1 << 30)
    b = replayer.builder
    one, two = b"\x01" * 16, b"\x02" * 16
    b._apply(K.TOPIC, 0, {"name": "a", "topicId": one}, 0)
    b._apply(K.TOPIC, 0, {"name": "b", "topicId": two}, 1)
    b._apply(K.PARTITION, 0, _partition(one, 0, 1), 2)
    b.image.provenance.offset = 2
    replayer.history.add(2, b.mark())
    b._apply(K.PARTITION, 0, _partition(one, 1, 1), 3)
    b._apply(K.PARTITION, 0, _partition(two, 0, 1), 4)
    if remove:
        b._apply(K.REMOVE_TOPIC, 0, {"topicId": one}, 5)
    b._apply(K.TOPIC, 0, {"name": "a", "topicId": one}, 6)
    b._apply(K.PARTITION, 0, _partition(one, 7, 2), 7)
    b.image.provenance.offset = 7
    latest = replayer.checkpoint()
    assert list(latest.topics_by_id[one].partitions) == [7]
    history = replayer.history
    assert history.offsets == [2, 7]
    history._images.clear()  # rebuild the latest too
    assert shape(history.image(1)) == shape(latest)
    assert list(history.image(0).topics_by_id[one].partitions) == [0]
