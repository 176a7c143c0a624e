"""Live mode's answers to the raft protocol's corner cases, each provoked alone against a real
Kafka quorum (three controllers, no broker; one quorum for the module, always stopped).

Each test puts the observer in the state that makes the leader give one answer, checks that
the real controller gave exactly that answer, then lets the observer handle it and checks the
outcome: the image equals ``mdshell -d`` on the leader's own directory at the same offset.

- DivergingEpoch above the high watermark: only the uncommitted batches are dropped;
- DivergingEpoch below what was committed: the log restarts from a fresh snapshot, and the
  session reloads (what it had applied is gone from the image);
- FENCED_LEADER_EPOCH (Fetch and FetchSnapshot): the observer follows the leader named;
- UNKNOWN_LEADER_EPOCH: the node is behind; the observer backs off instead of following it,
  and reaches the leader once the quorum has moved to its epoch (an election, provoked by
  pausing the leader);
- FetchSnapshot of a snapshot the leader does not have (SNAPSHOT_NOT_FOUND), past its end
  (POSITION_OUT_OF_RANGE), and of a snapshot deleted by Kafka's own cleaner mid-download
  (Kafka 4.3.1 sends each of these as a top-level UNKNOWN_SERVER_ERROR: see SNAPSHOT_ERROR);
  nothing partial is kept and the next Fetch names the snapshot to download.

The mid-download test waits for Kafka's snapshot cleaner, which runs every 60 s: the module
takes about a minute.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mdshell.commands import Shell
from mdshell.source.live import LiveSource
from mdshell.source.quorum import errors as e
from mdshell.source.quorum.client import Client
from mdshell.source.quorum.config import ClientConfig
from mdshell.source.quorum.connection import Connection
from mdshell.source.quorum.discover import learn
from mdshell.source.quorum.errors import RetriableError
from mdshell.source.quorum.observer import Observer, RawBatch
from mdshell.tree.node import RenderOptions
from mdshell.wire import codec
from mdshell.wire.batch import RecordSpec, encode_batch, frame_metadata_value
from mdshell.wire.kinds import RecordKind
from mdshell.wire.records import METADATA
from tests.conftest import run_cli
from tests.kafka import jars
from tests.kafka.cluster import KraftCluster, Node

pytestmark = pytest.mark.live

VERSION = jars.KAFKA_4
SETTINGS = {
    "metadata.log.max.record.bytes.between.snapshots": "2048",
    "metadata.log.max.snapshot.interval.ms": "1000",
    # Kafka's cleaner (every 60 s) then drops every snapshot but the newest ones.
    "metadata.max.retention.ms": "1000",
}
SPAN = 20_000  # offsets a ghost batch holds: far past anything the leader writes meanwhile
CLEANER_WAIT_S = 75  # Kafka's snapshot cleaner runs every 60 s
# Kafka 4.3.1 answers a FetchSnapshot that has a partition error (SNAPSHOT_NOT_FOUND,
# POSITION_OUT_OF_RANGE, FENCED_LEADER_EPOCH...) with a top-level UNKNOWN_SERVER_ERROR: the
# error answer has no UnalignedRecords and serializing it throws a NullPointerException
# (its log: "Unexpected error handling request ... FETCH_SNAPSHOT"; tests/kafka_bugs.py).
SNAPSHOT_ERROR = -1000 + e.UNKNOWN_SERVER_ERROR


@pytest.fixture(scope="module")
def quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KraftCluster]:
    cluster = KraftCluster(VERSION, tmp_path_factory.mktemp("kraft-protocol"),
                           controller_extra=dict(SETTINGS), with_broker=False)
    with cluster.running():  # SIGKILL stops a node a test paused (SIGSTOP) as well
        # A fresh observer then always starts from a snapshot (as on any long-lived quorum).
        wait_until(lambda: any(not p.name.startswith("0" * 20) for p in
                               cluster.node(cluster.leader_id()).metadata_dir.glob(
                                   "*.checkpoint")), 60, "the first snapshot")
        yield cluster


# --------------------------------------------------------------------------- helpers


def ghost(offset: int, epoch: int) -> RawBatch:
    """A valid batch no controller wrote: a TopicRecord "ghost" at ``offset``, then NoOps up
    to SPAN records (a batch spans as many offsets as it holds records: a reader refuses any
    other), in leader epoch ``epoch``."""
    body = codec.encode(METADATA[2], 0, {"name": "ghost", "topicId": uuid.uuid4().bytes})
    noop = frame_metadata_value(RecordKind.NO_OP, 0,
                                codec.encode(METADATA[RecordKind.NO_OP], 0, {}))
    specs = [RecordSpec(0, 0, frame_metadata_value(2, 0, body))]
    specs += [RecordSpec(i, 0, noop) for i in range(1, SPAN)]
    data = encode_batch(offset, specs, epoch=epoch, base_timestamp=int(time.time() * 1000))
    return RawBatch(offset, offset + SPAN - 1, epoch, data)


def fetch_raw(obs: Observer) -> Any:
    """One Fetch as the observer would send it now; the partition of the answer."""
    assert obs.leader is not None
    resp = obs.client.call(obs.leader, lambda c: obs._fetch(c, 0))
    assert int(resp.error_code) == e.NONE
    return resp, resp.responses[0].partitions[0]


def live(quorum: KraftCluster) -> tuple[LiveSource, Shell]:
    source = LiveSource(quorum.bootstrap_controllers)
    return source, Shell(source, opts=RenderOptions())


def tree(shell: Shell, path: str = "/image") -> str:
    result = shell.run(["tree", path])
    assert not result.errors, result.errors
    return "\n".join(result.lines) + "\n"


def assert_image_is_the_leaders(quorum: KraftCluster, source: LiveSource, shell: Shell) -> str:
    """The session's image (it polls the source first) equals ``-d`` on the leader's
    directory at the last offset committed.

    Provenance aside: the leader may meanwhile have written a snapshot ending right there,
    which ``-d`` then starts from; a snapshot's provenance is its end offset - 1 and its epoch
    (as in Kafka), a replayed log's the last metadata batch, and the log's last batch may be
    a LeaderChange control batch."""
    obs = source.observer
    offset = obs.log.next_offset - 1
    ours = tree(shell)
    assert source.poll() is None  # the session already holds everything fetched
    on_disk = run_cli("-d", str(quorum.node(obs.leader_id).metadata_dir), "--at", str(offset),
                      "tree", "/image")
    assert on_disk.returncode == 0, on_disk.stderr
    mine, theirs = _provenance(ours), _provenance(on_disk.stdout)
    assert mine[0] == theirs[0]
    assert mine[1][0] <= offset and theirs[1][0] <= offset
    assert mine[1] == theirs[1] or offset in (mine[1][0], theirs[1][0])
    return ours


def _provenance(text: str) -> tuple[str, tuple[int, int]]:
    """The tree without its provenance leaf, and that leaf's offset and epoch."""
    lines = text.splitlines()
    i = lines.index("provenance:")
    words = lines[i + 1].replace(",", "").split()
    return "\n".join(lines[:i] + lines[i + 2:]), (int(words[1]), int(words[3]))


