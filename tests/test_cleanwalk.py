"""The fast walk of clean segments (:mod:`mdshell.source.cleanwalk`) against the walker one
batch at a time (with the compiled scan and framing of ``_cwalk``, and without them): the
same images, history, provenance, warnings, files and control records,
on every fixture, the corpus and damaged copies of a generated log (a damaged file is read by
the walker, so the answers must not move either)."""

from __future__ import annotations

import shutil
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mdshell.image import history as replay_history
from mdshell.image import replay as replay_module
from mdshell.problems import SourceError
from mdshell.session import load
from mdshell.source import DirectorySource, cleanwalk, laidout
from mdshell.source.logscan import iter_log
from mdshell.source.walker import iter_batches
from mdshell.synth import Scenario, generate
from mdshell.synth.batches import metadata_batch
from mdshell.wire import decoding, framing
from mdshell.wire.batch import HEADER_SIZE, frame_metadata_value, iter_records, parse_header
from mdshell.wire.crc import crc32c
from mdshell.wire.kinds import RecordKind
from mdshell.wire.primitives import DecodeError

from .conftest import FIXTURES, corpus_dirs, three_brokers
from .test_history import shape

load_module = sys.modules["mdshell.session.load"]  # the module (``load`` is its function)
FIXTURE_DIRS = sorted(p for p in FIXTURES.iterdir() if p.is_dir())


def facts(directory: Path, records: bool = True) -> list[Any]:
    """What a load of ``directory`` gives (whole, and up to the middle of its log), and
    what ``records`` reads."""
    source = DirectorySource(str(directory))
    loaded = load(source)
    out: list[Any] = [_loaded(loaded)]
    assert loaded.replayer is not None
    history = loaded.replayer.history
    out.append([shape(history.image(i)) for i in {0, len(history.offsets) // 2,
                                                   len(history.offsets) - 1}
                if history.offsets])
    # marks every few records: where they fall, and the images there
    marked = load(DirectorySource(str(directory)), every=37)
    assert marked.replayer is not None
    offsets = marked.replayer.history.offsets
    out.append([list(offsets), [shape(marked.replayer.history.image(i))
                                for i in range(0, len(offsets), 7)]])
    if loaded.end_offset is not None and loaded.end_offset > loaded.base + 2:
        middle = (loaded.base + loaded.end_offset) // 2
        out.append(_loaded(load(DirectorySource(str(directory)), upto=middle)))
    if records:
        problems: list[Any] = []
        out.append(list(iter_log(DirectorySource(str(directory)), problems=problems)))
        out.append(problems)
    return out


def _loaded(loaded: Any) -> list[Any]:
    return [shape(loaded.image), [(p.code, p.message, p.file, p.offset, p.position)
                                  for p in loaded.problems],
            loaded.files, loaded.controls, loaded.end_offset, loaded.next_offset,
            loaded.complete_from_zero]


class Walks:
    """Loads with the fast walk, then with the walker alone; counts the segments the fast
    walk took."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.fast = 0
        real = laidout._Fast.of.__func__  # type: ignore[attr-defined]

        def counted(cls: type, *args: Any) -> Any:
            got = real(cls, *args)
            self.fast += got is not None
            return got

        monkeypatch.setattr(laidout._Fast, "of", classmethod(counted))
        self._counted = counted

    def agree(self, directory: Path, records: bool = True) -> list[Any]:
        try:
            fast = facts(directory, records)
        except SourceError:
            return []
        with self.monkeypatch.context() as m:
            m.setattr(laidout._Fast, "of", classmethod(lambda cls, *args: None))
            slow = facts(directory, records)
        assert fast == slow, directory
        return fast


@pytest.fixture(params=["compiled", "python"])
def walks(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Walks:
    """Both ways, when the compiled scan and framing are built: with them, and without."""
    if request.param == "python":
        monkeypatch.setattr(cleanwalk, "COMPILED", False)
        monkeypatch.setattr(framing, "_cframe", None)
        monkeypatch.setattr(replay_history, "_crun", None)
        monkeypatch.setattr(decoding, "_cdecode_batch", None)
        monkeypatch.setattr(decoding, "_ccheck", None)
        monkeypatch.setattr(decoding, "_ccheck_section", None)
        monkeypatch.setattr(replay_module, "_cput", None)
    elif not cleanwalk.COMPILED:
        pytest.skip("the compiled walk is not built (MDSHELL_PURE=1, or no C compiler)")
    return Walks(monkeypatch)


def test_fixtures(walks: Walks) -> None:
    for d in FIXTURE_DIRS:
        walks.agree(d)
    assert walks.fast >= 20  # the fast walk is the common one


@pytest.mark.corpus
def test_corpus(walks: Walks) -> None:
    dirs = corpus_dirs()
    if not dirs:
        pytest.skip("the shared corpus is absent")
    for d in dirs:
        walks.agree(d, records=False)
    assert walks.fast >= 50


@pytest.fixture(scope="module")
def quiet_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three segments of one-record batches, NoOps among them, leader epochs rising, a
    snapshot after the first changes."""
    out = tmp_path_factory.mktemp("quiet") / "d"
    generate(Scenario(brokers=4, topics=6, partitions_per_topic=3, history_changes=400,
                      noops_per_change=2, segment_bytes=24_000, snapshot_at=("25%",),
                      seed=3), str(out))
    return out


