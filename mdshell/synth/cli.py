"""``python -m mdshell.synth``: generate a realistic KRaft metadata log dir.

Example (a benchmark directory: a 1M-partition snapshot and a short log tail)::

    python -m mdshell.synth --brokers 30 --controllers 3 --topics 1000 \\
        --partitions-per-topic 1000 --rf 3 --history-changes 200 --snapshot-at setup \\
        --log-from snapshot --compression zstd --out /tmp/md-1m
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .batches import CODECS
from .scenario import Scenario, generate
from .snapshot import MAX_BATCH_BYTES


def _codecs(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in CODECS:
            raise argparse.ArgumentTypeError(f"unknown codec {n!r} (choose from "
                                              f"{', '.join(CODECS)})")
    return names


def _positive(text: str) -> int:
    n = int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mdshell.synth",
        description="Write a realistic Kafka KRaft log dir (meta.properties, "
                    "__cluster_metadata-0 with segments, snapshots and quorum-state). The same "
                    "arguments and --seed always give the same bytes.")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the log dir to create (must not exist, or be empty)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    c = p.add_argument_group("cluster")
    c.add_argument("--brokers", type=_positive, default=3, help="broker count (default 3)")
    c.add_argument("--controllers", type=_positive, default=1,
                   help="controller (voter) count, ids 1000.. (default 1)")
    c.add_argument("--topics", type=_positive, default=10, help="topics at setup (default 10)")
    c.add_argument("--partitions-per-topic", type=_positive, default=3, metavar="P",
                   help="partitions of each setup topic (default 3)")
    c.add_argument("--rf", type=_positive, default=None,
                   help="replication factor (default min(3, brokers))")
    c.add_argument("--metadata-version", type=_positive, default=25, metavar="LEVEL",
                   help="metadata.version feature level: 19 = 3.7-IV4, 21 = 3.9-IV0, "
                        "25 = 4.0-IV3 (default), 29 = 4.2-IV1")
    c.add_argument("--kraft-version", type=int, choices=[0, 1], default=0,
                   help="1 writes KRaftVersion/Voters records and quorum-state data_version 1")
    h = p.add_argument_group("history and layout")
    h.add_argument("--history-changes", type=_positive, default=100, metavar="K",
                   help="random operations after setup (default 100)")
    h.add_argument("--noops-per-change", type=_positive, default=1, metavar="N",
                   help="NoOpRecord batches after each change (default 1)")
    h.add_argument("--snapshot-at", default="", metavar="POINT[,POINT...]",
                   help="where to write snapshots: 'setup' (after setup), 'end', a change "
                        "count N or a percentage like 50%%")
    h.add_argument("--log-from", choices=["start", "snapshot"], default="start",
                   help="'snapshot': segments start at the first snapshot, as after Kafka "
                        "deleted the segments it covers (default start)")
    h.add_argument("--compression", type=_codecs, default=["none"], metavar="CODEC[,CODEC...]",
                   help=f"codec of data batches, cycled if several ({', '.join(CODECS)})")
    h.add_argument("--snapshot-compression", choices=list(CODECS), default="none",
                   help="codec of snapshot data batches (default none, as Kafka)")
    h.add_argument("--snapshot-batch-bytes", type=_positive, default=MAX_BATCH_BYTES,
                   metavar="BYTES", help="close a snapshot batch before it passes this size "
                   "(default 8 MiB, as Kafka; records go in chunks of 1024)")
    h.add_argument("--segment-bytes", type=_positive, default=1 << 30, metavar="BYTES",
                   help="roll segments at this size (default 1 GiB)")
    h.add_argument("--mix", type=_mix, default={}, metavar="KIND=WEIGHT[,...]",
                   help="weights of history's operations by kind (leader-election 30, "
                        "isr-shrink 15, isr-expand 15, topic-config 8, broker-config 2, "
                        "producer-ids 4, broker-restart 3, create-topic 3, delete-topic 2, "
                        "quota 3, acl 3, scram 2, token 2, reassign 3, elr 3, "
                        "controller-failover 1); 0 leaves a kind out")
    h.add_argument("--created-partitions", type=_span, default=(1, 6), metavar="LO-HI",
                   help="partitions of the topics history creates (default 1-6)")
    h.add_argument("--max-records-per-batch", type=_positive, default=10_000, metavar="N",
                   help="records a batch holds at most; more are split over batches in a "
                        "metadata transaction, as Kafka does (default 10000)")
    h.add_argument("--partition-dirs", action="store_true",
                   help="also write <topic>-<n>/partition.metadata for every partition")
    return p


def _mix(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, weight = part.partition("=")
        if not sep or not weight.strip().isdigit():
            raise argparse.ArgumentTypeError(f"{part!r}: give KIND=WEIGHT (a whole number)")
        out[name.strip()] = int(weight)
    return out


def _span(text: str) -> tuple[int, int]:
    lo, sep, hi = text.partition("-")
    if not sep or not lo.isdigit() or not hi.isdigit() or not 1 <= int(lo) <= int(hi):
        raise argparse.ArgumentTypeError(f"{text!r}: give LO-HI, 1 <= LO <= HI")
    return int(lo), int(hi)


def main(argv: Sequence[str] | None = None) -> int:
    p = build_parser()
    args = p.parse_args(argv)
    if os.path.exists(args.out) and (not os.path.isdir(args.out) or os.listdir(args.out)):
        p.error(f"--out {args.out}: exists and is not an empty directory")
    sc = Scenario(
        brokers=args.brokers, controllers=args.controllers, topics=args.topics,
        partitions_per_topic=args.partitions_per_topic,
        rf=args.rf if args.rf is not None else min(3, args.brokers),
        history_changes=args.history_changes,
        snapshot_at=[x for x in args.snapshot_at.split(",") if x.strip()],
        log_from=args.log_from, compression=args.compression,
        snapshot_compression=args.snapshot_compression,
        snapshot_batch_bytes=args.snapshot_batch_bytes,
        metadata_version=args.metadata_version, kraft_version=args.kraft_version,
        segment_bytes=args.segment_bytes, noops_per_change=args.noops_per_change,
        partition_dirs=args.partition_dirs, seed=args.seed, mix=args.mix,
        created_partitions=args.created_partitions,
        max_records_per_batch=args.max_records_per_batch)
    if sc.brokers < 1 or sc.controllers < 1:
        p.error("a cluster needs at least one broker and one controller")
    try:
        summary = generate(sc, args.out)
    except ValueError as e:
        p.error(str(e))
    size = sum(os.path.getsize(os.path.join(d, f))
               for d, _, fs in os.walk(args.out) for f in fs)
    print(f"wrote {args.out}: offsets 0-{summary.end_offset - 1}, {summary.partitions} "
          f"partitions, {len(summary.segments)} segment(s), {len(summary.snapshots)} "
          f"snapshot(s), {size / 1e6:.1f} MB in {summary.seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
