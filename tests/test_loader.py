"""Directory loading rules that the fixtures do not pin down on their own."""

from __future__ import annotations

import shutil
from pathlib import Path

from mdshell.session import load
from mdshell.source import DirectorySource

from .conftest import FIXTURES


def test_an_empty_newest_segment_is_normal(tmp_path: Path) -> None:
    """Kafka rolls a segment before writing to it: no warning for an empty newest one."""
    copy = tmp_path / "dir"
    shutil.copytree(FIXTURES / "cluster-basic", copy)
    base = load(DirectorySource(str(copy)))
    nxt = (base.end_offset or 0) + 1
    (copy / "__cluster_metadata-0" / f"{nxt:020d}.log").write_bytes(b"")
    loaded = load(DirectorySource(str(copy)))
    assert loaded.problems == []
    assert loaded.image.provenance.offset == base.image.provenance.offset


def test_the_log_dir_and_the_metadata_dir_give_the_same_image() -> None:
    a = load(DirectorySource(str(FIXTURES / "cluster-basic")))
    b = load(DirectorySource(str(FIXTURES / "cluster-basic" / "__cluster_metadata-0")))
    assert a.image == b.image