def _segments(d: Path) -> list[Path]:
    return sorted((d / "__cluster_metadata-0").glob("*.log"))


def _starts(path: Path) -> list[int]:
    return list(cleanwalk.batch_starts(path.read_bytes()))


def _flip(at: Callable[[list[int]], int]) -> Callable[[Path], None]:
    def damage(d: Path) -> None:
        seg = _segments(d)[1]
        data = bytearray(seg.read_bytes())
        data[at(_starts(seg))] ^= 0x5A
        seg.write_bytes(bytes(data))
    return damage


def _truncate(d: Path) -> None:
    seg = _segments(d)[-1]
    seg.write_bytes(seg.read_bytes()[:-7])


def _gap(d: Path) -> None:
    seg = _segments(d)[1]
    data = seg.read_bytes()
    starts = _starts(seg)
    i = len(starts) // 2
    seg.write_bytes(data[:starts[i]] + data[starts[i + 1]:])


def _set_epochs(which: Callable[[list[int]], list[int]], value: Callable[[int], int],
                segment: int = 1) -> Callable[[Path], None]:
    def damage(d: Path) -> None:
        seg = _segments(d)[segment]
        data = bytearray(seg.read_bytes())
        for p in which(_starts(seg)):
            (epoch,) = struct.unpack_from(">i", data, p + 12)
            struct.pack_into(">i", data, p + 12, value(epoch))
        seg.write_bytes(bytes(data))
    return damage


