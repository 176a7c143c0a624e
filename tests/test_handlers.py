"""The compiled record handlers (``_cwalk``: PartitionChangeRecord...) against their Python
reference (``image.replay.PYTHON_HANDLERS``): the same image, problems, history and time
travel on every fixture, on generated directories with every kind of change (topics made and
removed, transactions, unknown topics and partitions) and on corpus directories."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from mdshell.commands import Shell
from mdshell.commands.render import emit
from mdshell.image import replay
from mdshell.session import Session
from mdshell.synth import Scenario, generate

from .conftest import FIXTURES, corpus_dirs, three_brokers

MIX = {"leader-election": 40, "isr-shrink": 20, "isr-expand": 20, "topic-config": 10,
       "broker-restart": 10, "create-topic": 5, "delete-topic": 5, "reassign": 10, "elr": 10,
       "acl": 5, "scram": 5, "quota": 5, "token": 5, "producer-ids": 5, "broker-config": 5}


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
            emit(shell.run(["tree", "/image"]), text, io.StringIO())
            out.append((at, text.getvalue()))
    return out


def _both(directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if replay.HANDLERS == replay.PYTHON_HANDLERS:
        pytest.skip("no compiled handlers (MDSHELL_PURE=1, or no C compiler)")
    compiled = _facts(directory)
    with monkeypatch.context() as m:
        m.setattr(replay, "HANDLERS", dict(replay.PYTHON_HANDLERS))
        m.setattr(replay, "_elr_held", list)  # ClearElr reads every partition
        python = _facts(directory)
    assert compiled == python, directory


DIRS = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and p.name != "bad-no-metadata")


@pytest.mark.parametrize("directory", DIRS, ids=[p.name for p in DIRS])
def test_fixtures(directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _both(directory, monkeypatch)


def test_every_kind_of_change(mixed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _both(mixed, monkeypatch)


def test_owned_ids_in_a_plain_set(mixed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled handlers also take a builder whose ``_owned`` is a set of ints (what
    the builder keeps without the compiled IdSet)."""
    monkeypatch.setattr(replay, "_cwalk", SimpleNamespace(IdSet=set))
    assert isinstance(replay.ImageBuilder()._owned, set)
    _both(mixed, monkeypatch)


@pytest.mark.corpus
def test_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    for directory in corpus_dirs()[:12]:
        _both(Path(directory), monkeypatch)


