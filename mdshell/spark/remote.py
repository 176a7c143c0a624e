"""Metadata directories in object storage or HDFS (``s3a://bucket/copies/*``): globbed through
pyarrow's filesystems by the planner, copied by the task that reads one to a local scratch
directory (the metadata directory and its log dir's ``meta.properties`` only, never the
topics' data), and read there by the local reader.

S3 settings are pyarrow's: ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``
and ``AWS_ENDPOINT_URL`` (an S3-speaking server of your own) in the environment of the driver
and the executors. ``s3a://`` and ``s3n://`` are Hadoop's names for ``s3://``.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow.fs as pafs

METADATA_DIR = "__cluster_metadata-0"
_ALIASES = {"s3a": "s3", "s3n": "s3"}
SCHEMES = ("s3", "s3a", "s3n", "gs", "gcs", "hdfs", "viewfs")


def is_remote(uri: str) -> bool:
    scheme, sep, _ = uri.partition("://")
    return bool(sep) and scheme.lower() in SCHEMES


def _fs(uri: str) -> tuple[pafs.FileSystem, str, str]:
    """The filesystem, the path inside it, and the URI prefix to rebuild URIs with."""
    scheme, _, rest = uri.partition("://")
    scheme = scheme.lower()
    fs, path = pafs.FileSystem.from_uri(f"{_ALIASES.get(scheme, scheme)}://{rest}")
    prefix = uri[:len(uri) - len(rest)] if scheme in ("s3", "s3a", "s3n", "gs", "gcs") else ""
    return fs, path, prefix


def expand(uri: str) -> list[str]:
    """The directories a URI names (its glob expanded component by component; none when it
    matches nothing)."""
    fs, path, prefix = _fs(uri)
    if not glob.has_magic(path):
        return [uri.rstrip("/")]
    found = [""]
    for part in path.strip("/").split("/"):
        nxt = []
        for base in found:
            here = f"{base}/{part}".lstrip("/") if base else part
            if not glob.has_magic(part):
                nxt.append(here)
                continue
            infos = fs.get_file_info(pafs.FileSelector(base or "/", allow_not_found=True))
            nxt += sorted(i.path for i in infos if i.type == pafs.FileType.Directory
                          and fnmatch.fnmatchcase(i.base_name, part))
        found = nxt
    return [_uri(prefix, uri, p) for p in found]


def _uri(prefix: str, original: str, path: str) -> str:
    if prefix:
        return prefix + path.lstrip("/")
    scheme, _, rest = original.partition("://")
    authority = rest.split("/", 1)[0]
    return f"{scheme}://{authority}/{path.lstrip('/')}"


@contextmanager
def staged(uri: str) -> Iterator[str]:
    """A local copy of the metadata directory a URI names (the directory itself or the log
    dir holding it): its path, removed afterwards. Raises OSError when it cannot be read."""
    fs, path, _ = _fs(uri)
    path = path.rstrip("/")
    top = tempfile.mkdtemp(prefix="mdshell-stage-")
    try:
        if os.path.basename(path) != METADATA_DIR:
            info = fs.get_file_info(f"{path}/{METADATA_DIR}")
            if info.type == pafs.FileType.Directory:
                path = f"{path}/{METADATA_DIR}"
        local = os.path.join(top, "logdir", METADATA_DIR)
        os.makedirs(local)
        if fs.get_file_info(path).type != pafs.FileType.Directory:
            raise FileNotFoundError(f"{uri}: no such directory")
        for info in fs.get_file_info(pafs.FileSelector(path)):
            if info.type == pafs.FileType.File:
                _copy(fs, info.path, os.path.join(local, info.base_name))
        props = os.path.dirname(path) + "/meta.properties"
        if fs.get_file_info(props).type == pafs.FileType.File:
            _copy(fs, props, os.path.join(top, "logdir", "meta.properties"))
        yield local
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _copy(fs: pafs.FileSystem, src: str, dst: str) -> None:
    with fs.open_input_stream(src) as f, open(dst, "wb") as out:
        while chunk := f.read(8 << 20):
            out.write(chunk)


def metadata_uri(uri: str) -> str:
    """The ``__cluster_metadata-0`` URI a directory URI names (the rows' ``directory``)."""
    uri = uri.rstrip("/")
    if uri.endswith("/" + METADATA_DIR):
        return uri
    try:
        fs, path, _ = _fs(uri)
        if fs.get_file_info(f"{path.rstrip('/')}/{METADATA_DIR}").type == \
                pafs.FileType.Directory:
            return f"{uri}/{METADATA_DIR}"
    except OSError:
        pass
    return uri
