"""What live mode lays out from what it fetched, without Kafka: the virtual directory.

The network part of :class:`LiveSource` (``__init__``: connect, learn, catch up) is skipped;
what an observer fetched is set instead, and the source's own layout is read.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from mdshell.problems import Problem
from mdshell.session import load
from mdshell.source.directory import DirectorySource
from mdshell.source.live import LiveSource
from mdshell.source.logscan import iter_log
from mdshell.source.quorum.client import Client
from mdshell.source.quorum.config import ClientConfig
from mdshell.source.quorum.discover import ClusterView
from mdshell.source.quorum.observer import FetchedLog, Observer

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINT = (ROOT / "fixtures" / "cluster-basic" / "__cluster_metadata-0"
              / "00000000000000000096-0000000001.checkpoint")


def fetched(log: FetchedLog) -> LiveSource:
    """A live source holding ``log`` as if an observer had fetched it."""
    source = LiveSource.__new__(LiveSource)
    observer = Observer(Client("127.0.0.1:9", ClientConfig()))  # never connects
    observer.log = log
    source.observer, source.lock, source.degraded = observer, observer.lock, None
    source.endpoints, source.notices, source.view = "127.0.0.1:9", [], ClusterView()
    source._relayout()
    return source


def _empty(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.code == "empty"]


def test_a_snapshot_alone_draws_no_empty_segment_warning(tmp_path: Path) -> None:
    """The snapshot fetched reaches the high watermark: the segment laid out after it is
    empty and exists nowhere, so neither the load nor ``records`` warns about it (the
    directory with such a file does, for ``records``: nothing else is there)."""
    source = fetched(FetchedLog(CHECKPOINT.read_bytes(), (96, 1)))
    assert [s.size for s in source.segments()] == [0]  # kept: save writes it, as Kafka has one
    problems: list[Problem] = []
    assert list(iter_log(source, problems=problems)) == []
    assert _empty(problems) == []
    loaded = load(source)
    assert loaded.image.metadata_version is not None
    assert _empty(loaded.problems) == []

    disk = tmp_path / "__cluster_metadata-0"
    disk.mkdir()
    shutil.copy(CHECKPOINT, disk)
    (disk / "00000000000000000096.log").write_bytes(b"")
    on_disk: list[Problem] = []
    list(iter_log(DirectorySource(str(disk)), problems=on_disk))
    assert len(_empty(on_disk)) == 1  # a file that is there: worth a word
