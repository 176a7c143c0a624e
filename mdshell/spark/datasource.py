"""The ``kraft`` Spark data source: ``spark.read.format("kraft").load(PATH)``.

PATH is a metadata directory (or the log dir holding it), a glob matching many, or a list;
each directory is read once however many paths name it, and a relative path is the driver's.
Without a ``table`` option the rows are the ``records`` table of every log segment (the
shell's ``records`` table: ``source`` is "log"); ``.option("snapshots", "true")`` adds the
records of every snapshot (``source`` "snapshot", older snapshots too). Each file is read by
one task, so a fleet of directories is read in parallel. With
``.option("table", "partitions")`` (or any image table) each directory gives its image as of
its end, or as of ``.option("at", OFFSET)``, each directory read by one task. Small files (or
directories) are packed into one Spark partition the way Spark packs small files of its own
file sources: largest first, up to ``maxPartitionBytes`` (default 128 MiB) per partition, each
file counting ``openCostInBytes`` (default 4 MiB) more than its size; a file is never split.
Registered with :func:`register`, the session's ``spark.sql.files.*`` settings are the defaults.
``.option("maxPartitionBytes", 1)`` gives one partition per file. Other options:
``snapshots`` (above), ``showSecrets`` (default false: secrets redacted as in the shell)
and ``payload`` (default true; false leaves the JSON payload null, for queries that need
only key columns: it saves
the JSON of each distinct record value, so little on a quiet log).

PATH may be a ``file:`` URI or a remote one (``s3a://``, ``gs://``, ``hdfs://``: see
:mod:`.remote`). When the session has ``spark.sql.python.filterPushdown.enabled`` (and
``.option("pushdown", "false")`` is not given), filters on key columns are taken and the
files they rule out are never read (see :mod:`.pushdown`). Options are checked when the
source is made (:mod:`.readopts`): an unknown one, a bad value, or a user schema that is not
a subset of the table's columns is refused in one line.

Every row carries ``directory``, ``cluster_id`` and ``warnings``: the reader's own warnings
for that file or directory (CRC mismatch, truncation, an unreadable file...), never a failed
job. A file or directory that yields no row but has warnings gives one row whose record
fields are null, so that its warnings are seen (a missing directory is such a row: count
records with ``where offset is not null``, or fail on ``warnings is not null`` yourself);
when no path names anything readable, the read fails in one line. Warnings are never
printed (the workers would print each once per task and per action).
A clean file is decoded by :mod:`.fastlog` (columns in bulk, each distinct value once); any
other by mdshell's own reader, through
:mod:`.tables`, so rows and warnings are the shell's. Each segment is read as the log from its
base offset, so segments after a damaged one are read too (the shell stops there).
"""

from __future__ import annotations

import functools
import glob
import logging
import os
import re
from collections.abc import Iterator
from typing import Any, NoReturn
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.types import StructType

from ..problems import SourceError
from . import fastlog, remote, tables
from .compat import arrow_to_spark, filters_pushed
from .pushdown import ANY_TABLE, RECORD_COLUMNS, Pushed
from .readopts import (
    MAX_PARTITION_BYTES,
    OPEN_COST_BYTES,
    OptionError,
    ReadOptions,
    conf_bytes,
    parse,
)

LOG = logging.getLogger("mdshell.spark")
EXTRA = pa.schema([("directory", pa.string()), ("cluster_id", pa.string()),
                   ("warnings", tables.STRS)])
BATCH_ROWS = 65536  # rows per Arrow batch handed to Spark
PUSHDOWN_KEY = "spark.sql.python.filterPushdown.enabled"


def refuse(message: str) -> ValueError:
    """An error in the options or paths of a read, for Spark to show as one line. Spark puts
    the Python traceback of a data source's planning into its AnalysisException's message,
    before ours; inside a Spark Python worker (this process then plans this one read and
    fails) the traceback is turned off, so the message reads ``... reader: ValueError: kraft:
    option at: 'x' is not an offset (a number)``."""
    if os.environ.get("SPARK_PYTHON_RUNTIME") == "PYTHON_WORKER":
        os.environ["SPARK_HIDE_TRACEBACK"] = "1"
    return ValueError(message)


