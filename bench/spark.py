"""Benchmark: Spark session start, the ``kraft`` data source's throughput, a group-by over a
million partitions, and a fleet query over every corpus directory.

Usage: python bench/spark.py [--records N] [--partitions-topics T] [--master URL]
                             [--out bench/out] [--skip NAME[,NAME]]

- ``throughput``: a generated history of N records (default 10M; one record a batch, like a
  real quiet log: NoOps between partition changes) read through the data source, payload
  included; records/s over the read alone (the session is up). The query counts the rows and
  sums the payloads' lengths, but that does not let Spark skip anything: a Python data source
  has no column pruning, so every column of every row (18 of them, about 195 bytes a row) is
  decoded, sent to the JVM as Arrow and turned into a Spark row, as for any query.
- ``groupby``: the ``partitions`` table of a generated image with T*100 partitions (default
  1M), registered and grouped by leader, timed after the session is up (table build, then the
  query); the image load is reported separately.
- ``scratch``: the same ``partitions`` table kept for repeated queries three ways (the
  scratch Parquet copy ``sql`` makes on a local master, ``createDataFrame`` + ``cache()``,
  the Parquet copy + ``cache()``): making it, the first query, the next ones.
- ``fleet``: a fresh process that starts its own session and counts records and partitions per
  directory over every corpus directory (session start included, as a user sees it).

Generated directories are written once by ``mdshell.synth`` into the output folder and reused.
Figures are printed as one JSON object a line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cputime import cpu_by_kind, cpu_since, tree

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
sys.path.insert(0, str(ROOT))

FLEET_CODE = """
import sys, time
start = time.perf_counter()
sys.path.insert(0, "bench")
from cputime import cpu_since, tree
cpu0 = tree()
from mdshell.spark.settings import SETTINGS
SETTINGS.master = sys.argv[1]
from mdshell.spark.session import get_session
spark = get_session()
up = time.perf_counter() - start
records = spark.read.format("kraft").load(sys.argv[2])
parts = spark.read.format("kraft").option("table", "partitions").load(sys.argv[2])
r = records.groupBy("directory").count().collect()
p = parts.groupBy("directory").count().collect()
print(up, time.perf_counter() - start, sum(x["count"] for x in r), len(r),
      sum(x["count"] for x in p), cpu_since(cpu0))
