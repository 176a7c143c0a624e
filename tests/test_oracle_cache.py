"""The oracle's cache never answers for other code: a verdict stored under another version
of the code that runs and reads Kafka's tools (or under the old key scheme, which had no
version) is not reused, and one stored by this code is."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import FIXTURES
from .kafka import jars, tools
from .oracle import MD, need_kafka

pytestmark = pytest.mark.oracle

SEGMENT = FIXTURES / "segments-snapshots" / MD / "00000000000000000037.log"


def _stale(key: str) -> None:
    tools._store(key, tools.Run(0, "a stale verdict\n", ""))


def test_a_verdict_stored_by_other_code_is_not_reused(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    need_kafka()
    monkeypatch.setattr(tools, "oracle_dir", lambda: tmp_path / "oracle")
    version, sha = jars.KAFKA_4, tools.sha256(SEGMENT)
    _stale(f"dump/{version}/{sha}-{SEGMENT.name}")  # the key scheme before CODE_VERSION
    _stale(f"dump/{'0' * 16}/{version}/{sha}-{SEGMENT.name}")  # another version of the code
    _stale(f"shell/{version}/{sha}")
    fresh = tools.dump(version, [SEGMENT])[SEGMENT]
    assert "a stale verdict" not in fresh.out
    assert "baseOffset: 37 " in fresh.out

    def no_jvm(*args: object, **kwargs: object) -> tools.Run:
        raise AssertionError("a verdict stored by this code must be reused")

    monkeypatch.setattr(tools, "_java", no_jvm)
    assert tools.dump(version, [SEGMENT])[SEGMENT] == fresh


def test_the_code_version_follows_the_code() -> None:
    assert tools.CODE_VERSION in tools.dump_key(jars.KAFKA_4, SEGMENT)
    assert tools.CODE_VERSION in tools.shell_key(jars.KAFKA_4, [SEGMENT])
    assert tools._code_version() == tools.CODE_VERSION


def test_only_kafka_4s_first_record_report_is_taken_out() -> None:
    """Kafka bug 4 (tests/kafka_bugs.py): the "-1 is followed by N" pair on a file's first
    record, and nothing else."""
    from .kafka_bugs import without_first_record_report as strip

    head = "Non-consecutive offsets in /x/00000000000000000037.log\n"
    bogus = head + "  -1 is followed by 37\n"
    assert strip(bogus, "4.3.1", 37) == ""
    real = head + "  -1 is followed by 37\n  40 is followed by 40\n"
    assert strip(real, "4.3.1", 37) == head + "  40 is followed by 40\n"
    assert strip(bogus, "4.3.1", 36) == bogus  # not the file's first record: a real report
    assert strip(bogus, "3.7.2", 37) == bogus  # 3.x has no such bug
    inside = head + "  52 is followed by 52\n"
    assert strip(inside, "4.3.1", 37) == inside