def arrow_schema(table: str) -> pa.Schema:
    base = tables.TABLES[table][0]
    return pa.schema([*EXTRA, *base])


def spark_schema(table: str) -> StructType:
    return arrow_to_spark(arrow_schema(table))


def projection(schema: StructType, table: str) -> pa.Schema | None:
    """The Arrow schema of the rows a read gives for a user's schema (``.schema("offset
    long, type string")``): a subset of the table's columns, in the user's order and
    spelling, with the table's types; None when it is the table's own. Anything else (a
    column the table lacks, another type, NOT NULL: a row of warnings has nulls) is refused
    in one line."""
    full = spark_schema(table)
    if schema == full:
        return None
    arrow = arrow_schema(table)
    where = {f.name.lower(): i for i, f in enumerate(full.fields)}
    fields, problems = [], []
    for f in schema.fields:
        i = where.get(f.name.lower())
        if i is None:
            problems.append(f"no column {f.name!r}")
        elif f.dataType != full.fields[i].dataType:
            problems.append(f"{f.name} is {full.fields[i].dataType.simpleString()}, not "
                            f"{f.dataType.simpleString()}")
        elif not f.nullable:
            problems.append(f"{f.name} cannot be NOT NULL (a row of warnings has nulls)")
        else:
            fields.append(pa.field(f.name, arrow.field(i).type))
    if len({f.name.lower() for f in schema.fields}) < len(schema.fields):
        problems.append("a column is named twice")
    if problems:
        raise refuse(f"kraft: schema for table {table}: {'; '.join(problems)} (give some of "
                     f"its columns: {', '.join(full.fieldNames())}; or no schema)")
    return pa.schema(fields)


def expand(path: str) -> list[tuple[str, str | None]]:
    """The directories a path names, each with why it cannot be read (None: it may be).
    A glob keeps the directories it matches (a README beside the copies is no data). A
    relative local path is the driver's, as Spark's own file sources read it: made absolute
    here, where the read is planned, since each executor runs in a working directory of its
    own."""
    p = local_path(path)
    if remote.is_remote(p):
        found = remote.expand(p)
    else:
        p = os.path.abspath(p)
        found = sorted(m for m in glob.glob(p) if os.path.isdir(m)) if glob.has_magic(p) \
            else [p]
    return [(d, None) for d in found] or [(p, "no directory matches this glob")]


def local_path(uri: str) -> str:
    """A path or a ``file:`` URI (``file:///a/b``, Hadoop's ``file:/a/b``) as a local path.
    Other filesystems (``hdfs://``, ``s3a://``...) are refused in one line: every file is
    read with the OS's own calls, so it must be mounted where the executors run."""
    scheme, sep, _ = uri.partition("://")
    if uri.startswith("file:"):
        path = uri[len("file://"):] if sep else uri[len("file:"):]
        if sep and not path.startswith("/"):  # file://host/path: only the local host
            host, _, path = path.partition("/")
            if host not in ("", "localhost"):
                raise refuse(f"kraft: {uri}: a file URI names this host only "
                             "(file:///path)")
            path = "/" + path
        return unquote(path)
    if sep and scheme.isalnum() and len(scheme) > 1 and not remote.is_remote(uri):
        raise refuse(f"kraft: {uri}: {scheme}:// paths are not read (known: file://, "
                     f"{', '.join(s + '://' for s in remote.SCHEMES)}); mount the store on "
                     "every executor and give the local path")
    return uri


