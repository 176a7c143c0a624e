"""The small files of a node's directory the comparison reads besides the log:
``leader-epoch-checkpoint`` (where each leader epoch starts, as Kafka keeps it).

Read only if present; anything malformed is one line in ``problems``, never an exception.
"""

from __future__ import annotations

import os

CHECKPOINT = "leader-epoch-checkpoint"


def read_epoch_checkpoint(directory: str, problems: list[str]) -> list[tuple[int, int]] | None:
    """``(epoch, start offset)`` entries of ``leader-epoch-checkpoint`` (version 0: a version
    line, a count line, then ``epoch offset`` lines), None when the file is absent."""
    path = os.path.join(directory, CHECKPOINT)
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return None
    except OSError as e:
        problems.append(f"{CHECKPOINT}: cannot read it ({e.strerror or e})")
        return None
    lines = [line.strip() for line in lines if line.strip()]
    entries: list[tuple[int, int]] = []
    try:
        version, count = int(lines[0]), int(lines[1])
        for line in lines[2:]:
            epoch, offset = line.split()
            entries.append((int(epoch), int(offset)))
    except (IndexError, ValueError):
        problems.append(f"{CHECKPOINT}: not in Kafka's format (version, count, then 'epoch "
                        "offset' lines); not compared")
        return None
    if version != 0 or count != len(entries):
        problems.append(f"{CHECKPOINT}: version {version}, {count} entries announced and "
                        f"{len(entries)} found; not compared")
        return None
    return entries
