"""The health screen's rows: the checks' findings, worst first, each item with the tree node
it is about (where Enter jumps). No textual."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..image import model as m
from ..tree.paths import join
from .rows import CheckRow, Item

if TYPE_CHECKING:
    from ..image.health import Check
    from ..image.verdict import Verdict
    from ..problems import Problem

STATUS_ORDER = {"fail": 0, "warn": 1, "info": 2, "ok": 3}
READING = "reading"  # the check that lists what reading the files said (notices)


def check_rows(img: m.Image, voters: list[int] | None,
               verdict: Verdict | None = None,
               notices: list[Item] | None = None) -> list[CheckRow]:
    """Run the health checks on ``img`` (the import waits until the screen asks); with the
    image's verdict, its data check first, as ``health`` has it; with ``notices`` (what
    reading the files said that leaves the image sound: a snapshot not usable, a
    quorum-state that does not parse), one INFO row listing them, each with its file."""
    from ..image.health import run_checks

    checks: list[Check] = run_checks(img, voters, verdict)
    rows = [CheckRow(c.name, c.status, c.summary,
                     [Item(t, "/log" if c.name == "data" else item_path(t, img))
                      for t in c.items], c.as_read) for c in checks]
    if notices:
        n = len(notices)
        rows.append(CheckRow(READING, "info", f"{n} {'notice' if n == 1 else 'notices'} "
                             "from reading the files (none changes the image)",
                             notices))
    return sorted(rows, key=lambda r: STATUS_ORDER.get(r.status, 9))


def notice_items(problems: list[Problem], quorum_notes: list[str],
                 directory: str) -> list[Item]:
    """What reading said that leaves the image sound, with its file: the load's notices
    and what the quorum view's files (quorum-state, meta.properties) said."""
    from ..problems import NOTICES

    out = [Item(_with_file(p.message, p.file), "/log") for p in problems
           if p.code in NOTICES and p.code != "image"]
    for note in quorum_notes:
        name = note.split(":", 1)[0]
        file = f"{directory.rstrip('/')}/{name}" if name in LOCAL_FILES else None
        out.append(Item(_with_file(note, file), "/quorum"))
    return out


LOCAL_FILES = ("quorum-state", "meta.properties")


def _with_file(message: str, file: str | None) -> str:
    """The message, with its file's path when the message does not hold it already."""
    if file is None or file in message:
        return message
    return f"{message} ({file})"


def health_title(checks: list[CheckRow]) -> tuple[str, str]:
    """What ``health`` says of these checks in its last line, and its status."""
    from ..image.health import Check, summary

    return summary(Check(c.name, c.status, c.summary) for c in checks)


def item_path(text: str, img: m.Image) -> str | None:
    """The node a health item is about: a broker, a controller, a partition, the quorum (the
    data check's: the files, /log)."""
    if mt := re.match(r"broker (\d+)", text):
        return f"/image/cluster/brokers/{mt[1]}"
    if mt := re.match(r"controller (\d+)", text):
        return f"/image/cluster/controllers/{mt[1]}"
    if text.startswith("voter "):
        return "/quorum/voters"
    if (mt := re.match(r"(.+)-(\d+): ", text)) and mt[1] in img.topics_by_name:
        return join(["image", "topics", "byName", mt[1], mt[2]])
    if mt := re.match(r"([\w.]+): finalized", text):
        return "/image/features"
    return None


def fault_prefixes(checks: list[CheckRow] | None) -> set[str]:
    """Every tree path holding an item of a failing or warning check (the tree marks them)."""
    out: set[str] = set()
    for c in checks or []:
        if c.status not in ("fail", "warn"):
            continue
        for item in c.items:
            parts = (item.path or "").strip("/").split("/")
            for i in range(1, len(parts) + 1):
                out.add("/" + "/".join(parts[:i]))
    return out