def fresh_observer(quorum: KraftCluster, cls: type[Observer] = Observer) -> Observer:
    """An observer that holds nothing, pointed at the leader with the leader's epoch."""
    client = Client(quorum.bootstrap_controllers, ClientConfig())
    view = learn(client)
    obs = cls(client, view.cluster_id)
    obs.known_endpoints = dict(view.controllers)
    leader = quorum.node(quorum.leader_id())
    obs.leader = ("127.0.0.1", leader.port)
    obs.leader_id = leader.node_id
    obs.leader_epoch = quorum_state(leader)["leaderEpoch"]
    return obs


def quorum_state(node: Node) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((node.metadata_dir / "quorum-state").read_text())
    return data


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


# --------------------------------------------------------------------------- DivergingEpoch


def test_divergence_above_the_committed_log_drops_only_pending(quorum: KraftCluster) -> None:
    source, shell = live(quorum)
    try:
        obs = source.observer
        before = tree(shell)
        with obs.lock:
            start, epoch, generation = obs.fetch_offset, obs.fetch_epoch, obs.log.generation
            obs.pending.append(ghost(start, epoch))  # fetched, not yet committed
        resp, part = fetch_raw(obs)
        div = part.diverging_epoch
        # The leader's log for that epoch ends where it ends: before the ghost's last offset.
        assert int(part.error_code) == e.NONE and int(div.epoch) == epoch
        assert start <= int(div.end_offset) < start + SPAN
        with obs.lock:
            obs._handle(resp)
            assert obs.pending == [] and obs.fetch_offset == start
            assert obs.log.generation == generation and obs.progress.restarts == 0
        assert tree(shell) == before  # nothing uncommitted ever reached the image
        obs.catch_up(60)
        assert not any(b.last_offset - b.base_offset >= SPAN - 1 for b in obs.log.batches)
        ours = assert_image_is_the_leaders(quorum, source, shell)
        assert "ghost" not in ours
    finally:
        source.close()


