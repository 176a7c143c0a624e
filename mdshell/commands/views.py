"""Table views operators know from Kafka's tools: ``topics`` (kafka-topics --describe),
``brokers``, ``controllers``, ``quorum`` (kafka-metadata-quorum describe) and ``features``
(kafka-features describe), from what the image and the files hold.

Text is an aligned table (or aligned ``Key: value`` lines for the quorum status); JSON is an
array of objects with the same columns. Partitions sort numerically here (``/image`` keeps
Kafka's order).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..image import model as m
from ..image.names import (
    METADATA_VERSION_FEATURE,
    SECURITY_PROTOCOLS,
    TOPIC_CONFIG,
    metadata_version_name,
    name_of,
)
from ..tree.redact import REDACTED, is_sensitive_config
from ..wire.primitives import uuid_str
from . import results as res
from .base import ArgParser, CommandError, Result, command
from .shell import Shell
from .textform import NONE
from .topicmatch import TopicPattern, names_of, no_such_topic


def table(columns: Sequence[str], cells: Iterable[Sequence[object]], rows: Any,
          header_when_empty: bool = True, note: str | None = None) -> Result:
    """A table result: the renderer aligns the cells; JSON gives ``rows``. ``note``: what
    text says instead of an empty table (why it is empty)."""
    return Result(value=res.Table(list(columns), [list(c) for c in cells], rows,
                                  header_when_empty, note))


def fields(pairs: list[tuple[str, Any]], data: Any) -> Result:
    return Result(value=res.Fields(pairs, data))


def endpoints(listeners: dict[str, m.Endpoint]) -> list[str]:
    """``NAME://host:port``, as in Kafka's listeners config."""
    return [f"{n}://{e.host}:{e.port}" for n, e in sorted(listeners.items())]


def _endpoint_data(listeners: dict[str, m.Endpoint]) -> list[dict[str, Any]]:
    return [{"name": n, "host": e.host, "port": e.port,
             "securityProtocol": name_of(SECURITY_PROTOCOLS, e.security_protocol)}
            for n, e in sorted(listeners.items())]


def _ranges(features: dict[str, tuple[int, int]]) -> list[str]:
    return [f"{k}={lo}-{hi}" for k, (lo, hi) in sorted(features.items())]


def _range_data(features: dict[str, tuple[int, int]]) -> dict[str, Any]:
    return {k: {"min": lo, "max": hi} for k, (lo, hi) in sorted(features.items())}


# ---------------------------------------------------------------- topics

TOPICS_USAGE = ("topics [--describe] [--under-replicated] [--offline] [--under-min-isr] "
                "[TOPIC...]")


@command("topics", "Topics and their partitions, like kafka-topics --describe.", TOPICS_USAGE,
         args=("topic",),
         details="Without options: one row per topic (id, partition count, replication "
                 "factor, the configs set on it: the image holds only values that differ "
                 "from the defaults). --describe lists every partition (leader, replicas, "
                 "ISR, ELR); --under-replicated, --offline (no leader, or a leader that is "
                 "fenced or not registered: Kafka's --unavailable-partitions) and "
                 "--under-min-isr keep only such partitions. TOPIC may be a glob or a "
                 "topic id; one that names no topic is an error.",
         options=("--describe", "--under-replicated", "--offline", "--under-min-isr"))
def topics(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("topics", TOPICS_USAGE)
    p.add_argument("names", nargs="*", metavar="TOPIC")
    for flag in ("--describe", "--under-replicated", "--offline", "--under-min-isr"):
        p.add_argument(flag, action="store_true")
    ns = p.parse_args(args)
    img = shell.session.loaded.image
    chosen = _topics(img, ns.names)
    filters = ns.under_replicated or ns.offline or ns.under_min_isr
    if not (ns.describe or filters):
        rows = [_topic_row(img, t, shell.opts.show_secrets) for t in chosen]
        return table(["TOPIC", "TOPIC ID", "PARTITIONS", "RF", "CONFIGS"],
                     [[r["topic"], r["topicId"], r["partitionCount"], r["replicationFactor"],
                       ",".join(f"{k}={v}" for k, v in r["configs"].items()) or NONE]
                      for r in rows], rows)
    from .partrows import DescribeRows, RowCells  # streamed: 100k partitions, none held

    parts = DescribeRows(img, chosen, (ns.under_replicated, ns.offline, ns.under_min_isr))
    cols = ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "ELR", "LAST KNOWN ELR",
            "ADDING", "REMOVING"]
    return Result(value=res.Table(cols, RowCells(parts), parts, not filters))


