"""The ``kraft`` Spark data source: ``spark.read.format("kraft").load(PATH)``.

PATH is a metadata directory (or the log dir holding it), a glob matching many, or a list.
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
:mod:`.remote`). With ``.option("pushdown", "true")`` (and Spark's
``spark.sql.python.filterPushdown.enabled``) filters on key columns are taken and the files
they rule out are never read (see :mod:`.pushdown`).

Every row carries ``directory``, ``cluster_id`` and ``warnings``: the reader's own warnings
for that file or directory (CRC mismatch, truncation, an unreadable file...), never a failed
job. A file or directory that yields no row but has warnings gives one row whose record
fields are null, so that its warnings are seen (a missing directory is such a row: count
records with ``where offset is not null``, or fail on ``warnings is not null`` yourself).
A clean file is decoded by :mod:`.fastlog` (columns in bulk, each distinct value once); any
other by mdshell's own reader, through
:mod:`.tables`, so rows and warnings are the shell's. Each segment is read as the log from its
base offset, so segments after a damaged one are read too (the shell stops there).
"""

from __future__ import annotations

import functools
import glob
import json
import logging
import os
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..problems import SourceError
from . import fastlog, remote, tables
from .compat import arrow_to_spark
from .pushdown import ANY_TABLE, RECORD_COLUMNS, Pushed

LOG = logging.getLogger("mdshell.spark")
EXTRA = pa.schema([("directory", pa.string()), ("cluster_id", pa.string()),
                   ("warnings", tables.STRS)])
_TRUE = {"true", "1", "yes"}
BATCH_ROWS = 65536  # rows per Arrow batch handed to Spark
MAX_PARTITION_BYTES = 128 << 20  # Spark's spark.sql.files.maxPartitionBytes
OPEN_COST_BYTES = 4 << 20  # Spark's spark.sql.files.openCostInBytes


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


def expand_paths(options: dict[str, str]) -> list[str]:
    """``path`` (one, maybe a glob) or ``paths`` (a JSON list, what ``load([...])`` passes)."""
    given: list[str] = []
    if options.get("paths"):
        given += list(json.loads(options["paths"]))
    if options.get("path"):
        given.append(options["path"])
    out: list[str] = []
    for p in map(local_path, given):
        if remote.is_remote(p):
            out += remote.expand(p)
            continue
        if not glob.has_magic(p):
            out.append(p)
            continue
        # A glob keeps the directories it matches (a README beside the copies is no data);
        # one matching nothing is reported as a missing directory.
        out += sorted(m for m in glob.glob(p) if os.path.isdir(m)) or [p]
    return out


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
    """Kafka KRaft metadata logs as a Spark table (filters pushed down when
    ``.option("pushdown", "true")`` is given)."""

    PUSHDOWN = False  # the ``pushdown`` option's default
    MAX_BYTES = MAX_PARTITION_BYTES  # the ``maxPartitionBytes`` option's default
    OPEN_COST = OPEN_COST_BYTES  # the ``openCostInBytes`` option's default

    @classmethod
    def name(cls) -> str:
        return "kraft"

    def _table(self) -> str:
        name = self.options.get("table", "records").lower()
        if name not in tables.TABLES:
            raise refuse(f"kraft: unknown table {name!r} (known: "
                         f"{', '.join(sorted(tables.TABLES))})")
        return name

    def schema(self) -> StructType:
        return spark_schema(self._table())

    def reader(self, schema: StructType) -> DataSourceReader:
        # A reader that defines pushFilters fails every read unless the session has
        # spark.sql.python.filterPushdown.enabled (and this worker cannot see the setting):
        # it is chosen only when asked, so a plain spark-submit never breaks.
        push = _flag(self.options.get("pushdown"), self.PUSHDOWN)
        cls = FilteringReader if push else KraftReader
        return cls(expand_paths(dict(self.options)), self._table(),
                           _offset(self.options.get("at")),
                           _flag(self.options.get("showSecrets"), False),
                           _flag(self.options.get("payload"), True),
                           _flag(self.options.get("snapshots"), False),
                           _bytes(self.options, "maxPartitionBytes", self.MAX_BYTES),
                           _bytes(self.options, "openCostInBytes", self.OPEN_COST))


class PushdownKraftDataSource(KraftDataSource):
    """The source as mdshell's own sessions register it: they enable Python filter pushdown,
    so it is on by default (``.option("pushdown", "false")`` turns it off)."""

    PUSHDOWN = True


PUSHDOWN_KEY = "spark.sql.python.filterPushdown.enabled"
PACKING_KEYS = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")


