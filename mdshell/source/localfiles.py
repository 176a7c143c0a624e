"""The small text files beside the log: ``quorum-state`` and ``meta.properties``.

Both are read only if present; a malformed file gives a :class:`Problem`, never an exception.
"""

from __future__ import annotations

import os
from typing import Any

from ..problems import Problem


def read_quorum_state(directory: str, problems: list[Problem]) -> dict[str, Any] | None:
    """The JSON of ``quorum-state`` (data_version 0 or 1), or None when absent."""
    path = os.path.join(directory, "quorum-state")
    if not os.path.exists(path):
        return None
    import json  # here: only the quorum view and health read it, not every start

    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError) as e:
        problems.append(Problem("quorum-state", f"quorum-state: cannot read it ({e}); the "
                                "quorum view shows only what the log says", path))
        return None
    if not isinstance(data, dict):
        problems.append(Problem("quorum-state", "quorum-state: not a JSON object; ignored", path))
        return None
    return data


def read_properties(path: str, problems: list[Problem]) -> dict[str, str] | None:
    """A Java properties file (``key=value`` lines, ``#`` comments), or None when absent."""
    if not os.path.exists(path):
        return None
    props: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line or line[0] in "#!":
                    continue
                sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
                if sep < 0:
                    continue
                props[line[:sep].strip()] = line[sep + 1:].strip()
    except OSError as e:
        problems.append(Problem("meta.properties", f"{os.path.basename(path)}: cannot read it "
                                f"({e.strerror})", path))
        return None
    return props
