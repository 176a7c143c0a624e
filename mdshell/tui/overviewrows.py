"""The overview's tables built from an image: controllers with their roles, brokers, features.
Free of state: the engine hands in who votes, who observes and who leads. No textual."""

from __future__ import annotations

from ..image import model as m
from ..image.names import metadata_version_name
from ..wire.primitives import uuid_str
from .plain import broker_state, endpoint_texts
from .rows import NodeRow


def controller_rows(img: m.Image, voters: set[int], observers: set[int],
                    leader: int | None) -> list[NodeRow]:
    """Every registered controller and every voter (registered or not), by id."""
    rows = []
    for cid in sorted(set(img.controllers) | voters):
        role = _role(cid, voters, observers, leader)
        c = img.controllers.get(cid)
        if c is None:
            rows.append(NodeRow(cid, role + " (unregistered)", []))
            continue
        rows.append(NodeRow(cid, role, endpoint_texts(c.listeners),
                            incarnation=uuid_str(c.incarnation_id)))
    return rows


def _role(cid: int, voters: set[int], observers: set[int], leader: int | None) -> str:
    if cid == leader:
        return "leader"
    if cid in voters:
        return "voter"
    if cid in observers:
        return "observer"  # live: fetching, not voting (e.g. being added, KIP-853)
    return "registered, not a voter"


def broker_rows(img: m.Image) -> list[NodeRow]:
    return [NodeRow(b.id, broker_state(b), endpoint_texts(b.listeners), b.rack or "",
                    b.log_dir_count) for b in sorted(img.brokers.values(),
                                                        key=lambda b: b.id)]


def feature_rows(img: m.Image) -> list[tuple[str, str, str]]:
    """(name, finalized level, the range every node supports) for each finalized feature."""
    levels = dict(img.finalized_features)
    if img.metadata_version is not None:
        levels["metadata.version"] = img.metadata_version
    nodes = ([b.supported_features for b in img.brokers.values()]
             + [c.supported_features for c in img.controllers.values()])
    out = []
    for name, level in sorted(levels.items()):
        ranges = [n.get(name, (0, 0)) for n in nodes]
        common = (f"{max(r[0] for r in ranges)}-{min(r[1] for r in ranges)}" if ranges
                  else "-")
        shown = (f"{level} ({metadata_version_name(level)})"
                 if name == "metadata.version" else str(level))
        out.append((name, shown, common))
    return out
