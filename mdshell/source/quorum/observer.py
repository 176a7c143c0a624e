"""The metadata log read as a KRaft observer (ReplicaId -1): discovery, Fetch, FetchSnapshot.

Mirrors Kafka's own observer (KafkaRaftClient): find the leader through any controller, fetch
from it; when it answers with a snapshot id, download the snapshot in chunks and fetch from its
end; only batches wholly below the high watermark are committed (handed on); a diverging epoch
drops uncommitted data, and a divergence below what was committed restarts from a snapshot.

The result is :class:`FetchedLog`: snapshot bytes and committed batch bytes, nothing decoded
beyond batch headers — the loader turns them into an image as it would files.
"""

from __future__ import annotations

import struct
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from . import errors as e
from .client import Client, backoff
from .connection import FETCH, FETCH_SNAPSHOT, Connection
from .errors import AuthorizationError, LiveError, NoAnswer, RetriableError
from .rpc import MAX_FETCH_BYTES, fetch_request, fetch_snapshot_request

_HEAD = struct.Struct(">qiib")  # baseOffset, batchLength, partitionLeaderEpoch, magic
_LAST_DELTA = struct.Struct(">i")
MAX_SNAPSHOT_RESTARTS = 5
FOLLOW_WAIT_MS = 500  # Kafka's observer long-poll (KafkaRaftClient fetchMaxWaitMs)
SUSPECT_S = 5.0  # how long hints naming a leader that stopped answering are not followed


@dataclass(frozen=True, slots=True)
class RawBatch:
    base_offset: int
    last_offset: int
    epoch: int
    data: bytes


@dataclass
class FetchedLog:
    """What was fetched and committed: a snapshot (optional) and the batches after it."""

    snapshot: bytes | None = None
    snapshot_id: tuple[int, int] | None = None  # (end offset, epoch)
    batches: list[RawBatch] = field(default_factory=list)
    generation: int = 0  # bumps when the log restarts (a new snapshot): rebuild the image

    @property
    def next_offset(self) -> int:
        if self.batches:
            return self.batches[-1].last_offset + 1
        return self.snapshot_id[0] if self.snapshot_id else 0

    @property
    def last_epoch(self) -> int:
        if self.batches:
            return self.batches[-1].epoch
        return self.snapshot_id[1] if self.snapshot_id else 0

    def log_bytes(self) -> bytes:
        return b"".join(b.data for b in self.batches)


def split_batches(records: bytes) -> list[RawBatch]:
    """Whole v2 batches of a Fetch response (a partial one at the end is dropped, as Kafka)."""
    out: list[RawBatch] = []
    pos, size = 0, len(records)
    while pos + 61 <= size:
        base, length, epoch, magic = _HEAD.unpack_from(records, pos)
        end = pos + 12 + length
        if end > size or length < 49:
            break
        if magic != 2:
            raise LiveError(f"the leader sent a batch with magic {magic} at offset {base} "
                            "(a KRaft metadata log only holds v2 batches)")
        last = base + _LAST_DELTA.unpack_from(records, pos + 23)[0]
        out.append(RawBatch(base, last, epoch, bytes(records[pos:end])))
        pos = end
    return out


class UnknownLeaderEndpoint(RetriableError):
    """The leader is known by id only; another ``-q`` node may be it."""


@dataclass
class Progress:
    """Counters for ``/live``."""

    fetches: int = 0
    bytes_fetched: int = 0
    batches_fetched: int = 0
    records_committed: int = 0
    snapshot_downloads: int = 0
    snapshot_chunks: int = 0
    last_fetch_ms: int = 0
    leader_changes: int = 0
    restarts: int = 0


