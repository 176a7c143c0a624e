"""The tables the detail pane shows for two lists, one row each: Topics (partitions, RF,
under-replicated, offline, the configs set on it, i.e. those that differ from the defaults)
and Brokers (state, rack, how many partitions each leads and holds a replica of). No textual
here: the engine builds them in a worker (every partition is read: seconds at 500k)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from ..image import model as m
from ..image.names import TOPIC_CONFIG
from ..tree.redact import REDACTED, is_sensitive_config
from ..wire.primitives import uuid_str
from .plain import broker_state
from .rows import ListTable

TOPICS = "/image/topics/byName"
BROKERS = "/image/cluster/brokers"
TOPIC_COLUMNS = ["topic", "partitions", "RF", "under-replicated", "offline",
                 "configs set (differ from defaults)", "topic id"]
BROKER_COLUMNS = ["broker", "state", "rack", "leader of", "replicas", "endpoints"]


PAUSE_EVERY = 20  # topics between calls of ``pause`` (about 2,000 partitions at 500k)


def tables(img: m.Image, show_secrets: bool,
           pause: Callable[[], None] | None = None) -> dict[str, ListTable]:
    """Both tables, by the path they show at, from one pass over the partitions (reading
    them is what costs: about 1 s of CPU at 500k, each distinct record decoded once). A
    partition whose record does not decode is counted in its topic's row (and noted in
    the image's notes, so the verdict says it). ``pause()`` is called every few topics: a
    worker thread gives the UI thread its turn there."""
    leads: Counter[int] = Counter()
    holds: Counter[int] = Counter()
    keys, rows = [], []
    for i, name in enumerate(sorted(img.topics_by_name)):
        if pause is not None and i % PAUSE_EVERY == 0:
            pause()
        t = img.topics_by_name[name]
        rf: int | None = None
        under = offline = bad = 0
        for pid in t.partitions:
            p = t.shared(pid)  # read only: each distinct record decoded once
            if p is None:
                bad += 1
                continue
            target = [r for r in p.replicas if r not in p.adding_replicas]
            if rf is None:
                rf = len(target)
            under += len(p.isr) < len(target)
            reg = img.brokers.get(p.leader)
            offline += p.leader == m.NO_LEADER or reg is None or reg.fenced
            leads[p.leader] += 1
            holds.update(p.replicas)
        configs = img.configs.get((TOPIC_CONFIG, name), {})
        shown = ",".join(f"{k}={REDACTED if is_sensitive_config(k) and not show_secrets else v}"
                         for k, v in sorted(configs.items()))
        keys.append(f"{TOPICS}/{name}")
        count = str(len(t.partitions)) + (f" ({bad} do not decode)" if bad > 1 else
                                          " (1 does not decode)" if bad else "")
        rows.append([name, count, "-" if rf is None else str(rf), str(under),
                     str(offline), shown or "-", uuid_str(t.id)])
    return {TOPICS: ListTable(TOPIC_COLUMNS, rows, keys),
            BROKERS: _brokers(img, leads, holds)}


def _brokers(img: m.Image, leads: Counter[int], holds: Counter[int]) -> ListTable:
    """One row per registered broker: its state and its share of the partitions."""
    rows, keys = [], []
    for bid in sorted(img.brokers):
        b = img.brokers[bid]
        keys.append(f"{BROKERS}/{bid}")
        rows.append([str(bid), broker_state(b), b.rack or "-", str(leads[bid]),
                     str(holds[bid]),
                     " ".join(f"{n}://{e.host}:{e.port}" for n, e in sorted(b.listeners.items()))])
    return ListTable(BROKER_COLUMNS, rows, keys)
