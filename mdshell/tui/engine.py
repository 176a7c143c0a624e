"""The TUI's one door into the core: every call the screens make goes through :class:`Engine`.

Screens speak in paths and plain rows; only this module (with the state-free builders it
calls: overviewrows, healthrows, timeline, plain, liveinfo) knows about ``Session``,
``Loaded``, tree nodes, health checks and the loader. State is read from the session and
rendered with the tree's own renderers; the shell (``Shell``) only dispatches what the user
types or the screens run as commands (``at``, ``diff``, ``changes``). No textual import here:
tests and benchmarks drive the engine on its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..image import model as m
from ..image.names import metadata_version_name
from ..session import Loaded, Session
from ..session.appends import Follow
from ..session.progress import LoadProgress
from ..tree.node import Node, RenderOptions
from ..tree.paths import join, lookup, split_path
from ..wire.primitives import uuid_str
from .fmt import ui_time
from .healthrows import check_rows, notice_items
from .liveinfo import live_leader, live_observers, live_row, live_voters
from .noderows import NodesView, nodes_view
from .overviewrows import broker_rows, controller_rows, feature_rows
from .plain import broker_state, quiet_gc, run_lines, sorted_names
from .rows import CheckRow, Entry, Header, Item, ListTable, LiveRow, NodeRow, Overview
from .sections import SECTIONS

if TYPE_CHECKING:  # the shell's commands are imported once the first load is done: the
    # loading screen comes sooner (mdshell.commands costs 14 ms of a start's CPU)
    from ..commands import Shell
    from ..commands.base import Result
    from ..session.timeline import Timeline

__all__ = ["SECTIONS", "CheckRow", "Engine", "Entry", "Header", "Item", "NodeRow", "Overview",
           "quiet_gc", "run_lines"]

class Engine:
    """A session over a source, and the shell that runs the TUI's commands on it. Every
    fact about the data comes through the session; the engine adds what the screens need
    (plain rows, pages of children, the TUI's locks and caches)."""

    def __init__(self, session: Session | None, show_secrets: bool = False, *,
                 label: str | None = None, opener: Callable[[], Session] | None = None
                 ) -> None:
        self._session = session
        self._opener = opener  # live: connecting is slow, so it happens in load()
        self.label = label or (session.source.describe() if session is not None else "?")
        self.opts = RenderOptions(show_secrets=show_secrets)
        self.shell: Shell | None = None  # set by load()
        self._timeline: Timeline | None = None
        self.progress = LoadProgress()
        # Commands and live polls both move the session: one at a time.
        self.lock = threading.Lock()
        self._early: threading.Thread | None = None
        self._early_error: BaseException | None = None
        self._list_cache: tuple[m.Image | None, dict[str, ListTable], list[str]] = (
            None, {}, [])
        self._list_lock = threading.Lock()
        # Called every few topics while the tables are made, by whichever worker makes
        # them: where it gives the UI thread its turn (the app's Background.pause).
        self.courtesy: Callable[[], None] | None = None

    @classmethod
    def open(cls, directory: str | None, file: str | None,
             show_secrets: bool = False) -> Engine:
        """Find the source (fast; raises ``SourceError`` with one clear line); nothing is
        read until :meth:`load`."""
        return cls(Session.open(directory, file, lazy=True), show_secrets)

    @classmethod
    def open_nodes(cls, directories: list[str], node: str | None = None,
                   show_secrets: bool = False) -> Engine:
        """Several nodes' directories of one cluster: the screens read ``node`` (else the
        quorum's log); the Nodes screen compares them all."""
        return cls(Session.of_nodes(directories, node, lazy=True), show_secrets)

    @classmethod
    def open_live(cls, bootstrap: str, config: str | None = None,
                  show_secrets: bool = False) -> Engine:
        """``-q``: the quorum is reached (and caught up with) by ``load``, in a worker."""
        return cls(None, show_secrets, label=f"live:{bootstrap}",
                   opener=lambda: Session.live(bootstrap, config, lazy=True))

    def load(self) -> None:
        """Read and replay the log (the slow part: run it in a worker); a live source starts
        following the quorum."""
        if self._session is None:
            assert self._opener is not None
            self._session = self._opener()
        session = self._session
        hook = self.progress.start(session.source)
        quiet_gc(lambda: session.load_first(watch=hook))
        from ..commands import Shell

        self.shell = Shell(session, opts=self.opts, interactive=True)
        session.source.follow()

    def start_load(self) -> None:
        """Start :meth:`load` in a thread now, before the UI is even imported; the app's
        load worker then waits for it (:meth:`finish_load`). The load and Textual's import
        share the GIL, so this saves no CPU, but a load that ends before the app mounts
        needs no loading screen and the overview paints at the first chance."""
        def run() -> None:
            try:
                self.load()
            except BaseException as e:  # handed to finish_load, which raises it
                self._early_error = e

        self._early = threading.Thread(target=run, name="mdshell-load", daemon=True)
        self._early.start()

    def finish_load(self) -> None:
        """Wait for the load :meth:`start_load` began (or load now if none was)."""
        if self._early is None:
            self.load()
            return
        self._early.join()
        if self._early_error is not None:
            raise self._early_error

    def close(self) -> None:
        """Stop following (live); nothing to do for files."""
        if self._session is not None:
            self._session.source.close()

    # ---------------------------------------------------------------- live

    @property
    def on_disk(self) -> bool:
        """A directory or a file (not a quorum, reached or still to reach)."""
        return self._session is not None and not self.live

    @property
    def live(self) -> bool:
        return self._session is not None and self._session.source.follows

    def subscribe(self, callback: Callable[[], None]) -> None:
        """``callback()`` (from whichever thread moved the session) when the image advances."""
        self.session.subscribe(lambda _session, _loaded: callback())

    def poll(self) -> bool:
        """Take what the quorum committed since the last poll (in a worker); False when a
        command holds the session (the next poll takes it)."""
        if not self.lock.acquire(blocking=False):
            return False
        try:
            moved = self.session.poll_source()  # a followed directory: read and judged anew
        finally:
            self.lock.release()
        if moved:
            self._timeline = None
        return moved

    def reread(self) -> tuple[int, int, str | None]:
        """``r``: the directory read again and judged anew (waits for a running command):
        the latest image's next offset before and after, and why it was loaded afresh (a
        file that shrank or changed before the point read; None: it was not). Raises with
        one line."""
        before = self.session.latest.next_offset
        state = self.follow or Follow()
        with self.lock:
            moved = state.advance(self.session)
        if moved:
            self._timeline = None
        if state.error:
            raise ValueError(state.error)
        reloaded = state.last.reloaded if state.last is not None else None
        return before, self.session.latest.next_offset, reloaded

    @property
    def rereadable(self) -> bool:
        """A directory (``-d``): ``r`` reads what was appended, ``f`` follows it."""
        return self._session is not None and self._session.source.kind == "directory"

    @property
    def follow(self) -> Follow | None:
        """``f`` or ``--follow``: the directory is followed (polled like a quorum); kept by
        the session, so that commands of the command bar read the appends first too."""
        return None if self._session is None else self._session.follow

    @follow.setter
    def follow(self, state: Follow | None) -> None:
        self.session.follow = state

    def live_row(self) -> LiveRow | None:
        if self.shell is None:
            return None
        latest = self.session.latest
        if self.follow is not None:  # all on disk is read: the lag is what is not shown
            since = time.monotonic() - self.follow.read_at if self.follow.read_at else None
            return LiveRow(latest.next_offset, latest.next_offset,
                           self.loaded.image.provenance.offset, since, self.follow.error,
                           word="FOLLOWING")
        return live_row(self.session, latest.image.provenance.offset)

    @property
    def session(self) -> Session:
        assert self._session is not None, "load() first"
        return self._session

    @property
    def sh(self) -> Shell:
        """The shell that runs commands (the command bar, ``at``, ``diff``, ``changes``)."""
        assert self.shell is not None, "load() first"
        return self.shell

    @property
    def loaded(self) -> Loaded:
        return self.session.loaded

    # ---------------------------------------------------------------- overview

    def header(self) -> Header:
        img = self.loaded.image
        prov = img.provenance
        verdict = self.session.verdict()
        return Header(self._cluster_id(), self.label, self.session.source.kind,
                      prov.offset, prov.epoch, ui_time(prov.time_ms),
                      metadata_version_name(img.metadata_version_level)
                      if img.metadata_version is not None else "unset",
                      not self.opts.show_secrets, self.loaded.upto, self.live_row(),
                      verdict.badges, verdict.words())

    def verdict_words(self) -> str:
        """The image's verdict in one line (what the header's badges and health's data
        check say)."""
        return self.session.verdict().words()

    def _cluster_id(self) -> str:
        q = self.session.quorum_info()
        status = self.session.live_status()  # live: what DescribeCluster said
        return (q.cluster_id or q.quorum_state_cluster_id
                or (status.cluster_id if status is not None else None) or "unknown")

    def overview(self) -> Overview:
        img = self.loaded.image
        return Overview(self.header(), self._controllers(img), broker_rows(img),
                        feature_rows(img), len(img.topics_by_name),
                        sum(len(t.partitions) for t in img.topics_by_name.values()),
                        [p.message for p in self.loaded.problems]
                        + list(img.notes.messages))

    def voter_ids(self) -> list[int] | None:
        """The voters: from the data (quorum-state, Voters, LeaderChange), else, live, from
        DescribeQuorum (static voters leave no record after a snapshot)."""
        from ..commands.healthcmd import voter_ids

        found = voter_ids(self.session)
        return found if found is not None else live_voters(self.session)

    def leader_id(self) -> int | None:
        """Live: the leader the follower fetches from now; else what the data says."""
        leader = live_leader(self.session)
        return leader if leader is not None else self.session.quorum_info().leader_id

    def _controllers(self, img: m.Image) -> list[NodeRow]:
        return controller_rows(img, set(self.voter_ids() or []),
                               set(live_observers(self.session)), self.leader_id())

    def broker_states(self) -> dict[int, str]:
        return {b.id: broker_state(b) for b in self.loaded.image.brokers.values()}

    # ---------------------------------------------------------------- tree

    def node(self, path: str) -> Node | None:
        return lookup(self.session.root, split_path(path))

    def children(self, path: str) -> list[Entry]:
        return self.page(path, 0, None)[0]

    def page(self, path: str, start: int, count: int | None,
             match: str | None = None) -> tuple[list[Entry], int]:
        """Children ``start`` to ``start + count`` (None: all) and how many there are; only
        the page's nodes are built, so a 10k-partition topic costs one page. ``match``:
        only the names holding it (any case), the filter of the tree."""
        node = self.node(path)
        if node is None or not node.is_dir:
            return [], 0
        names = sorted_names(node.names())
        if match:
            low = match.lower()
            names = [n for n in names if low in n.lower()]
        base = path.rstrip("/")
        out = []
        for name in names[start:None if count is None else start + count]:
            child = node.child(name)
            if child is not None:
                out.append(Entry(name, f"{base}/{name}", child.is_dir))
        return out, len(names)

    def position(self, path: str, name: str, match: str | None = None) -> int | None:
        """Where ``name`` is among the children of ``path`` (as :meth:`page` orders them,
        narrowed by ``match``); None: not there."""
        node = self.node(path)
        if node is None or not node.is_dir:
            return None
        names = sorted_names(node.names())
        if match:
            low = match.lower()
            names = [n for n in names if low in n.lower()]
        try:
            return names.index(name)
        except ValueError:
            return None

    def text(self, path: str) -> str:
        """Kafka's text form of a node: a leaf's value, a directory's children as ``ls``
        lists them (sorted: they came in the order the records made them)."""
        node = self.node(path)
        if node is None:
            return f"{path}: no longer exists"
        if node.is_dir:
            names = sorted(node.names())
            return "\n".join(names) if names else "(empty)"
        return node.text(self.opts)

    def data(self, path: str) -> Any:
        from ..commands.navigate import tree_data

        node = self.node(path)
        if node is None:
            return None
        return tree_data(node, self.opts) if node.is_dir else node.data(self.opts)

    def is_dir(self, path: str) -> bool:
        node = self.node(path)
        return node is not None and node.is_dir

    def list_table(self, path: str) -> ListTable | None:
        """Topics or Brokers as a table (listrows.py); None for other paths. Made by
        :meth:`list_tables` (a second caller meanwhile waits for the first's tables)."""
        from . import listrows

        if path not in (listrows.TOPICS, listrows.BROKERS):
            return None
        return self.list_tables()[0][path]

    def list_tables(self, pause: Callable[[], None] | None = None
                    ) -> tuple[dict[str, ListTable], list[str]]:
        """The Topics and Brokers tables of the image shown (read every partition: call it
        in a worker; ``pause`` (else :attr:`courtesy`) is called every few topics, where a
        worker lets the UI thread have its turn) and the problems reading them found
        (records that do not decode: the image's notes, which its verdict counts). Made
        once per image."""
        from . import listrows

        pause = pause or self.courtesy
        with self._list_lock:
            img = self.loaded.image
            if self._list_cache[0] is not img:
                before = len(img.notes.messages)
                made = quiet_gc(lambda: listrows.tables(img, self.opts.show_secrets, pause))
                self._list_cache = (img, made, img.notes.messages[before:])
            return self._list_cache[1], self._list_cache[2]

    # ---------------------------------------------------------------- commands

    def run(self, line: str) -> Result:
        with self.lock:
            return self.sh.run_line(line)

    def completions(self, line: str) -> list[str]:
        """Whole lines the command bar may become (the shell's own completion)."""
        from ..repl import complete

        return [line[:len(line) + c.start] + c.text for c in complete(self.sh, line)]

    def changes_lines(self, path: str) -> Iterator[str]:
        """``changes PATH``, line by line (the Changes tab reads it in a worker)."""
        with self.lock:
            res = self.sh.run(["changes", path])
        yield from res.lines
        yield from res.errors

    # ---------------------------------------------------------------- health

    def checks(self) -> list[CheckRow]:
        """The checks of ``health``, its data check (the image's verdict) included, and
        what reading the files said that leaves the image sound, as an INFO row."""
        session = self.session
        notices = notice_items(self.loaded.problems, session.quorum_info().notes,
                               session.source.describe())
        img = self.loaded.image
        noted = len(img.notes.messages)
        rows = check_rows(img, self.voter_ids(), session.verdict(), notices)
        if len(img.notes.messages) > noted:
            # Reading the partitions found records that do not decode: the data check must
            # say so (the verdict counts the image's notes).
            rows = check_rows(img, self.voter_ids(), session.verdict(), notices)
        return rows

    # ---------------------------------------------------------------- search

    def search_index(self) -> list[tuple[str, str, str]]:
        """(what, kind, path) for everything `/` finds: topics, ids, nodes, their listeners'
        host:port, config keys. Partitions are not listed (500k of them): the search finds
        ``TOPIC-N`` from the topic's entry (search.partition_hits)."""
        img = self.loaded.image
        out = [(t.name, "topic", join(["image", "topics", "byName", t.name]))
               for t in img.topics_by_name.values()]
        out += [(uuid_str(t.id), f"topic id of {t.name}",
                 join(["image", "topics", "byId", uuid_str(t.id)]))
                for t in img.topics_by_name.values()]
        out += [(f"broker {b}", "broker", f"/image/cluster/brokers/{b}") for b in img.brokers]
        out += [(f"controller {c}", "controller", f"/image/cluster/controllers/{c}")
                for c in img.controllers]
        for kind, nodes in (("broker", img.brokers), ("controller", img.controllers)):
            for nid, reg in nodes.items():  # host:port of each listener
                out += [(f"{e.host}:{e.port}", f"{name} of {kind} {nid}",
                         f"/image/cluster/{kind}s/{nid}")
                        for name, e in sorted(reg.listeners.items())]
        for res in self.children("/image/configs"):
            for key in self.children(res.path):
                out.append((f"{key.name}={self.text(key.path)}", f"config of {res.name}",
                            key.path))
        return out

    # ---------------------------------------------------------------- nodes

    def nodes(self) -> NodesView:
        """The nodes' directories compared (reads every node's batch headers: call it in a
        worker); ``SourceError`` in one line when the source is not a directory."""
        return nodes_view(self.session.node_report())

    def node_records(self, node: str, first: int, last: int) -> Result:
        """``records --from FIRST --to LAST`` of node ``node``'s log."""
        from ..commands.nodescmd import node_shells

        [(_label, shell)] = node_shells(self.sh, [node])
        with self.lock:
            return shell.run(["records", "--from", str(first), "--to", str(last)])

    # ---------------------------------------------------------------- history

    def timeline(self) -> Timeline:
        if self._timeline is None:
            self._timeline = self._scan_timeline()
        return self._timeline

    def _scan_timeline(self) -> Timeline:
        return rebuildable_part(self.session.timeline())

    def time_at(self, offset: int) -> str:
        """The timestamp of the batch holding ``offset`` (for the history cursor)."""
        ms = self.timeline().time_at(offset)
        return "-" if ms is None else ui_time(ms)

    def offset_for(self, text: str) -> int | None:
        """An offset typed by the user (empty: latest), by the shell's ``at`` rule: a number
        the data can rebuild, a time (the newest image written at or before it), 'earliest'
        or 'latest'; raises ValueError with the shell's one line."""
        from ..commands.base import UsageError
        from ..commands.timetravel import parse_offset
        from ..problems import CommandError

        if not text.strip():
            return None
        with self.lock:
            try:
                return parse_offset(self.sh, text.strip())
            except (CommandError, UsageError) as e:
                raise ValueError(str(e)) from None

    def at(self, offset: int | None) -> Result:
        """Move the whole UI to the image as of ``offset`` (None: the end of the log)."""
        word = "latest" if offset is None else str(offset)
        with self.lock:
            return quiet_gc(lambda: self.sh.run(["at", word]))

    def diff(self, a: int | None, b: int | None, path: str = "/image") -> Result:
        def word(x: int | None) -> str:
            return "latest" if x is None else str(x)
        with self.lock:
            return self.sh.run(["diff", word(a), word(b), path])


def rebuildable_part(tl: Timeline) -> Timeline:
    """The timeline from its first offset an image can be rebuilt at: the batches and
    leader changes of segments a snapshot does not reach (a log from offset 32026, its
    first snapshot at 78269) were counted in the first column as offset 78269's and listed
    as events that cannot be travelled to."""
    from dataclasses import replace

    if tl.first is None:
        return tl
    first = tl.first
    return replace(tl, batches=[b for b in tl.batches if b[1] >= first],
                   leader_changes=[c for c in tl.leader_changes if c[0] >= first],
                   snapshots=[s for s in tl.snapshots if s >= first])