def test_divergence_below_the_committed_log_restarts_from_a_snapshot(
        quorum: KraftCluster) -> None:
    source, shell = live(quorum)
    try:
        obs = source.observer
        with obs.lock:
            start, epoch, generation = obs.log.next_offset, obs.log.last_epoch, \
                obs.log.generation
            obs.log.batches.append(ghost(start, epoch))  # as if the leader had committed it
        assert "ghost" in tree(shell, "/image/topics")  # the session applied it
        resp, part = fetch_raw(obs)
        div = part.diverging_epoch
        assert int(div.epoch) == epoch and int(div.end_offset) < start + SPAN
        downloads = obs.progress.snapshot_downloads
        with obs.lock:
            obs._handle(resp)
            assert obs.log.generation == generation + 1 and obs.log.batches == []
            assert obs.log.snapshot is None and obs.progress.restarts == 1
        obs.catch_up(60)
        assert obs.progress.snapshot_downloads == downloads + 1
        # The session sees the reset when it polls (tree does) and reloads from the snapshot.
        ours = assert_image_is_the_leaders(quorum, source, shell)
        assert "ghost" not in ours
    finally:
        source.close()


# --------------------------------------------------------------------------- leader epochs


def test_fenced_leader_epoch_follows_the_leader_named(quorum: KraftCluster) -> None:
    obs = fresh_observer(quorum)
    try:
        leader_id, epoch = obs.leader_id, obs.leader_epoch
        sid = _latest_snapshot(obs)
        assert epoch >= 1
        # FetchSnapshot at an older epoch: Kafka 4.3.1 fails to send its FENCED_LEADER_EPOCH
        # answer (SNAPSHOT_ERROR); the observer keeps nothing of it.
        obs.leader_epoch = 0
        assert _snapshot_answer(obs, sid, 0) == SNAPSHOT_ERROR
        with pytest.raises(RetriableError, match="FetchSnapshot failed"):
            obs._download_snapshot(*sid)
        assert obs.log.snapshot is None and obs.log.generation == 0
        # Fetch at that epoch from a follower believed to lead: fenced, the leader named.
        follower = next(n for n in quorum.controllers if n.node_id != leader_id)
        obs.leader, obs.leader_id = ("127.0.0.1", follower.port), -1
        resp, part = fetch_raw(obs)
        assert int(part.error_code) == e.FENCED_LEADER_EPOCH
        assert int(part.current_leader.leader_id) == leader_id
        assert int(part.current_leader.leader_epoch) == epoch
        with obs.lock:
            obs._handle(resp)
        assert obs.leader == ("127.0.0.1", quorum.node(leader_id).port)
        assert (obs.leader_id, obs.leader_epoch) == (leader_id, epoch)
        obs.catch_up(60)
        assert obs.log.snapshot_id is not None and obs.progress.snapshot_downloads == 1
        assert obs.log.next_offset > obs.log.snapshot_id[0] - 1
    finally:
        obs.client.close()


