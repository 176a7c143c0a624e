"""The compiled record handlers (``_cwalk``: PartitionChangeRecord...) against their Python
reference (``image.replay.PYTHON_HANDLERS``): the same image, problems, history and time
travel on every fixture, on generated directories with every kind of change (topics made and
removed, transactions, unknown topics and partitions) and on corpus directories."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from mdshell.commands import Shell
from mdshell.commands.render import emit
from mdshell.image import replay
from mdshell.session import Session
from mdshell.synth import Scenario, generate

from .conftest import FIXTURES, corpus_dirs

MIX = {"leader-election": 40, "isr-shrink": 20, "isr-expand": 20, "topic-config": 10,
       "broker-restart": 10, "create-topic": 5, "delete-topic": 5, "reassign": 10, "elr": 10,
       "acl": 5, "scram": 5, "quota": 5}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("handlers") / "d"
    generate(Scenario(brokers=6, topics=30, partitions_per_topic=8, history_changes=4000,
                      snapshot_at=("setup", "2000"), log_from="start", mix=MIX,
                      created_partitions=(5, 40), max_records_per_batch=16, seed=9),
             str(out))
    return out


def _facts(directory: Path) -> list[object]:
    session = Session.open(str(directory))
    shell = Shell(session)
    out = []
    for cmd in (["tree", "/image"], ["-o", "json", "health"]):
        text, err = io.StringIO(), io.StringIO()
        result = shell.run(cmd[2:] if cmd[0] == "-o" else cmd)
        emit(result, text, err, output="json" if cmd[0] == "-o" else "text")
        out.append(text.getvalue())
    latest = session.latest
    out.append([(p.code, p.message) for p in latest.problems])
    out.append(latest.replayer.history.offsets if latest.replayer else None)
    first, last = session.offset_range()
    if first is not None and last is not None:
        for at in (first + (last - first) // 3, (first + last) // 2, last - 1):
            session.set_loaded(session.load_at(at))
            text = io.StringIO()
            emit(shell.run(["tree", "/image/topics"]), text, io.StringIO())
            out.append((at, text.getvalue()))
    return out


def _both(directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if replay.HANDLERS == replay.PYTHON_HANDLERS:
        pytest.skip("no compiled handlers (MDSHELL_PURE=1, or no C compiler)")
    compiled = _facts(directory)
    with monkeypatch.context() as m:
        m.setattr(replay, "HANDLERS", dict(replay.PYTHON_HANDLERS))
        python = _facts(directory)
    assert compiled == python, directory


DIRS = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and p.name != "bad-no-metadata")


@pytest.mark.parametrize("directory", DIRS, ids=[p.name for p in DIRS])
def test_fixtures(directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _both(directory, monkeypatch)


def test_every_kind_of_change(mixed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _both(mixed, monkeypatch)


@pytest.mark.corpus
def test_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    for directory in corpus_dirs()[:12]:
        _both(Path(directory), monkeypatch)


def test_changes_the_image_cannot_take(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Changes to a partition that does not exist, to a deleted topic, inside a metadata
    transaction and of partitions held undecoded: the same warnings and image both ways."""
    from mdshell.synth import ClusterBuilder

    b = ClusterBuilder(str(tmp_path / "logs"), seed=5, metadata_version=21)
    b.elect_controller_leader()
    b.bootstrap()
    for i in range(3):
        b.register_broker(i)
        b.unfence_broker(i)
    b.create_topic("kept", 4, 3)
    b.create_topic("gone", 2, 3)
    b.snapshot()
    b.change_partition("kept", 1, leader=2)  # held undecoded after the snapshot
    b.change_partition("kept", 99, leader=1)  # no such partition
    gone = b.topic_id("gone")
    b.delete_topic("gone")
    b.append([replay_record(gone)])  # a change of a topic removed
    b.begin_transaction("in a transaction")
    b.change_partition("kept", 2, isr=[0, 1])
    b.end_transaction()
    b.change_partition("kept", 2, replicas=[0, 1, 2], directories=[])
    b.finish()
    _both(tmp_path / "logs", monkeypatch)


def replay_record(topic_id: bytes) -> object:
    from mdshell.synth.records import meta

    return meta("PartitionChangeRecord", 0, partitionId=0, topicId=topic_id, leader=1)
