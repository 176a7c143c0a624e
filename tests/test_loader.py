"""Directory loading rules that the fixtures do not pin down on their own."""

from __future__ import annotations

import shutil
from pathlib import Path

from mdshell.loader import DirectorySource

from .conftest import FIXTURES


def test_an_empty_newest_segment_is_normal(tmp_path: Path) -> None:
    """Kafka rolls a segment before writing to it: no warning for an empty newest one."""
    copy = tmp_path / "dir"
    shutil.copytree(FIXTURES / "cluster-basic", copy)
    base = DirectorySource(str(copy)).load()
    nxt = (base.end_offset or 0) + 1
    (copy / "__cluster_metadata-0" / f"{nxt:020d}.log").write_bytes(b"")
    loaded = DirectorySource(str(copy)).load()
    assert loaded.problems == []
    assert loaded.image.provenance.offset == base.image.provenance.offset


def test_the_log_dir_and_the_metadata_dir_give_the_same_image() -> None:
    a = DirectorySource(str(FIXTURES / "cluster-basic")).load()
    b = DirectorySource(str(FIXTURES / "cluster-basic" / "__cluster_metadata-0")).load()
    assert a.image == b.image
