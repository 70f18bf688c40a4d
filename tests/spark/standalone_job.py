"""A Spark driver for the standalone-cluster tests, run as its own process.

The test process keeps its ``local[2]`` session for the other Spark tests, and one JVM holds
only one SparkContext, so the cluster's driver is this script. It prints one JSON line with
what it saw: ``{"ok": true, "rows": ..., ...}`` or ``{"ok": false, "error": "..."}``. It writes
the dataset, then reads it back in the same application (one driver start, not two).

    python -m tests.spark.standalone_job MASTER OPTIONS_JSON ROWS PARTITIONS DELAY
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import SparkSession

from natsobj.spark import register

PREFIX = "lake/standalone"


def session(master: str) -> SparkSession:
    # The driver-side Python workers (planning, commit) take the interpreter from the
    # environment, the executors' from spark.pyspark.python: both must be this one.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    spark = (
        SparkSession.builder.master(master)
        .appName("natsobj-standalone-test")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.executor.memory", "512m")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", "2")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.task.maxFailures", "4")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def write(
    spark: SparkSession, options: dict[str, str], rows: int, parts: int, delay: float
) -> None:
    """Each input batch waits ``delay`` seconds in the executor's Python worker, so the test
    can kill an executor while its task is between parts."""

    def slow(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            time.sleep(delay)
            yield batch

    df = spark.range(0, rows, numPartitions=parts).mapInArrow(slow, "id long")
    df.write.format("natsobj").mode("overwrite").options(**options).save(PREFIX)


def read(spark: SparkSession, options: dict[str, str]) -> dict:
    df = spark.read.format("natsobj").options(**options).load(PREFIX)
    row = df.selectExpr("count(*) AS n", "sum(id) AS total", "count(DISTINCT id) AS ids").first()
    return {"rows": row["n"], "sum": row["total"], "distinct": row["ids"]}


def main(argv: list[str]) -> int:
    master, options_json, rows, parts, delay = argv
    options = json.loads(options_json)
    spark = session(master)
    try:
        write(spark, options, int(rows), int(parts), float(delay))
        print(json.dumps({"ok": True, **read(spark, options)}), flush=True)
        return 0
    except Exception as exc:
        print(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 1
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
