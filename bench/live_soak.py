"""Soak: a followed live session stays equal to the quorum while it churns (issue 21).

Usage: python bench/live_soak.py [--steps 200] [--seed 1] [--limit-s 1800] [--version 4.4.0]

One real Kafka quorum on 127.0.0.1 (3 nodes in combined mode, a dynamic quorum, snapshots
every second), one ``-q`` session following it. Random steps: create / delete a topic, alter
a topic config, SIGSTOP a voter (the leader half of the time) for 5 s then SIGCONT, SIGKILL
a node and restart it, remove a follower voter and add it back. After each step, once the
quorum is stable, the followed image must equal ``-d`` on a copy of the leader's directory at
the same offset, and the session's voters and leader must equal ``kafka-metadata-quorum
describe --status``. Prints steps run, divergences (must be 0), and the worst times to notice a
frozen leader and to follow the new one. Bounded: ``--steps``, ``--limit-s``; every JVM it
started is stopped in ``finally``. Not covered: ACLs and SCRAM users (no authorizer here).
The steps and checks: ``tests/kafka/soak.py``; ``--keep DIR`` keeps each divergence's
evidence (the directory copy, both trees).
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.kafka.cluster import KraftCluster  # noqa: E402
from tests.kafka.soak import SNAPSHOT_OFTEN, Soak  # noqa: E402


def _exit_on_signal(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit-s", type=float, default=1800)
    ap.add_argument("--version", default="4.4.0")
    ap.add_argument("--keep", type=Path, help="a directory for each divergence's evidence")
    args = ap.parse_args()
    # Stopped by a signal, the cluster is still stopped in ``finally`` (a job started in the
    # background ignores SIGINT unless it is asked for again).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _exit_on_signal)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        cluster = KraftCluster(args.version, Path(tmp), controller_extra=dict(SNAPSHOT_OFTEN),
                               dynamic=True, combined=True)
        soak = None
        try:
            cluster.start()
            soak = Soak(cluster, args.seed)
            soak.keep = args.keep
            soak.run(args.steps, args.limit_s - (time.monotonic() - t0),
                     lambda line: print(line, flush=True))
        finally:
            if soak is not None:
                soak.close()
            cluster.stop()
    assert soak is not None
    print(soak.summary())
    for d in soak.divergences:
        print("  " + d)
    return 1 if soak.divergences else 0


if __name__ == "__main__":
    sys.exit(main())