class FilePart(InputPartition):
    """One segment or snapshot (records), or one directory (image tables); ``path`` None:
    the whole directory, ``error``: the directory could not be listed."""

    def __init__(self, directory: str, cluster_id: str | None, path: str | None,
                 error: str | None = None, file: tables.LogFile | None = None,
                 shown: str | None = None, remote: bool = False) -> None:
        self.directory, self.cluster_id, self.path, self.error = (directory, cluster_id, path,
                                                                  error)
        self.file = file
        self.shown = shown or directory  # the ``directory`` column (a URI for a remote one)
        self.remote = remote  # a remote directory, copied and read by one task


class Pack(InputPartition):
    """The files (or directories) one task reads, one after the other."""

    def __init__(self, parts: list[FilePart]) -> None:
        self.parts = parts


def pack(parts: list[FilePart], sizes: list[int], max_bytes: int, open_cost: int
         ) -> list[Pack]:
    """Spark's packing of small files: by size, largest first, into partitions of at most
    ``max_bytes`` (each file costing ``open_cost`` more than its size)."""
    packs: list[Pack] = []
    current: list[FilePart] = []
    filled = 0
    for size, part in sorted(zip(sizes, parts, strict=True), key=lambda x: -x[0]):
        if current and filled + size > max_bytes:
            packs.append(Pack(current))
            current, filled = [], 0
        current.append(part)
        filled += size + open_cost
    if current:
        packs.append(Pack(current))
    return packs


def _size(part: FilePart) -> int:
    """Bytes a task reads for a file, or for a directory's image (its segments and
    snapshots); 0 when they cannot be listed (the task reports why)."""
    try:
        if part.remote:
            return 0
        if part.path is not None:
            return os.path.getsize(part.path)
        if part.error is None:
            return sum(os.path.getsize(f.path) for f in tables.log_files(part.directory))
    except (OSError, SourceError):
        pass
    return 0


class KraftDataSource(DataSource):
    """Kafka KRaft metadata logs as a Spark table. Its options are checked when it is made
    (at ``load()``), so a bad one fails there in one line."""

    PUSHDOWN: bool | None = None  # the ``pushdown`` option's default (None: when Spark pushes)
    MAX_BYTES = MAX_PARTITION_BYTES  # the ``maxPartitionBytes`` option's default
    OPEN_COST = OPEN_COST_BYTES  # the ``openCostInBytes`` option's default

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        try:
            self.read_options = parse(self.options, tables.TABLES, self.MAX_BYTES,
                                      self.OPEN_COST, self.PUSHDOWN)
        except OptionError as e:
            raise refuse(str(e)) from None

    @classmethod
    def name(cls) -> str:
        return "kraft"

    def schema(self) -> StructType:
        return spark_schema(self.read_options.table)

    def writer(self, schema: StructType, overwrite: bool) -> NoReturn:
        raise refuse(READ_ONLY)

    def streamWriter(self, schema: StructType, overwrite: bool) -> NoReturn:
        raise refuse(READ_ONLY)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """No streaming read: a reader that refuses at its first call (PySpark's streaming
        runner cannot report an error raised here, and tries ``simpleStreamReader`` only
        without this method)."""
        return NoStream()

    def reader(self, schema: StructType) -> DataSourceReader:
        """A reader that defines ``pushFilters`` makes Spark fail the read unless the session
        has ``spark.sql.python.filterPushdown.enabled``, which this worker learns only from
        the planning step calling here: without the option, filters are taken when Spark
        pushes them; ``pushdown`` true when it does not is refused in one line."""
        opts = self.read_options
        columns = projection(schema, opts.table)
        spark_pushes = filters_pushed()
        push = bool(spark_pushes) if opts.pushdown is None else opts.pushdown
        if push and spark_pushes is False:
            raise refuse(f"kraft: option pushdown: true needs the session setting "
                         f"{PUSHDOWN_KEY}=true (spark-submit --conf {PUSHDOWN_KEY}=true); "
                         "without the option the source reads, and Spark filters")
        return (FilteringReader if push else KraftReader)(opts, columns)


