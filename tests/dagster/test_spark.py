"""A PySpark DataFrame asset is written and read by executors, never collected."""

from __future__ import annotations

import json

from dagster import asset, materialize
from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def test_spark_asset_round_trips_through_the_data_source(spark, io_manager, bucket_store):
    @asset
    def events() -> DataFrame:
        return spark.range(0, 1000, numPartitions=4).withColumn("kind", (F.col("id") % 3))

    @asset
    def counts(events: DataFrame) -> DataFrame:
        return events.groupBy("kind").count()

    @asset
    def summary(counts: DataFrame) -> dict:
        return {row["kind"]: row["count"] for row in counts.collect()}

    result = materialize([events, counts, summary], resources={"io_manager": io_manager})
    assert result.success
    assert result.output_for_node("summary") == {0: 334, 1: 333, 2: 333}

    # The dataset is a prefix: a manifest plus Parquet parts, written by the executors.
    names = {info.name for info in bucket_store.list()}
    manifest = json.loads(bucket_store.get_bytes("pipe/events/_manifest.json"))
    assert manifest["num_rows"] == 1000
    assert manifest["num_parts"] == len(manifest["parts"]) >= 2
    for part in manifest["parts"]:
        assert part["name"] in names and part["name"].startswith("pipe/events/part-")
        assert bucket_store.get_info(part["name"]).size == part["size"]
    assert "pipe/events" not in names  # no single object: nothing was collected

    [mat] = result.asset_materializations_for_node("events")
    meta = {k: v.value for k, v in mat.metadata.items()}
    info = bucket_store.get_info("pipe/events/_manifest.json")
    assert meta["dagster/uri"] == f"nats://{io_manager.bucket}/pipe/events"
    assert meta["format"] == "spark"
    assert meta["dagster/row_count"] == 1000
    assert meta["parts"] == manifest["num_parts"]
    assert meta["size"] == manifest["num_bytes"]
    assert meta["digest"] == info.digest and meta["nuid"] == info.nuid
    assert [(c.name, c.type) for c in meta["dagster/column_schema"].columns] == [
        ("id", "bigint"),
        ("kind", "bigint"),
    ]


def test_untyped_input_finds_the_spark_dataset(spark, io_manager):
    @asset
    def frame() -> DataFrame:
        return spark.createDataFrame([(1, "a"), (2, "b")], "n int, s string")

    @asset
    def untyped(frame) -> list:
        assert isinstance(frame, DataFrame)
        return sorted(r["s"] for r in frame.collect())

    result = materialize([frame, untyped], resources={"io_manager": io_manager})
    assert result.output_for_node("untyped") == ["a", "b"]