def _rewrite(edit: Callable[[bytearray, int, int, int], None]) -> Callable[[Path], None]:
    """A batch of one record that is not a NoOp, in the middle of a segment, changed by
    ``edit(data, batch start, value start, value end)`` and given the right CRC again: a
    clean stretch (it checks whole) holding a batch whose record does not decode."""
    def damage(d: Path) -> None:
        seg = _segments(d)[1]
        data = bytearray(seg.read_bytes())
        starts = _starts(seg)
        for p in starts[len(starts) // 2:]:
            b = parse_header(bytes(data), p)
            recs = list(iter_records(b)) if b.count == 1 and not b.is_control else []
            if recs and recs[0].value and recs[0].value[1] != RecordKind.NO_OP:
                edit(data, p, recs[0].value_pos, recs[0].value_end)
                end = p + b.size
                struct.pack_into(">I", data, p + 17, crc32c(bytes(data[p + 21:end])))
                seg.write_bytes(bytes(data))
                return
        raise AssertionError("no one-record batch to damage")
    return damage


def _garbage_value(data: bytearray, batch: int, start: int, end: int) -> None:
    data[start + 3:end] = b"\xff" * (end - start - 3)  # the frame kept: an unknown record


def _overrun(data: bytearray, batch: int, start: int, end: int) -> None:
    data[batch + HEADER_SIZE] += 2  # the record's length (zigzag, one byte) past the batch


def _drop_segment(d: Path) -> None:
    _segments(d)[1].unlink()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "crc": _flip(lambda s: s[len(s) // 2] + 70),  # a byte of a record: the CRC says so
    "base-offset": _flip(lambda s: s[len(s) // 2] + 7),  # outside the CRC
    "epoch-spike": _flip(lambda s: s[len(s) // 2] + 15),
    "magic": _flip(lambda s: s[len(s) // 2] + 16),
    "length": _flip(lambda s: s[len(s) // 2] + 11),
    "truncated-tail": _truncate,
    "gap": _gap,
    "epoch-back": _set_epochs(lambda s: s[len(s) // 2:], lambda e: e - 1),
    "epoch-back-file": _set_epochs(lambda s: s, lambda e: 0, segment=2),
    "last-epoch-up": _set_epochs(lambda s: s[-1:], lambda e: e + 3, segment=2),
    "missing-segment": _drop_segment,
    # right CRCs: a value kept raw; records that do not frame (the rest of the file is lost)
    "value-garbage": _rewrite(_garbage_value),
    "framing-undecodable": _rewrite(_overrun),
}


@pytest.mark.parametrize("chunk", [7, cleanwalk.CHUNK])
@pytest.mark.parametrize("name", sorted(DAMAGE))
def test_damaged_copies(walks: Walks, quiet_log: Path, tmp_path: Path, name: str,
                        chunk: int) -> None:
    """Also with the fast walk taking a few batches at a time: clean stretches before and
    after the damage, a chunk's last batch judged by the batch after it."""
    walks.monkeypatch.setattr(cleanwalk, "CHUNK", chunk)
    copy = tmp_path / "d"
    shutil.copytree(quiet_log, copy)
    DAMAGE[name](copy)
    got = walks.agree(copy)
    assert got[0][1], "the damage is said"


def test_the_generated_log_itself(walks: Walks, quiet_log: Path) -> None:
    got = walks.agree(quiet_log)
    assert not got[0][1] and walks.fast >= 3 * 3


def _handed_out(d: Path, pass_noops: bool) -> Iterator[Any]:
    source = DirectorySource(str(d))
    snapshot = source.snapshots()[0]
    yield from source.log_stream(snapshot.end_offset, None, snapshot, pass_noops=pass_noops)


def test_noop_runs_are_passed_over_and_counted(quiet_log: Path) -> None:
    every = list(_handed_out(quiet_log, False))
    passed = list(_handed_out(quiet_log, True))
    assert len(passed) < len(every) * 2 // 3
    assert sum(1 + (loc.quiet[0] if loc.quiet else 0) for loc in passed) == len(every)
    by_offset = {loc.batch.last_offset: loc.batch for loc in every}
    for loc in passed:
        if loc.quiet:
            noop = by_offset[loc.quiet[1]]
            assert noop.last_offset < loc.batch.base_offset
            assert (noop.epoch, noop.max_timestamp) == loc.quiet[2:]


NOOP = frame_metadata_value(RecordKind.NO_OP, 0, b"\0")


def _noisy(src: Path, dst: Path) -> None:
    """A copy of ``src`` (a log from offset 0) with every metadata record in a batch of its
    own, each followed by a batch of one NoOp (inside transactions too), offsets counted
    again (control batches moved to theirs)."""
    shutil.copytree(src, dst)
    source = DirectorySource(str(src))
    (seg,) = source.layout.segments
    out = bytearray()
    for loc in source.log_stream(0):
        b = loc.batch
        if b.is_control:
            raw = bytearray(b.raw())
            struct.pack_into(">q", raw, 0, len_offsets(out))  # outside the CRC
            out += raw
            continue
        for r in iter_records(b):
            assert r.value is not None
            for value in (r.value, NOOP):
                out += metadata_batch(len_offsets(out), [value], epoch=b.epoch,
                                      timestamp=r.timestamp)
    (dst / Path(seg.path).relative_to(src)).write_bytes(bytes(out))


def len_offsets(log: bytes | bytearray) -> int:
    """The next offset of a log written so far."""
    starts = list(cleanwalk.batch_starts(bytes(log))) if log else []
    if not starts:
        return 0
    base, = struct.unpack_from(">q", log, starts[-1])
    (delta,) = struct.unpack_from(">i", log, starts[-1] + 23)
    return int(base + delta + 1)


@pytest.mark.parametrize("chunk", [3, cleanwalk.CHUNK])
def test_noops_inside_and_around_transactions(walks: Walks, tmp_path: Path,
                                              chunk: int) -> None:
    """The provenance a passed-over NoOp leaves: kept before a batch that opens a
    transaction, not moved inside one; at every offset as the end of the load."""
    walks.monkeypatch.setattr(cleanwalk, "CHUNK", chunk)
    d = tmp_path / "d"
    _noisy(FIXTURES / "transactions", d)
    end = load(DirectorySource(str(d))).end_offset
    assert end is not None and end > 60
    with walks.monkeypatch.context() as m:
        m.setattr(laidout._Fast, "of", classmethod(lambda cls, *args: None))
        slow = [_loaded(load(DirectorySource(str(d)), upto=u)) for u in range(end + 1)]
    fast = [_loaded(load(DirectorySource(str(d)), upto=u)) for u in range(end + 1)]
    assert fast == slow
    assert walks.fast > end


@pytest.fixture(scope="module")
def quieter_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Long runs of one-NoOp batches between the changes (a quiet controller)."""
    out = tmp_path_factory.mktemp("quieter") / "d"
    generate(Scenario(brokers=3, topics=3, partitions_per_topic=2, history_changes=60,
                      noops_per_change=40, segment_bytes=60_000, seed=5), str(out))
    return out


def test_runs_of_noops(walks: Walks, quieter_log: Path, tmp_path: Path) -> None:
    """Runs judged by their first batch; a record of another (unknown) type, as long as a
    NoOp, inside a run is not passed over: it is applied, and warned about."""
    walks.agree(quieter_log)
    copy = tmp_path / "d"
    shutil.copytree(quieter_log, copy)
    noops = [loc for loc in _handed_out_all(copy) if _is_noop(loc)]
    offsets = {loc.batch.base_offset for loc in noops}
    loc = next(loc for loc in noops[len(noops) // 2:]  # in the middle of a run
               if {loc.batch.base_offset + d for d in (-2, -1, 1)} <= offsets)
    seg = Path(loc.file)
    data = bytearray(seg.read_bytes())
    b = loc.batch
    stranger = metadata_batch(b.base_offset, [frame_metadata_value(100, 0, b"\0")],
                              epoch=b.epoch, timestamp=b.max_timestamp)
    assert len(stranger) == b.size
    data[loc.position:loc.position + b.size] = stranger
    seg.write_bytes(bytes(data))
    got = walks.agree(copy)
    assert [p for p in got[0][1] if p[0] == "unknown-record"]


def _handed_out_all(d: Path) -> Iterator[Any]:
    yield from DirectorySource(str(d)).log_stream(0)


def _is_noop(loc: Any) -> bool:
    records = list(iter_records(loc.batch))
    return (not loc.batch.is_control and len(records) == 1
            and records[0].value == NOOP)


def test_a_record_that_does_not_decode_inside_a_run(walks: Walks, quiet_log: Path) -> None:
    """A record whose bytes turn out not to decode (its decoder refuses them) in the middle
    of a run of plain batches: said at that batch, nothing of it applied, the rest of the
    file not applied, what came before it kept, as the walker's way does."""
    seg = _segments(quiet_log)[1]
    data = seg.read_bytes()
    changes = [(r.offset, r.value_pos) for p in _starts(seg)[len(_starts(seg)) // 2:]
               for r in iter_records(parse_header(data, p))
               if r.value and r.value[1] == RecordKind.PARTITION_CHANGE]
    target, at = changes[len(changes) // 2]
    version = data[at + 2]
    real = decoding.decoder(RecordKind.PARTITION_CHANGE, version)
    assert real is not None

    def refusing(buf: bytes, pos: int, end: int) -> tuple[dict[str, Any], int]:
        if pos == at + 3 and buf[pos - 3:end] == data[at:end]:
            raise DecodeError("a partition change that does not decode (test)")
        return real(buf, pos, end)

    walks.monkeypatch.setitem(decoding.decoders(),
                              RecordKind.PARTITION_CHANGE << 7 | version, refusing)
    got = walks.agree(quiet_log, records=False)
    said = [p for p in got[0][1] if p[0] == "corrupt"]
    assert said and said[0][3] <= target, said


@pytest.mark.parametrize("last", ["partition change", "config"])
def test_records_the_run_leaves_to_their_decoders(walks: Walks, tmp_path: Path,
                                                  last: str) -> None:
    """One-record batches, good CRCs, whose records the compiled run loop reads itself
    (PartitionChangeRecord from its bytes, any other kind by its compiled decoder) unless
    their bytes are not the encoding it knows: a tag the version does not know, tags out of
    order or given twice, a varint in a longer form, unknown tagged fields on another kind;
    then, last, one the decoders refuse (a tagged field's size not its value's, a string not
    UTF-8). The same image, warnings and stop as the walker's way, which reads every record
    by the decoders."""
    from mdshell.synth.records import RawRecord
    from mdshell.wire import codec
    from mdshell.wire.records import METADATA

    b = three_brokers(tmp_path / "logs", seed=11)
    b.create_topic("t", 4, 3)
    b.snapshot()
    tid = b.topic_id("t")
    pcr, config = RecordKind.PARTITION_CHANGE, RecordKind.CONFIG

    def raw(kind: int, version: int, body: bytes) -> None:
        b.append([RawRecord(frame_metadata_value(kind, version, body), kind, version)])

    head = struct.pack(">i", 1) + tid
    leader, isr = bytes([1, 4, 0, 0, 0, 2]), bytes([0, 9, 3, 0, 0, 0, 1, 0, 0, 0, 2])
    for version, body in (
            (0, head + bytes([1]) + leader),  # read from its bytes
            (0, head + bytes([1, 9, 1, 7])),  # a tag version 0 does not know
            (0, head + bytes([2]) + leader + isr),  # out of order
            (0, head + bytes([2]) + isr + isr),  # twice
            (0, head + bytes([1, 1, 0x84, 0, 0, 0, 0, 3])),  # a size in a longer form
            (2, head + bytes([1]) + leader)):
        b.change_partition("t", 0, leader=(version + 1) % 3)
        raw(pcr, version, body)
    cfg = codec.encode(METADATA[config], 0, {"resourceType": 2, "resourceName": "t",
                                             "name": "retention.ms", "value": "5"})
    raw(config, 0, cfg)  # by its compiled decoder
    raw(config, 0, cfg[:-1] + bytes([1, 5, 2, 0xAB, 0xCD]))  # an unknown tagged field
    b.change_partition("t", 2, leader=1)
    if last == "config":
        raw(config, 0, cfg.replace(b"retention", b"retent\xffon"))  # not UTF-8
    else:
        raw(pcr, 0, head + bytes([1, 0, 2, 1, 0]))  # an empty array in a size of 2
    b.change_partition("t", 3, leader=1)
    b.finish()
    got = walks.agree(tmp_path / "logs", records=False)
    said = [(p[0], p[3]) for p in got[0][1]]
    # the unknown tags of the partition change and of the config said, the damaged record
    # stops the file, the image is as of the record before it
    assert said == [("corrupt", 31), ("unknown-tag", 19), ("unknown-tag", 29), ("image", None)]
    assert got[0][0][0].offset == 30, got[0][0][0]


def _described(d: Path, monkeypatch: pytest.MonkeyPatch, walked: bool) -> Any:
    """What ``/log`` and time travel read of a directory's headers: each segment's
    description (``loginfo.scan_segment``) and the runs of offsets (``rebuild._runs``);
    ``walked``: the walker's batch by batch, the clean summary set aside."""
    from mdshell.session import rebuild
    from mdshell.source import loginfo

    with monkeypatch.context() as m:
        if walked:
            m.setattr(loginfo, "summary", lambda data, first: None)
            m.setattr(rebuild, "summary", lambda data, first: None)
        source = DirectorySource(str(d))
        segs = [loginfo.scan_segment(s.path, Path(s.path).read_bytes(), s.base_offset,
                                     first=s.base_offset) for s in source.segments()]
        return segs, rebuild._runs(source)


@pytest.mark.parametrize("chunk", [5, cleanwalk.SUMMARY_CHUNK])
@pytest.mark.parametrize("name", ["clean", *sorted(DAMAGE)])
def test_summary_is_the_walk(quiet_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             name: str, chunk: int) -> None:
    """A segment's headers summed up at C speed describe it as the walker does, clean or
    damaged (damage: the walker's own description), a few batches at a time too."""
    monkeypatch.setattr(cleanwalk, "SUMMARY_CHUNK", chunk)
    copy = tmp_path / "d"
    shutil.copytree(quiet_log, copy)
    if name != "clean":
        DAMAGE[name](copy)
    fast, walked = _described(copy, monkeypatch, False), _described(copy, monkeypatch, True)
    assert fast == walked
    clean = [cleanwalk.summary(p.read_bytes(), int(p.stem)) for p in _segments(copy)]
    if name == "clean" and cleanwalk.COMPILED:
        assert all(clean) and sum(s.batches for s in clean) == sum(
            s.batches for s in fast[0])
    if name in ("crc", "gap", "truncated-tail", "magic", "length", "epoch-back"):
        assert None in clean  # the damaged segment is the walker's


@pytest.mark.corpus
def test_summary_on_the_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    dirs = corpus_dirs()
    if not dirs:
        pytest.skip("the shared corpus is absent")
    for d in dirs:
        assert _described(d, monkeypatch, False) == _described(d, monkeypatch, True), d


def test_batches_of_many_records(walks: Walks, tmp_path: Path) -> None:
    """Batches of several records of every shape (a topic made with its configs, records of
    many kinds, partitions of a topic that does not exist, a NoOp among them, one of a kind
    mdshell does not know, a topic removed or made again between two of its partitions,
    transactions, and last one that does not decode, its partition
    before the damage not applied either), before and after a snapshot: the compiled run
    applies them record by record without the decoded list (``apply_direct``), and gives
    what the walker's replay gives, also cut at every offset inside them."""
    from mdshell.synth.records import RawRecord, meta

    b = three_brokers(tmp_path / "d", seed=12)
    rng = __import__("random").Random(12)

    def partition(tid: bytes, pid: int) -> Any:
        return meta("PartitionRecord", 0, partitionId=pid, topicId=tid, replicas=[0, 1],
                    isr=[0, 1], leader=rng.choice((0, 1)))

    def mixed_batch(tid: bytes) -> None:
        b.append([partition(tid, 7), meta("NoOpRecord", 0), partition(bytes(range(16)), 0),
                  meta("ConfigRecord", 0, resourceType=2, resourceName="a", name="x",
                       value=str(rng.random())),
                  meta("ProducerIdsRecord", 0, brokerId=1, brokerEpoch=b._broker_epoch(1),
                       nextProducerId=rng.randrange(1 << 40)),
                  partition(tid, 8), partition(tid, 7)])

    first = b.create_topic("a", 6, 3, configs={"retention.ms": "1", "cleanup.policy": "x"})
    mixed_batch(first)
    b.snapshot()
    second = b.create_topic("b", 40, 2)
    mixed_batch(second)
    b.append([meta("TopicRecord", 0, name="c", topicId=bytes([7] * 16)),
              partition(bytes([7] * 16), 0), meta("RemoveTopicRecord", 0, topicId=first),
              partition(first, 1)])  # a partition of a topic removed in its own batch
    b.append([partition(second, 51), RawRecord(bytes([1, 99, 0, 0]), 99, 0),  # unknown kind
              partition(second, 52)])
    b.begin_transaction("in a transaction")
    b.create_topic("t", 5, 2)
    b.end_transaction()
    b.append([partition(second, 50), meta("NoOpRecord", 0)])
    # a topic removed, or made again, between two of its partitions in one batch
    third = b.create_topic("e", 2, 2)
    b.append([partition(third, 2), meta("RemoveTopicRecord", 0, topicId=third),
              partition(third, 3)])
    b.append([partition(second, 60), meta("TopicRecord", 0, name="b", topicId=second),
              partition(second, 61)])
    b.append([partition(second, 53), RawRecord(bytes([1, 2, 0, 5]), 2, 0)])  # undecodable
    b.finish()
    d = tmp_path / "d"
    walks.agree(d)
    source = DirectorySource(str(d))
    whole = load(source)
    assert whole.end_offset is not None
    assert {p.code for p in whole.problems} >= {"unknown-record", "no-topic", "corrupt"}
    assert "TopicRecord" in next(p.message for p in whole.problems if p.code == "corrupt")
    for upto in range(whole.end_offset - 85, whole.end_offset + 1):
        fast = _loaded(load(DirectorySource(str(d)), upto=upto))
        with walks.monkeypatch.context() as m:
            m.setattr(laidout._Fast, "of", classmethod(lambda cls, *args: None))
            assert fast == _loaded(load(DirectorySource(str(d)), upto=upto)), upto


class _ControlOf:
    """A control record of any key and value bytes (a key too short for a control type,
    a value no control schema reads)."""

    def __init__(self, key: bytes, value: bytes) -> None:
        self.key, self.raw = key, value

    def key_bytes(self) -> bytes:
        return self.key

    def value(self) -> bytes:
        return self.raw


def _raw_batch(b: Any, count: int, **fields: Any) -> None:
    """A batch of ``count`` offsets written as given (its CRC right), at the builder's next
    offset and epoch."""
    from mdshell.wire.batch import encode_batch

    ts = b.tick()
    raw = bytearray(encode_batch(b.log.next_offset, [], epoch=b.log.epoch, base_timestamp=ts,
                                 max_timestamp=ts, last_offset_delta=count - 1, **fields))
    struct.pack_into(">i", raw, HEADER_SIZE - 4, count)  # the record count
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    b.log._write(bytes(raw))
    b.log._advance(count, ts)


def _compressed(codec: int, section: bytes) -> bytes:
    from mdshell.wire import compression

    return compression.compress(codec, section)


def _long_record(b: Any) -> None:
    """A record longer than its (compressed) batch: Kafka's reader refuses it."""
    from mdshell.synth.batches import codec_named
    from mdshell.synth.records import meta

    b.append([meta("ConfigRecord", 0, resourceType=2, resourceName="a", name="x",
                   value="v" * 3000)], codec=codec_named("gzip"))


_LAST = {
    "none": lambda b: None,
    # a control batch whose records do not read: a key without a control type, records
    # that do not frame; a compressed batch that does not decompress, whose records do not
    # frame once decompressed, or whose record is longer than the batch
    "control-short-key": lambda b: b.control([_ControlOf(b"\0\0", b"\0\0")]),
    # a control record Kafka's reader refuses: a key version below 0, an ABORT marker, a
    # value of a known type that does not read
    "control-key-version": lambda b: b.control([_ControlOf(b"\xff\xff\0\x02", b"\0\0")]),
    "control-abort": lambda b: b.control([_ControlOf(b"\0\0\0\0", b"\0\0\0\0\0\0")]),
    "control-value-unread": lambda b: b.control([_ControlOf(bytes([0, 0, 0, 6]),
                                                            b"\xff\xff\xff")]),
    "control-unframed": lambda b: _raw_batch(b, 2, attributes=0x20, payload=bytes([9, 1, 2])),
    "compressed-garbage": lambda b: _raw_batch(b, 3, attributes=1, payload=b"\x1f\x8bnot gzip"),
    "compressed-unframed": lambda b: _raw_batch(b, 2, attributes=4,
                                                payload=_compressed(4, bytes([40, 0, 0, 0]))),
    "compressed-long-record": _long_record,
}


class _RunSeen:
    """What the compiled run loop took itself: its calls (each must take its arguments),
    the control batches it passed over and the payloads it asked for."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = self.declined = self.controls = self.payloads = 0
        real = replay_history._crun
        if real is None:
            return

        def counted(*args: Any) -> Any:
            ctx = args[6]
            before = len(ctx[14])

            def payload(data: bytes, pos: int) -> Any:
                self.payloads += 1
                return ctx[15](data, pos)

            try:
                got = real(*args[:6], (*ctx[:15], payload, ctx[16]))
            finally:
                self.controls += len(ctx[14]) - before
            self.calls += 1
            self.declined += got is None
            return got

        monkeypatch.setattr(replay_history, "_crun", counted)


@pytest.mark.parametrize("last", sorted(_LAST))
def test_control_and_compressed_batches_in_a_run(walks: Walks, tmp_path: Path,
                                                 last: str) -> None:
    """Control batches (leader changes, several records in one, a type no schema has)
    and batches of every codec (one record, several outside a transaction, many inside one,
    after a snapshot) among the plain ones: the run passes the control batches over and
    applies the compressed ones itself, the compiled loop and the Python one alike, with
    the images, control records and warnings of the walker's way. A compressed control
    batch (Kafka writes none) is read batch by batch. Then, last, a batch that does not
    read, which stops the file there as the walker's way stops it."""
    from mdshell.synth.records import ControlRec, meta
    from mdshell.wire import control as ctl
    from mdshell.wire.batch import RecordSpec, encode_record

    b = three_brokers(tmp_path / "d", seed=13)
    b.use_compression(["gzip", "none", "snappy", "lz4", "zstd", "snappy-raw", "none"])
    b.max_records_per_batch = 7
    b.create_topic("a", 12, 3, configs={"retention.ms": "1"})
    version = ControlRec(ctl.KRAFT_VERSION, {"version": 0, "kRaftVersion": 0})
    elections = 0
    for round_ in range(4):
        for pid in range(12):
            b.elect_leader("a", pid, (pid + round_) % 3)
            if pid % 5 == round_:
                b.elect_controller_leader()
                elections += 1
        b.control([version, _ControlOf(bytes([0, 0, 0, 9]), b"\xff\xff\xff")])  # a newer type
        b.append([meta("ConfigRecord", 0, resourceType=2, resourceName="a", name=f"k{i}",
                       value=str(round_)) for i in range(3)]
                 + [meta("ProducerIdsRecord", 0, brokerId=1, brokerEpoch=b._broker_epoch(1),
                         nextProducerId=1000 * (round_ + 1))])  # several, no transaction
        if round_ == 1:
            b.snapshot()
        with b.transaction("create"):
            b.create_topic(f"t{round_}", 9, 2)
    _raw_batch(b, 1, attributes=0x21, payload=_compressed(1, encode_record(
        RecordSpec(0, 0, version.value(), key=version.key_bytes()))))
    _LAST[last](b)
    b.elect_leader("a", 0, 2)
    b.finish()
    d = tmp_path / "d"
    with walks.monkeypatch.context() as m:  # the run takes each control and compressed one
        alone: list[Any] = []  # (attributes, offset) of those read batch by batch
        apply = replay_history.Replayer.apply

        def applied(self: Any, batch: Any, *args: Any) -> None:
            if batch.attributes & 0x27:
                alone.append((batch.attributes, batch.base_offset))
            apply(self, batch, *args)

        real = load_module.control_entries

        def read(batch: Any, file: str, out: Any) -> None:
            # by the run, or below the start, or in a snapshot (whose reading is per file)
            if (sys._getframe(1).f_code.co_name not in ("_passed_controls", "_below")
                    and not file.endswith(".checkpoint")):
                alone.append((batch.attributes, batch.base_offset))
            real(batch, file, out)

        m.setattr(replay_history.Replayer, "apply", applied)
        m.setattr(load_module, "control_entries", read)
        seen = _RunSeen(m)
        load(DirectorySource(str(d)))
    assert [a for a, _ in alone[:1]] == [0x21]  # the compressed control batch
    assert len(alone) == (1 if last == "none" else 2)  # and the one that does not read
    if replay_history._crun is not None:  # the compiled loop took every other one
        start = DirectorySource(str(d)).snapshots()[-1].end_offset
        tail = [bt for seg in _segments(d)
                for bt in iter_batches(str(seg), seg.read_bytes(), []) if bt.base_offset >= start]
        assert seen.calls and not seen.declined
        controls = sum(bt.attributes & 0x27 == 0x20 for bt in tail)
        compressed = sum(0 < bt.attributes & 0x27 < 8 for bt in tail)
        # every one but the batch that does not read (which the compiled loop leaves)
        assert seen.controls == controls - last.startswith("control") >= 4
        assert seen.payloads in (compressed, compressed + 1) and seen.payloads >= 20
    got = walks.agree(d)
    said = [p[0] for p in got[0][1]]
    assert ("corrupt" in said) == (last != "none"), said
    controls = got[0][3]
    assert sum(c.ctype == ctl.LEADER_CHANGE for c in controls) == elections + 1  # + the first
    assert sum(c.ctype == ctl.KRAFT_VERSION for c in controls) == 5
    assert sum(type(c.value).__name__ == "Unknown" for c in controls) == 4
    whole = load(DirectorySource(str(d)))
    assert whole.end_offset is not None
    for upto in range(whole.end_offset - 40, whole.end_offset + 1):
        fast = _loaded(load(DirectorySource(str(d)), upto=upto))
        with walks.monkeypatch.context() as m:
            m.setattr(laidout._Fast, "of", classmethod(lambda cls, *args: None))
            assert fast == _loaded(load(DirectorySource(str(d)), upto=upto)), upto
