"""Benchmark: live mode against a real KRaft quorum (Kafka's jars, 127.0.0.1).

Usage: python bench/live.py [--partitions 10000] [--changes 10] [--version 4.3.1]

Starts 3 controllers + 1 broker with Kafka's default controller settings, creates topics of
100 partitions (RF 1) until ``--partitions``, then measures:
- catch-up: connect + ApiVersions/DescribeCluster/DescribeQuorum + Fetch (and FetchSnapshot if
  the leader has one) until the high watermark seen at connect is held, then the image built
  from it by the loader (in-process, best of 3);
- follow latency: a topic config changed through the broker, from the admin call's return
  (the change is committed) until the following shell's image shows it (``--changes`` times).
Targets (issue 8): catch-up <= 2 s for >= 10k partitions; follow latency <= 1 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mdshell.commands import Shell  # noqa: E402
from mdshell.session import load  # noqa: E402
from mdshell.source.live import LiveSource  # noqa: E402
from mdshell.tree.node import RenderOptions  # noqa: E402
from tests.kafka.cluster import KraftCluster  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, default=10000)
    ap.add_argument("--changes", type=int, default=10)
    ap.add_argument("--version", default="4.3.1")
    args = ap.parse_args()
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    with tempfile.TemporaryDirectory(prefix="mdshell-bench-") as tmp:
        cluster = KraftCluster(args.version, Path(tmp))
        try:
            cluster.start()
            admin = AdminClient({"bootstrap.servers": cluster.broker.endpoint})
            topics = [NewTopic(f"bench-{i:04d}", 100, 1)
                      for i in range(max(1, args.partitions // 100))]
            t0 = time.perf_counter()
            for i in range(0, len(topics), 20):
                for f in admin.create_topics(topics[i:i + 20], operation_timeout=60).values():
                    f.result(timeout=120)
            print(f"created {len(topics) * 100} partitions in {time.perf_counter() - t0:.1f} s")
            catch, build = [], []
            for _ in range(3):
                t0 = time.perf_counter()
                source = LiveSource(cluster.bootstrap_controllers)
                t1 = time.perf_counter()
                loaded = load(source)
                t2 = time.perf_counter()
                n = len(loaded.image.topics_by_name)
                catch.append(t1 - t0)
                build.append(t2 - t1)
                status = source.status()
                source.close()
            print(f"catch-up ({n} topics, {status.bytes_fetched / 1e6:.1f} MB, "
                  f"{status.records_committed} records): best {min(catch):.3f} s, "
                  f"image build best {min(build):.3f} s, total best "
                  f"{min(c + b for c, b in zip(catch, build, strict=True)):.3f} s")
            source = LiveSource(cluster.bootstrap_controllers)
            shell = Shell(source, opts=RenderOptions())
            source.follow()
            lat = []
            for i in range(args.changes):
                value = str(3600000 + i)
                res = ConfigResource(ResourceType.TOPIC, "bench-0000", incremental_configs=[
                    ConfigEntry("retention.ms", value,
                                incremental_operation=AlterConfigOpType.SET)])
                for f in admin.incremental_alter_configs([res]).values():
                    f.result(timeout=30)
                t0 = time.perf_counter()
                deadline = t0 + 10
                while time.perf_counter() < deadline:
                    got = list(shell.run(["cat", "/image/configs/TOPIC:bench-0000/"
                                          "retention.ms"]).lines)
                    if got == [value]:
                        break
                    time.sleep(0.01)
                lat.append(time.perf_counter() - t0)
            source.close()
            print(f"follow latency over {len(lat)} changes: median {statistics.median(lat):.3f}"
                  f" s, max {max(lat):.3f} s")
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
