"""A fleet query with spark-submit: every cluster's metadata directory read by the ``kraft``
data source, in parallel on whatever Spark cluster runs this.

    spark-submit --master spark://HOST:7077 examples/fleet.py '/mnt/kafka-copies/*' [OUT.json]

The paths must be readable from every worker (a shared mount, a copy on each, or an s3a://,
gs:// or hdfs:// URI with the store's settings in the workers' environment), and mdshell
must be installed in the workers' Python (``pip install 'mdshell[spark]'``). Prints (or writes
to OUT.json) one JSON object per directory: cluster id, records, PartitionChangeRecords,
topics, partitions, and warnings about damaged files.
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main(paths: str, out: str | None) -> None:
    spark = SparkSession.builder.appName("mdshell-fleet").getOrCreate()
    from mdshell.spark.datasource import register

    register(spark)  # with this session's spark.sql.files packing settings as defaults
    # Only key columns are used here: skip building the JSON payloads.
    records = spark.read.format("kraft").option("payload", "false").load(paths)
    partitions = spark.read.format("kraft").option("table", "partitions").load(paths)
    per_dir = records.groupBy("directory", "cluster_id").agg(
        F.count("offset").alias("records"),
        F.sum(F.when(F.col("type") == "PartitionChangeRecord", 1).otherwise(0))
        .alias("partition_changes"),
        F.array_distinct(F.flatten(F.collect_list(F.coalesce(
            "warnings", F.array().cast("array<string>"))))).alias("warnings"))
    images = partitions.groupBy("directory").agg(
        F.countDistinct("topic").alias("topics"), F.count("partition").alias("partitions"))
    rows = per_dir.join(images, "directory", "left").fillna(0, ["topics", "partitions"]) \
        .orderBy("directory").collect()
    report = [r.asDict() for r in rows]
    text = "\n".join(json.dumps(r, sort_keys=True) for r in report) + "\n"
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    spark.stop()


def run(argv: list[str]) -> int:
    """Exit status: 0, 1 when Spark refuses the read (its message's first line on stderr:
    ``kraft: nothing to read: /mnt/copies/x: no such directory...``), 2 for usage."""
    if not 1 <= len(argv) <= 2:
        sys.stderr.write("usage: fleet.py PATHS [OUT.json]  (PATHS: a directory or a glob)\n")
        return 2
    from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
    from pyspark.errors import PySparkException

    try:
        main(argv[0], argv[1] if len(argv) > 1 else None)
    except PySparkException as e:
        sys.stderr.write(f"fleet.py: {_why(str(e))}\n")
        return 1
    except Py4JJavaError as e:  # several stages failed at once: Spark wraps their errors
        sys.stderr.write(f"fleet.py: {_why(str(e.java_exception))}\n")
        return 1
    return 0


def _why(text: str) -> str:
    """The line of a Spark error that says why: from the first data source error it names
    (two stages failing at once are wrapped in one error listing both), else its first."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in lines:
        at = line.find("[PYTHON_DATA_SOURCE_ERROR]")
        if at >= 0:
            return line[at:]
    return lines[0] if lines else "Spark failed"


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
