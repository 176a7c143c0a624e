"""Live mode as a source: the fetched snapshot and batches, laid out like a metadata directory.

The thin adapter between the network client (``mdshell/source/quorum``) and the session: what
the observer fetched is laid out as a virtual ``__cluster_metadata-0`` directory (the snapshot
as a ``.checkpoint``, the committed batches as one ``.log`` segment) held in memory and
streamed by :class:`LaidOut`, the same reader and checks as a directory on disk. ``save DIR``
writes exactly these files. Follow mode: :meth:`LiveSource.poll` says whether more was
committed ("more": the session feeds the new batches) or the log restarted from a new
snapshot ("reset": a fresh load).
"""

from __future__ import annotations

import os
import time

from ..problems import Problem, SourceError
from .base import BatchStream, Source
from .info import LogInfo, QuorumInfo
from .laidout import LaidOut
from .layout import Checkpoint, Layout, Segment
from .quorum.client import Client
from .quorum.config import describe_config, load_config
from .quorum.discover import ClusterView, QuorumView, describe_quorum, learn
from .quorum.errors import AuthorizationError, LiveError
from .quorum.follow import Follower
from .quorum.observer import Observer
from .quorum.status import LiveStatus

METADATA_DIR = "__cluster_metadata-0"


def segment_name(base: int) -> str:
    return f"{base:020d}.log"


def checkpoint_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


