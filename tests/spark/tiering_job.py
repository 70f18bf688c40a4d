"""A Spark driver for test_tiering, run as its own process with the S3 settings in its
environment, as executors on a cluster get them (``spark.executorEnv.AWS_...``): the Python
workers of the auto-discovered source inherit the JVM's environment, and PySpark 4.0 keeps
that source (it refuses a second registration), so settings given to the test's running
session later would never reach them. Prints the objects read, as JSON ``{name: hex}``.

    python -m tests.spark.tiering_job OPTIONS_JSON PATH
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    options, path = json.loads(sys.argv[1]), sys.argv[2]
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        df = spark.read.format("natsobj").options(**options, layout="binary").load(path)
        print(json.dumps({row.name: row.content.hex() for row in df.collect()}), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