def _topics(img: m.Image, patterns: list[str]) -> list[m.Topic]:
    """The topics named (names, globs, ids); one that names none is an error."""
    if not patterns:
        return [img.topics_by_name[n] for n in sorted(img.topics_by_name)]
    names = names_of((t.id, t.name) for t in img.topics_by_name.values())
    chosen: set[str] = set()
    for text in patterns:
        pattern = TopicPattern(text)
        hits = pattern.chosen(names)
        if not hits:
            raise CommandError(no_such_topic(pattern))
        chosen.update(hits)
    return [img.topics_by_name[n] for n in sorted(chosen)]


def _topic_row(img: m.Image, t: m.Topic, show_secrets: bool) -> dict[str, Any]:
    first = min(t.partitions) if t.partitions else None
    part = t.partition(first) if first is not None else None
    rf = None if part is None else len([r for r in part.replicas
                                        if r not in part.adding_replicas])
    configs = img.configs.get((TOPIC_CONFIG, t.name), {})
    shown = {k: (REDACTED if is_sensitive_config(k) and not show_secrets else v)
             for k, v in sorted(configs.items())}
    return {"topic": t.name, "topicId": uuid_str(t.id), "partitionCount": len(t.partitions),
            "replicationFactor": rf, "configs": shown}


# ---------------------------------------------------------------- brokers and controllers


def _broker_state(b: m.BrokerRegistration) -> str:
    if b.fenced:
        return "fenced"
    return "shutting-down" if b.in_controlled_shutdown else "unfenced"


@command("brokers", "Registered brokers: state, endpoints, rack, supported features.",
         "brokers", completes_paths=False,
         details="STATE is fenced, unfenced or shutting-down (in controlled shutdown). "
                 "LOG DIRS counts the log directories the broker registered (KIP-858, "
                 "metadata.version 3.7-IV2+); - (null in JSON) when it registered none: an "
                 "older metadata.version, or a broker not re-registered since the upgrade. "
                 "ENDPOINTS are NAME://host:port; FEATURES the range of each feature the "
                 "broker supports.")
def brokers(shell: Shell, args: list[str]) -> Result:
    ArgParser("brokers", "brokers").parse_args(args)
    img = shell.session.loaded.image
    rows: list[dict[str, Any]] = [{"id": b.id, "state": _broker_state(b), "epoch": b.epoch,
             "endpoints": endpoints(b.listeners), "rack": b.rack,
             "logDirs": b.log_dir_count, "incarnationId": uuid_str(b.incarnation_id),
             "listeners": _endpoint_data(b.listeners),
             "supportedFeatures": _range_data(b.supported_features)}
            for b in (img.brokers[i] for i in sorted(img.brokers))]
    return table(["ID", "STATE", "EPOCH", "RACK", "LOG DIRS", "ENDPOINTS", "FEATURES"],
                 [[r["id"], r["state"], r["epoch"], r["rack"], r["logDirs"],
                   r["endpoints"], _ranges(img.brokers[r["id"]].supported_features)]
                  for r in rows], rows)


@command("controllers", "Registered controllers: voter or not, endpoints, features.",
         "controllers", completes_paths=False,
         details="VOTER says whether the controller is in the voter set (Voters record, "
                 "quorum-state or the last LeaderChange); a registered controller that is "
                 "not a voter is a stale registration (see health). Controllers register "
                 "from metadata.version 3.7-IV0 on: before, the text says so and names the "
                 "voters (see quorum).")