class Observer:
    """Fetches ``__cluster_metadata`` from the leader; :meth:`step` does one round trip."""

    def __init__(self, client: Client, cluster_id: str | None = None) -> None:
        self.client = client
        self.cluster_id = cluster_id
        self.log = FetchedLog()
        self.pending: list[RawBatch] = []  # fetched, not yet below the high watermark
        self.leader_id = -1
        self.leader_epoch = 0
        self.leader: tuple[str, int] | None = None
        self.high_watermark = -1
        self.progress = Progress()
        # Held while the state changes, never during a long poll: readers are not blocked.
        self.lock = threading.Lock()
        self.known_endpoints: dict[int, tuple[str, int]] = {}  # from DescribeCluster/Quorum
        self._endpoints: dict[int, tuple[str, int]] = {}
        self._asked: Connection | None = None
        self._restarts = 0
        self.snapshot_chunk_bytes = MAX_FETCH_BYTES  # FetchSnapshot MaxBytes (Kafka's 8 MiB)
        self.suspect: tuple[int, int, float] | None = None  # a leader that stopped answering
        self.last_answer: float | None = None  # wall time of the leader's last Fetch answer

    # -- where to fetch --------------------------------------------------------------------

    @property
    def fetch_offset(self) -> int:
        return self.pending[-1].last_offset + 1 if self.pending else self.log.next_offset

    @property
    def fetch_epoch(self) -> int:
        return self.pending[-1].epoch if self.pending else self.log.last_epoch

    def _target(self) -> list[tuple[str, int]]:
        return [self.leader] if self.leader else []

    # -- the loop --------------------------------------------------------------------------

    def catch_up(self, timeout_s: float = 60.0) -> None:
        """Until everything committed when we started is held (the high watermark then)."""
        deadline = time.monotonic() + timeout_s
        target: int | None = None
        failures = 0
        while True:
            try:
                answered = self.last_answer
                self.step(max_wait_ms=0)
                if self.last_answer != answered:  # only a leader's answer is progress
                    failures = 0
            except RetriableError as err:
                failures += 1
                self._lost_leader()
                if failures > 10 or time.monotonic() > deadline:
                    # Said once, at the end: no "retrying" in what ends the command.
                    why = str(err).removesuffix("; retrying")
                    raise RetriableError(f"gave up reading the metadata log after "
                                         f"{failures} tries: {why}") from err
                time.sleep(backoff(failures))
                continue
            if target is None and self.high_watermark > 0:
                target = self.high_watermark
            if target is not None and self.log.next_offset >= target:
                return
            if time.monotonic() > deadline:
                raise LiveError(f"catch-up did not finish within {timeout_s:g} s (at offset "
                                f"{self.log.next_offset} of {target})")

    def step(self, max_wait_ms: int = FOLLOW_WAIT_MS) -> bool:
        """One Fetch (and a snapshot download if the leader asks); True if anything new
        was committed."""
        before = (self.log.generation, self.log.next_offset)
        if self.leader is None:
            self._discover()
        else:
            leader = self.leader
            try:
                resp = self.client.call(leader, lambda c: self._fetch(c, max_wait_ms))
            except NoAnswer:
                # Frozen, or cut off: until SUSPECT_S passes or the epoch moves, hints that
                # still name it (voters that have not noticed yet) are not followed.
                self.suspect = (self.leader_id, self.leader_epoch, time.monotonic())
                self.leader = None
                raise
            with self.lock:
                self._handle(resp)
            self.last_answer = time.time()
        return (self.log.generation, self.log.next_offset) != before

    def _discover(self) -> None:
        """Fetch from each ``-q`` node in turn until one is, or names, a reachable leader.

        A node that answers at our epoch without error is the leader. Kafka before 3.8 does
        not send the leader's endpoint, so the leader is found by asking each node.
        """
        last: LiveError | None = None
        for endpoint in self.client.ordered(healthy_only=True):
            try:
                resp = self.client.call(endpoint, lambda c: self._fetch(c, 0))
                with self.lock:
                    self._handle(resp)
                return
            except RetriableError as err:
                last = err
        if isinstance(last, UnknownLeaderEndpoint):
            raise UnknownLeaderEndpoint(
                f"the leader is node {self.leader_id} but none of the -q endpoints is it and "
                "the controllers did not say where it listens (Kafka before 3.8 does not); "
                "list every controller in -q")
        raise last or RetriableError("no controller to ask")

    def _fetch(self, conn: Connection, max_wait_ms: int) -> Any:
        version = conn.version(FETCH)
        req = fetch_request(version, cluster_id=self.cluster_id, leader_epoch=self.leader_epoch,
                            offset=self.fetch_offset, last_epoch=self.fetch_epoch,
                            max_wait_ms=max_wait_ms, high_watermark=self.high_watermark)
        timeout = self.client.config.request_timeout_ms + max_wait_ms
        resp = conn.request(req, timeout_ms=timeout, wait_ms=max_wait_ms)
        self.progress.fetches += 1
        self.progress.last_fetch_ms = int(time.time() * 1000)
        self._endpoints = {int(n.node_id): (n.host, int(n.port))
                           for n in getattr(resp, "node_endpoints", ())}
        self._asked = conn
        return resp

    def _handle(self, resp: Any) -> None:
        code = int(resp.error_code)
        if code != e.NONE:
            self._top_error(code)
        if not resp.responses or not resp.responses[0].partitions:
            raise RetriableError("Fetch: the controller answered without the metadata partition")
        part = resp.responses[0].partitions[0]
        pcode = int(part.error_code)
        leader = part.current_leader
        if pcode in e.LEADER_ERRORS or pcode == e.NOT_CONTROLLER:
            self._follow_leader(int(leader.leader_id), int(leader.leader_epoch), pcode)
            return
        if pcode != e.NONE:
            raise LiveError(f"Fetch from {self._where} failed: {e.code_name(pcode)}")
        if self.leader is None:
            # A node that answers without error at our epoch is the leader.
            assert self._asked is not None
            self.leader = (self._asked.host, self._asked.port)
        self._leader_is(int(leader.leader_id), int(leader.leader_epoch))
        sid = part.snapshot_id
        if int(sid.end_offset) >= 0 and int(sid.epoch) >= 0:
            self._download_snapshot(int(sid.end_offset), int(sid.epoch))
            return
        div = part.diverging_epoch
        if int(div.epoch) >= 0:
            self._diverged(int(div.epoch), int(div.end_offset))
            return
        records = bytes(part.records or b"")
        self.progress.bytes_fetched += len(records)
        batches = split_batches(records)
        self.progress.batches_fetched += len(batches)
        expected = self.fetch_offset
        for b in batches:
            if b.last_offset < expected:
                continue
            self.pending.append(b)
            expected = b.last_offset + 1
        hw = int(part.high_watermark)
        if hw >= 0:
            self.high_watermark = hw
            self._commit()

    def _commit(self) -> None:
        n = 0
        while n < len(self.pending) and self.pending[n].last_offset < self.high_watermark:
            n += 1
        if n:
            done, self.pending = self.pending[:n], self.pending[n:]
            self.log.batches.extend(done)
            self.progress.records_committed += sum(b.last_offset - b.base_offset + 1
                                                   for b in done)

    @property
    def _where(self) -> str:
        return self._asked.endpoint if self._asked else "the controller"

    def _top_error(self, code: int, rpc: str = "Fetch") -> None:
        where = self._where
        if code == e.CLUSTER_AUTHORIZATION_FAILED:
            raise AuthorizationError(
                f"{where}: not authorized to read the metadata log; it needs the CLUSTER_ACTION "
                "operation on the CLUSTER resource (kafka-acls --bootstrap-controller ... --add "
                "--allow-principal User:<you> --operation ClusterAction --cluster)")
        if code == e.INCONSISTENT_CLUSTER_ID:
            raise LiveError(f"{where}: belongs to another cluster than {self.cluster_id} "
                            "(INCONSISTENT_CLUSTER_ID); check the -q list")
        if code == e.INVALID_REQUEST:
            raise LiveError(f"{where}: refused the metadata Fetch as invalid (INVALID_REQUEST); "
                            "please report it with the Kafka version")
        if code == e.UNKNOWN_TOPIC_OR_PARTITION or code == 100:
            raise LiveError(f"{where}: has no __cluster_metadata partition; it is a broker or "
                            "not KRaft — -q wants the controllers' listener (KIP-919)")
        raise RetriableError(f"{where}: {rpc} failed ({e.code_name(code)})")

    def _leader_is(self, leader_id: int, epoch: int) -> None:
        """What an answer without error says of the leader. At our own epoch too: we may
        know the epoch (from a node amid an election) before the leader's id."""
        if epoch > self.leader_epoch or (epoch == self.leader_epoch and leader_id >= 0):
            if leader_id != self.leader_id and self.leader_id >= 0:
                self.progress.leader_changes += 1
            self.leader_epoch, self.leader_id = epoch, leader_id

    def _follow_leader(self, leader_id: int, epoch: int, code: int) -> None:
        if code == e.UNKNOWN_LEADER_EPOCH or epoch < self.leader_epoch:
            # The node has not heard of our epoch yet: its leader is stale (Kafka's observer
            # ignores such answers). Ask again after a backoff, anywhere; never spin on it.
            self.leader = None
            raise RetriableError(f"{self._where}: knows leader epoch {epoch} only, older than "
                                 f"{self.leader_epoch} ({e.code_name(code)}); retrying")
        if self._suspected(leader_id, epoch):
            self.leader = None
            raise RetriableError(f"{self._where}: still names node {leader_id} (epoch {epoch}) "
                                 "as the leader, but that node stopped answering (frozen or "
                                 "cut off?) and no other leader is elected yet")
        self._leader_is(leader_id, epoch)
        if leader_id < 0:
            # An election is running: ask again later, anywhere.
            self.leader = None
            raise RetriableError(f"{self._where}: no leader right now "
                                 f"({e.code_name(code)}); retrying")
        endpoint = self._endpoints.get(leader_id) or self.client_known(leader_id)
        self.leader = endpoint
        if endpoint is None:
            raise UnknownLeaderEndpoint(f"the leader is node {leader_id} but its endpoint is "
                                        "unknown")

    def _suspected(self, leader_id: int, epoch: int) -> bool:
        if self.suspect is None:
            return False
        sid, sepoch, since = self.suspect
        if epoch > sepoch or time.monotonic() - since > SUSPECT_S:
            self.suspect = None
            return False
        return (leader_id, epoch) == (sid, sepoch)

    def client_known(self, node_id: int) -> tuple[str, int] | None:
        return self.known_endpoints.get(node_id)

    def _lost_leader(self) -> None:
        self.leader = None

    def _diverged(self, epoch: int, end_offset: int) -> None:
        if end_offset < self.log.next_offset:
            self._restart(f"the leader's log diverges at offset {end_offset}, below what was "
                          "committed")
            return
        self.pending = [b for b in self.pending if b.last_offset < end_offset]

    def _restart(self, why: str) -> None:
        self._restarts += 1
        self.progress.restarts += 1
        if self._restarts > MAX_SNAPSHOT_RESTARTS:
            raise LiveError(f"gave up after {MAX_SNAPSHOT_RESTARTS} restarts: {why}")
        self.log = FetchedLog(generation=self.log.generation + 1)
        self.pending = []
        self.high_watermark = -1

    # -- snapshots -------------------------------------------------------------------------

    def _snapshot_chunk(self, end_offset: int, epoch: int, position: int,
                        conn: Connection) -> Any:
        return conn.request(fetch_snapshot_request(
            conn.version(FETCH_SNAPSHOT), cluster_id=self.cluster_id,
            leader_epoch=self.leader_epoch, end_offset=end_offset, epoch=epoch,
            position=position, max_bytes=self.snapshot_chunk_bytes))

    def _download_snapshot(self, end_offset: int, epoch: int) -> None:
        assert self.leader is not None
        chunks: list[bytes] = []
        held = 0
        while True:
            resp = self.client.call(self.leader, partial(self._snapshot_chunk, end_offset,
                                                         epoch, held))
            code = int(resp.error_code)
            if code != e.NONE:
                # Kafka 4.3.1 answers every partition error (SNAPSHOT_NOT_FOUND, a fenced
                # epoch...) this way: UNKNOWN_SERVER_ERROR. Retried: the next Fetch decides.
                self._asked = self.client.connect(*self.leader)
                self._top_error(code, "FetchSnapshot")
            part = resp.topics[0].partitions[0]
            pcode = int(part.error_code)
            if pcode == e.SNAPSHOT_NOT_FOUND or int(part.snapshot_id.end_offset) < 0:
                return  # deleted meanwhile: the next Fetch names the newer one
            if pcode in e.LEADER_ERRORS:
                self._endpoints = {}
                self._asked = self.client.connect(*self.leader)
                self._follow_leader(int(part.current_leader.leader_id),
                                    int(part.current_leader.leader_epoch), pcode)
                return
            if pcode != e.NONE:
                raise RetriableError(f"FetchSnapshot failed: {e.code_name(pcode)}")
            if int(part.position) != held:
                raise RetriableError(f"FetchSnapshot: position {part.position} is not the "
                                     f"{held} bytes held")
            data = bytes(part.unaligned_records)
            chunks.append(data)
            self.progress.snapshot_chunks += 1
            held += len(data)
            self.progress.bytes_fetched += len(data)
            if held >= int(part.size):
                break
            if not data:
                raise RetriableError("FetchSnapshot: an empty chunk before the end")
        self.log = FetchedLog(b"".join(chunks), (end_offset, epoch),
                              generation=self.log.generation + 1)
        self.pending = []
        self.progress.snapshot_downloads += 1
