"""Spark's own conventions: the layout option (``mode`` is its deprecated alias), unknown
options ignored as built-in sources do (a near miss of one of ours is refused),
``nats://bucket/prefix`` paths, and ``write_dataframe`` defaulting to ``errorifexists``
like ``df.write``."""

from __future__ import annotations

import logging

import pytest

from natsobj.spark import BadSparkOption, DatasetExists, read_dataframe, write_dataframe
from natsobj.spark.options import SourceOptions


def test_mode_table_or_binary_is_a_deprecated_alias_of_layout(caplog, nats_url) -> None:
    # with a URL: without one, parsing resolves the implicit embedded server, starting it
    with pytest.warns(DeprecationWarning, match="'mode=binary' is deprecated.*use 'layout=binary'"):
        opts = SourceOptions.parse({"url": nats_url, "bucket": "b", "mode": "binary"})
    assert opts.layout == "binary"
    # a parse mode from a copied CSV snippet is not a layout: ignored like any unknown option
    with caplog.at_level(logging.DEBUG, logger="natsobj.spark"):
        parsed = SourceOptions.parse(
            {"url": nats_url, "bucket": "b", "path": "p", "mode": "FAILFAST"}
        )
        assert parsed.layout == "table"
    assert "ignoring option 'mode'" in caplog.text


def test_deprecated_mode_still_reads_binary_through_spark(spark, options, store) -> None:
    store.put("blobs/a", b"1")
    with pytest.warns(DeprecationWarning, match="use 'layout=binary'"):
        df = read_dataframe(spark, options["url"], store.bucket, "blobs", mode="binary")
    assert [r.name for r in df.select("name").collect()] == ["blobs/a"]


def test_unknown_options_are_ignored_and_near_misses_are_refused(spark, options) -> None:
    # a typo of one of ours is refused naming the known options (issue 28): never ignored
    with pytest.raises(
        BadSparkOption, match=r"'rows_per_objects' \(did you mean 'rows_per_object'\?\); known: "
    ):
        SourceOptions.parse({**options, "path": "p", "rows_per_objects": "5"})
    spark.range(4).write.format("natsobj").mode("overwrite").options(**options).save("snip")
    df = (
        spark.read.format("natsobj")
        .options(**options)
        .option("mergeSchema", "true")  # from a copied Parquet snippet
        .option("inferSchema", "true")
        .load("snip")
    )
    assert df.count() == 4


def test_load_nats_url_is_bucket_and_prefix(spark, options, store) -> None:
    spark.range(5).write.format("natsobj").mode("overwrite").option("url", options["url"]).save(
        f"nats://{store.bucket}/sales/daily"
    )
    assert {i.name.rsplit("/", 1)[0] for i in store.list()} == {"sales/daily"}
    url = options["url"]
    assert (
        spark.read.format("natsobj")
        .option("url", url)
        .load(f"nats://{store.bucket}/sales/daily/")
        .count()
        == 5
    )
    # the Airflow-style connection id in front of the bucket is read as the fs reads it
    assert (
        spark.read.format("natsobj")
        .option("url", url)
        .load(f"nats://my_conn@{store.bucket}/sales/daily")
        .count()
        == 5
    )
    with pytest.raises(BadSparkOption, match="names bucket 'lake' but option 'bucket' is 'b'"):
        SourceOptions.parse({"bucket": "b", "path": "nats://lake/x"})


def test_write_dataframe_defaults_to_errorifexists(spark, nats_url, store) -> None:
    first = write_dataframe(spark.range(3), nats_url, store.bucket, "d")
    with pytest.raises(DatasetExists, match="already exists"):
        write_dataframe(spark.range(5), nats_url, store.bucket, "d")
    replaced = write_dataframe(spark.range(5), nats_url, store.bucket, "d", mode="overwrite")
    assert (first["num_rows"], replaced["num_rows"]) == (3, 5)
