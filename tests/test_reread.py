"""Reading a directory again (``r``, ``--follow``): the verdict comes from what is on disk
now (issue 31, class 9). A cut last batch that Kafka completes is read and the "cut short"
goes; bytes appended that are not a batch are damage; a file that shrank or changed before
the point already read is said, and the directory loaded afresh."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mdshell.session import Session
from mdshell.session.appends import Follow, reread

from .conftest import FIXTURES

MD = "__cluster_metadata-0"


def _copy(tmp_path: Path, name: str = "cluster-basic") -> tuple[Path, Path, bytes]:
    d = tmp_path / name
    shutil.copytree(FIXTURES / name, d)
    log = sorted((d / MD).glob("*.log"))[-1]
    return d, log, log.read_bytes()


def _batch_ends(data: bytes) -> list[int]:
    ends, pos = [], 0
    while pos + 12 <= len(data):
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
        ends.append(pos)
    return ends


def _codes(session: Session) -> set[str]:
    return {p.code for p in session.latest.problems}


def _touch_later(path: Path) -> None:
    """A modification time surely after the one read (file systems round times)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_a_cut_last_batch_completed_later_clears_cut_short(tmp_path: Path) -> None:
    d, log, data = _copy(tmp_path)
    whole = Session.open(directory=str(d))
    cut = _batch_ends(data)[-2] + 30  # inside the last batch
    log.write_bytes(data[:cut])
    session = Session.open(directory=str(d))
    assert "truncated" in _codes(session)
    assert session.verdict().state != "complete"
    with log.open("ab") as f:  # Kafka finishes the batch
        f.write(data[cut:])
    assert reread(session).advanced
    assert not _codes(session) & {"truncated", "image", "writing"}
    assert session.verdict().state == whole.verdict().state
    assert session.image.provenance == whole.image.provenance
    assert session.latest.next_offset == whole.latest.next_offset


def test_a_batch_being_written_is_said_and_read_when_whole(tmp_path: Path) -> None:
    d, log, data = _copy(tmp_path)
    ends = _batch_ends(data)
    log.write_bytes(data[:ends[-4]])
    session = Session.open(directory=str(d))
    assert not _codes(session) & {"truncated", "writing"}
    with log.open("ab") as f:
        f.write(data[ends[-4]:ends[-2] + 20])  # two batches and a part of the next
    assert reread(session).advanced
    assert "writing" in _codes(session) and "truncated" not in _codes(session)
    assert session.verdict().state == "complete"  # being written is not damage
    with log.open("ab") as f:
        f.write(data[ends[-2] + 20:])
    reread(session)
    assert "writing" not in _codes(session)
    assert session.latest.next_offset == Session.open(directory=str(d)).latest.next_offset


def test_garbage_appended_is_damage(tmp_path: Path) -> None:
    d, log, data = _copy(tmp_path)
    session = Session.open(directory=str(d))
    assert session.verdict().state == "complete"
    with log.open("ab") as f:
        f.write(b"\xff" * 100)  # a length of -1: no batch
    assert not reread(session).advanced
    assert "corrupt" in _codes(session)
    assert session.verdict().state == "damaged"
    log.write_bytes(data)  # the garbage removed again: the file shrank, the log is whole
    got = reread(session)
    assert got.reloaded is not None and "shrank" in got.reloaded
    assert session.verdict().state == "complete"


def test_a_byte_changed_before_the_point_read_reloads(tmp_path: Path) -> None:
    d, log, data = _copy(tmp_path)
    session = Session.open(directory=str(d))
    ends = _batch_ends(data)
    b = bytearray(data)
    b[ends[-3] + 40] ^= 0xFF  # inside the third batch from the end: a CRC mismatch now
    log.write_bytes(bytes(b))
    _touch_later(log)
    got = reread(session)
    assert got.advanced and got.reloaded is not None and "not the same" in got.reloaded
    assert "reloaded" in _codes(session) and "crc" in _codes(session)
    assert session.verdict().state == "damaged"


def test_a_file_that_shrank_reloads(tmp_path: Path) -> None:
    d, log, data = _copy(tmp_path)
    session = Session.open(directory=str(d))
    end = session.image.provenance.offset
    log.write_bytes(data[:_batch_ends(data)[len(_batch_ends(data)) // 2]])  # truncated by Kafka
    got = reread(session)
    assert got.reloaded is not None and "shrank" in got.reloaded
    assert session.image.provenance.offset < end


def test_follow_keeps_reading_and_says_a_change(tmp_path: Path) -> None:
    """The follow state of ``--follow`` and the TUI's ``f`` goes through the same re-read."""
    d, log, data = _copy(tmp_path)
    ends = _batch_ends(data)
    log.write_bytes(data[:ends[-3]])
    session = Session.open(directory=str(d))
    follow = Follow()
    assert not follow.advance(session)
    with log.open("ab") as f:
        f.write(data[ends[-3]:])
    assert follow.advance(session) and follow.error is None
    log.write_bytes(data[:ends[2]])
    assert follow.advance(session)
    assert follow.last is not None and follow.last.reloaded is not None


def test_a_reread_that_finds_nothing_new_keeps_the_image(tmp_path: Path) -> None:
    """``r`` with nothing new on disk keeps the image object, so what was made of it (the
    TUI's Topics and Brokers tables, a second of CPU at 500k) is not made again; new bytes
    give a new one, and damage appended without a batch is said about the same image."""
    d, log, data = _copy(tmp_path)
    ends = _batch_ends(data)
    log.write_bytes(data[:ends[-2]])
    session = Session.open(directory=str(d))
    first = session.latest.image
    assert not reread(session).advanced
    assert session.latest.image is first
    log.write_bytes(data)
    _touch_later(log)
    assert reread(session).advanced
    second = session.latest.image
    assert second is not first
    with open(log, "ab") as f:
        f.write(b"\xff" * 100)
    reread(session)
    assert session.latest.image is second
    assert "corrupt" in _codes(session)