class NoStream(DataSourceStreamReader):
    """A streaming read's reader: each call refuses in one line."""

    def initialOffset(self) -> dict[str, Any]:
        raise refuse(NO_STREAM)

    def latestOffset(self, *args: Any) -> dict[str, Any]:
        raise refuse(NO_STREAM)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        raise refuse(NO_STREAM)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        raise refuse(NO_STREAM)

    def commit(self, end: dict[str, Any]) -> None:
        raise refuse(NO_STREAM)


# What the source does not do, each in one line (Spark would show a Python traceback).
READ_ONLY = ("kraft: the source only reads (mdshell never writes into a metadata directory); "
             "write the rows with a file format: df.write.parquet(DIR)")
NO_STREAM = ("kraft: no streaming read: read the directories as a batch (spark.read), or "
             "follow a running cluster with mdshell: mdshell -d DIR --follow, or -q "
             "HOST:PORT")
PACKING_KEYS = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")


def register(spark: Any) -> type[KraftDataSource]:
    """Register ``kraft`` in ``spark`` with this session's settings as its defaults: Spark's
    file packing (``spark.sql.files.maxPartitionBytes``, ``openCostInBytes``) and, when
    ``spark.sql.python.filterPushdown.enabled`` is on, pushdown. The source's planning runs
    in a Python worker that sees no session, so the values are read here, on the driver, and
    travel with the registered class (a source found without registering has Spark's
    defaults, 128 MiB and 4 MiB)."""
    push = str(spark.conf.get(PUSHDOWN_KEY, "false")).lower() == "true"
    max_bytes = conf_bytes(spark.conf.get(PACKING_KEYS[0], None), MAX_PARTITION_BYTES)
    open_cost = conf_bytes(spark.conf.get(PACKING_KEYS[1], None), OPEN_COST_BYTES)
    # Made here, not importable by name: pickled with its values for the worker.
    cls = type(KraftDataSource.__name__, (KraftDataSource,), {
        "MAX_BYTES": max_bytes, "OPEN_COST": open_cost, "PUSHDOWN": True if push else None,
        "__doc__": KraftDataSource.__doc__})
    spark.dataSource.register(cls)
    return cls


# The shell's advice for a file path (the data source reads directories only), and for
# damage (a job has no --strict: the rows' warnings column says it).
_FILE_ADVICE = "; use -s FILE to read one snapshot or log file"
_STRICT_ADVICE = ", or use --strict to fail on it"


# A directory holding clusters' directories: the shell says which one to give to -d.
_BELOW = re.compile(r"^(?P<dir>.+?): no metadata log segments .* holds? __cluster_metadata-0: "
                    r"(?:give one of them to -d|-d (?P<one>.+))$")


def _in_spark(message: str) -> str:
    """A reader's message with the advice that fits a data source path, not the CLI's."""
    message = message.replace(_STRICT_ADVICE, "")
    if (m := _BELOW.match(message)) is not None:  # the CLI's -d advice, for a load() path
        said = message[:message.rindex(": ")]
        if m["one"]:
            return f"{said}: give {m['one']}"
        return f"{said}: read them all with a glob, {m['dir'].rstrip('/')}/*, or give one of them"
    if message.endswith(_FILE_ADVICE):
        return (message[:-len(_FILE_ADVICE)] + ": the kraft source reads metadata directories "
                "(give the __cluster_metadata-0 directory, the log dir holding it, or a glob)")
    return message