def controllers(shell: Shell, args: list[str]) -> Result:
    from .healthcmd import voter_ids

    ArgParser("controllers", "controllers").parse_args(args)
    img = shell.session.loaded.image
    voters = voter_ids(shell.session)
    rows: list[dict[str, Any]] = [{"id": c.id, "voter": None if voters is None else c.id in voters,
             "endpoints": endpoints(c.listeners),
             "zkMigrationReady": c.zk_migration_ready,
             "incarnationId": uuid_str(c.incarnation_id),
             "listeners": _endpoint_data(c.listeners),
             "supportedFeatures": _range_data(c.supported_features)}
            for c in (img.controllers[i] for i in sorted(img.controllers))]
    return table(["ID", "VOTER", "ENDPOINTS", "FEATURES"],
                 [[r["id"], "unknown" if r["voter"] is None else r["voter"], r["endpoints"],
                   _ranges(img.controllers[r["id"]].supported_features)] for r in rows], rows,
                 note=None if rows else _no_registrations(img, voters))


REGISTRATION_LEVEL = 15  # 3.7-IV0: controllers register themselves (KIP-919)


def _no_registrations(img: m.Image, voters: list[int] | None) -> str | None:
    """Why a cluster before 3.7-IV0 has no controller rows, and where its voters are."""
    mv = img.metadata_version
    if mv is not None and mv >= REGISTRATION_LEVEL:
        return None
    why = (f"metadata.version {metadata_version_name(mv)} is before 3.7-IV0, when controllers "
           "began to register (KIP-919)" if mv is not None else
           "the image holds no metadata.version (controllers register from 3.7-IV0 on)")
    where = (f"the voters are {', '.join(map(str, voters))} (`quorum` shows them)" if voters
             else "the voter set is not in this copy either (no quorum-state, Voters or "
             "LeaderChange record)")
    return f"no controller registrations: {why}; {where}"


# ---------------------------------------------------------------- quorum

UNKNOWN_OFFLINE = "unknown offline"


@command("quorum", "The KRaft quorum, like kafka-metadata-quorum describe.",
         "quorum [--status | --replication]", completes_paths=False,
         options=("--status", "--replication"),
         details="--status (the default): cluster id, leader, epoch, voters, observers. "
                 "--replication: one row per voter. Offline, only what the files hold: the "
                 "high watermark, observers and other nodes' log end offsets are unknown "
                 "(a live connection reports them); the log end offset is this copy's. Live "
                 "(-q): everything, from DescribeQuorum at the time of the command.")