def test_unknown_leader_epoch_waits_for_the_quorum(quorum: KraftCluster) -> None:
    source, shell = live(quorum)
    try:
        obs = source.observer
        old, epoch = quorum.node(obs.leader_id), obs.leader_epoch
        obs.leader_epoch = epoch + 1  # an epoch no controller has reached yet
        resp, part = fetch_raw(obs)
        assert int(part.error_code) == e.UNKNOWN_LEADER_EPOCH
        assert int(part.current_leader.leader_epoch) == epoch
        with obs.lock, pytest.raises(RetriableError, match="UNKNOWN_LEADER_EPOCH"):
            obs._handle(resp)
        assert obs.leader is None and obs.leader_epoch == epoch + 1  # not followed
        # Every controller is behind: catch-up retries with backoff, then gives up.
        fetches, t0 = obs.progress.fetches, time.monotonic()
        with pytest.raises(RetriableError, match="UNKNOWN_LEADER_EPOCH"):
            obs.catch_up(3)
        assert time.monotonic() - t0 < 20
        assert obs.progress.fetches - fetches < 60  # backed off, never spun
        # Pause the leader: the others elect one at a later epoch; the observer reaches it.
        quorum.pause(old)
        try:
            others = [n for n in quorum.controllers if n is not old]
            wait_until(lambda: all(quorum_state(n)["leaderEpoch"] > epoch
                                   and quorum_state(n)["leaderId"] not in (-1, old.node_id)
                                   for n in others), 60, "a new leader")
        finally:
            quorum.resume(old)
        obs.catch_up(60)
        assert obs.leader_epoch > epoch and obs.leader_id != old.node_id
        assert_image_is_the_leaders(quorum, source, shell)
    finally:
        source.close()


# --------------------------------------------------------------------------- FetchSnapshot


class _Hooked(Observer):
    """An observer whose FetchSnapshot requests pass through ``hook(snapshot id, position)``
    first: a test waits there, or asks for another position."""

    hook: Callable[[tuple[int, int], int], int] | None = None

    def _snapshot_chunk(self, end_offset: int, epoch: int, position: int,
                        conn: Connection) -> Any:
        if self.hook is not None:
            position = self.hook((end_offset, epoch), position)
        return super()._snapshot_chunk(end_offset, epoch, position, conn)


def _snapshot_answer(obs: Observer, sid: tuple[int, int], position: int) -> int:
    """The top-level error code of one FetchSnapshot as the observer would send it, or the
    partition's when the top level is fine."""
    assert obs.leader is not None
    resp = obs.client.call(obs.leader, lambda c: obs._snapshot_chunk(*sid, position, c))
    if int(resp.error_code) != e.NONE:
        return -1000 + int(resp.error_code)
    return int(resp.topics[0].partitions[0].error_code)


def _latest_snapshot(obs: Observer) -> tuple[int, int]:
    """The snapshot the leader names to an observer that holds nothing."""
    _, part = fetch_raw(obs)
    sid = (int(part.snapshot_id.end_offset), int(part.snapshot_id.epoch))
    assert sid[0] > 0
    return sid


def _assert_whole_snapshot(quorum: KraftCluster, obs: Observer) -> None:
    """What was downloaded is a whole snapshot file: header to footer, the leader's bytes."""
    from mdshell.problems import Problem
    from mdshell.source.live import checkpoint_name
    from mdshell.source.walker import iter_batches
    from mdshell.wire import control as ctl
    from mdshell.wire.batch import iter_records

    assert obs.log.snapshot is not None and obs.log.snapshot_id is not None
    problems: list[Problem] = []
    batches = list(iter_batches("snapshot", obs.log.snapshot, problems))
    assert problems == [] and batches[0].is_control and batches[-1].is_control

    def control_type(batch: Any) -> int:
        key = next(iter(iter_records(batch))).key
        assert key is not None
        return int.from_bytes(key[2:4], "big")

    assert control_type(batches[0]) == ctl.SNAPSHOT_HEADER
    assert control_type(batches[-1]) == ctl.SNAPSHOT_FOOTER
    on_disk = quorum.node(obs.leader_id).metadata_dir / checkpoint_name(*obs.log.snapshot_id)
    with contextlib.suppress(FileNotFoundError):  # Kafka's cleaner may have removed it since
        assert obs.log.snapshot == on_disk.read_bytes()