class KraftReader(DataSourceReader):
    def __init__(self, options: ReadOptions, columns: pa.Schema | None = None) -> None:
        self.paths, self.table, self.at = options.paths, options.table, options.at
        self.show_secrets, self.snapshots = options.show_secrets, options.snapshots
        # Without payload among a user schema's columns, the JSON is not built.
        self.payload = options.payload and (columns is None or "payload" in {
            n.lower() for n in columns.names})
        self.max_bytes, self.open_cost = options.max_bytes, options.open_cost
        self.columns = columns
        self.pushed = Pushed()

    def partitions(self) -> list[InputPartition]:
        """Every file (records) or directory (image tables) to read, packed into tasks. A
        path that names nothing readable (missing, a file, a glob matching no directory, a
        directory without metadata) gives one row of warnings, so a fleet read survives it;
        when no path names anything readable, the read fails in one line."""
        if not self.paths:
            raise refuse("kraft: give a path: .load(DIR), a glob, or a list of directories")
        parts: list[FilePart] = []
        bad: list[FilePart] = []
        readable = refusals = 0
        pushed = self.pushed
        for named in self._named():
            if named.error is not None:
                bad.append(named)
                continue
            readable += 1
            d, cid = named.directory, named.cluster_id
            if named.remote:
                if pushed.keeps("directory", d):
                    parts.append(named)
                continue
            if not (pushed.keeps("directory", d) and pushed.keeps("cluster_id", cid)):
                continue
            if self.table != "records":
                refused = None if self.at is None else tables.at_refused(d, self.at)
                parts.append(FilePart(d, cid, None, refused))
                refusals += refused is not None
                continue
            parts += [FilePart(f.directory, cid, f.path, file=f) for f in self._files(d)]
        if bad and not readable:
            more = f" (and {len(bad) - 1} more paths)" if len(bad) > 1 else ""
            raise refuse(f"kraft: nothing to read: {bad[0].error}{more}")
        if refusals and refusals == len(parts):  # no directory has that offset
            more = f" (and in {refusals - 1} more directories)" if refusals > 1 else ""
            raise refuse(f"kraft: option at: {parts[0].directory}: {parts[0].error}{more}")
        parts += [p for p in bad if pushed.keeps("directory", p.directory)
                  and pushed.keeps("cluster_id", None)]
        return list(pack(parts, [_size(p) for p in parts], self.max_bytes, self.open_cost))

    def _named(self) -> Iterator[FilePart]:
        """Each directory the paths name, once however many paths name it (by its real path,
        a remote one by its URI): readable, with its cluster id; remote (its task reads it);
        or with why it cannot be read."""
        seen: set[str] = set()
        for d, problem in (x for given in self.paths for x in expand(given)):
            if problem is None and remote.is_remote(d):
                part = FilePart(remote.metadata_uri(d), None, None, remote=True)
                key = part.directory
            else:
                try:
                    if problem is not None:
                        raise SourceError(f"{d}: {problem}")
                    d, cid = tables.identify(d)
                    part, key = FilePart(d, cid, None), os.path.realpath(d)
                except SourceError as e:
                    part, key = FilePart(d, None, None, _in_spark(str(e))), d
            if key not in seen:
                seen.add(key)
                yield part

    def _files(self, d: str) -> list[tables.LogFile]:
        """The files of a directory this read needs (segments, snapshots if asked; none that
        the pushed filters rule out)."""
        return [f for f in tables.log_files(d)
                if (self.snapshots or f.role == "segment") and self.pushed.keeps_file(
                    os.path.basename(f.path), f.role, f.first, f.last)]

    def _read_remote(self, part: FilePart, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """A remote directory: copied here, then read as a local one would be."""
        uri = part.directory
        try:
            with remote.staged(uri) as local:
                d, cid = tables.identify(local)
                if self.table != "records":
                    refused = None if self.at is None else tables.at_refused(d, self.at)
                    local_parts = [FilePart(d, cid, None, refused, shown=uri)]
                else:
                    local_parts = [FilePart(d, cid, f.path, file=f, shown=uri)
                                   for f in self._files(d)]
                for p in local_parts:
                    yield from self._read(p, schema)
        except (OSError, SourceError) as e:
            yield _empty_with(schema, part, [f"{uri}: {_in_spark(str(e))}"])

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, Pack):
            return  # Spark's stand-in when there is nothing to read (no file at all)
        schema = arrow_schema(self.table)
        for part in partition.parts:
            for batch in self._read(part, schema):
                if self.pushed:
                    batch = self.pushed.filter(batch)
                if batch.num_rows:
                    yield batch if self.columns is None else _project(batch, self.columns)

    def _read(self, partition: FilePart, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        if partition.remote:
            yield from self._read_remote(partition, schema)
            return
        if partition.error is not None:
            yield _empty_with(schema, partition, [partition.error])
            return
        if self.table != "records":
            try:
                table, warnings = tables.image_table(partition.directory, self.table, self.at,
                                                     self.show_secrets)
            except SourceError as e:
                table, warnings = pa.Table.from_pylist([], tables.TABLES[self.table][0]), [
                    str(e)]
            yield from _with_extra(schema, table, partition, warnings)
            return
        assert partition.file is not None
        for table, warnings in tables.file_records(partition.file, self.show_secrets,
                                                   payload=self.payload,
                                                   types=self.pushed.allowed.get("type")):
            yield from _with_extra(schema, table, partition, warnings)


class FilteringReader(KraftReader):
    """The reader with filter pushdown (PySpark 4.1+, with
    ``spark.sql.python.filterPushdown.enabled``): equality (and ``IN``) on ``directory`` and
    ``cluster_id``, and for records on ``file``, ``source``, ``type``, ``topic_id`` and
    ``offset`` (ranges too) are taken. Directories and files that cannot match are never
    read (an offset range rules out segments, a type a snapshot never holds rules out
    snapshots); the rows read are filtered before they reach Spark."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        columns = RECORD_COLUMNS if self.table == "records" else ANY_TABLE
        yield from self.pushed.take(filters, columns)


def _with_extra(schema: pa.Schema, table: pa.Table, part: FilePart,
                warnings: list[str]) -> Iterator[pa.RecordBatch]:
    warnings = [_in_spark(w) for w in warnings]
    if part.shown != part.directory:  # a remote directory's copy: say where it really is
        warnings = [w.replace(part.directory, part.shown) for w in warnings]
    for w in warnings:  # on the rows; never printed by the workers (one per task and read)
        LOG.debug("%s: %s", part.path or part.shown, w)
    if table.num_rows == 0:
        if warnings:
            yield _empty_with(schema, part, warnings)
        return
    for batch in table.to_batches(max_chunksize=BATCH_ROWS):
        extra = _constants(part.shown, part.cluster_id, tuple(warnings), batch.num_rows)
        yield pa.RecordBatch.from_arrays([*extra, *batch.columns], schema=schema)


def _project(batch: pa.RecordBatch, columns: pa.Schema) -> pa.RecordBatch:
    """The columns of a user's schema, by name whatever their case."""
    where = {n.lower(): i for i, n in enumerate(batch.schema.names)}
    return pa.RecordBatch.from_arrays([batch.column(where[n.lower()]) for n in columns.names],
                                      schema=columns)


@functools.lru_cache(maxsize=4)
def _constants(directory: str, cluster_id: str | None, warnings: tuple[str, ...],
               n: int) -> tuple[pa.Array, ...]:
    """The columns every row of a batch shares (made once for the many full batches)."""
    return (fastlog.constant(directory, pa.string(), n),
            fastlog.constant(cluster_id, pa.string(), n),
            fastlog.constant(list(warnings) or None, tables.STRS, n))


def _empty_with(schema: pa.Schema, part: FilePart, warnings: list[str]) -> pa.RecordBatch:
    """One row holding only where it comes from and its warnings."""
    row: dict[str, Any] = {f.name: None for f in schema}
    row.update(directory=part.shown, cluster_id=part.cluster_id, warnings=warnings)
    if "file" in row and part.path is not None:
        row["file"] = os.path.basename(part.path)
    return pa.RecordBatch.from_pylist([row], schema=schema)
