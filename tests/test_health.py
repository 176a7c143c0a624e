"""``health`` on fixtures built to fail one check each, and on the corpus."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from mdshell.image import model as m
from mdshell.image.health import LOST_DIR, check_partitions, run_checks
from mdshell.image.names import TOPIC_CONFIG

from .conftest import CORPUS, FIXTURES, need_corpus, open_shell, run_cli

# fixture -> (check, status); every other check must be ok or info
CASES = {
    "health-fenced": {"fenced brokers": "fail", "controlled shutdown": "warn"},
    "health-offline": {"offline partitions": "fail"},
    "health-under-replicated": {"under-replicated partitions": "warn"},
    "health-under-min-isr": {"under-min-ISR partitions": "fail",
                             "under-replicated partitions": "warn"},
    "health-stale-controller": {"controller registrations": "fail"},
    "health-unsupported-feature": {"feature support": "fail"},
    "cluster-basic": {"under-replicated partitions": "warn"},
}


def health(directory: str) -> tuple[int, dict]:
    out = run_cli("-d", directory, "-o", "json", "health")
    assert "Traceback" not in out.stderr
    return out.returncode, json.loads(out.stdout)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_fixture_breaks_exactly_its_check(name: str) -> None:
    rc, data = health(str(FIXTURES / name))
    statuses = {c["name"]: c["status"] for c in data["checks"]}
    expected = CASES[name]
    for check, status in statuses.items():
        assert status == expected.get(check, status if status in ("ok", "info") else "ok"), check
    for check, status in expected.items():
        assert statuses[check] == status
    failing = "fail" in expected.values()
    assert rc == (1 if failing else 0)
    assert data["ok"] is not failing


def test_items_name_the_culprits() -> None:
    _, data = health(str(FIXTURES / "health-under-min-isr"))
    check = next(c for c in data["checks"] if c["name"] == "under-min-ISR partitions")
    assert check["items"] == [check["items"][0]]
    assert check["items"][0]["message"].startswith("payments-0: isr [")
    assert "min.insync.replicas 2 (topic config)" in check["items"][0]["message"]
    _, data = health(str(FIXTURES / "health-unsupported-feature"))
    check = next(c for c in data["checks"] if c["name"] == "feature support")
    assert [i["message"] for i in check["items"]] == [
        "broker 4 supports metadata.version 1-19, but the finalized level is 21 (3.9-IV0)"]


def test_elr_state_is_reported() -> None:
    _, data = health(str(FIXTURES / "elr"))
    check = next(c for c in data["checks"] if c["name"] == "eligible leader replicas")
    assert any(item["message"].startswith("elr-c-1:") for item in check["items"])


def test_text_output_marks_failures() -> None:
    out = run_cli("-d", str(FIXTURES / "health-offline"), "health")
    assert out.returncode == 1
    assert "FAIL  offline partitions: 1 of 3 partitions have no leader" in out.stdout
    assert out.stdout.rstrip().endswith("1 check failed")


def test_corpus_cluster_shut_down() -> None:
    """A corpus copy taken with the broker stopped: fenced after a controlled shutdown (a
    stopped cluster: a warning, issue 35 item 10), offline, leaderless partitions."""
    need_corpus()
    rc, data = health(str(CORPUS / "13LAckHEart__kafka"))
    statuses = {c["name"]: c["status"] for c in data["checks"]}
    assert rc == 1
    assert statuses["fenced brokers"] == "warn" and statuses["offline partitions"] == "fail"


# ---------------------------------------------------------------- checks on built images


def _image(**part: object) -> m.Image:
    img = m.Image(metadata_version=21)
    for bid, fenced in ((1, False), (2, False), (3, True)):
        img.brokers[bid] = m.BrokerRegistration(bid, 1, bytes(16), {}, {"metadata.version":
                                                (1, 21)}, None, fenced, False, False, [])
    fields: dict = dict(replicas=[1, 2], directories=[b"a" * 16, b"b" * 16], isr=[1, 2],
                        removing_replicas=[], adding_replicas=[], elr=[], last_known_elr=[],
                        leader=1, leader_recovery_state=0, leader_epoch=0, partition_epoch=0)
    fields.update(part)
    topic = m.Topic("t", b"\x01" * 16, {0: m.Partition(**fields)})
    img.topics_by_id[topic.id] = img.topics_by_name["t"] = topic
    return img


def _status(img: m.Image) -> dict[str, str]:
    return {c.name: c.status for c in run_checks(img, [1000])}


def test_leader_on_a_fenced_or_unknown_broker() -> None:
    assert _status(_image(leader=3))["partition leaders"] == "fail"
    assert _status(_image(leader=9))["partition leaders"] == "fail"
    assert "partition leaders" not in _status(_image())


def test_adding_replicas_are_not_under_replication() -> None:
    img = _image(replicas=[1, 2, 3], adding_replicas=[3], directories=[b"a" * 16] * 3)
    st = _status(img)
    assert st["under-replicated partitions"] == "ok" and st["reassignments"] == "info"


def test_lost_log_dir_and_unclean_recovery() -> None:
    st = _status(_image(directories=[b"a" * 16, LOST_DIR], leader_recovery_state=1))
    assert st["offline log dirs"] == "fail" and st["unclean recovery"] == "warn"


def test_metadata_version_never_set_is_not_checked() -> None:
    img = _image()
    img.metadata_version = None
    for b in img.brokers.values():
        b.supported_features = {}
    assert _status(img)["feature support"] == "ok"


@pytest.mark.parametrize(("name", "words"), [
    ("bad-log-gap", "the image is incomplete because of"),
    ("bad-crc", "the image may be wrong because of"),
    ("bad-truncated-tail", "the image may be wrong because of")])
def test_damaged_or_incomplete_data_fails_health(name: str, words: str) -> None:
    """Issue 7: warnings then "healthy" was a lie; the data check fails, in text and JSON."""
    rc, data = health(str(FIXTURES / name))
    statuses = {c["name"]: c["status"] for c in data["checks"]}
    assert rc == 1 and data["ok"] is False and statuses["data"] == "fail"
    check = next(c for c in data["checks"] if c["name"] == "data")
    assert check["summary"].startswith(words) and check["items"]
    text = run_cli("-d", str(FIXTURES / name), "health")
    assert text.returncode == 1
    assert f"FAIL  data: {words}" in text.stdout
    assert "healthy" not in text.stdout.splitlines()[-1]
    # a check that passed on data that may be wrong or incomplete is no clean bill
    passed = [c for c in data["checks"] if c["status"] == "ok"]
    assert passed == [], [c["name"] for c in passed]
    unsure = [c for c in data["checks"] if c["summary"].endswith("in the image as read (see data)")]
    assert {c["status"] for c in unsure} == {"info"} and len(unsure) >= 4
    assert not [line for line in text.stdout.splitlines() if line.startswith("OK ")]


def test_clean_data_passes_the_data_check() -> None:
    _, data = health(str(FIXTURES / "cluster-basic"))
    check = data["checks"][0]
    assert (check["name"], check["status"], check["items"]) == ("data", "ok", [])
    assert check["summary"] == "the image is complete as of offset 158"


# ------------------------------------------------ undecoded records, judged once by their bytes


def _decoded(img: m.Image) -> m.Image:
    """The image with every partition decoded on its own: health reads each in full."""
    def decoded(t: m.Topic) -> dict[int, m.Partition | m.LazyPartition]:
        parts = {pid: t.partition(pid) for pid in t.partitions}
        return {pid: p for pid, p in parts.items() if p is not None}

    topics = {name: replace(t, partitions=decoded(t)) for name, t in img.topics_by_name.items()}
    return replace(img, topics_by_name=topics,
                   topics_by_id={t.id: t for t in topics.values()})


def _findings(img: m.Image) -> list[tuple[str, str, str, list[dict]]]:
    return [(c.name, c.status, c.summary, c.details()) for c in check_partitions(img)]


def test_records_judged_by_their_bytes_are_judged_as_decoded_ones() -> None:
    """One record's bytes under topics with different min.insync.replicas, then its leader
    fenced and unregistered, with verdicts remembered from the images before: each image's
    findings are those of the same image with every partition decoded on its own."""
    img = open_shell("kafka37-snapshot").session.latest.image
    topic = max(img.topics_by_name.values(), key=lambda t: len(t.partitions))
    lazy = next(p for p in topic.partitions.values() if isinstance(p, tuple))
    for i, name in enumerate(("same-a", "same-b", "same-c")):
        t = m.Topic(name, bytes([i + 1]) * 16, {pid: lazy for pid in range(5)})
        img.topics_by_name[name] = img.topics_by_id[t.id] = t
    shared = m.decode_clean(lazy)
    assert shared is not None and shared.leader in img.brokers
    img.configs[(TOPIC_CONFIG, "same-b")] = {"min.insync.replicas": str(len(shared.isr) + 1)}
    img.configs[(TOPIC_CONFIG, "same-c")] = {"min.insync.replicas": "not a number"}
    fenced = replace(img, brokers={**img.brokers, shared.leader: replace(
        img.brokers[shared.leader], fenced=True)})
    gone = replace(img, brokers={b: r for b, r in img.brokers.items() if b != shared.leader})
    for image in (img, fenced, gone, img):
        assert _findings(image) == _findings(_decoded(image))
    under_min = {d["topic"] for c in check_partitions(img) if c.name == "under-min-ISR partitions"
                 for d in c.details()}
    assert "same-b" in under_min and not {"same-a", "same-c"} & under_min
    leaders = {d["topic"] for c in check_partitions(fenced) if c.name == "partition leaders"
               for d in c.details()}
    assert {"same-a", "same-b", "same-c"} <= leaders