def test_fetch_snapshot_of_a_missing_snapshot_or_position(quorum: KraftCluster) -> None:
    obs = fresh_observer(quorum, _Hooked)
    assert isinstance(obs, _Hooked)
    try:
        end, epoch = _latest_snapshot(obs)
        assert _snapshot_answer(obs, (end, epoch), 0) == e.NONE
        # A snapshot id the leader never had (SNAPSHOT_NOT_FOUND), a position past the end
        # of one it has (POSITION_OUT_OF_RANGE): both come as SNAPSHOT_ERROR from 4.3.1.
        assert _snapshot_answer(obs, (end + SPAN, epoch), 0) == SNAPSHOT_ERROR
        assert _snapshot_answer(obs, (end, epoch), 10**9) == SNAPSHOT_ERROR
        with pytest.raises(RetriableError, match="FetchSnapshot failed"):
            obs._download_snapshot(end + SPAN, epoch)
        assert obs.log.snapshot is None and obs.log.generation == 0
        assert obs.progress.snapshot_downloads == 0
        # The leader refuses the second chunk: what was held is dropped.
        obs.snapshot_chunk_bytes = 256
        obs.hook = lambda sid, position: position + 10**9 if position else position
        with pytest.raises(RetriableError, match="FetchSnapshot failed"):
            obs.step(0)
        assert obs.progress.snapshot_chunks == 1
        assert obs.log.snapshot is None and obs.progress.snapshot_downloads == 0
        obs.hook = None
        obs.catch_up(60)
        assert obs.progress.snapshot_downloads == 1
        _assert_whole_snapshot(quorum, obs)
    finally:
        obs.client.close()


def test_snapshot_deleted_mid_download_is_discarded(quorum: KraftCluster) -> None:
    """Kafka's own cleaner drops the snapshot between two chunks: the leader refuses the
    next chunk, the partial file is discarded, and the next Fetch names a newer snapshot that
    the observer downloads whole."""
    obs = fresh_observer(quorum, _Hooked)
    probe = fresh_observer(quorum)
    probe.snapshot_chunk_bytes = 1
    assert isinstance(obs, _Hooked)
    interrupted: list[tuple[int, int]] = []

    def wait_for_the_cleaner(sid: tuple[int, int], position: int) -> int:
        if position > 0 and not interrupted:
            interrupted.append(sid)
            wait_until(lambda: _snapshot_answer(probe, sid, 0) == SNAPSHOT_ERROR,
                       CLEANER_WAIT_S, f"Kafka's cleaner to drop snapshot {sid}")
        return position

    obs.snapshot_chunk_bytes = 256
    obs.hook = wait_for_the_cleaner
    try:
        with pytest.raises(RetriableError, match="FetchSnapshot failed"):
            obs.step(0)  # offset 0: the leader names its newest snapshot; download starts
        assert interrupted, "the snapshot fit in one 256-byte chunk"
        assert obs.log.snapshot is None and obs.progress.snapshot_downloads == 0
        assert obs.progress.snapshot_chunks == 1  # fetched, then discarded
        assert obs.fetch_offset == 0 and obs.progress.restarts == 0
        obs.hook = None
        obs.catch_up(60)
        assert obs.log.snapshot_id is not None
        assert obs.log.snapshot_id[0] > interrupted[0][0]  # a newer one, whole
        assert obs.progress.snapshot_downloads == 1
        _assert_whole_snapshot(quorum, obs)
    finally:
        obs.client.close()
        probe.client.close()
