"""A streaming driver run as its own process by test_stream_exactly_once, so the test can
``kill -9`` it mid-batch: landing/*.csv (obj, row) through a deliberately slow step into the
natsobj dataset clean/rows, two objects per micro-batch.

    python -m tests.spark.stream_job URL BUCKET CHECKPOINT (continuous | available-now)
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator

import pyarrow as pa

SLOW_SECONDS = 2.0  # per task, so a kill lands inside a batch


def slow(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    time.sleep(SLOW_SECONDS)
    yield from batches


def main() -> None:
    url, bucket, checkpoint, trigger = sys.argv[1:5]
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    options = {"url": url, "bucket": bucket}
    stream = (
        spark.readStream.format("natsobj")
        .options(**options, glob="landing/*.csv", maxObjectsPerTrigger="2")
        .schema("obj INT, row INT")
        .load()
        .mapInArrow(slow, "obj INT, row INT")
    )
    chosen = (
        {"availableNow": True} if trigger == "available-now" else {"processingTime": "1 second"}
    )
    query = (
        stream.writeStream.format("natsobj")
        .options(**options)
        .option("checkpointLocation", checkpoint)
        .trigger(**chosen)
        .start("clean/rows")
    )
    print("started", query.id, flush=True)
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
