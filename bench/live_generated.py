"""Benchmark: live catch-up from one real controller started on a large generated log dir.

Usage: python bench/live_generated.py [--topics 1000] [--partitions-per-topic 100]

``mdshell.synth`` writes a log dir (a snapshot of ``topics x partitions`` partitions, 30
brokers, RF 3, then 100 changes) for a single static voter, node 1000. A Kafka 4.3.1 controller
starts on a copy of it and becomes leader; mdshell then catches up over the network (its
snapshot with FetchSnapshot, the log after it with Fetch) and builds the image. Best of 3 (a
fresh process for each, start-up included) and the in-process split.
Target (issue 8): <= 3 s for 100k partitions.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mdshell.session import load  # noqa: E402
from mdshell.source.live import LiveSource  # noqa: E402
from tests.kafka import jars  # noqa: E402
from tests.kafka.cluster import JVM, _extra_classpath, _logging, free_ports  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--topics", type=int, default=1000)
    ap.add_argument("--partitions-per-topic", type=int, default=100)
    ap.add_argument("--version", default="4.3.1")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mdshell-bench-gen-") as tmp:
        logdir = Path(tmp) / "data"
        subprocess.run([sys.executable, "-m", "mdshell.synth", "--out", str(logdir),
                        "--controllers", "1", "--brokers", "30", "--topics", str(args.topics),
                        "--partitions-per-topic", str(args.partitions_per_topic), "--rf", "3",
                        "--metadata-version", "25", "--history-changes", "100",
                        "--snapshot-at", "setup", "--log-from", "snapshot", "--seed", "7"],
                       check=True)
        (port,) = free_ports(1)
        props = Path(tmp) / "server.properties"
        props.write_text("\n".join([
            "process.roles=controller", "node.id=1000",
            f"controller.quorum.voters=1000@127.0.0.1:{port}",
            f"listeners=CONTROLLER://127.0.0.1:{port}", "controller.listener.names=CONTROLLER",
            f"log.dirs={logdir}", "num.network.threads=1", "num.io.threads=2"]) + "\n")
        cmd = [jars.java(), *[a for a in JVM if not a.startswith("-Xmx")], "-Xmx512m",
               *_logging(Path(tmp), args.version), "-cp",
               jars.classpath(args.version) + _extra_classpath(args.version), "kafka.Kafka",
               str(props)]
        proc = subprocess.Popen(cmd, stdout=open(Path(tmp) / "out", "wb"),  # noqa: SIM115
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            t0 = time.perf_counter()
            source = None
            while time.perf_counter() - t0 < 180:
                if proc.poll() is not None:
                    print((Path(tmp) / "out").read_text()[-3000:])
                    return 1
                try:
                    source = LiveSource(f"127.0.0.1:{port}")
                    break
                except Exception:
                    time.sleep(0.5)
            if source is None:
                log = Path(tmp) / "server.log"
                tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
                print("the controller did not come up; its log:\n" + tail)
                return 1
            source.close()
            print(f"controller up after {time.perf_counter() - t0:.1f} s")
            walls = []
            for _ in range(3):
                t1 = time.perf_counter()
                out = subprocess.run([sys.executable, "-m", "mdshell", "-q",
                                      f"127.0.0.1:{port}", "cat", "/live/catchUpSeconds",
                                      "/live/bytesFetched"], capture_output=True, text=True,
                                     timeout=120)
                walls.append(time.perf_counter() - t1)
                assert out.returncode == 0, out.stderr
            catch, build = [], []
            for _ in range(3):
                t1 = time.perf_counter()
                src = LiveSource(f"127.0.0.1:{port}")
                t2 = time.perf_counter()
                loaded = load(src)
                t3 = time.perf_counter()
                src.close()
                catch.append(t2 - t1)
                build.append(t3 - t2)
            parts = sum(len(t.partitions) for t in loaded.image.topics_by_name.values())
            print(f"{parts} partitions, {src.status().bytes_fetched / 1e6:.1f} MB fetched: "
                  f"catch-up best {min(catch):.3f} s, image build best {min(build):.3f} s, "
                  f"one-shot process (cat /live/...) best {min(walls):.3f} s")
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
