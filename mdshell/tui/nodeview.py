"""What the detail pane adds to a directory's table: its count in the right noun (a topic
counts partitions, not entries), a topic's configs, and why a list is empty."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from .fmt import plural
from .sections import SECTIONS

if TYPE_CHECKING:
    from .engine import Engine
    from .palette import Palette
    from .rows import Entry

TOPIC = re.compile(r"^/image/topics/by(Name|Id)/[^/]+$")
CONTROLLERS = "/image/cluster/controllers"


def count_line(path: str, entries: list[Entry]) -> Text:
    """Under a topic: its partitions (name and id are fields, not entries)."""
    if TOPIC.match(path):
        return Text(plural(sum(e.name.isdigit() for e in entries), "partition"), style="dim")
    return Text(plural(len(entries), "entry", "entries"), style="dim")


def topic_configs(eng: Engine, path: str) -> RenderableType | None:
    """A topic's dynamic configs (those set on it; the rest are the brokers' defaults)."""
    if not TOPIC.match(path):
        return None
    name = eng.text(f"{path}/name").strip() if path.split("/")[3] == "byId" \
        else path.rsplit("/", 1)[1]
    entries = eng.children(f"/image/configs/TOPIC:{name}")
    if not entries:
        return Text("configs: none set on the topic (broker defaults)", style="dim")
    t = Table(box=None, header_style="bold dim", pad_edge=False, title_justify="left",
              title=Text(f"configs ({len(entries)})", style="bold dim"))
    t.add_column("config", no_wrap=True)
    t.add_column("value", overflow="fold")
    for e in entries:
        t.add_row(Text(e.name), Text(eng.text(e.path)))
    return t


def empty_note(eng: Engine, path: str, pal: Palette) -> Text:
    """An empty directory; for controllers, where the quorum's nodes are then (before 3.7
    controllers do not register, yet the quorum has voters and a leader)."""
    if path == CONTROLLERS:
        rows = eng.overview().controllers
        if rows:
            known = ", ".join(f"{r.id} ({r.state})" for r in rows)
            return Text(f"no controller registration in this image; the quorum: {known} "
                        "(see /quorum)", style=pal.warn)
    return Text("(empty)", style="dim")


CRUMB = 32  # characters of one part of the crumbs at most (Kafka allows 249 in a name)


def crumbs(path: str) -> Text:
    """Where the node is, from its section of the tree: ``Topics › orders › 3``; a part
    longer than CRUMB keeps its ends around a "…" (the line is one row high: a 249-character
    topic name wrapped out of sight, the crumbs read "Topics ›")."""
    best = ("All paths /", "/")
    for label, top in SECTIONS:
        if top != "/" and (path == top or path.startswith(top + "/")) \
                and len(top) > len(best[1]):
            best = (label, top)
    label, top = best
    rest = [p for p in path[len(top):].split("/") if p]
    t = Text(label, style="bold")
    for part in rest:
        t.append(" › ", style="dim")
        t.append(_middle_cut(part, CRUMB))
    return t


def _middle_cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: its start and end around "…"."""
    if len(text) <= limit:
        return text
    head = (limit - 1) // 2
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]