def register(spark: Any) -> type[KraftDataSource]:
    """Register ``kraft`` in ``spark`` with this session's settings as its defaults: Spark's
    file packing (``spark.sql.files.maxPartitionBytes``, ``openCostInBytes``) and, when
    ``spark.sql.python.filterPushdown.enabled`` is on, pushdown. The source's planning runs
    in a Python worker that sees no session, so the values are read here, on the driver, and
    travel with the registered class (a source found without registering has Spark's
    defaults, 128 MiB and 4 MiB)."""
    push = str(spark.conf.get(PUSHDOWN_KEY, "false")).lower() == "true"
    base = PushdownKraftDataSource if push else KraftDataSource
    max_bytes = _conf_bytes(spark.conf.get(PACKING_KEYS[0], None), MAX_PARTITION_BYTES)
    open_cost = _conf_bytes(spark.conf.get(PACKING_KEYS[1], None), OPEN_COST_BYTES)
    # Made here, not importable by name: pickled with its values for the worker.
    cls = type(base.__name__, (base,), {"MAX_BYTES": max_bytes, "OPEN_COST": open_cost,
                                        "__doc__": base.__doc__})
    spark.dataSource.register(cls)
    return cls


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "t": 1 << 40, "tb": 1 << 40}


def _conf_bytes(value: str | None, default: int) -> int:
    """A Spark byte size ("128MB", "64m", "4194304"), as Spark reads it; else ``default``."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(value or ""))
    if m is None or m.group(2).lower() not in _UNITS:
        return default
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


# The shell's advice for a file path; the data source reads directories only.
_FILE_ADVICE = "; use -s FILE to read one snapshot or log file"


def _in_spark(message: str) -> str:
    """A reader's message with the advice that fits a data source path, not the CLI's."""
    if message.endswith(_FILE_ADVICE):
        return (message[:-len(_FILE_ADVICE)] + ": the kraft source reads metadata directories "
                "(give the __cluster_metadata-0 directory, the log dir holding it, or a glob)")
    return message


def _offset(value: str | None) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(str(value))
    except ValueError:
        raise refuse(f"kraft: option at: {value!r} is not an offset (a number)") from None


def _flag(value: str | None, default: bool) -> bool:
    return default if value in (None, "") else str(value).lower() in _TRUE


def _bytes(options: Any, name: str, default: int) -> int:
    value = options.get(name)
    if value in (None, ""):
        return default
    n = _conf_bytes(value, -1)
    if n < 0:
        raise refuse(f"kraft: option {name}: {value!r} is not a size in bytes (e.g. "
                     "134217728 or 128m)")
    return n


class KraftReader(DataSourceReader):
    def __init__(self, paths: list[str], table: str, at: int | None, show_secrets: bool,
                 payload: bool, snapshots: bool = False, max_bytes: int = MAX_PARTITION_BYTES,
                 open_cost: int = OPEN_COST_BYTES) -> None:
        self.paths, self.table, self.at = paths, table, at
        self.show_secrets, self.payload, self.snapshots = show_secrets, payload, snapshots
        self.max_bytes, self.open_cost = max_bytes, open_cost
        self.pushed = Pushed()

    def partitions(self) -> list[InputPartition]:
        if not self.paths:
            raise refuse("kraft: give a path: .load(DIR), a glob, or a list of directories")
        parts: list[FilePart] = []
        refusals = 0
        pushed = self.pushed
        for d in self.paths:
            if remote.is_remote(d):
                shown = remote.metadata_uri(d)
                if pushed.keeps("directory", shown):
                    parts.append(FilePart(shown, None, None, remote=True))
                continue
            try:
                d, cid = tables.identify(d)
                if not (pushed.keeps("directory", d) and pushed.keeps("cluster_id", cid)):
                    continue
                if self.table != "records":
                    refused = None if self.at is None else tables.at_refused(d, self.at)
                    parts.append(FilePart(d, cid, None, refused))
                    refusals += refused is not None
                    continue
                files = self._files(d)
            except SourceError as e:
                if pushed.keeps("directory", d) and pushed.keeps("cluster_id", None):
                    parts.append(FilePart(d, None, None, _in_spark(str(e))))
                continue
            parts += [FilePart(f.directory, cid, f.path, file=f) for f in files]
        if refusals and refusals == len(parts):  # no directory has that offset
            more = f" (and in {refusals - 1} more directories)" if refusals > 1 else ""
            raise refuse(f"kraft: option at: {parts[0].directory}: {parts[0].error}{more}")
        return list(pack(parts, [_size(p) for p in parts], self.max_bytes, self.open_cost))

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
                    yield batch

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
    if part.shown != part.directory:  # a remote directory's copy: say where it really is
        warnings = [w.replace(part.directory, part.shown) for w in warnings]
    for w in warnings:
        LOG.warning("%s: %s", part.path or part.shown, w)
    if table.num_rows == 0:
        if warnings:
            yield _empty_with(schema, part, warnings)
        return
    for batch in table.to_batches(max_chunksize=BATCH_ROWS):
        extra = _constants(part.shown, part.cluster_id, tuple(warnings), batch.num_rows)
        yield pa.RecordBatch.from_arrays([*extra, *batch.columns], schema=schema)


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