"""


def report(**figures: Any) -> None:
    print(json.dumps(figures), flush=True)


def generate(target: Path, args: list[str]) -> Path:
    if not (target / "__cluster_metadata-0").is_dir():
        print(f"generating {target} ...", file=sys.stderr)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mdshell.synth", "--out", str(target), *args],
                       check=True)
        print(f"  took {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return target


def history(out: Path, records: int) -> Path:
    """About ``records`` records: 100 per partition change (99 NoOps between changes)."""
    changes = max(1, records // 100)
    return generate(out / f"history-{records}", [
        "--brokers", "6", "--topics", "20", "--partitions-per-topic", "10",
        "--history-changes", str(changes), "--noops-per-change", "99",
        "--segment-bytes", str(64 << 20), "--seed", "3"])


def session(master: str) -> tuple[Any, float]:
    from mdshell.spark.settings import SETTINGS

    SETTINGS.master = master
    from mdshell.spark.session import get_session

    start = time.perf_counter()
    spark = get_session()
    spark.sql("select 1").collect()
    return spark, time.perf_counter() - start


def throughput(spark: Any, directory: Path) -> None:
    from pyspark.sql import functions as F

    for run in ("first", "second"):
        df = spark.read.format("kraft").load(str(directory))
        start, cpu = time.perf_counter(), tree()
        row = df.agg(F.count("*").alias("n"),
                     F.sum(F.length("payload")).alias("bytes")).collect()[0]
        took, kinds = time.perf_counter() - start, cpu_by_kind(cpu)
        report(bench=f"throughput ({run} run)", records=row["n"],
               files=df.rdd.getNumPartitions(), seconds=round(took, 2),
               records_per_s=round(row["n"] / took), cpu_s=round(sum(kinds.values()), 2),
               cpu_jvm_s=kinds["jvm"], cpu_python_s=kinds["python"])
    df = spark.read.format("kraft").option("payload", "false").load(str(directory))
    start, cpu = time.perf_counter(), tree()
    n = df.agg(F.count("*").alias("n")).collect()[0]["n"]
    took, cpu = time.perf_counter() - start, cpu_since(cpu)
    report(bench="throughput (payload off)", records=n, seconds=round(took, 2),
           records_per_s=round(n / took), cpu_s=round(cpu, 2))
    reader_alone(directory)


def reader_alone(directory: Path) -> None:
    """What the workers do, without Spark: the data source's reader over every partition in
    one process (its CPU time is the decoding cost, whatever the machine's load)."""
    from mdshell.spark.datasource import KraftReader
    from mdshell.spark.readopts import ReadOptions

    reader = KraftReader(ReadOptions(paths=[str(directory)]))
    start, cpu = time.perf_counter(), time.process_time()
    n = sum(b.num_rows for p in reader.partitions() for b in reader.read(p))
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    report(bench="reader alone (one process, no Spark)", records=n, seconds=round(took, 2),
           cpu_s=round(cpu, 2), records_per_cpu_s=round(n / cpu))


def groupby(spark: Any, directory: Path) -> None:
    from mdshell.session import load
    from mdshell.source import open_source
    from mdshell.spark import query, tables

    start = time.perf_counter()
    source = open_source(str(directory))
    loaded = load(source)
    load = time.perf_counter() - start
    view = tables.View(source, loaded)
    start, cpu = time.perf_counter(), time.process_time()
    tables.build("partitions", view)
    report(bench="partitions table alone", seconds=round(time.perf_counter() - start, 2),
           cpu_s=round(time.process_time() - cpu, 2))
    start, cpu = time.perf_counter(), tree()
    query.register(spark, view, ["partitions"])
    built = time.perf_counter() - start
    start = time.perf_counter()
    rows = query.collect(query.run(view, "select leader, count(*) as n, "
                                         "avg(size(isr)) as isr from partitions group by leader"
                                   )[0])
    ran = time.perf_counter() - start
    report(bench="groupby", partitions=sum(r["n"] for r in rows.to_pylist()),
           load_s=round(load, 2), table_and_register_s=round(built, 2), query_s=round(ran, 2),
           after_session_s=round(built + ran, 2), cpu_s=round(cpu_since(cpu), 2))
    start = time.perf_counter()
    query.collect(query.run(view, "select topic, max(leader_epoch) from partitions "
                                  "group by topic order by 2 desc limit 10")[0])
    report(bench="groupby (registered)", query_s=round(time.perf_counter() - start, 2))


SHELL_QUERIES = ["select leader, count(*) as n, avg(size(isr)) as isr from T group by leader",
                 "select topic, max(leader_epoch) from T group by topic order by 2 desc limit 10",
                 "select count(*) from T where size(isr) < size(replicas)"]


def scratch(spark: Any, directory: Path) -> None:
    """How the shell keeps a table for repeated queries on a local master: the scratch
    Parquet copy ``sql`` writes (what it does), ``createDataFrame(...).cache()``, and the
    Parquet copy cached. Each: the table made (``make``), the first query (a cache fills
    then), and the mean of the next five (the repeated queries of a session)."""
    from mdshell.session import load
    from mdshell.source import open_source
    from mdshell.spark import query, tables

    source = open_source(str(directory))
    table = tables.build("partitions", tables.View(source, load(source)))
    ways = {"parquet copy (what sql does)": lambda: query.frame(spark, "bench_p", table),
            "createDataFrame + cache()": lambda: spark.createDataFrame(table).cache(),
            "parquet copy + cache()": lambda: query.frame(spark, "bench_c", table).cache()}
    for way, make in ways.items():
        start, cpu = time.perf_counter(), tree()
        df = make()
        df.createOrReplaceTempView("T")
        made = time.perf_counter() - start
        took = []
        for q in SHELL_QUERIES * 2:
            t = time.perf_counter()
            spark.sql(q).collect()
            took.append(time.perf_counter() - t)
        report(bench=f"scratch: {way}", rows=table.num_rows, make_s=round(made, 2),
               first_query_s=round(took[0], 2),
               next_queries_mean_s=round(sum(took[1:]) / len(took[1:]), 3),
               cpu_s=round(cpu_since(cpu), 2))
        df.unpersist()


def fleet(master: str) -> None:
    if not any(CORPUS.glob("*/__cluster_metadata-0")):
        raise SystemExit(f"bench/spark.py: no corpus in {CORPUS} (the fleet query reads every "
                         "directory there): put ../shared beside the checkout, or --skip fleet")
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", FLEET_CODE, master, str(CORPUS / "*")],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    wall = time.perf_counter() - start
    up, total, records, dirs, parts, cpu = out.stdout.split()
    report(bench="fleet", directories=int(dirs), records=int(records), partitions=int(parts),
           session_s=round(float(up), 2), in_process_s=round(float(total), 2),
           wall_s=round(wall, 2), cpu_s=round(float(cpu), 2))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--records", type=int, default=10_000_000)
    p.add_argument("--partitions-topics", type=int, default=10_000)
    p.add_argument("--master", default="local[*]")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    p.add_argument("--skip", default="")
    ns = p.parse_args()
    skip = set(ns.skip.split(","))
    ns.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MDSHELL_SPARK_LOG", str(ns.out / "spark.log"))
    report(bench="machine", cores=os.cpu_count(), load_average=os.getloadavg()[0])
    if "fleet" not in skip:
        fleet(ns.master)
    hist = history(ns.out, ns.records) if "throughput" not in skip else None
    image = None
    if "groupby" not in skip:
        image = generate(ns.out / f"gen-{ns.partitions_topics * 100}", [
            "--topics", str(ns.partitions_topics), "--brokers", "30", "--controllers", "3",
            "--partitions-per-topic", "100", "--rf", "3", "--history-changes", "2000",
            "--snapshot-at", "setup", "--log-from", "snapshot", "--seed", "7"])
    spark, up = session(ns.master)
    report(bench="session", master=ns.master, start_s=round(up, 2))
    if hist is not None:
        throughput(spark, hist)
    if image is not None:
        groupby(spark, image)
    if image is not None and "scratch" not in skip:
        scratch(spark, image)


if __name__ == "__main__":
    main()
