"""Reading one partition folder of a dataset (``load("sales/region=r3")``, as
``spark.read.parquet("s3a://.../region=r3")``): pruned by the folder when the DataFrame is
loaded, so every scan of it (a re-scan, a self-join, a union) reads that partition's committed
rows and nothing else, and only that partition's bytes are fetched.

Bytes are counted where they leave the server (its monitoring port's ``out_bytes``, as in
test_row_group_ranges.py), so the count covers Spark's Python workers, whatever they fetch.
"""

from __future__ import annotations

import warnings

from natsobj.spark.pushdown import FILTERS_PUSHED
from natsobj.spark.storage import NoManifestWarning
from tests.spark.served import served

CONF = "spark.sql.python.filterPushdown.enabled"
PREFIX = "lake/folders"
REGIONS = 10
ROWS = 5_000  # per region


def _write(spark, options) -> None:
    rows = spark.range(0, REGIONS * ROWS, numPartitions=2).selectExpr(
        "id",
        "concat('r', cast(id % 10 AS string)) AS region",
        "sha2(cast(id AS string), 256) AS digest",
    )
    # Twice: the first generation's parts stay in the folders, retained for running readers.
    for _ in range(2):
        rows.write.format("natsobj").mode("overwrite").options(
            **options, partitionBy="region"
        ).save(PREFIX)


def test_a_partition_folder_reads_its_committed_rows_in_every_scan(spark, options) -> None:
    _write(spark, options)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoManifestWarning)  # read through the manifest
        part = spark.read.format("natsobj").options(**options).load(f"{PREFIX}/region=r3")
    assert part.columns == ["id", "digest"]  # as Spark's Parquet source reads a folder
    assert part.filter("id < 1000").count() == 100
    assert part.count() == ROWS  # the same DataFrame scanned again
    assert part.alias("a").join(part.alias("b"), "id").count() == ROWS
    assert part.filter("id < 1000").union(part.filter("id >= 1000")).count() == ROWS
    assert {r.id % 10 for r in part.select("id").collect()} == {3}


def test_base_path_keeps_the_folder_columns(spark, options) -> None:
    _write(spark, options)
    part = (
        spark.read.format("natsobj")
        .options(**options, basePath=PREFIX)
        .load(f"nats://{options['bucket']}/{PREFIX}/region=r7")
    )
    assert part.columns == ["id", "digest", "region"]
    assert part.groupBy("region").count().collect() == [("r7", ROWS)]


def test_a_partition_folder_fetches_a_tenth_of_the_dataset(spark, monitored, bucket_name) -> None:
    server, port = monitored
    options = {"url": server.url, "bucket": bucket_name}
    _write(spark, options)

    def fetched(path: str) -> tuple[int, int]:
        before = served(port)
        count = spark.read.format("natsobj").options(**options).load(path).count()
        return count, served(port) - before

    everything, all_bytes = fetched(PREFIX)
    one, one_bytes = fetched(f"{PREFIX}/region=r3")
    assert (everything, one) == (REGIONS * ROWS, ROWS)
    print(f"\nserved: whole dataset {all_bytes} bytes, one partition of ten {one_bytes}")
    assert one_bytes < all_bytes * 0.15, (one_bytes, all_bytes)  # pruned by folder, any Spark


def test_a_filter_on_the_partition_column_fetches_a_tenth_of_the_dataset(
    spark, monitored, bucket_name
) -> None:
    """``load(dataset).filter("region = ...")`` with pushdown on: the other partitions' parts
    are not fetched (where PySpark hands filters over: 4.1 and later), and a later scan of the
    same DataFrame still counts every row."""
    server, port = monitored
    options = {"url": server.url, "bucket": bucket_name}
    _write(spark, options)
    spark.conf.set(CONF, "true")
    try:
        before = served(port)
        everything = spark.read.format("natsobj").options(**options).load(PREFIX).count()
        all_bytes = served(port) - before
        df = spark.read.format("natsobj").options(**options, pushdown="true").load(PREFIX)
        before = served(port)
        one = df.filter("region = 'r3'").count()
        one_bytes = served(port) - before
        again = df.count()
    finally:
        spark.conf.unset(CONF)
    assert (everything, one, again) == (REGIONS * ROWS, ROWS, REGIONS * ROWS)
    print(f"\nserved: whole dataset {all_bytes} bytes, filter on one partition {one_bytes}")
    if FILTERS_PUSHED:
        assert one_bytes < all_bytes * 0.15, (one_bytes, all_bytes)
    else:  # PySpark 4.0 hands a Python source no filter: every part is fetched, as documented
        assert one_bytes >= all_bytes * 0.9, (one_bytes, all_bytes)
