"""The log itself: ``records`` (the decoded log, filterable) and ``changes PATH`` (history)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..image.model import Partition, partition_from_record
from ..image.names import TOPIC_CONFIG
from ..image.replay import ImageBuilder, Wants, merge_partition
from ..problems import Problem
from ..session.changes import replay_history, replay_sieved
from ..source.logscan import LogRecord, iter_log
from ..tree.leaves import partition_data
from ..tree.logrecord import record_json
from ..tree.paths import GlobError, Matcher, absolute, join, matchers, related, resolve
from ..tree.recordjson import record_data
from ..tree.touched import names_of, paths_for, topic_sieve, touches
from ..wire.control import CONTROL
from ..wire.kinds import RecordKind as K
from ..wire.primitives import uuid_str
from ..wire.records import METADATA
from . import results as res
from .base import ArgParser, CommandError, Result, UsageError, command
from .batches import outside_the_log
from .shell import Shell
from .topicmatch import TopicPattern, no_such_topic

RECORDS_USAGE = ("records [--from OFFSET] [--to OFFSET] [--type NAME[,NAME]] "
                 "[--exclude NAME[,NAME]] [--topic NAME] [--grep TEXT] [--snapshot] [--limit N] "
                 "[--batches]")


def _norm(name: str) -> str:
    n = name.strip().lower()
    return n[:-6] if n.endswith("record") else n


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise ValueError(text)
    return n


_positive.__name__ = "positive number"  # argparse names the type in its complaint


def _type_set(text: str | None) -> set[str] | None:
    """Record type names (case-insensitive, 'Record' optional); unknown names are an error."""
    if not text:
        return None
    known = {_norm(m.name): m.name for m in (*METADATA.values(), *CONTROL.values())}
    typed = [x.strip() for x in text.split(",") if x.strip()]
    names = {_norm(x) for x in typed}
    bad = [x for x in typed if _norm(x) not in known]
    if bad:
        raise UsageError(f"records: unknown record type {', '.join(bad)} (known: "
                         f"{', '.join(sorted(known.values()))})")
    return names


def field_values(data: Any) -> Iterator[str]:
    """The decoded field values of a record payload, as text: strings as they are, numbers
    and booleans as JSON writes them (``true``, ``null``), nested values one by one."""
    if isinstance(data, dict):
        for v in data.values():
            yield from field_values(v)
    elif isinstance(data, list):
        for v in data:
            yield from field_values(v)
    elif isinstance(data, str):
        yield data
    else:
        import json  # here: one-shot commands that never grep do not import it

        yield json.dumps(data)


def _grep(text: str, j: dict[str, Any]) -> bool:
    """``--grep``: TEXT inside one of the record's field values (after redaction, with the
    topic name added beside an id); field names, the type and the offsets do not count."""
    return any(text in v for v in field_values(j["data"]))


@command("records", "The decoded metadata log, filterable (like kafka-dump-log, redacted).",
         RECORDS_USAGE,
         details="One line per record: offset, leader epoch, time, type and version, payload "
                 "as JSON. --from/--to bound offsets, --type/--exclude take record names "
                 "(case-insensitive, 'Record' optional: --exclude NoOp), --topic keeps the "
                 "records about one topic (its TopicRecord, partitions, partition changes, "
                 "configs, removal; NAME may be a glob or a topic id, and one that no "
                 "image or record read knows is an error), --grep keeps records "
                 "where one field value contains TEXT (decoded values as JSON shows them: "
                 "a name, an id, a number, true; the topic name beside a topic id counts; "
                 "field names, the type and the offsets do not; secrets match only as "
                 "[redacted]), --snapshot dumps the snapshot in use instead of the "
                 "log segments (offsets inside the snapshot file). --batches lists the record "
                 "batches instead, like kafka-dump-log without --print-data-log (offsets, "
                 "file position, size, CRC valid, compression, producer, transactional and "
                 "control flags, record count).",
         options=("--from", "--to", "--type", "--exclude", "--topic", "--grep", "--snapshot",
                  "--limit", "--batches"), args=("",),
         values={"--from": "", "--to": "", "--type": "type", "--exclude": "type",
                 "--topic": "topic", "--grep": "", "--limit": ""})
def records(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("records", RECORDS_USAGE)
    p.add_argument("--from", dest="first", type=int)
    p.add_argument("--to", dest="last", type=int)
    p.add_argument("--type")
    p.add_argument("--exclude")
    p.add_argument("--grep")
    p.add_argument("--topic")
    p.add_argument("--snapshot", action="store_true")
    p.add_argument("--limit", type=_positive)
    p.add_argument("--batches", action="store_true")
    ns = p.parse_args(args)
    if ns.first is not None and ns.last is not None and ns.first > ns.last:
        raise CommandError(f"--from {ns.first} is after --to {ns.last}")
    snapshot = None
    if ns.snapshot:
        cp = shell.session.loaded.snapshot
        if cp is None:
            raise CommandError("no snapshot is in use (the image comes from the log alone)")
        snapshot = cp
    if ns.batches:
        if ns.type or ns.exclude or ns.grep or ns.topic:
            raise UsageError("records: --batches lists batches; --type, --exclude and --grep "
                             f"select records (usage: {RECORDS_USAGE})")
        from .batches import batches
        return batches(shell, ns.first, ns.last, None if snapshot is None else snapshot.path,
                       ns.limit)
    wanted, excluded = _type_set(ns.type), _type_set(ns.exclude)
    topic = None if ns.topic is None else TopicPattern(ns.topic)
    show = shell.opts.show_secrets
    warnings: list[str] = []
    errors: list[str] = []

    def selected() -> Iterator[dict[str, Any]]:
        n = 0
        problems: list[Problem] = []
        names = topic_names(shell)
        if topic is not None and topic.pattern in names:
            topic.learn(topic.pattern, names[topic.pattern])
        read = 0
        for r in iter_log(shell.session.source, first=ns.first, last=ns.last, snapshot=snapshot,
                          problems=problems):
            read += 1
            if r.key == K.TOPIC and not r.control and isinstance(r.value, dict):
                tid, tname = uuid_str(r.value["topicId"]), r.value["name"]
                names[tid] = tname
                if topic is not None:
                    topic.learn(tid, tname)
            name = _norm(r.name)
            if (wanted is not None and name not in wanted) or (excluded and name in excluded):
                continue
            j = record_json(r, show)
            if r.key != K.TOPIC or r.control:  # a TopicRecord names itself
                j["data"] = with_topic_name(j["data"], names)
            if topic is not None and not _about(r, j["data"], topic):
                continue
            if ns.grep and not _grep(ns.grep, j):
                continue
            yield j
            n += 1
            if ns.limit is not None and n >= ns.limit:
                break
        if topic is not None and n == 0 and not topic.known(names):
            # Nothing printed: a name no image and no TopicRecord read knows is a mistake.
            errors.append("records: --topic " + no_such_topic(
                topic, " in the image or in the records read"))
        warnings.extend(p.message for p in problems if p.message not in warnings)
        if read == 0 and snapshot is None and (
                outside := outside_the_log(shell, ns.first, ns.last)):
            errors.append(outside)
        stop = shell.session.stopped_by()
        if (snapshot is None and stop is not None and stop.offset is not None
                and (ns.first or 0) > stop.offset
                and stop.message not in warnings):
            # The same model as the load and time travel: past the damage, records are
            # shown as the files hold them, but no image includes them.
            warnings.append(f"{stop.message} (these records come after the damage: the "
                            f"image stops at offset {shell.session.reach()})")

    return Result(warnings=warnings, errors=errors, value=res.Records(selected))


def topic_names(shell: Shell) -> dict[str, str]:
    """Topic id (Kafka's base64) -> name, from the images at hand; ``records`` adds the
    names its TopicRecords give as it reads."""
    out: dict[str, str] = {}
    for loaded in (shell.session.latest, shell.session.loaded):
        for tid, t in loaded.image.topics_by_id.items():
            out.setdefault(uuid_str(tid), t.name)
    return out


def with_topic_name(data: Any, names: dict[str, str]) -> Any:
    """``topicName`` right after a ``topicId`` the names know (records, changes)."""
    if not isinstance(data, dict) or "topicName" in data:
        return data
    tid = data.get("topicId")
    if not isinstance(tid, str) or tid not in names or data.get("name") == names[tid]:
        return data
    out: dict[str, Any] = {}
    for k, v in data.items():
        out[k] = v
        if k == "topicId":
            out["topicName"] = names[tid]
    return out


def _about(r: LogRecord, data: Any, topic: TopicPattern) -> bool:
    """Whether a record is about ``topic``: by name, by id, or as its config resource."""
    if r.control or not isinstance(data, dict):
        return False
    if r.key == K.CONFIG:  # ConfigRecord of a TOPIC resource
        return bool(data.get("resourceType") == TOPIC_CONFIG
                    and topic.matches(data.get("resourceName")))
    name = data.get("name") if r.key == K.TOPIC else data.get("topicName")
    tid = data.get("topicId")
    return topic.matches(name, tid if isinstance(tid, str) else None)


# ---------------------------------------------------------------- changes


CHANGES_USAGE = "changes PATH"


@command("changes", "List the records that touched a node (e.g. a partition's leader/ISR "
         "history).", CHANGES_USAGE, args=("path", ""),
         details="PATH may be a node that no longer exists, and may use * and ? globs. A "
                 "record touches a node when it changes it, something below it, or something "
                 "above it (removing a topic touches its partitions). Records from the "
                 "snapshot the load started from are listed with the snapshot's name; for "
                 "partitions each line also shows the state after the record.")
def changes(shell: Shell, args: list[str]) -> Result:
    p = ArgParser("changes", CHANGES_USAGE)
    p.add_argument("path")
    ns = p.parse_args(args)
    comps = absolute(shell.session.cwd_pattern, ns.path)
    if not comps or comps[0] != "image":
        raise CommandError(f"{ns.path}: changes follows nodes under /image")
    if comps[:2] == ["image", "provenance"]:
        raise CommandError(f"{ns.path}: the provenance is where the image stands, which every "
                           "record moves: `records` lists them")
    try:
        patterns = [matchers(comps)]
        config = _topic_config_path(shell, comps)
        if config is not None:
            patterns.append(matchers(config))
    except GlobError as e:
        raise CommandError(str(e)) from None
    sieve = topic_sieve(comps)
    wants = _partition_filter(patterns[0])
    session = shell.session
    if sieve is not None and not session.is_loaded:
        # A one-shot `changes` of a topic or partition: step over the rest of the data.
        fast = _Collect(shell, patterns, {}, strict=True)
        try:
            if replay_sieved(session, fast.observe, wants, sieve):
                return _changes_of(shell, ns.path, comps, fast.found)
        except _Unsure:
            pass
    found = _Collect(shell, patterns, topic_names(shell))
    replay_history(session, found.observe, _partition_filter(patterns[0]), session.loaded.upto)
    return _changes_of(shell, ns.path, comps, found.found)


def _changes_of(shell: Shell, text: str, comps: list[str],
                found: list[dict[str, Any]]) -> Result:
    """The records found; none at or below the node, and no such node now, is an error
    (a partition that never existed is touched by its topic's records only)."""
    pattern = matchers(comps)
    if not any(len(parts := names_of(p)) >= len(comps) and related(pattern, parts)
               for e in found for p in e["paths"]):
        try:
            there = next(resolve(shell.session.root, shell.session.cwd_pattern, text),
                         None) is not None
        except GlobError:
            there = False
        if not there:
            parent = join(comps[:-1])
            raise CommandError(f"{text}: no such node: not in the image, and no record read "
                               f"made it (`ls {parent}` lists what there is)")
    return Result(value=res.Changes(join(comps), found,
                                    "" if found else records_read(shell)))


def records_read(shell: Shell) -> str:
    """The records ``changes`` reads, in words: from as far back as the data goes (offset
    0, or the oldest usable snapshot) to the image shown."""
    session = shell.session
    start = session.source.history_start()
    end = session.loaded.image.provenance.offset
    origin = "offset 0" if start is None else f"snapshot {start.name}"
    shown = "" if session.loaded.upto is None else " (time travel: the image shown)"
    return f"from {origin} to offset {end}{shown}"


class _Unsure(Exception):
    """A record of the topic came before the topic's own record: its name would come from
    the latest image, which a sieved replay does not build."""


class _Collect:
    """The observer of ``changes``: the records whose paths touch one of ``patterns``.
    ``names`` (topic id -> name) starts from the images at hand and follows TopicRecords;
    ``strict``: refuse (``_Unsure``) a record whose topic name only the latest image knows."""

    def __init__(self, shell: Shell, patterns: list[list[Matcher]], names: dict[str, str],
                 strict: bool = False) -> None:
        self.patterns = patterns
        self.show = shell.opts.show_secrets
        self.names = names
        self.strict = strict
        self.found: list[dict[str, Any]] = []

    def observe(self, b: ImageBuilder, key: int, ver: int, d: dict[str, Any],
                off: int) -> None:
        names = self.names
        if key == K.TOPIC:
            names[uuid_str(d["topicId"])] = d["name"]
        paths = paths_for(key, d, b.image)
        if not any(touches(paths, pattern) for pattern in self.patterns):
            return
        batch, msg = b.batch, METADATA[key]
        if self.strict and "topicId" in d and uuid_str(d["topicId"]) not in names:
            raise _Unsure
        entry: dict[str, Any] = {
            "offset": None if b.origin else off, "origin": b.origin or "log",
            "epoch": batch.epoch if batch else None,
            "timestamp": batch.max_timestamp if batch else None,
            "type": msg.name, "version": ver,
            # every field, as `records` gives it (null where the record holds none); the
            # text shows what the record sets (textform.set_fields)
            "data": with_topic_name(record_data(msg, ver, d, show_secrets=self.show), names),
            "paths": paths,
        }
        after = _partition_after(b, key, d)
        if after is not None:
            entry["after"] = partition_data(after)
        self.found.append(entry)


def _topic_config_path(shell: Shell, comps: list[str]) -> list[str] | None:
    """For a topic (``/image/topics/byName/T`` or ``byId/ID``), its config resource
    ``/image/configs/TOPIC:T``: the history of a topic includes its config changes."""
    if len(comps) != 4 or comps[:2] != ["image", "topics"]:
        return None
    if comps[2] == "byName":
        return ["image", "configs", "TOPIC:" + comps[3]]
    if comps[2] == "byId":
        name = topic_names(shell).get(comps[3])
        return None if name is None else ["image", "configs", "TOPIC:" + name]
    return None


class _PartitionFilter:
    """Which partition records can touch a pattern: decided once per topic (and per
    partition id when the pattern names one), so that the others stay undecoded. ``topic``
    answers for a whole topic (a replay of kept partitions skips the others at once)."""

    def __init__(self, pattern: list[Matcher]) -> None:
        self.topic_level: dict[tuple[bytes, str | None], bool] = {}
        self.head = pattern[:4]
        self.pid_test = pattern[4] if len(pattern) > 4 else None

    def topic(self, b: ImageBuilder, tid: bytes) -> bool:
        topic = b.image.topics_by_id.get(tid)
        key = (tid, topic.name if topic is not None else None)
        hit = self.topic_level.get(key)
        if hit is None:
            paths = paths_for(K.TOPIC, {"name": key[1], "topicId": tid}, b.image) if topic else [
                f"/image/topics/byId/{uuid_str(tid)}"]
            hit = self.topic_level[key] = any(related(self.head, p.split("/")[1:5])
                                              for p in paths)
        return hit

    def __call__(self, b: ImageBuilder, tid: bytes, pid: int) -> bool:
        return self.topic(b, tid) and (self.pid_test is None or self.pid_test(str(pid)))


def _partition_filter(pattern: list[Matcher]) -> Wants:
    return _PartitionFilter(pattern)


def _partition_after(b: ImageBuilder, key: int, d: dict[str, Any]) -> Partition | None:
    """The partition as it is once this record applies (the observer runs just before)."""
    if key == K.PARTITION:
        return partition_from_record(d)
    if key == K.PARTITION_CHANGE:
        topic = b.image.topics_by_id.get(d["topicId"])
        current = topic.partition(d["partitionId"]) if topic is not None else None
        return merge_partition(current, d) if current is not None else None
    return None