def test_changes_the_image_cannot_take(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Changes to a partition that does not exist, to a deleted topic, inside a metadata
    transaction and of partitions held undecoded: the same warnings and image both ways."""
    b = three_brokers(tmp_path / "logs", seed=5)
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


def test_other_kinds_the_image_cannot_take(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled handlers of broker changes, configs, client quotas, ACLs, SCRAM users,
    tokens and producer ids on what they leave to their Python handler (a broker not
    registered or of another epoch, unknown values, log dirs given; removals of what is not
    there; a config removed, set again and set on a resource new since the mark; a record
    stored twice),
    before and after a snapshot: the same warnings, image and history both ways."""
    from mdshell.synth.records import meta

    b = three_brokers(tmp_path / "logs", seed=6)
    b.create_topic("t", 2, 3)
    acl = b.add_acl("TOPIC", "t", "User:alice", "READ")
    b.upsert_scram("alice")
    token = b.create_token("alice")
    b.set_config("TOPIC", "t", "retention.ms", "1000")
    b.snapshot()

    def change(**fields: object) -> None:
        b.append([meta("BrokerRegistrationChangeRecord", 2, **fields)])

    epoch = b._broker_epoch(1)
    for _ in range(2):  # the second time round, everything is owned since the first
        change(brokerId=1, brokerEpoch=epoch, fenced=1)
        change(brokerId=1, brokerEpoch=epoch, fenced=-1, inControlledShutdown=1)
        change(brokerId=1, brokerEpoch=epoch + 1, fenced=1)  # another epoch
        change(brokerId=9, brokerEpoch=epoch, fenced=1)  # not registered
        change(brokerId=1, brokerEpoch=epoch, fenced=2)  # an unknown value
        change(brokerId=1, brokerEpoch=epoch, inControlledShutdown=3)
        change(brokerId=2, brokerEpoch=b._broker_epoch(2), logDirs=[bytes(range(16))])
        b.set_config("TOPIC", "t", "retention.ms", None)  # the resource's last key
        b.set_config("TOPIC", "t", "cleanup.policy", "compact")
        b.set_config("TOPIC", "t", "cleanup.policy", "delete")
        b.set_config("BROKER", "", "log.retention.ms", "5")
        b.set_config("TOPIC", "gone", "x", None)
        b.remove_acl(acl)
        b.remove_acl(acl)  # unknown now: said
        b.remove_scram("alice")
        b.remove_scram("nobody")
        b.remove_token(token)
        b.remove_token("nothing")
        acl = b.add_acl("TOPIC", "t", "User:bob", "WRITE")
        b.add_acl("TOPIC", "t", "User:bob", "WRITE")
        b.upsert_scram("alice")
        token = b.create_token("bob", renewers=["carol"])
        b.allocate_producer_ids(1)
        # client quotas: two types (sorted by type), a type given twice (its last name), the
        # default user, no entity at all, a value set again, the entity's last key removed
        b.set_quota({"user": "u", "client-id": "app"}, "producer_byte_rate", 1024.0)
        b.set_quota({"user": None}, "consumer_byte_rate", 2.0)
        b.set_quota({"user": None}, "consumer_byte_rate", 3.0)
        b.append([meta("ClientQuotaRecord", 0, entity=[
            {"entityType": "user", "entityName": "a"}, {"entityType": "ip", "entityName": None},
            {"entityType": "user", "entityName": "b"}], key="k", value=1.5, remove=False)])
        b.append([meta("ClientQuotaRecord", 0, entity=[], key="k", value=7.0, remove=False)])
        b.set_quota({"user": "u", "client-id": "app"}, "producer_byte_rate", None)
        b.set_quota({"ip": "10.0.0.1"}, "connection_creation_rate", None)  # none there
        # registrations: two log dirs (their order is Kafka's Uuid order), cordoned log
        # dirs, a listener named twice, none; then changes of the new epoch
        b.register_broker(3, log_dir_ids=[b"\xff" * 16, bytes(16), b"\x7f" * 16])
        b.register_broker(4, listeners=[("A", "h1", 1, 0), ("B", "h2", 2, 1), ("A", "h3", 3, 2)])
        b.register_broker(5, listeners=[], log_dirs=0)
        b.append([meta("RegisterBrokerRecord", 4, brokerId=6, brokerEpoch=7,
                       incarnationId=bytes(16), endPoints=[], features=[], rack=None,
                       fenced=False, logDirs=[bytes(16)],
                       cordonedLogDirs=[b"\x80" + bytes(15), bytes(16)])])
        change(brokerId=6, brokerEpoch=7, fenced=-1, cordonedLogDirs=[])
        epoch = b.register_broker(1, log_dir_ids=[bytes(range(16))])
        change(brokerId=1, brokerEpoch=epoch, fenced=-1)
    b.finish()
    load = sys.modules["mdshell.session.load"]  # the module (the package exports load())
    monkeypatch.setattr(load, "CHECKPOINT_RECORDS", 3)  # history marks all along
    _both(tmp_path / "logs", monkeypatch)


@pytest.mark.parametrize("handlers", ["compiled", "python"])
def test_a_re_registration_shares_the_dicts_it_repeats(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handlers: str) -> None:
    """A broker registered again with the same listeners and features takes its earlier
    registration's dicts (a busy log re-registers thousands of times: memory); a changed
    one keeps its own. Both handler sets, with history marks at every record."""
    from mdshell.synth import ClusterBuilder

    if handlers == "compiled" and replay.HANDLERS == replay.PYTHON_HANDLERS:
        pytest.skip("no compiled handlers (MDSHELL_PURE=1, or no C compiler)")
    if handlers == "python":
        monkeypatch.setattr(replay, "HANDLERS", dict(replay.PYTHON_HANDLERS))
    b = ClusterBuilder(str(tmp_path / "logs"), seed=7, metadata_version=21)
    b.elect_controller_leader()
    b.bootstrap()
    for _ in range(3):
        b.register_broker(0, log_dir_ids=[bytes(16)])
    b.register_broker(0, log_dir_ids=[bytes(16)], listeners=[("PLAINTEXT", "moved", 9092, 0)])
    b.register_broker(0, log_dir_ids=[bytes(16)], features={"metadata.version": (1, 21)})
    b.finish()
    load = sys.modules["mdshell.session.load"]
    monkeypatch.setattr(load, "CHECKPOINT_RECORDS", 1)
    session = Session.open(str(tmp_path / "logs"))
    regs = []
    for at in session.latest.replayer.history.offsets:  # type: ignore[union-attr]
        reg = session.load_at(at).image.brokers.get(0)
        if reg is not None and all(reg is not r for r in regs):
            regs.append(reg)
    assert len(regs) == 5, regs
    first, second, third, moved, older = regs
    for same in (second, third):
        assert same.listeners is first.listeners
        assert same.supported_features is first.supported_features
    assert moved.listeners["PLAINTEXT"].host == "moved"
    assert moved.listeners is not first.listeners
    assert moved.supported_features is first.supported_features
    # shared with the registration it replaces only: the one before moved, so its own
    assert older.listeners == first.listeners and older.listeners is not first.listeners
    assert older.supported_features == {"metadata.version": (1, 21)}


def test_re_registrations_read_from_their_bytes(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Re-registrations the run loop makes from their bytes and the registration they
    replace (same endpoints and features bytes): at every version, with a rack, fencing and
    log dirs changed, after a snapshot, an unregistration, a Python-handled registration
    (two log dirs) and a changed listener; the same image, warnings and history both ways."""
    from mdshell.synth.records import meta

    b = three_brokers(tmp_path / "logs", seed=8)
    b.snapshot()
    eps = [{"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}]
    feats = [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 21}]

    def register(bid: int, version: int, **fields: object) -> None:
        d: dict[str, object] = {"brokerId": bid, "incarnationId": bytes(range(16)),
                                "brokerEpoch": b.log.next_offset, "endPoints": eps,
                                "features": feats, "rack": None, "fenced": True}
        if version >= 1:
            d["inControlledShutdown"] = False
        if version >= 2:
            d["isMigratingZkBroker"] = False
        if version >= 3:
            d["logDirs"] = [bytes(16)]
        d.update(fields)
        b.append([meta("RegisterBrokerRecord", version, **d)])

    for version in (0, 1, 2, 3, 4, 3, 1):
        register(1, version)
        register(1, version, rack="r1", fenced=False)
    register(1, 3, logDirs=[bytes(16), b"\x01" * 16])  # the Python handler's
    register(1, 3)
    b.append([meta("UnregisterBrokerRecord", 0, brokerId=1, brokerEpoch=0)])
    register(1, 2)
    register(1, 2, isMigratingZkBroker=True, inControlledShutdown=True)
    eps = [{"name": "PLAINTEXT", "host": "moved", "port": 9092, "securityProtocol": 0}]
    register(1, 2)
    register(2, 2)
    register(1, 4, cordonedLogDirs=[bytes(16)], logDirs=[bytes(16)])
    register(1, 4, cordonedLogDirs=None, logDirs=[])
    b.finish()
    load = sys.modules["mdshell.session.load"]
    for every in (3, 1000):
        monkeypatch.setattr(load, "CHECKPOINT_RECORDS", every)
        _both(tmp_path / "logs", monkeypatch)