class LiveSource(Source):
    """``-q``: the controllers, read as an observer."""

    kind = "quorum"
    follows = True

    def __init__(self, bootstrap: str, config_path: str | None = None, *, eager: bool = False,
                 catch_up_s: float = 120.0) -> None:
        self.endpoints = bootstrap
        self.config = load_config(config_path)
        self.notices = list(self.config.notices)
        self.client = Client(bootstrap, self.config)
        self.started = time.time()
        self.degraded: str | None = None
        self.quorum_error: str | None = None  # why the last DescribeQuorum got no answer
        try:
            self.view: ClusterView = learn(self.client)
            self.observer = Observer(self.client, self.view.cluster_id)
            self.observer.known_endpoints = self._endpoints_known()
            t0 = time.monotonic()
            try:
                self.observer.catch_up(catch_up_s)
            except AuthorizationError as e:
                self.degraded = str(e)
            self.catch_up_s = time.monotonic() - t0
        except BaseException:
            self.client.close()
            raise
        self.lock = self.observer.lock
        self.follower: Follower | None = None
        self._seen = (-1, -1)
        self.eager = eager
        # The layout and its bytes, replaced together (one attribute) by each relayout.
        self._laid = LaidOut(Layout(self.describe(), None), self._missing)
        self._relayout()

    def _endpoints_known(self) -> dict[int, tuple[str, int]]:
        """Controller endpoints on the listener we use: DescribeCluster's (it answers with
        the listener the request came in on), else DescribeQuorum's voter listeners that are
        among the ``-q`` endpoints (others may speak another security protocol)."""
        known = dict(self.view.controllers)
        given = set(self.client.bootstrap)
        if self.view.quorum is not None:
            for nid, listeners in self.view.quorum.nodes.items():
                for _, host, port in listeners:
                    if nid not in known and (host, port) in given:
                        known[nid] = (host, port)
        return known

    # -- the virtual directory -------------------------------------------------------------

    def describe(self) -> str:
        return f"live:{self.endpoints}"

    def _relayout(self) -> None:
        with self.lock:
            log = self.observer.log
            snapshot, sid = log.snapshot, log.snapshot_id
            data = log.log_bytes()
            base = log.batches[0].base_offset if log.batches else log.next_offset
            self._seen = (log.generation, log.next_offset)
        root = self.describe()
        layout = Layout(root, None, virtual=True)
        files: dict[str, bytes] = {}
        if snapshot is not None and sid is not None:
            path = f"{root}/{checkpoint_name(*sid)}"
            files[path] = snapshot
            layout.checkpoints.append(Checkpoint(path, sid[0], sid[1], len(snapshot)))
        # A segment (empty when the snapshot reaches the high watermark), as Kafka keeps
        # one after its latest snapshot; none when nothing could be fetched (degraded): an
        # empty file that exists nowhere would only draw warnings.
        if data or snapshot is not None or not self.degraded:
            path = f"{root}/{segment_name(base)}"
            files[path] = data
            layout.segments.append(Segment(path, base, len(data)))

        def read(path: str) -> bytes:
            try:
                return files[path]
            except KeyError:
                return self._missing(path)

        self._laid = LaidOut(layout, read)

    @staticmethod
    def _missing(path: str) -> bytes:
        raise SourceError(f"{path}: not fetched")

    @property
    def layout(self) -> Layout:
        return self._laid.layout

    def file_bytes(self, path: str) -> bytes:
        return self._laid.data(path)

    def snapshots(self) -> list[Checkpoint]:
        return [c for c in self.layout.checkpoints if c.end_offset > 0]

    def segments(self) -> list[Segment]:
        return list(self.layout.segments)

    def snapshot_stream(self, snapshot: Checkpoint) -> BatchStream:
        return self._laid.snapshot_stream(snapshot)

    def log_stream(self, start: int = 0, upto: int | None = None,
                   snapshot: Checkpoint | None = None, *,
                   pass_noops: bool = False) -> BatchStream:
        return self._laid.log_stream(start, upto, snapshot, pass_noops=pass_noops)

    def offset_range(self) -> tuple[int | None, int | None]:
        return self._laid.offset_range()

    def log_info(self, in_use: str | None, unusable: set[str],
                 upto: int | None) -> LogInfo:
        return self._laid.log_info(in_use, unusable, upto)

    def files(self) -> dict[str, bytes]:
        """File name -> bytes, as ``save`` writes them (what was fetched when last laid out)."""
        laid = self._laid
        return {os.path.basename(p): laid.data(p)
                for p in [c.path for c in laid.layout.checkpoints]
                + [s.path for s in laid.layout.segments]}

    def fetched(self) -> dict[str, bytes]:
        return self.files()

    def layout_problems(self) -> list[Problem]:
        """Notices about the connection, said before the image's own problems."""
        extra = [Problem("notice", n) for n in self.notices]
        extra += [Problem("live", n) for n in self.view.notes]
        if self.degraded:  # the image could not be fetched: it is incomplete (UNFETCHED)
            extra.append(Problem("unauthorized", f"{self.degraded}; the image is empty: "
                                 "only /live and /quorum (ApiVersions, DescribeCluster, "
                                 "DescribeQuorum) are answered"))
        return extra

    # -- follow ----------------------------------------------------------------------------

    def follow(self) -> None:
        if self.follower is None and not self.degraded:
            # Its own connections: the main thread keeps self.client for DescribeQuorum.
            self.observer.client = Client(self.endpoints, self.config)
            self.follower = Follower(self.observer)
            self.follower.start()

    def poll(self) -> str | None:
        """What changed since the last layout: None, "more" (batches after the ones known) or
        "reset" (the log restarted from another snapshot: load it afresh)."""
        with self.lock:
            now = (self.observer.log.generation, self.observer.log.next_offset)
        if now == self._seen:
            return None
        before = self._seen[0]
        self._relayout()
        return "more" if now[0] == before else "reset"

    def refresh(self) -> None:
        """Nothing to rescan: the layout follows what was fetched (``poll`` rebuilds it)."""

    def close(self) -> None:
        if self.follower is not None:
            self.follower.stop()
            self.follower = None
        self.observer.client.close()
        self.client.close()

    # -- what the tree shows ---------------------------------------------------------------

    def local_quorum(self, q: QuorumInfo, problems: list[Problem]) -> None:
        """What the last DescribeQuorum said (no request here): the voters and the leader, so
        checks that need the voter set work when the log has no VotersRecord."""
        view = self.view.quorum
        q.cluster_id = self.view.cluster_id
        if view is None:
            return
        q.live_voters = [v.replica_id for v in view.voters]
        q.leader_id, q.leader_epoch = view.leader_id, view.leader_epoch

    def quorum(self) -> QuorumView | None:
        """A fresh DescribeQuorum (live); None when none answered (``quorum_error`` says
        why; ``view.quorum`` keeps the last answer)."""
        try:
            self.view.quorum = describe_quorum(self.client, self.view)
        except LiveError as e:
            # Not the last answer: it would name a leader the error just said is not found.
            self.quorum_error = str(e)
            return None
        self.quorum_error = None
        return self.view.quorum

    def known_quorum(self) -> QuorumView | None:
        return self.view.quorum

    def staleness(self) -> str | None:
        follower = self.follower
        return None if follower is None else follower.error

    def status(self) -> LiveStatus:
        obs = self.observer
        prog = obs.progress
        follower = self.follower
        return LiveStatus(
            bootstrap=self.endpoints, security=describe_config(self.config),
            cluster_id=self.view.cluster_id, leader_id=obs.leader_id,
            leader_epoch=obs.leader_epoch,
            leader_endpoint=None if obs.leader is None else f"{obs.leader[0]}:{obs.leader[1]}",
            high_watermark=obs.high_watermark, next_offset=obs.log.next_offset,
            snapshot=None if obs.log.snapshot_id is None else checkpoint_name(
                *obs.log.snapshot_id),
            bytes_fetched=prog.bytes_fetched, batches_fetched=prog.batches_fetched,
            records_committed=prog.records_committed, fetches=prog.fetches,
            snapshot_downloads=prog.snapshot_downloads, snapshot_chunks=prog.snapshot_chunks,
            leader_changes=prog.leader_changes,
            last_fetch_ms=prog.last_fetch_ms, catch_up_s=self.catch_up_s,
            following=follower is not None,
            follow_error=None if follower is None else follower.error,
            degraded=self.degraded, api_versions=dict(self.view.api_versions),
            finalized_features=dict(self.view.finalized_features),
            authorized_operations=self.view.authorized_operations,
            controllers={k: f"{h}:{p}" for k, (h, p) in self.view.controllers.items()},
            controller_id=self.view.controller_id, notes=list(self.view.notes),
            stale_since=self.stale_since)

    @property
    def stale_since(self) -> float | None:
        """Wall time since when the followed view is stale (the leader's last answer before
        a Fetch went unanswered or failed), None while fresh or not following."""
        follower = self.follower
        return None if follower is None else follower.stale_since


def open_live(bootstrap: str, config_path: str | None, *, eager: bool = False) -> LiveSource:
    return LiveSource(bootstrap, config_path, eager=eager)
