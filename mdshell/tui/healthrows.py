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

STATUS_ORDER = {"fail": 0, "warn": 1, "info": 2, "ok": 3}


def check_rows(img: m.Image, voters: list[int] | None,
               verdict: Verdict | None = None) -> list[CheckRow]:
    """Run the health checks on ``img`` (the import waits until the screen asks); with the
    image's verdict, its data check first, as ``health`` has it."""
    from ..image.health import run_checks

    checks: list[Check] = run_checks(img, voters, verdict)
    rows = [CheckRow(c.name, c.status, c.summary,
                     [Item(t, "/log" if c.name == "data" else item_path(t, img))
                      for t in c.items], c.as_read) for c in checks]
    return sorted(rows, key=lambda r: STATUS_ORDER.get(r.status, 9))


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
