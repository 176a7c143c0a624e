"""Small helpers of the engine, free of state: loads without GC stalls, broker states,
endpoint text, the order of children, consuming a command's lazy output. No textual."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..image import model as m
from ..image.names import SECURITY_PROTOCOLS

if TYPE_CHECKING:
    from ..commands.base import Result

__all__ = ["broker_state", "endpoint_texts", "quiet_gc", "run_lines", "sorted_names"]

T = TypeVar("T")


def quiet_gc(load: Callable[[], T]) -> T:
    """Run a load without the cyclic GC, then freeze what it built.

    A load allocates millions of objects; each full collection during it stalls every thread
    (the UI included) for hundreds of ms. Freezing afterwards keeps later collections from
    walking the image again.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return load()
    finally:
        if enabled:
            gc.enable()
        gc.freeze()


def broker_state(b: m.BrokerRegistration) -> str:
    if b.fenced:
        return "fenced"
    if b.in_controlled_shutdown:
        return "controlled shutdown"
    return "unfenced"


def endpoint_texts(listeners: dict[str, m.Endpoint]) -> list[str]:
    return [f"{e.name}://{e.host}:{e.port} ({SECURITY_PROTOCOLS.get(e.security_protocol, '?')})"
            for e in (listeners[n] for n in sorted(listeners))]


def sorted_names(names: Any) -> list[str]:
    """Numeric names (partitions, broker ids) in numeric order, others as given."""
    listed = list(names)
    if listed and all(n.isdigit() for n in listed):
        return sorted(listed, key=int)
    return listed


def run_lines(result: Result, cancelled: Callable[[], bool]) -> tuple[list[str], bool]:
    """Consume a result's (lazy) lines until done or ``cancelled()``; (lines, finished)."""
    out: list[str] = []
    for i, line in enumerate(result.lines):
        if i % 256 == 0 and cancelled():
            return out, False
        out.append(line)
    return out, True