def quorum(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("quorum", "quorum [--status | --replication]")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--status", action="store_true")
    group.add_argument("--replication", action="store_true")
    ns = p.parse_args(args)
    if shell.session.source.kind == "quorum":
        return _live_quorum(shell, ns.replication)
    q = shell.session.quorum_info()
    voters = _voters(q)
    if ns.replication:
        rows = []
        for v in voters:
            mine = q.node_id == v["id"]
            rows.append({"nodeId": v["id"], "directoryId": v["directoryId"],
                         "logEndOffset": q.log_end_offset if mine else None,
                         "lag": None, "lastFetchTimestamp": None,
                         "lastCaughtUpTimestamp": None,
                         "status": "Leader" if v["id"] == q.leader_id else "Follower"})
        return _replication(rows)
    status = {"clusterId": q.cluster_id, "leaderId": q.leader_id,
              "leaderEpoch": q.leader_epoch, "highWatermark": None,
              "logEndOffset": q.log_end_offset, "nodeId": q.node_id,
              "kraftVersion": q.kraft_version, "currentVoters": voters,
              "currentObservers": None,
              "unknown": {"highWatermark": "not stored on disk",
                          "currentObservers": "observers are not recorded on disk"}}
    node = "" if q.node_id is None else f", node {q.node_id}"  # no meta.properties: unknown
    pairs = [("ClusterId", q.cluster_id), ("LeaderId", q.leader_id),
             ("LeaderEpoch", q.leader_epoch),
             ("HighWatermark", UNKNOWN_OFFLINE + " (not stored on disk)"),
             ("LogEndOffset", f"{q.log_end_offset} (this copy{node})"
              if q.log_end_offset is not None else None),
             ("KRaftVersion", q.kraft_version),
             ("CurrentVoters", "[" + ", ".join(_voter_text(v) for v in voters) + "]"),
             ("CurrentObservers", UNKNOWN_OFFLINE + " (not recorded on disk)")]
    return fields(pairs, status)


def _live_quorum(shell: Shell, replication: bool) -> Result:
    """Live mode: what DescribeQuorum says now, as kafka-metadata-quorum describe of the
    quorum's version prints it (3.9+, DescribeQuorum v2: voters with directory ids and
    endpoints, a DirectoryId column; the leader's row first; lag against the leader's log
    end offset)."""
    qv = shell.session.source.quorum()
    if qv is None:
        why = shell.session.source.quorum_error or "see /live/notes"
        raise CommandError(f"DescribeQuorum gave no answer now ({why})")
    leader = next((r for r in qv.voters if r.replica_id == qv.leader_id), None)
    top = leader.log_end_offset if leader is not None else qv.high_watermark
    v2 = qv.version >= 2

    def row(r: Any, status: str) -> dict[str, Any]:
        lag = None if r.log_end_offset < 0 or top < 0 else top - r.log_end_offset
        return {"nodeId": r.replica_id, "directoryId": r.directory_id,
                "logEndOffset": r.log_end_offset, "lag": lag,
                "lastFetchTimestamp": r.last_fetch_ms, "lastCaughtUpTimestamp":
                r.last_caught_up_ms, "status": status}

    rows = ([row(leader, "Leader")] if leader is not None else []) + [
        row(r, "Follower") for r in qv.voters if r is not leader] + [
        row(r, "Observer") for r in qv.observers]
    if replication:
        return _replication(rows, directory_ids=v2, zero=ZERO_UUID)
    lagging = min(qv.voters, key=lambda r: r.log_end_offset, default=None)
    max_lag = 0 if leader is None or lagging is None else top - lagging.log_end_offset
    if leader is None or lagging is None or lagging is leader:
        lag_ms = 0
    elif leader.last_caught_up_ms >= 0 and lagging.last_caught_up_ms >= 0:
        lag_ms = leader.last_caught_up_ms - lagging.last_caught_up_ms
    else:
        lag_ms = -1
    voters = [_live_voter(r, qv.nodes) for r in qv.voters]
    observers = [_live_voter(r, qv.nodes) for r in qv.observers]
    status = {"clusterId": shell.session.source.view.cluster_id,  # type: ignore[attr-defined]
              "leaderId": qv.leader_id, "leaderEpoch": qv.leader_epoch,
              "highWatermark": qv.high_watermark,
              "maxFollowerLag": max_lag, "maxFollowerLagTimeMs": lag_ms,
              "currentVoters": voters, "currentObservers": observers}
    pairs = [("ClusterId", status["clusterId"]), ("LeaderId", qv.leader_id),
             ("LeaderEpoch", qv.leader_epoch), ("HighWatermark", qv.high_watermark),
             ("MaxFollowerLag", max_lag), ("MaxFollowerLagTimeMs", lag_ms),
             ("CurrentVoters", _kafka_replicas(voters, v2)),
             ("CurrentObservers", _kafka_replicas(observers, v2))]
    return fields(pairs, status)


ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def _live_voter(r: Any, nodes: dict[int, list[tuple[str, str, int]]]) -> dict[str, Any]:
    return {"id": r.replica_id, "directoryId": r.directory_id,
            "endpoints": [f"{n}://{f'[{h}]' if ':' in h else h}:{p}"
                          for n, h, p in nodes.get(r.replica_id, [])]}


def _kafka_replicas(replicas: list[dict[str, Any]], v2: bool) -> str:
    """As kafka-metadata-quorum prints CurrentVoters: 3.9+ ``[{"id": 1, "directoryId": ...,
    "endpoints": [...]}, ...]``, 3.7/3.8 ``[1,2,3]``."""
    if not v2:
        return "[" + ",".join(str(r["id"]) for r in replicas) + "]"
    out = []
    for r in replicas:
        text = f'{{"id": {r["id"]}, "directoryId": '
        text += "null" if r["directoryId"] is None else f'"{r["directoryId"]}"'
        if r["endpoints"]:
            text += ', "endpoints": [' + ", ".join(f'"{e}"' for e in r["endpoints"]) + "]"
        out.append(text + "}")
    return "[" + ", ".join(out) + "]"


def _replication(rows: list[dict[str, Any]], directory_ids: bool = True,
                 zero: str | None = None) -> Result:
    """Kafka's table; 3.9+ has a DirectoryId column (live: no id is Kafka's zero id)."""
    if not directory_ids:
        return table(["NodeId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                      "LastCaughtUpTimestamp", "Status"],
                     [[r["nodeId"], r["logEndOffset"], r["lag"], r["lastFetchTimestamp"],
                       r["lastCaughtUpTimestamp"], r["status"]] for r in rows], rows)
    return table(["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                  "LastCaughtUpTimestamp", "Status"],
                 [[r["nodeId"], r["directoryId"] or zero, r["logEndOffset"], r["lag"],
                   r["lastFetchTimestamp"], r["lastCaughtUpTimestamp"], r["status"]]
                  for r in rows], rows)


def _voters(q: Any) -> list[dict[str, Any]]:
    if q.voters is not None:
        return [{"id": v.id, "directoryId": None if v.directory_id is None
                 else uuid_str(v.directory_id),
                 "endpoints": [f"{n}://{h}:{p}" for n, h, p in v.endpoints]}
                for v in q.voters]
    ids = q.quorum_state_voters or (q.last_leader_change.voters if q.last_leader_change
                                    else [])
    return [{"id": i, "directoryId": None, "endpoints": []} for i in sorted(ids)]


def _voter_text(v: dict[str, Any]) -> str:
    ends = ",".join(v["endpoints"])
    return f"{v['id']}" + (f" ({ends})" if ends else "")


# ---------------------------------------------------------------- features


@command("features", "Finalized feature levels and what every node supports, like "
         "kafka-features describe.", "features", completes_paths=False,
         details="SUPPORTED MIN/MAX is the range every registered broker and controller "
                 "supports (the intersection: what the feature can be set to today). "
                 "metadata.version levels also show their release name.")
def features(shell: Shell, args: list[str]) -> Result:
    ArgParser("features", "features").parse_args(args)
    img = shell.session.loaded.image
    nodes = ([b.supported_features for b in img.brokers.values()]
             + [c.supported_features for c in img.controllers.values()])
    finalized = dict(img.finalized_features)
    if img.metadata_version is not None:
        finalized[METADATA_VERSION_FEATURE] = img.metadata_version
    if KRAFT_VERSION not in finalized and any(KRAFT_VERSION in n for n in nodes):
        # a control record, not in the image
        finalized[KRAFT_VERSION] = shell.session.quorum_info().kraft_version
    names = sorted(set(finalized) | {f for n in nodes for f in n})
    rows: list[dict[str, Any]] = []
    for f in names:
        ranges = [n.get(f, (0, 0)) for n in nodes]
        lo = max((r[0] for r in ranges), default=None)
        hi = min((r[1] for r in ranges), default=None)
        rows.append({"feature": f, "supportedMin": lo, "supportedMax": hi,
                     "finalizedLevel": finalized.get(f)})
    return table(["FEATURE", "SUPPORTED MIN", "SUPPORTED MAX", "FINALIZED"],
                 [[r["feature"], _level(r["feature"], r["supportedMin"]),
                   _level(r["feature"], r["supportedMax"]),
                   _level(r["feature"], r["finalizedLevel"])] for r in rows], rows)


KRAFT_VERSION = "kraft.version"


def _level(feature: str, level: int | None) -> str:
    if level is None:
        return NONE
    if feature == METADATA_VERSION_FEATURE:
        return f"{metadata_version_name(level)} ({level})"
    return str(level)
