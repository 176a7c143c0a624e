"""LOG DIRS in `brokers`: the count of log dirs a broker registered (KIP-858, metadata.version
3.7-IV2+), ``-`` in text and null in JSON when it registered none (never a false 0).

Real directories: the corpus (its INDEX.tsv gives each one's metadata.version, the broker's own
meta.properties its directory id), and a directory written through a metadata.version upgrade
as Kafka's controller writes it (a broker registered before the upgrade has no directories until
it registers again; a snapshot writes it as RegisterBrokerRecord v3 with an empty LogDirs)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from mdshell.synth.builder import ClusterBuilder
from mdshell.tui.engine import Engine

from .conftest import CORPUS, cli, corpus_dirs, corpus_ids, need_corpus

MV_3_6_IV2, MV_3_7_IV2 = 14, 17  # Kafka's MetadataVersion levels; 3.7-IV2 added LogDirs


def brokers(*args: str) -> tuple[list[list[str]], list[dict[str, Any]]]:
    """`brokers` in text (rows split into cells) and in JSON."""
    text, data = cli(*args, "brokers"), cli(*args, "-o", "json", "brokers")
    assert text.code == 0 and data.code == 0, text.err + data.err
    return [line.split() for line in text.out.splitlines()], json.loads(data.out)


def log_dirs_cells(rows: list[list[str]]) -> list[str]:
    column = rows[0].index("LOG")  # the header "LOG DIRS" is two words: its cell is one
    return [r[column] for r in rows[1:]]


def corpus_levels() -> dict[str, int]:
    """metadata.version level of each corpus directory (INDEX.tsv; blank: never set)."""
    with open(CORPUS / "INDEX.tsv", newline="") as f:
        return {r["id"]: int(r["metadata_version"] or 0)
                for r in csv.DictReader(f, delimiter="\t")}


def meta_properties(directory: Path) -> dict[str, str]:
    lines = (directory / "meta.properties").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))


# ---------------------------------------------------------------- the corpus


@pytest.mark.parametrize("directory", corpus_dirs() or [None], ids=corpus_ids())
def test_log_dirs_of_real_directories(directory: Path | None) -> None:
    need_corpus()
    assert directory is not None
    rows, data = brokers("-d", str(directory))
    cells = log_dirs_cells(rows)
    assert len(cells) == len(data)
    if corpus_levels()[directory.name] < MV_3_7_IV2:  # no registration can carry LogDirs
        assert cells == ["-"] * len(data)
        assert [b["logDirs"] for b in data] == [None] * len(data)
        return
    props = meta_properties(directory)
    own = [b for b in data if str(b["id"]) == props["node.id"]]
    for b in own:  # the broker that wrote this directory registered its directory id
        dirs = cli("-d", str(directory), "-o", "json", "cat",
                   f"/image/cluster/brokers/{b['id']}").out
        assert props["directory.id"] in json.loads(dirs)[0]["value"]["directories"]
    assert [b["logDirs"] for b in data] == [int(c) for c in cells]
    assert all(n >= 1 for n in (b["logDirs"] for b in data))


def test_old_and_new_corpus_directories_text() -> None:
    """A Kafka 3.4 broker (metadata.version 1-8) and a Kafka 3.8 broker at metadata.version
    3.5-IV2 (meta.properties has a directory.id, the registration has none) show "-"; a
    3.7-IV4 cluster shows its one registered dir."""
    need_corpus()
    rows, data = brokers("-d", str(CORPUS / "ArpithaPrakash__Real-Time-Air-Quality-"
                                   "Prediction-with-Apache-Kafka"))
    assert rows[1][-1] == "metadata.version=1-8"  # supported by Kafka 3.4 only
    assert log_dirs_cells(rows) == ["-"] and data[0]["logDirs"] is None
    old = CORPUS / "13LAckHEart__kafka"
    assert "directory.id" in meta_properties(old)
    assert cli("-d", str(old), "brokers").out.splitlines() == [
        "ID  STATE   EPOCH  RACK  LOG DIRS  ENDPOINTS                   FEATURES",
        "1   fenced  914    -     -         PLAINTEXT://localhost:9092  metadata.version=1-20"]
    new = CORPUS / "Debdyuti-01__ETL-Data-Engineering-Pipeline-for-Real-Data"
    rows, data = brokers("-d", str(new))
    assert log_dirs_cells(rows) == ["1"] and data[0]["logDirs"] == 1


# ---------------------------------------------------------------- a metadata.version upgrade


def upgraded_cluster(out: Path) -> dict[str, int]:
    """Brokers 1 and 2 registered at 3.6-IV2, the cluster upgraded to 3.7-IV2, broker 2
    registered again with two dirs, then a snapshot and one more broker. Offsets of the steps."""
    b = ClusterBuilder(str(out), seed=11, metadata_version=MV_3_6_IV2)
    b.elect_controller_leader()
    b.bootstrap()
    for bid in (1, 2):
        b.register_broker(bid)
        b.unfence_broker(bid)
    steps = {"upgrade": b.set_feature("metadata.version", MV_3_7_IV2)}
    steps["reregistered"] = b.register_broker(2, log_dirs=2)
    b.unfence_broker(2)
    b.snapshot()
    steps["new broker"] = b.register_broker(3, log_dirs=3)
    b.finish()
    return steps


def test_log_dirs_through_a_metadata_version_upgrade(tmp_path: Path) -> None:
    out = tmp_path / "kafka-logs"
    steps = upgraded_cluster(out)
    rows, data = brokers("-d", str(out))  # broker 1 comes from the snapshot (v3, no LogDirs)
    assert log_dirs_cells(rows) == ["-", "2", "3"]
    assert [b["logDirs"] for b in data] == [None, 2, 3]
    snapshot = next((out / "__cluster_metadata-0").glob("*.checkpoint"))
    recs = json.loads(cli("-s", str(snapshot), "-o", "json", "records", "--type",
                          "RegisterBrokerRecord").out)
    one = [r for r in recs if r["data"]["brokerId"] == 1]
    assert [(r["version"], r["data"]["logDirs"]) for r in one] == [(3, [])]
    rows, data = brokers("-d", str(out), "--at", str(steps["upgrade"]))
    assert log_dirs_cells(rows) == ["-", "-"] and [b["logDirs"] for b in data] == [None, None]
    rows, _ = brokers("-d", str(out), "--at", str(steps["reregistered"]))
    assert log_dirs_cells(rows) == ["-", "2"]


def test_overview_rows_say_none_rather_than_zero(tmp_path: Path) -> None:
    out = tmp_path / "kafka-logs"
    upgraded_cluster(out)
    engine = Engine.open(str(out), None)
    engine.load()
    assert [(r.id, r.dirs) for r in engine.overview().brokers] == [(1, None), (2, 2), (3, 3)]
