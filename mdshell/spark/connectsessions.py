"""mdshell on a Spark Connect server: which session a query runs in, and the tables sent to it.

The tables of an image are sent once per server, not once per process. Each image has a
session of its own on the server (its *image session*), whose id is derived from what makes
its tables what they are: the files behind it (path, size, modification time, and the CRC of
what the load read), the offset shown, ``--show-secrets``, the session's SQL settings, the
user and mdshell's version and table schemas. A process finds the tables already sent by
asking the session's settings (``mdshell.table.NAME`` holds the warnings of that table's
reading), sends only what is missing, and runs its query there: a one-shot ``sql`` on an
image queried before is two round trips (the settings, the query).

Only statements that read run in an image session (SELECT, WITH, VALUES, TABLE, FROM, SHOW,
DESCRIBE, EXPLAIN): any other statement (SET, CREATE TEMPORARY VIEW, CACHE...) would change
a session other processes share, so it runs in the process's *own* session, as does every
later query of that process (the tables are sent to it as they are needed). A source without
files on disk (the live quorum), ``MDSHELL_NO_CACHE=1``, or a ``session_id`` in the
connection string use only the process's own session. The process's own session is released
when it exits; an image session stays until the server's idle timeout
(``spark.connect.session.manager.defaultSessionTimeout``), or until two newer images of the
same source and offset have been sent from this machine (the older one is released then).

A session the server has closed (released, or idle too long: the server refuses its id
afterwards) is replaced by the next id of the same image (``GENERATIONS`` tries).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .. import __version__
from ..files import cache_dir, caching
from ..problems import CommandError
from . import connectwire as w
from . import tables
from .catalog import CATALOG
from .compat import INTERPRETED, arrow_without_pandas
from .connectclient import ConnectClient, ConnectError, ConnectURL
from .errorline import worker_exception

# Session settings of mdshell's own: "mdshell.table.NAME" (the session holds that table: its
# rows and its reading's warnings, JSON), "mdshell.image" (the session's settings were made:
# its key) and "mdshell.size" (which of the settings below it has: "small" or "large").
PREFIX, TABLE_MARK, IMAGE_MARK, SIZE_MARK = "mdshell.", "table.", "image", "size"
# A session whose tables have at most SMALL_ROWS rows each plans its queries as one task a
# stage, and evaluates them without generating code (compiled again in every session): on the
# tables of a small cluster a session's first query took half the server's CPU, a later one
# a third less (docs/performance.md#spark-connect). A larger table brings back the usual
# settings. The user's own --config keys are never changed.
SMALL_ROWS = 100_000
SMALL_CONF = {"spark.sql.shuffle.partitions": "1", "spark.sql.leafNodeDefaultParallelism": "1",
              **INTERPRETED}
GENERATIONS = 32  # ids tried for one image when the server has closed the earlier ones
INLINE_BYTES = 8 << 20  # a table up to this size goes in the plan; larger, as artifacts first
CHUNK_BYTES = 16 << 20  # the Arrow stream of one uploaded artifact, at most (about)
CHUNK_ROWS = 4096  # rows of a record batch in an uploaded artifact
KEPT_IMAGES = 2  # image sessions kept on a server per source and offset, sent from here
# A statement that only reads: it may run in a session other processes share.
_READS = {"select", "with", "values", "table", "from", "show", "describe", "desc", "explain"}
_COMMENT = re.compile(r"\s*(--[^\n]*(\n|$)|/\*.*?\*/|\()", re.S)
_MISSING = re.compile(r"TABLE_OR_VIEW_NOT_FOUND\]\s*The table or view `([^`]+)`")
_CATALOG_KEY = hashlib.sha256(repr(sorted(CATALOG.items())).encode()).hexdigest()[:16]


def reads_only(query: str) -> bool:
    """True when the statement's first word says it only reads (comments and opening
    brackets before it skipped)."""
    i = 0
    while m := _COMMENT.match(query, i):
        i = m.end()
    word = re.match(r"\s*([A-Za-z]+)", query[i:])
    return word is not None and word.group(1).lower() in _READS


@dataclass
class Held:
    """A table a session holds: its rows, and the warnings of its reading."""

    rows: int
    warnings: list[str]

    @classmethod
    def read(cls, mark: str) -> Held | None:
        """A table's mark as written by :meth:`Remote._image_session`; None when it is not
        one (then the table is sent again)."""
        try:
            said = json.loads(mark)
            rows, warnings = said["rows"], said["warnings"]
        except (ValueError, TypeError, KeyError):
            return None
        if not isinstance(rows, int) or not isinstance(warnings, list):
            return None
        return cls(rows, [str(x) for x in warnings])


@dataclass
class Frame:
    """A query ready to run in a server's session (what ``query.run`` gives on Spark Connect
    where it gives a DataFrame on Spark of its own)."""

    remote: Remote
    session: str
    query: str
    view: tables.View
    names: list[str]
    key: str | None  # the image's key: the session is an image session

    def collect(self, limit: int | None = None) -> pa.Table:
        relation = w.sql(self.query)
        return self.remote.run(self, relation if limit is None else w.limit(relation, limit))

    def count(self) -> int:
        return int(self.remote.run(self, w.count(w.sql(self.query))).column(0)[0].as_py())

    def csv_lines(self) -> tuple[list[str], pa.Table]:
        """The result's column names, and each row as the line Spark's own CSV writer writes
        for it (``to_csv`` on the server: the writer's quoting, escapes, empty strings and
        timestamp format), lists and structs as JSON text (Spark's ``to_json``): a CSV
        written here is the one Spark of its own writes."""
        schema = self.collect(0).schema
        cells = [f"to_json({_quoted(f.name)})" if pa.types.is_nested(f.type)
                 else _quoted(f.name) for f in schema]
        line = [f"to_csv(struct({', '.join(cells)})) AS line"]
        return schema.names, _Projected(self.remote, self.session, self.query, self.view,
                                        self.names, self.key, line).collect()


@dataclass
class _Projected(Frame):
    columns: list[str] = field(default_factory=list)

    def collect(self, limit: int | None = None) -> pa.Table:
        relation = w.project(w.sql(self.query), self.columns)
        return self.remote.run(self, relation if limit is None else w.limit(relation, limit))


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class Remote:
    """This process's client of one Spark Connect server: its sessions there, the tables
    sent to each, and the operations running under each tag (for cancelling)."""

    def __init__(self, url: str, conf: dict[str, str], users: frozenset[str] = frozenset()
                 ) -> None:
        """``conf``: the SQL settings of every session made here; ``users``: those of its
        keys the user gave (never changed by the size rule)."""
        self.address = ConnectURL.parse(url)
        self.conf = dict(conf)
        self.users = users
        if "pandas" not in sys.modules and "pyspark" not in sys.modules:
            arrow_without_pandas()  # a process that runs no Spark of its own needs no pandas
        self.client = ConnectClient(self.address)
        given = self.address.session_id  # a session the connection string names
        self._own: str | None = given
        self._own_made = False  # the process made its own session (released at exit)
        self._own_conf = False
        self._own_tables: dict[str, tuple[object, bool, Held]] = {}
        self._images: dict[str, str] = {}  # image key -> its session
        self._marks: dict[str, dict[str, Held]] = {}  # session -> table -> what it holds
        self._sizes: dict[str, str] = {}  # session -> "small" / "large" (its settings)
        self._tags = threading.local()
        self._running: dict[str, set[tuple[str, str]]] = {}  # tag -> (session, operation)
        self._lock = threading.Lock()
        self.sent: list[tuple[str, str]] = []  # (table, session) sent by this process

    # ------------------------------------------------------------ where a query runs

    def frame(self, view: tables.View, query: str, names: list[str]) -> tuple[Frame, list[str]]:
        """The query ready to run, and the warnings of the tables it reads (sent now when
        the session lacks them)."""
        key = image_key(view, self.conf, self.address) if (
            self._own is None and reads_only(query)) else None
        if key is not None:
            session, warnings = self._image_session(key, view, names)
        else:
            session = self._own_session()
            warnings = self._register(session, view, names)
        return Frame(self, session, query, view, names, key), warnings

    def _image_session(self, key: str, view: tables.View, names: list[str],
                       resend: tuple[str, ...] = ()) -> tuple[str, list[str]]:
        session = self._images.get(key)
        if session is None:
            session, marks = self._find(key)
            self._images[key], self._marks[session] = session, marks
        marks = self._marks[session]
        for name in resend:
            marks.pop(name, None)
        missing = [n for n in names if n not in marks]
        if missing:
            said: dict[str, str] = {}
            for name in missing:
                marks[name] = self._build_and_send(session, name, view)
                said[PREFIX + TABLE_MARK + name] = json.dumps(
                    {"rows": marks[name].rows, "warnings": marks[name].warnings})
            self._resize(session, marks.values(), said)
            _keep_recent(self, lineage(view, self.conf, self.address), session)
        return session, _unique(w for n in names for w in marks[n].warnings)

    def _find(self, key: str) -> tuple[str, dict[str, Held]]:
        """The image's session that the server has not closed, and the tables it holds."""
        for generation in range(GENERATIONS):
            session = session_id(key, generation)
            try:
                held = self.client.config(session, w.config_get_all(PREFIX))  # keys less it
            except ConnectError as e:
                if "SESSION_CLOSED" in e.error_class:
                    continue
                raise
            if IMAGE_MARK not in held:  # a new session: our settings first
                self.client.config(session, w.config_set({**self.conf,
                                                          PREFIX + IMAGE_MARK: key}))
            if SIZE_MARK in held:
                self._sizes[session] = held[SIZE_MARK]
            marks = {k[len(TABLE_MARK):]: Held.read(v) for k, v in held.items()
                     if k.startswith(TABLE_MARK)}
            return session, {k: v for k, v in marks.items() if v is not None}
        raise CommandError(f"the Spark Connect server has closed {GENERATIONS} sessions of "
                           "this image: restart it, or set MDSHELL_NO_CACHE=1")

    def _resize(self, session: str, held: Iterable[Held], more: dict[str, str]) -> None:
        """Set ``more`` and the settings of the tables' size (:data:`SMALL_CONF` when every
        table the session holds is small) in one request; a session going from small to
        large gets Spark's own settings back."""
        size = "small" if all(h.rows <= SMALL_ROWS for h in held) else "large"
        ours = {k: v for k, v in SMALL_CONF.items() if k not in self.users}
        if size != self._sizes.get(session):
            if size == "small":
                more = {**more, **ours}
            else:
                back = {k: self.conf[k] for k in ours if k in self.conf}
                if dropped := [k for k in ours if k not in self.conf]:
                    self.client.config(session, w.config_unset(dropped))
                more = {**more, **back}
            more[PREFIX + SIZE_MARK] = size
            self._sizes[session] = size
        if more:
            self.client.config(session, w.config_set(more))

    def _own_session(self) -> str:
        with self._lock:
            if self._own is None:
                self._own, self._own_made = str(uuid.uuid4()), True
                atexit.register(self.stop)
            session = self._own
        if not self._own_conf:
            self.client.config(session, w.config_set(self.conf))
            self._own_conf = True
        return session

    def _register(self, session: str, view: tables.View, names: list[str]) -> list[str]:
        """The named tables of the view in the process's own session (sent when it holds
        another image's); their warnings."""
        warnings: list[str] = []
        sent = False
        for name in names:
            held = self._own_tables.get(name)
            if held is None or held[0] is not view.loaded or held[1] != view.show_secrets:
                held = (view.loaded, view.show_secrets,
                        self._build_and_send(session, name, view))
                self._own_tables[name] = held
                sent = True
            warnings += held[2].warnings
        if sent:
            self._resize(session, (h[2] for h in self._own_tables.values()), {})
        return _unique(warnings)

    def _build_and_send(self, session: str, name: str, view: tables.View) -> Held:
        table, found = tables.build_warned(name, view)
        self._send(session, name, table)
        return Held(table.num_rows, found)

    def _send(self, session: str, name: str, table: pa.Table) -> None:
        """``table`` as the session's temporary view ``name``: in the plan when small, else
        uploaded first as cached artifacts (Arrow streams of at most ``CHUNK_BYTES``)."""
        blob = _stream(table)
        if len(blob) <= INLINE_BYTES:
            relation = w.local_relation(blob)
        else:
            relation = w.cached_relation(self.client.cache(session, list(_chunks(table))))
        self._execute(session, w.create_view(relation, name))
        self.sent.append((name, session))

    # ------------------------------------------------------------ running

    def run(self, frame: Frame, relation: bytes) -> pa.Table:
        """The Arrow result of a relation in the frame's session; CommandError (one line)
        when Spark refuses it. An image session that lost what this process was told it
        holds (closed by the server, or restarted) gets it again, once."""
        try:
            return _arrow(self._execute(frame.session, w.query_plan(relation)))
        except ConnectError as e:
            if frame.key is None or not self._lost(e, frame.names):
                raise CommandError(_line(e)) from None
            self._images.pop(frame.key, None)
            missing = _MISSING.search(str(e))
            resend = tuple(frame.names) if missing else ()
            try:
                frame.session, _ = self._image_session(frame.key, frame.view, frame.names,
                                                       resend)
                return _arrow(self._execute(frame.session, w.query_plan(relation)))
            except ConnectError as again:
                raise CommandError(_line(again)) from None

    @staticmethod
    def _lost(e: ConnectError, names: list[str]) -> bool:
        if "SESSION_CLOSED" in e.error_class:
            return True
        missing = _MISSING.search(str(e))
        return missing is not None and missing.group(1).lower() in names

    def _execute(self, session: str, plan: bytes) -> list[bytes]:
        operation = str(uuid.uuid4())
        tags = sorted(getattr(self._tags, "names", set()))
        with self._lock:
            for tag in tags:
                self._running.setdefault(tag, set()).add((session, operation))
        try:
            return self.client.execute(session, plan, operation, tags)
        finally:
            with self._lock:
                for tag in tags:
                    self._running.get(tag, set()).discard((session, operation))

    # ------------------------------------------------------------ tags (cancelling)

    def add_tag(self, tag: str) -> None:
        """The operations this thread starts from now on carry ``tag``."""
        names = getattr(self._tags, "names", None)
        if names is None:
            names = self._tags.names = set()
        names.add(tag)

    def clear_tags(self) -> None:
        self._tags.names = set()

    def interrupt_tag(self, tag: str) -> None:
        """Interrupt the running operations that carry ``tag`` (this process's only)."""
        with self._lock:
            running = list(self._running.get(tag, ()))
        for session, operation in running:
            with contextlib.suppress(ConnectError):  # it ended meanwhile
                self.client.interrupt(session, operation)

    def stop(self) -> None:
        """Release the process's own session (when it made it) and close the channel."""
        with self._lock:
            own, made = self._own, self._own_made
            self._own_made = False
        if own is not None and made:
            with contextlib.suppress(ConnectError):
                self.client.release(own)
        self.client.close()


# ------------------------------------------------------------------ keys


def image_key(view: tables.View, conf: dict[str, str], address: ConnectURL) -> str | None:
    """What makes an image's tables what they are, hashed; None when they cannot be told
    apart by files on disk (a live quorum) or caching is off."""
    if not caching():
        return None
    reads = []
    for f in view.loaded.files:
        if f.stamp is None:
            return None
        reads.append([f.path, f.role, f.size, f.crc, list(f.stamp)])
    layout = view.source.disk_layout()
    if layout is not None and layout.virtual:
        return None
    on_disk = _stats(layout.directory, layout.log_dir) if layout is not None else []
    loaded = view.loaded
    parts = [__version__, _CATALOG_KEY, view.source.kind, view.source.describe(), on_disk,
             reads, loaded.upto, loaded.end_offset, view.show_secrets, sorted(conf.items()),
             address.user]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def _stats(directory: str, log_dir: str | None) -> list[list[Any]]:
    """Every file of the metadata directory (and the log dir's meta.properties): real
    path, size, modification time."""
    paths = []
    with os.scandir(directory) as entries:
        paths += [e.path for e in entries if e.is_file()]
    if log_dir is not None:
        paths.append(os.path.join(log_dir, "meta.properties"))
    out = []
    for path in sorted(paths):
        try:
            st = os.stat(path)
        except OSError:
            continue
        out.append([os.path.realpath(path), st.st_size, st.st_mtime_ns])
    return out


def session_id(key: str, generation: int) -> str:
    """The id of an image's session (a UUID, as the server wants one)."""
    digest = hashlib.sha256(f"{key}/{generation}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def lineage(view: tables.View, conf: dict[str, str], address: ConnectURL) -> str:
    """What images that replace one another share: the server, the source, the offset
    asked, the secrets rule and settings (a growing log's newer image replaces the older)."""
    parts = [address.endpoint, address.user, __version__, view.source.describe(),
             view.loaded.upto, view.show_secrets, sorted(conf.items())]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


def _keep_recent(remote: Remote, line: str, session: str) -> None:
    """Note ``session`` as the newest image session of its lineage (a file in the cache
    directory), and release the ones beyond the ``KEPT_IMAGES`` most recent."""
    folder = os.path.join(cache_dir(), "spark", "connect")
    path = os.path.join(folder, line)
    try:
        with open(path) as f:
            known = [s for s in f.read().split() if s != session]
    except OSError:
        known = []
    recent, old = [session, *known][:KEPT_IMAGES], known[KEPT_IMAGES - 1:]
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            f.write("\n".join(recent) + "\n")
        os.replace(tmp, path)
    except OSError:
        return
    for stale in old:
        with contextlib.suppress(ConnectError):
            remote.client.release(stale)


# ------------------------------------------------------------------ Arrow


def _stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def _chunks(table: pa.Table) -> Iterator[bytes]:
    """The table as Arrow streams of about ``CHUNK_BYTES`` each."""
    batches: list[pa.RecordBatch] = []
    size = 0
    for batch in table.to_batches(max_chunksize=CHUNK_ROWS):
        if batches and size + batch.nbytes > CHUNK_BYTES:
            yield _stream(pa.Table.from_batches(batches, table.schema))
            batches, size = [], 0
        batches.append(batch)
        size += batch.nbytes
    yield _stream(pa.Table.from_batches(batches, table.schema))


def _arrow(streams: list[bytes]) -> pa.Table:
    """The result's Arrow streams as one table."""
    parts = [pa.ipc.open_stream(s).read_all() for s in streams]
    if not parts:
        return pa.table({})
    return parts[0] if len(parts) == 1 else pa.concat_tables(parts)


def _line(e: ConnectError) -> str:
    """Spark's message in one line (a Python worker's traceback: its last exception)."""
    return worker_exception(str(e).strip()) or e.line


def _unique(items: Any) -> list[str]:
    return list(dict.fromkeys(items))
