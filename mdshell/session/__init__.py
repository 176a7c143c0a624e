"""The session: the one object every front end talks to.

It holds the source, the image at the end of what was read (``latest``), the image being
shown (``loaded``: ``latest`` or one from time travel), the history of published images, the
working directory, and the callbacks to run when the image advances (live follow, the TUI).
Front-end state (output format, terminal width) stays in the front ends.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..image.history import NO_CHECKPOINTS, History
from ..image.model import Image, Notes
from ..image.replay import ImageBuilder
from ..image.verdict import Verdict, judge
from ..problems import STOPS, Problem, SourceError, merge
from ..source import FileRead, Located, Source, open_source
from ..source.base import control_entries, undecodable
from ..source.info import LogInfo, QuorumInfo
from ..source.loginfo import quorum_info
from ..source.quorum.status import LiveStatus
from ..tree.node import Node
from ..tree.paths import join, lookup, pattern_of, split_path
from ..tree.root import RootInfo, root_node
from ..wire.batch import UNDECODABLE, Batch
from .appends import Follow
from .load import (
    Loaded,
    LoadFailed,
    StreamHook,
    first_load,
    load,
    open_transaction,
    unknown_controls,
    where_damage_leaves,
)
from .rebuild import Rebuildable, rebuildable

if TYPE_CHECKING:
    from ..source.nodes.group import NodeGroup
    from ..source.nodes.report import Report
    from ..source.quorum.discover import QuorumView
    from .timeline import Timeline

__all__ = ["Advanced", "LoadFailed", "Loaded", "Session", "load", "unusable"]

Advanced = Callable[["Session", Loaded], None]
# What a reading says about the end of the log, judged again by each re-read: damage that
# stopped it, what that leaves of the image, an open transaction, a batch being written.
_TAIL = STOPS | {"image", "open-transaction", "writing"}


class Session:
    """Source, images and working directory; ``subscribe`` to hear when the image advances."""

    def __init__(self, source: Source, loaded: Loaded | None = None,
                 layout: str = "3.7", lazy: bool = False, marks: bool = True) -> None:
        self.source = source
        # Without marks (a one-shot command that never moves in time) the loads keep no
        # images for time travel: less memory and time; ``load_at`` then loads again.
        self._every = None if marks else NO_CHECKPOINTS
        self.layout = layout  # how /image is laid out: "3.7" or "4.x" (tree.node.LAYOUTS)
        self.cwd_parts: tuple[str, ...] = ()  # the working directory: its nodes' names
        self._subscribers: list[Advanced] = []
        self._when_loaded: list[Callable[[Loaded], None]] = []
        self._notes_key: Notes | None = None
        self._notes_shown = 0
        self._range: tuple[int | None, int | None] | None = None
        self._rebuild: Rebuildable | None = None
        self._latest: Loaded | None = loaded
        self._loaded: Loaded | None = None
        self._root: Node | None = None
        # True once a partial replay answered a command (``changes``) without a full load.
        self.spared = False
        # A directory followed (``--follow``, the TUI's ``f``): read its appends when polled.
        self.follow: Follow | None = None
        # Several nodes' directories given (``-d`` more than once): ``source`` is one of them.
        self.nodes: NodeGroup | None = None
        self._tail: tuple[Loaded, str | None] | None = None  # see _unsure
        if loaded is None and not lazy:
            self._latest = load(source, every=self._every)

    @classmethod
    def open(cls, directory: str | None = None, file: str | None = None, *,
             eager: bool = False, layout: str = "3.7", lazy: bool = False,
             marks: bool = True) -> Session:
        """A session over a directory or a file; ``lazy`` loads on first use (a one-shot
        command that the source alone answers never replays it); ``marks=False`` keeps no
        images for time travel (a one-shot command that does not travel)."""
        return cls(open_source(directory, file, eager=eager), layout=layout, lazy=lazy,
                   marks=marks)

    @classmethod
    def of_nodes(cls, directories: list[str], node: str | None = None, *,
                 eager: bool = False, layout: str = "3.7", lazy: bool = False,
                 marks: bool = True) -> Session:
        """Several nodes' directories of one cluster (``-d`` once per node): a session over
        the one ``node`` names (an id, or ``#N``), else the one whose log the quorum
        follows, with :attr:`nodes` set; ``SourceError`` in one line when they cannot be
        read or are not one cluster's."""
        from ..source.nodes.group import open_group
        from ..source.nodes.report import choose

        group = open_group(directories, eager=eager)
        session = cls(choose(group, node).source, layout=layout, lazy=lazy, marks=marks)
        session.nodes = group
        return session

    def node_group(self) -> NodeGroup:
        """The nodes given (``of_nodes``), or this directory as a group of one;
        ``SourceError`` for a source that is not a directory."""
        if self.nodes is None:
            from ..source.nodes.group import open_group

            layout = self.source.disk_layout()
            if layout is None or layout.virtual:
                raise SourceError("it compares nodes' directories: give each node's "
                                  "__cluster_metadata-0 (or log dir) with its own -d")
            self.nodes = open_group([layout.directory])
        return self.nodes

    def node_report(self) -> Report:
        """The nodes' logs compared (:mod:`mdshell.source.nodes.report`): reads every
        node's batch headers, so call it off a UI thread."""
        from ..source.nodes.report import build_report

        return build_report(self.node_group())

    @classmethod
    def live(cls, bootstrap: str, config: str | None = None, *, eager: bool = False,
             layout: str = "3.7", lazy: bool = False) -> Session:
        """A session over the live quorum (``-q``): connects and catches up now (seconds:
        call it in a worker); raises ``SourceError`` with one line."""
        from ..source.live import LiveSource

        return cls(LiveSource(bootstrap, config, eager=eager), layout=layout, lazy=lazy)

    # ------------------------------------------------------------ loading on first use

    @property
    def latest(self) -> Loaded:
        """The image at the end of what was read (loaded now if it was not yet)."""
        return self.load_first()

    @latest.setter
    def latest(self, value: Loaded) -> None:
        self._latest = value

    @property
    def loaded(self) -> Loaded:
        """The image being shown: ``latest`` unless time travel chose another."""
        return self._loaded if self._loaded is not None else self.latest

    @loaded.setter
    def loaded(self, value: Loaded) -> None:
        self._loaded = value

    @property
    def root(self) -> Node:
        if self._root is None:
            self._root = self._build_root()
        return self._root

    @property
    def is_loaded(self) -> bool:
        return self._latest is not None

    def load_first(self, watch: StreamHook | None = None) -> Loaded:
        """The first load, done now if it was not yet (``watch`` sees each stream it reads:
        a front end's progress, ``session.progress.LoadProgress``); the latest image."""
        if self._latest is None:
            self._latest = first_load(self.source, watch=watch, every=self._every)
            for callback in self._when_loaded:
                callback(self._latest)
        return self._latest

    def when_loaded(self, callback: Callable[[Loaded], None]) -> None:
        """Call ``callback(latest)`` once the session has loaded (now, if it has)."""
        if self._latest is not None:
            callback(self._latest)
        else:
            self._when_loaded.append(callback)

    # ------------------------------------------------------------ what is shown

    @property
    def image(self) -> Image:
        return self.loaded.image

    @property
    def history(self) -> History:
        replayer = self.latest.replayer
        return replayer.history if replayer is not None else History()

    def _build_root(self) -> Node:
        loaded, source = self.loaded, self.source
        info = RootInfo(source.describe(), source.kind, [f.path for f in loaded.files],
                        [p.message for p in loaded.problems], loaded.upto)
        # The session is not captured (it holds the root: a cycle would keep each image
        # alive until a full collection, and for good once frozen): what the nodes need is.
        info.extra["quorum"] = lambda: _quorum_node(
            quorum_info(source, loaded.controls, loaded.end_offset))
        info.extra["log"] = lambda: _log_node(_log_info(source, loaded))
        if source.kind == "quorum":
            _live_nodes(source, info)
        return root_node(loaded.image, info, self.layout)

    def root_of(self, loaded: Loaded) -> Node:
        """A root over another image (``diff``), without /quorum and /log."""
        return root_node(loaded.image, RootInfo(self.source.describe(), self.source.kind),
                         self.layout)

    def set_loaded(self, loaded: Loaded) -> str | None:
        """Show another image; returns the new working directory when the old one does not
        exist in it (the nearest ancestor that does)."""
        self._loaded = loaded
        self._root = self._build_root()
        comps = list(self.cwd_parts)
        while comps and lookup(self.root, comps) is None:
            comps.pop()
        if len(comps) != len(self.cwd_parts):
            self.cwd_parts = tuple(comps)
            return self.cwd
        return None

    @property
    def cwd(self) -> str:
        """The working directory as ``pwd`` prints it (names as they are, ``/`` between)."""
        return join(list(self.cwd_parts))

    @cwd.setter
    def cwd(self, path: str) -> None:
        """Move to a displayed path (names without ``/``); ``cd`` sets ``cwd_parts``."""
        self.cwd_parts = tuple(split_path(path))

    @property
    def cwd_pattern(self) -> str:
        """The working directory as a path pattern whose names match only themselves, for
        ``tree.paths.absolute`` and ``resolve`` (a name may hold ``*``, ``[`` or ``/``)."""
        return pattern_of(self.cwd_parts)

    def new_notes(self) -> list[str]:
        """Problems found since the last call while reading the image (records decoded on
        first use), so that front ends report each once."""
        if not self.is_loaded:
            return []  # nothing read into an image yet
        notes = self.loaded.image.notes
        if self._notes_key is not notes:
            self._notes_key, self._notes_shown = notes, 0
        fresh = notes.messages[self._notes_shown:]
        self._notes_shown = len(notes.messages)
        return fresh

    def verdict(self, loaded: Loaded | None = None) -> Verdict:
        """Whether the image shown (or ``loaded``) can be trusted: judged from what reading
        found, with where the view stands (time travel, a live view that stopped)."""
        loaded = loaded or self.loaded
        image = loaded.image
        verdict = judge(loaded.problems, image.provenance.offset, image.notes)
        latest = self.latest.image.provenance.offset
        at = loaded.upto
        if loaded is self.latest or at is None or at >= latest:
            at = None  # the latest image, or one that equals it
        unsure = self._unsure(self.latest) if at is None else None
        return verdict.viewed(at, latest, self._stale(), unsure)

    def _unsure(self, loaded: Loaded) -> str | None:
        """Why the tail of what was read may be uncommitted, as the directory's own files
        show it (:mod:`mdshell.source.nodes.tail`); worked out once per load."""
        if self._tail is None or self._tail[0] is not loaded:
            from ..source.nodes.tail import uncommitted_tail

            controls = loaded.controls
            epochs = [loaded.image.provenance.epoch] + [c.epoch for c in controls[-1:]]
            last = max(e for e in epochs if e is not None) if loaded.end_offset is not None \
                else None
            self._tail = (loaded, uncommitted_tail(self.quorum_info(loaded), controls, last,
                                                   loaded.end_offset))
        return self._tail[1]

    def _stale(self) -> str | None:
        """Live: why the view stopped following the quorum (None: it follows, or is not
        live); a followed directory: why reading it stopped."""
        if self.follow is not None and self.follow.error:
            where, why = self.source.describe(), self.follow.error
            why = why[len(where) + 2:] if why.startswith(f"{where}: ") else why
            return f"stopped following {where}: {why}"
        return self.source.staleness()

    # ------------------------------------------------------------ describing the source

    def bytes_to_read(self) -> int:
        """What a first load reads: the newest snapshot plus the segments (-s: the file)."""
        from .progress import bytes_to_read

        return bytes_to_read(self.source)

    def live_status(self) -> LiveStatus | None:
        """Live: what the follower knows of the quorum now (no request); None otherwise."""
        return self.source.status()

    def live_quorum(self) -> QuorumView | None:
        """Live: the last DescribeQuorum answer (no request); None otherwise."""
        return self.source.known_quorum()

    def timeline(self) -> Timeline:
        """The log's batches, snapshots and leader changes (reads every batch header: call
        it off a UI thread)."""
        from .timeline import scan_timeline

        return scan_timeline(self)

    def quorum_info(self, loaded: Loaded | None = None) -> QuorumInfo:
        loaded = loaded or self.loaded
        return quorum_info(self.source, loaded.controls, loaded.end_offset)

    def log_info(self, loaded: Loaded | None = None) -> LogInfo:
        return _log_info(self.source, loaded or self.loaded)

    def offset_range(self) -> tuple[int | None, int | None]:
        """The offsets whose image can be rebuilt: what the source holds, cut where damage
        stopped the latest load, or where it ends when the newest snapshot was not usable
        (one model for every command; scanned once per state)."""
        if self._range is None:
            first, last = self.source.offset_range()
            stop = self.stopped_by()
            if (stop is not None or unusable(self.latest)) and last is not None:
                last = min(last, self.reach())
            self._range = first, last
        return self._range

    def rebuildable(self) -> Rebuildable:
        """Exactly which offsets an image can be rebuilt at (``at`` refuses the others):
        snapshots, and the log reaching on unbroken from them or from offset 0, up to where
        damage stopped the latest load."""
        if self._rebuild is None:
            self._rebuild = rebuildable(self.source, self.offset_range()[1],
                                        unusable(self.latest))
        return self._rebuild

    def stopped_by(self) -> Problem | None:
        """The damage that stopped the latest load before the end of the data, if any."""
        return self.damage_before(self.latest, 1 << 62)

    def reach(self) -> int:
        """The last offset the latest load reached."""
        latest = self.latest
        return max(latest.image.provenance.offset, latest.next_offset - 1, latest.base)

    # ------------------------------------------------------------ time travel

    def load_at(self, offset: int | None) -> Loaded:
        """The image as of ``offset`` (None: latest). From the nearest published image when
        the offset lies in what the latest load replayed, else a fresh load."""
        if offset is None:
            return self.latest
        latest = self.latest
        point = self.history.nearest(offset) if offset >= latest.base else None
        if point is None or latest.replayer is None or point[0] < latest.base:
            return load(self.source, upto=offset)
        at, image = point
        end = at
        if at < offset:
            builder = ImageBuilder(image, eager=self.source.eager)
            stream = self.source.log_stream(at + 1, offset, latest.snapshot)
            for loc in stream:
                if not loc.batch.is_control:
                    builder.file = os.path.basename(loc.file)
                    try:
                        builder.apply_batch(loc.batch, offset, at + 1)
                    except UNDECODABLE:
                        break  # the latest load reported it
                end = loc.batch.last_offset
            image = builder.publish()
        return Loaded(image, _until(latest.problems, offset),
                      files=[f for f in latest.files if f.first_offset is None
                             or f.first_offset <= offset or f.role == "snapshot"],
                      controls=[c for c in latest.controls if c.offset <= offset],
                      snapshot=latest.snapshot, upto=offset,
                      end_offset=max(end, offset) if end >= 0 else None,
                      complete_from_zero=latest.complete_from_zero, replayer=None,
                      base=latest.base)

    def damage_before(self, loaded: Loaded, offset: int) -> Problem | None:
        """The damage that stops ``loaded`` short of ``offset`` (None: it reaches it)."""
        for p in loaded.problems:
            if p.code in STOPS and p.code != "stopped" and p.offset is not None \
                    and p.offset <= offset:
                return p
        return None

    # ------------------------------------------------------------ advancing

    def subscribe(self, callback: Advanced) -> Callable[[], None]:
        """Call ``callback(session, latest)`` each time the image advances; returns a
        function that unsubscribes."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    def feed(self, batches: Iterable[Batch | Located], problems: Iterable[Problem] = (), *,
             rejudge: bool = False, files: Iterable[FileRead] = ()) -> Image:
        """Apply more batches after the latest image (live follow, a directory read again);
        publishes the new image, moves the view along when it showed the latest one, and
        tells the subscribers. A batch whose records do not decode stops the feed there
        (said, nothing of it applied). ``rejudge``: what was said about the end of the log
        (damage that stopped the reading, an open transaction) is judged again, from
        ``problems`` (the new reading's) and the replay: bytes read since may have completed
        or damaged it. ``files``: what the new reading read (each replaces what was known of
        its file)."""
        latest = self.latest
        replayer = latest.replayer
        if replayer is None:
            raise ValueError("this image was not built by a replay that can go on")
        last = latest.end_offset
        following = latest.next_offset
        controls = list(latest.controls)  # voter changes, leader changes: every view's quorum
        fresh = list(problems)
        applied = False
        for item in batches:
            loc = item if isinstance(item, Located) else Located(
                item, self.source.describe(), item.pos, "segment")
            batch = loc.batch
            try:
                if batch.is_control:
                    control_entries(batch, loc.file, controls)
                else:
                    replayer.apply(batch)
                    applied = True
            except UNDECODABLE as e:
                fresh.append(undecodable(loc, e))
                break
            last = batch.last_offset if last is None else max(last, batch.last_offset)
            following = max(following, batch.last_offset + 1)
        # Nothing applied (a re-read that found nothing new, control batches only): the
        # image is the one published last, kept (what was made of it stays valid).
        image = replayer.checkpoint() if applied else latest.image
        fresh += unknown_controls(controls[len(latest.controls):], latest.controls)
        found = [*replayer.builder.problems, *fresh]
        if rejudge:
            kept = [p for p in latest.problems if p.code not in _TAIL]
            merged = merge(kept, [*found, *open_transaction(replayer.builder)])
            merged += where_damage_leaves(self.source, latest.snapshot, image, merged)
        else:
            merged = merge(latest.problems, found)  # a flood folded further replaces itself
        reread = {f.path: f for f in files}
        new = Loaded(image, merged,
                     files=[reread.pop(f.path, f) for f in latest.files] + list(reread.values()),
                     controls=controls, snapshot=latest.snapshot, upto=None, end_offset=last,
                     complete_from_zero=latest.complete_from_zero, replayer=replayer,
                     base=latest.base, next_offset=following)
        following_view = self.loaded is latest
        self.latest = new
        self._range = self._rebuild = None
        if following_view:
            self.set_loaded(new)
        for callback in list(self._subscribers):
            callback(self, new)
        return image

    def poll_source(self) -> bool:
        """Live follow: take what the source committed since the last call (new batches are
        fed; a restart from another snapshot loads afresh), or what Kafka appended to a
        followed directory; True when the image advanced."""
        if self.follow is not None:
            return self.follow.advance(self)
        change = self.source.poll()
        if change == "more":
            return self.advance()
        if change == "reset":
            self.reload()
            return True
        return False

    def reload(self, notices: Iterable[Problem] = ()) -> None:
        """Load afresh from the source's newest snapshot (live: the leader sent a newer one;
        a followed directory: Kafka replaced offsets not read yet by a snapshot, or a file
        changed under it: ``notices`` say so, first)."""
        following = self.loaded is self.latest
        fresh = load(self.source, every=self._every)
        fresh.problems[:0] = notices
        self.latest = fresh
        self._range = self._rebuild = None
        if following:
            self.set_loaded(self.latest)
        for callback in list(self._subscribers):
            callback(self, self.latest)

    def advance(self) -> bool:
        """Read what the source has after the latest offset (a directory Kafka is still
        writing to) and feed it; True when the image advanced."""
        self.source.refresh()
        start = self.latest.next_offset
        stream = self.source.log_stream(start, None, self.latest.snapshot)
        batches = [loc.batch for loc in stream]
        if not batches:
            return False
        self.feed(batches, stream.problems)
        return True


def _live_nodes(source: Source, info: RootInfo) -> None:
    """Live mode: ``/live`` (the connection) and ``/quorum`` from DescribeQuorum."""
    from ..tree.live_tree import live_node, live_quorum_node

    def status() -> LiveStatus:
        st = source.status()
        assert st is not None, "a quorum source says how it is"
        return st

    info.extra["live"] = lambda: live_node(status)
    info.extra["quorum"] = lambda: live_quorum_node(source.quorum(), status().cluster_id)


def _log_info(source: Source, loaded: Loaded) -> LogInfo:
    return source.log_info(loaded.snapshot.path if loaded.snapshot else None,
                           unusable(loaded), loaded.upto)


def unusable(loaded: Loaded) -> set[str]:
    """The snapshots (paths) a load found damaged or half-written and did not use."""
    return {p.file for p in loaded.problems if p.code == "snapshot" and p.file}


def _until(problems: list[Problem], offset: int) -> list[Problem]:
    """The latest load's problems that concern the data up to ``offset`` (its summary of
    where the image stops, and the later segments the damage stopped, are about the latest
    image, not this one: the damage itself says where it is)."""
    return [p for p in problems if p.code not in ("image", "stopped")
            and (p.offset is None or p.offset <= offset)]


def _quorum_node(q: QuorumInfo) -> Node:
    from ..tree.source_tree import quorum_node

    return quorum_node(q)


def _log_node(info: LogInfo) -> Node:
    from ..tree.source_tree import log_node

    return log_node(info)
