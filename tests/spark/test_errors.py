"""Bad options and missing data fail with a message naming the problem, never a JVM trace."""

from __future__ import annotations

import pytest
from pyspark.errors import PySparkException

from natsobj.errors import BucketNotFound
from natsobj.spark import BadSparkOption, DatasetNotFound, read_dataframe, write_dataframe


def _message(excinfo: pytest.ExceptionInfo) -> str:
    text = str(excinfo.value)
    assert "at org.apache" not in text and "java." not in text  # no Java stack trace
    return text


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, "option 'bucket' is required"),
        ({"bucket": "b", "layout": "tabular"}, "unknown layout 'tabular'; use one of"),
        ({"bucket": "b", "url": "http://example.invalid"}, "option 'url' must look like nats://"),
        ({"bucket": "b", "rows_per_object": "many"}, "'rows_per_object' must be a whole number"),
        ({"bucket": "no/slash"}, "invalid bucket name"),
    ],
)
def test_bad_read_options_are_explained(spark, nats_url, options, expected) -> None:
    reader = spark.read.format("natsobj").option("url", nats_url).options(**options)
    with pytest.raises(PySparkException) as excinfo:
        reader.load("some/prefix").collect()
    assert expected in _message(excinfo)


def test_bad_write_options_are_explained(spark, nats_url) -> None:
    df = spark.range(3)
    with pytest.raises(PySparkException) as excinfo:
        df.write.format("natsobj").mode("overwrite").option("url", nats_url).save("p")
    assert "option 'bucket' is required" in _message(excinfo)
    with pytest.raises(PySparkException) as excinfo:
        df.write.format("natsobj").mode("append").options(url=nats_url, bucket="b").save()
    assert "a dataset prefix is required" in _message(excinfo)
    with pytest.raises(PySparkException) as excinfo:
        df.write.format("natsobj").mode("append").options(
            url=nats_url, bucket="b", layout="binary"
        ).save("p")
    assert "layout 'binary' is read-only" in _message(excinfo)


def test_helpers_raise_python_errors_before_spark_runs(spark, nats_url, bucket_name) -> None:
    df = spark.range(3)
    with pytest.raises(BadSparkOption, match="unknown write mode 'upsert'"):
        write_dataframe(df, nats_url, bucket_name, "p", mode="upsert")
    with pytest.raises(BadSparkOption, match="option 'url' must look like nats://"):
        write_dataframe(df, "postgres://db:5432", bucket_name, "p")
    with pytest.raises(BadSparkOption, match="unknown layout 'csv'"):
        read_dataframe(spark, nats_url, bucket_name, "p", layout="csv")
    with pytest.raises(BucketNotFound, match=bucket_name):
        read_dataframe(spark, nats_url, bucket_name, "p")


def test_missing_dataset_and_bucket_are_named(spark, nats_url, store) -> None:
    with pytest.raises(DatasetNotFound, match="dataset 'nope' not found"):
        read_dataframe(spark, nats_url, store.bucket, "nope")
    with pytest.raises(PySparkException) as excinfo:
        spark.read.format("natsobj").options(url=nats_url, bucket="absent_bucket").load("x")
    assert "bucket 'absent_bucket': bucket does not exist" in _message(excinfo)


def test_write_creates_a_missing_bucket_unless_told_not_to(spark, nats_url, sync_client) -> None:
    bucket = "spark_autocreate"
    try:
        with pytest.raises(PySparkException) as excinfo:
            spark.range(2).write.format("natsobj").mode("overwrite").options(
                url=nats_url, bucket=bucket, create_bucket="false"
            ).save("p")
        assert "bucket does not exist" in _message(excinfo)
        manifest = write_dataframe(spark.range(2), nats_url, bucket, "p")
        assert manifest["num_rows"] == 2
        assert bucket in sync_client.store_names()
    finally:
        if bucket in sync_client.store_names():
            sync_client.delete_store(bucket)


def test_secrets_are_not_in_error_messages(spark, nats_url) -> None:
    with pytest.raises(PySparkException) as excinfo:
        spark.read.format("natsobj").options(
            url="http://example.invalid", bucket="b", password="hunter2-secret"
        ).load("x")
    assert "hunter2-secret" not in _message(excinfo)


def test_secrets_stay_out_of_query_plans(spark, nats_url, store) -> None:
    options = {"url": nats_url, "bucket": store.bucket, "user": "u", "password": "hunter2-pw"}
    spark.range(3).write.format("natsobj").mode("overwrite").options(**options).save("s")
    df = spark.read.format("natsobj").options(**options).load("s")
    assert df.count() == 3
    plans = df._jdf.queryExecution().toString() + str(df._jdf.logicalPlan())
    assert "hunter2-pw" not in plans
