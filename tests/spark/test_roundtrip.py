"""Round trips through format("natsobj") on a real local[2] Spark and a real nats-server."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pytest
from pyspark.sql import Row
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from natsobj.spark import read_dataframe, write_dataframe

ALL_TYPES = StructType(
    [
        StructField("id", LongType(), False),
        StructField("i8", ByteType()),
        StructField("i16", ShortType()),
        StructField("i32", IntegerType()),
        StructField("f32", FloatType()),
        StructField("f64", DoubleType()),
        StructField("dec", DecimalType(18, 4)),
        StructField("big", DecimalType(38, 10)),
        StructField("flag", BooleanType()),
        StructField("text", StringType()),
        StructField("blob", BinaryType()),
        StructField("day", DateType()),
        StructField("ts", TimestampType()),
        StructField("ts_ntz", TimestampNTZType()),
        StructField("tags", ArrayType(StringType())),
        StructField("scores", MapType(StringType(), DoubleType())),
        StructField(
            "point",
            StructType([StructField("x", DoubleType()), StructField("label", StringType())]),
        ),
        StructField("nested", ArrayType(StructType([StructField("k", IntegerType(), False)]))),
    ]
)
BERLIN = dt.timezone(dt.timedelta(hours=2))


def _rows() -> list[tuple]:
    rows = [
        (
            1,
            -128,
            32767,
            2**31 - 1,
            1.5,
            3.141592653589793,
            decimal.Decimal("12345.6789"),
            decimal.Decimal("1234567890.0123456789"),
            True,
            "grüße, 世界",
            b"\x00\xffbytes",
            dt.date(2024, 2, 29),
            dt.datetime(2024, 3, 31, 1, 30, tzinfo=BERLIN),
            dt.datetime(1999, 12, 31, 23, 59, 59, 999999),
            ["a", None, "c"],
            {"x": 1.0, "y": None},
            ("1.25", "p") and (1.25, "p"),
            [(1,), (2,)],
        ),
        (2, *([None] * (len(ALL_TYPES.fields) - 1))),
    ]
    rows += [
        (
            i,
            i % 100,
            i,
            i,
            float(i),
            i / 3,
            decimal.Decimal(i),
            None,
            i % 2 == 0,
            f"s{i}",
            bytes([i % 256]),
            dt.date(2020, 1, 1) + dt.timedelta(days=i),
            dt.datetime(2021, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=i),
            dt.datetime(2021, 1, 1) + dt.timedelta(microseconds=i),
            [str(i)],
            {"k": float(i)},
            (float(i), None),
            [],
        )
        for i in range(3, 203)
    ]
    return rows


def _sorted(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: r["id"])


def test_all_common_types_round_trip(spark, options, store) -> None:
    # A non-UTC session zone: instants must survive, whatever zone Arrow batches carry.
    previous_zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        df = spark.createDataFrame(_rows(), ALL_TYPES).repartition(3)
        df.write.format("natsobj").mode("overwrite").options(**options).save("types/all")
        back = spark.read.format("natsobj").options(**options).load("types/all")
        assert back.schema == ALL_TYPES  # exact types and nullability from the manifest
        assert _sorted(back.collect()) == _sorted(df.collect())
        first = _sorted(back.collect())[0]
        assert first["ts"].astimezone(dt.UTC) == dt.datetime(2024, 3, 30, 23, 30, tzinfo=dt.UTC)
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous_zone)


def test_partitions_become_counted_part_objects(spark, options, store) -> None:
    df = spark.range(0, 10_000, numPartitions=4).selectExpr("id", "cast(id % 7 as int) AS g")
    df.write.format("natsobj").mode("overwrite").options(**options).option(
        "rows_per_object", 1000
    ).save("sales/daily")

    names = sorted(i.name for i in store.list())
    parts = [n for n in names if n.endswith(".parquet")]
    assert len(parts) == 12  # 4 partitions of 2500 rows, cut at 1000 rows per object: 3 each
    assert names == sorted([*parts, "sales/daily/_manifest.json"])
    assert all(n.startswith("sales/daily/part-0000") for n in parts)

    manifest = json.loads(store.get_bytes("sales/daily/_manifest.json"))
    assert manifest["num_rows"] == 10_000
    assert sorted(p["name"] for p in manifest["parts"]) == parts
    assert sum(p["rows"] for p in manifest["parts"]) == 10_000
    assert sorted(p["rows"] for p in manifest["parts"]) == [500] * 4 + [1000] * 8
    infos = {i.name: i for i in store.list()}
    for part in manifest["parts"]:
        assert infos[part["name"]].digest == part["digest"]
        assert infos[part["name"]].size == part["size"]

    back = spark.read.format("natsobj").options(**options).load("sales/daily")
    assert back.rdd.getNumPartitions() == 12  # one input partition per part object
    assert back.count() == 10_000
    assert back.groupBy().sum("id").first()[0] == sum(range(10_000))


def test_helpers_return_the_manifest_and_read_with_a_user_schema(spark, nats_url, store) -> None:
    df = spark.createDataFrame([(i, f"n{i}") for i in range(50)], "id long, name string")
    manifest = write_dataframe(df, nats_url, store.bucket, "helpers/one")
    assert manifest["num_rows"] == 50
    assert {"name", "rows", "size", "digest"} <= set(manifest["parts"][0])
    assert [f["name"] for f in manifest["schema"]["fields"]] == ["id", "name"]

    subset = read_dataframe(spark, nats_url, store.bucket, "helpers/one", schema="name string")
    assert subset.columns == ["name"]
    assert sorted(r.name for r in subset.collect()) == sorted(f"n{i}" for i in range(50))


def test_empty_dataframe_round_trips_with_its_schema(spark, options, store) -> None:
    df = spark.createDataFrame([], "id long, name string")
    df.write.format("natsobj").mode("overwrite").options(**options).save("empty")
    back = spark.read.format("natsobj").options(**options).load("empty")
    assert back.schema == df.schema
    assert back.count() == 0


def test_format_is_found_by_auto_discovery_without_register(spark, options, store) -> None:
    fresh = spark.newSession()  # new session state: no data source registered by hand
    fresh.range(5).write.format("natsobj").mode("overwrite").options(**options).save("auto")
    assert fresh.read.format("natsobj").options(**options).load("auto").count() == 5


@pytest.mark.parametrize(
    ("compression", "codec"), [(None, "ZSTD"), ("snappy", "SNAPPY"), ("none", "UNCOMPRESSED")]
)
def test_compression_option(spark, options, store, compression, codec) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    extra = {"compression": compression} if compression else {}
    spark.range(100, numPartitions=1).write.format("natsobj").mode("overwrite").options(
        **options, **extra
    ).save("c")
    manifest = json.loads(store.get_bytes("c/_manifest.json"))
    part = store.get_bytes(manifest["parts"][0]["name"])
    assert (
        pq.ParquetFile(pa.BufferReader(part)).metadata.row_group(0).column(0).compression == codec
    )
    assert spark.read.format("natsobj").options(**options).load("c").count() == 100


def test_embedded_url_in_local_mode(spark, isolated_cwd) -> None:
    from natsobj.local.embedded import running_server, stop_server

    data_dir = isolated_cwd / ".natsobj"
    try:
        manifest = write_dataframe(spark.range(20, numPartitions=2), "embedded", "emb", "d")
        assert manifest["num_rows"] == 20
        assert running_server(data_dir) is not None  # the executors used this directory's server
        back = read_dataframe(spark, "embedded", "emb", "d")
        assert sorted(r.id for r in back.collect()) == list(range(20))
        direct = spark.read.format("natsobj").options(url=f"embedded://{data_dir}", bucket="emb")
        assert direct.load("d").count() == 20
    finally:
        stop_server(data_dir)


@pytest.mark.parametrize("dictionary", [None, "true"])
def test_dictionary_option_reads_back_everywhere(
    spark, options, store, tmp_path, dictionary
) -> None:
    """Parts are written without dictionary pages by default (``dictionary=true`` brings them
    back); either way the part is a normal Parquet file that pyarrow, natsobj and Spark's own
    parquet reader read to the same rows, with min/max statistics on every column for
    pushdown."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = spark.range(0, 5000, numPartitions=1).selectExpr(
        "id",
        "id * 0.25 AS amount",
        "concat('customer-', cast(id % 700 AS string)) AS customer",
        "CASE WHEN id % 3 = 0 THEN 'north' ELSE 'south' END AS region",
    )
    extra = {"dictionary": dictionary} if dictionary else {}
    df.write.format("natsobj").mode("overwrite").options(**options, **extra).save("dict")
    manifest = json.loads(store.get_bytes("dict/_manifest.json"))
    part = store.get_bytes(manifest["parts"][0]["name"])
    metadata = pq.ParquetFile(pa.BufferReader(part)).metadata
    for i in range(metadata.num_columns):
        column = metadata.row_group(0).column(i)
        assert column.has_dictionary_page == (dictionary == "true"), column.path_in_schema
        assert column.statistics is not None and column.statistics.has_min_max

    expected = sorted(df.collect())
    assert sorted(spark.read.format("natsobj").options(**options).load("dict").collect()) == (
        expected
    )
    local = tmp_path / "part.parquet"
    local.write_bytes(part)
    assert sorted(spark.read.parquet(str(local)).collect()) == expected
    table = pq.read_table(pa.BufferReader(part))
    assert table.column("customer").to_pylist() == [f"customer-{i % 700}" for i in range(5000)]
    assert table.column("amount").to_pylist() == [decimal.Decimal(i) / 4 for i in range(5000)]
