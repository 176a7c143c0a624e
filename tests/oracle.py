"""What the oracle tests compare: mdshell's view of a file next to Kafka's.

A *unit* is what Kafka's shell is given: one ``.checkpoint``, or the ``.log`` segments of a
log up to one segment joined into one file (Kafka's loader publishes no image before it has
read a metadata.version, which only the first segment holds).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mdshell.cli import main

from .kafka import jars, tools

MD = "__cluster_metadata-0"
# Kafka runs to make: MetadataShell (version, files joined) and DumpLogSegments (version, file).
Jobs = tuple[list[tuple[str, list[Path]]], list[tuple[str, Path]]]


def need_kafka() -> None:
    """Kafka's jars for both judges, or a failure naming what to install (never a skip)."""
    try:
        for v in (jars.KAFKA_37, jars.KAFKA_4):
            jars.jars(v)
    except jars.KafkaUnavailable as e:
        pytest.fail(f"Kafka is needed as the oracle: {e}")


def mdshell(*args: str) -> tuple[int, str, str]:
    """The real command line, in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return rc, out.getvalue(), err.getvalue()


@dataclass(frozen=True)
class Unit:
    """Files Kafka's shell reads as one (a checkpoint, or log segments 0..n joined)."""

    label: str
    files: tuple[Path, ...]

    def materialise(self, tmp: Path) -> Path:
        """One file for ``mdshell -s``: the file itself, or the segments joined."""
        if len(self.files) == 1:
            return self.files[0]
        target = tmp / self.files[-1].name
        target.write_bytes(b"".join(f.read_bytes() for f in self.files))
        return target


def segments(md: Path) -> list[Path]:
    return sorted(md.glob("*.log"))


def checkpoints(md: Path) -> list[Path]:
    return sorted(md.glob("*.checkpoint"))


def units(md: Path, every_segment: bool) -> list[Unit]:
    """Each checkpoint, and the log joined up to its last segment (or up to each one)."""
    segs = [s for s in segments(md) if s.stat().st_size > 0]
    found = [Unit(f"{md.parent.name}/{c.name}", (c,)) for c in checkpoints(md)]
    ends = range(1, len(segs) + 1) if every_segment else [len(segs)] if segs else []
    for n in ends:
        label = segs[n - 1].name if n == 1 else f"{segs[0].name}..{segs[n - 1].name}"
        found.append(Unit(f"{md.parent.name}/{label}", tuple(segs[:n])))
    return found


def level_of(path: Path) -> int | None:
    """The last metadata.version level a file sets, as mdshell reads it (None: none)."""
    if path.stat().st_size == 0:
        return None
    _, out, _ = mdshell("-s", str(path), "-o", "json", "records", "--type",
                         "FeatureLevelRecord")
    levels = [r["data"]["featureLevel"] for r in (json.loads(out) if out.strip() else [])
              if r["data"].get("name") == "metadata.version"]
    return levels[-1] if levels else None


def mdshell_tree(path: Path, layout: str) -> str:
    rc, out, err = mdshell("-s", str(path), "--show-secrets", "--layout", layout, "tree",
                           "/image")
    assert rc == 0, err
    return out


def layout_of(version: str) -> str:
    return "3.7" if version.startswith("3.") else "4.x"


# ---------------------------------------------------------------- records


_CONTROL = {"LeaderChangeMessage": "LEADER_CHANGE", "SnapshotHeaderRecord": "SNAPSHOT_HEADER",
            "SnapshotFooterRecord": "SNAPSHOT_FOOTER", "KRaftVersionRecord": "KRAFT_VERSION",
            "VotersRecord": "KRAFT_VOTERS"}
_KAFKA_CONTROL = {"LeaderChange": "LEADER_CHANGE", "SnapshotHeader": "SNAPSHOT_HEADER",
                  "SnapshotFooter": "SNAPSHOT_FOOTER", "KRaftVersion": "KRAFT_VERSION",
                  "KRaftVoters": "KRAFT_VOTERS"}


def snake(name: str) -> str:
    """``TopicRecord`` -> ``TOPIC_RECORD`` (Kafka's MetadataRecordType names)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def mdshell_records(path: Path) -> list[tuple[int, str, bool]]:
    """(offset, type, control) of every record ``mdshell -s FILE records`` shows."""
    if path.stat().st_size == 0:
        return []
    _, out, _ = mdshell("-s", str(path), "-o", "json", "records")
    rows: list[dict[str, Any]] = json.loads(out) if out.strip() else []
    result = []
    for r in rows:
        kind = _CONTROL.get(r["type"], r["type"]) if r["control"] else snake(r["type"])
        result.append((r["offset"], kind, bool(r["control"])))
    return result


def kafka_records(run: tools.Run) -> tuple[list[tuple[int, str, bool]], list[str]]:
    recs, problems = tools.parse_dump(run.out)
    out = [(r.offset, _KAFKA_CONTROL.get(r.type, r.type), r.control) for r in recs]
    if run.rc != 0:
        problems.append(f"exit {run.rc}: {run.err.strip().splitlines()[:1]}")
    return out, problems


# ---------------------------------------------------------------- Kafka's shell as judge

# Kafka bug (3.7.x, 4.3.1): the shell prints once its loader has published, and the loader
# publishes as soon as it is one offset short of the file's end (SnapshotFileReader's high
# water mark is the last offset, not the next one): when the last batch is one record, the
# shell may print the image without it. Any file can lose that race on a busy machine: a run
# one offset short is run again (RACE_TRIES times) until Kafka prints the whole file.
RACE_TRIES = 4


@dataclass(frozen=True)
class Unjudged:
    """Kafka's shell gave no verdict in its retries (it hung or never loaded the file): the
    file is counted as unjudged, not failed; mdshell itself still had to read it cleanly."""

    reason: str


def kafka_tree(version: str, files: list[Path], expected: str) -> tools.Run:
    """Kafka's ``tree /image`` of the files, run again while it lost the load race."""
    run = tools.shell_tree(version, files)
    for _ in range(RACE_TRIES):
        if not (tools.loaded(run) and one_short(run.out, expected)):
            break
        run = tools.shell_tree(version, files, fresh=True)
    return run


def compare(run: tools.Run, version: str, expected: str, rc: int) -> str | Unjudged | None:
    """Kafka's run against mdshell's output (``expected``, ``rc``: what that Kafka would
    print given mdshell's image, its bugs included): None when equal, :class:`Unjudged`
    when Kafka printed nothing to compare, else the first line that differs."""
    if tools.NOT_LOADED in run.out or run.rc == -1:
        return Unjudged(f"Kafka {version} never loaded it ({run.err.strip()[:200]})")
    if (run.out, run.rc) == (expected, rc):
        return None
    theirs, ours = run.out.splitlines(), expected.splitlines()
    first = next((i for i, (a, b) in enumerate(zip(theirs, ours, strict=False)) if a != b),
                 min(len(theirs), len(ours)))
    return (f"exit {run.rc}, line {first + 1}: Kafka "
            f"{theirs[first] if first < len(theirs) else '<end>'!r} / mdshell "
            f"{ours[first] if first < len(ours) else '<end>'!r}")


def one_short(theirs: str, ours: str) -> bool:
    """Kafka's image stops one offset before ours: the signature of its load race."""
    a, b = provenance_offset(theirs), provenance_offset(ours)
    return a is not None and b is not None and a == b - 1


def provenance_offset(tree: str) -> int | None:
    m = re.search(r"^provenance:\n  offset (-?\d+),", tree, re.M)
    return None if m is None else int(m.group(1))


def scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="mdshell-oracle-units-"))
