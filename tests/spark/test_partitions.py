"""Hive-style partitioned datasets, against Spark's own Parquet source on a local directory:
the same folders on write (one manifest commit), the same schema, types and rows on read,
and a filter on a partition column reads only that partition's objects."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import IllegalArgumentException

import natsobj
from natsobj.spark import BadSparkOption
from natsobj.spark.manifest import is_data_object
from natsobj.spark.partition_values import escape, infer_type, unescape, wider
from natsobj.spark.pushdown import FILTERS_PUSHED
from natsobj.spark.stream_reader import READ_LIMITS
from tests.spark.served import served

CONF = "spark.sql.python.filterPushdown.enabled"
PREFIX = "lake/sales"
REGIONS = ["us", "eu", "a/b=c %x", "", None]


def _frame(spark, rows: int = 400):
    data = [(i, REGIONS[i % len(REGIONS)], i * 0.25, i % 3) for i in range(rows)]
    return spark.createDataFrame(data, "id long, region string, amount double, tier int")


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _folders(names) -> set[str]:
    return {name.rsplit("/", 1)[0] for name in names}


def test_spark_does_not_hand_partition_by_to_a_python_data_source(spark, options) -> None:
    """Why the option: Spark 4.3's PythonDataSourceV2.getTable drops the partitioning it is
    given and PythonTable reports none, so DataFrameWriter's check that the two match fails
    before any of this source's code runs. When this test fails, Spark passes partitioning
    to Python data sources: make .partitionBy() write what option partitionBy writes."""
    df = _frame(spark, 10)
    writer = df.write.format("natsobj").mode("overwrite").options(**options)
    with pytest.raises(IllegalArgumentException, match="do not match the existing table's"):
        writer.partitionBy("region").save(PREFIX)


def test_partitioned_write_lays_out_folders_as_sparks_parquet_source(
    spark, options, store, tmp_path: Path
) -> None:
    df = _frame(spark).repartition(2)
    df.write.format("natsobj").mode("overwrite").options(**options, partitionBy="region").save(
        PREFIX
    )
    local = tmp_path / "parquet"
    df.write.mode("overwrite").partitionBy("region").parquet(str(local))

    manifest = json.loads(store.get_bytes(f"{PREFIX}/_manifest.json"))
    assert manifest["generation"] == 1  # one commit for the whole write
    assert manifest["partition_columns"] == ["region"]
    names = [p["name"] for p in manifest["parts"]]
    spark_folders = {p.parent.name for p in local.rglob("*.parquet")}
    assert {n.removeprefix(PREFIX + "/") for n in _folders(names)} == spark_folders
    assert spark_folders == {
        "region=us",
        "region=eu",
        "region=a%2Fb%3Dc %25x",
        "region=__HIVE_DEFAULT_PARTITION__",
    }
    assert {i.name for i in store.list() if i.name.endswith(".parquet")} == set(names)
    for name in names:  # the partition column is left out of the objects, as Spark leaves it
        stored = pq.read_schema(pa.BufferReader(store.get_bytes(name)))
        assert stored.names == ["id", "amount", "tier"]

    ours = spark.read.format("natsobj").options(**options).load(PREFIX)
    theirs = spark.read.parquet(str(local))
    assert ours.schema.simpleString() == theirs.schema.simpleString()
    assert ours.columns == ["id", "amount", "tier", "region"]
    assert _rows(ours) == _rows(theirs)
    assert sum(r.region is None for r in ours.collect()) == 160  # null and "" alike


def test_partition_columns_keep_their_types_through_the_manifest(spark, options) -> None:
    df = spark.createDataFrame(
        [(i, i % 2 == 0, f"2026-11-0{1 + i % 3}", i % 4) for i in range(12)],
        "id long, flag boolean, day string, shard long",
    ).selectExpr("id", "flag", "to_date(day) AS day", "shard")
    df.write.format("natsobj").mode("overwrite").options(
        **options, partitionBy="day,SHARD,flag"
    ).save(PREFIX)
    back = spark.read.format("natsobj").options(**options).load(PREFIX)
    assert back.schema.simpleString() == (
        "struct<id:bigint,day:date,shard:bigint,flag:boolean>"
    )  # Spark's Parquet source would infer int for shard and string for flag from the names
    assert _rows(back) == _rows(df.select("id", "day", "shard", "flag"))


def test_appends_keep_the_partitioning_and_commit_once_each(spark, options, store) -> None:
    def write(mode: str, start: int, **extra: str) -> None:
        frame = spark.range(start, start + 40, numPartitions=2).selectExpr(
            "id", "CAST(id % 4 AS string) AS region"
        )
        frame.write.format("natsobj").mode(mode).options(**options, **extra).save(PREFIX)

    write("overwrite", 0, partitionBy="region")
    write("append", 40)  # no option: the dataset's own partitioning
    manifest = json.loads(store.get_bytes(f"{PREFIX}/_manifest.json"))
    assert manifest["generation"] == 2 and manifest["partition_columns"] == ["region"]
    assert all("/region=" in p["name"] for p in manifest["parts"])
    back = spark.read.format("natsobj").options(**options).load(PREFIX)
    assert back.schema.simpleString() == "struct<id:bigint,region:string>"
    assert sorted(r.id for r in back.collect()) == list(range(80))
    assert {r.region for r in back.filter("id % 4 = 3").collect()} == {"3"}

    with pytest.raises(Exception, match="partitioned by \\['region'\\], the write by \\['id'\\]"):
        write("append", 80, partitionBy="id")
    with pytest.raises(Exception, match="not in the DataFrame"):
        write("overwrite", 80, partitionBy="nope")
    write("overwrite", 100)  # an overwrite may drop the partitioning
    manifest = json.loads(store.get_bytes(f"{PREFIX}/_manifest.json"))
    assert manifest["partition_columns"] == [] and manifest["generation"] == 3


def test_a_failed_partitioned_write_leaves_the_dataset_as_it_was(spark, options, store) -> None:
    spark.range(0, 20, numPartitions=2).selectExpr("id", "id % 2 AS k").write.format(
        "natsobj"
    ).mode("overwrite").options(**options, partitionBy="k").save(PREFIX)
    before = {i.name: i.digest for i in store.list() if "/_aborted/" not in i.name}
    failing = spark.range(0, 2000, numPartitions=2).selectExpr(
        "id", "id % 5 AS k", "assert_true(id < 1900) AS boom"
    )
    with pytest.raises(Exception, match="1900"):
        failing.write.format("natsobj").mode("overwrite").options(
            **options, partitionBy="k", rows_per_object="100"
        ).save(PREFIX)
    after = {i.name: i.digest for i in store.list() if "/_aborted/" not in i.name}
    assert after == before


def _upload_hive_folder(store, local: Path) -> None:
    """Parquet objects in folders a foreign tool wrote (no manifest), the same locally and
    in the bucket, so Spark's own reader and this source read the very same layout."""
    at = "at=2026-11-01 10%3A30%3A00"
    layout = {
        f"year=2026/day=2026-11-01/score=1/big=1/{at}/region=eu": [(1, 1.0), (2, 2.0)],
        f"year=2026/day=2026-11-02/score=2.5/big=3000000000/{at}/region=us": [(3, 3.0)],
        "year=2025/day=2025-01-31/score=3/big=2/at=2025-01-31/region=a%2Fb%3Dc": [(4, 4.0)],
        "year=2025/day=2025-01-31/score=4/big=5/at=__HIVE_DEFAULT_PARTITION__/"
        "region=__HIVE_DEFAULT_PARTITION__": [(5, 5.0)],
    }
    for folder, rows in layout.items():
        table = pa.table({"id": [r[0] for r in rows], "amount": [r[1] for r in rows]})
        sink = io.BytesIO()
        pq.write_table(table, sink)
        (local / folder).mkdir(parents=True)
        (local / folder / "part-0.parquet").write_bytes(sink.getvalue())
        store.put(f"{PREFIX}/{folder}/part-0.parquet", sink.getvalue())


def test_a_hive_folder_reads_with_its_partition_columns_typed_as_spark_types_them(
    spark, options, store, tmp_path: Path
) -> None:
    local = tmp_path / "hive"
    _upload_hive_folder(store, local)
    ours = spark.read.format("natsobj").options(**options).load(PREFIX)
    theirs = spark.read.parquet(str(local))
    assert (
        ours.schema.simpleString()
        == theirs.schema.simpleString()
        == (
            "struct<id:bigint,amount:double,year:int,day:date,score:double,big:bigint,"
            "at:timestamp,region:string>"
        )
    )
    assert _rows(ours) == _rows(theirs)
    assert {r.region for r in ours.collect()} == {"eu", "us", "a/b=c", None}


def test_a_filter_on_a_partition_column_reads_only_that_partition(
    spark,
    monitored,
    bucket_name: str,
) -> None:
    server, port = monitored
    options = {"url": server.url, "bucket": bucket_name}
    frame = spark.range(0, 200_000, numPartitions=2).selectExpr(
        "id", "sha2(cast(id AS string), 256) AS digest", "CAST(id % 4 AS string) AS region"
    )
    frame.write.format("natsobj").mode("overwrite").options(**options, partitionBy="region").save(
        PREFIX
    )

    def query(pushdown: str) -> tuple[list[tuple], int]:
        before = served(port)
        df = spark.read.format("natsobj").options(**options, pushdown=pushdown).load(PREFIX)
        found = _rows(df.filter("region = '2'"))
        return found, served(port) - before

    spark.conf.set(CONF, "true")
    try:
        full, full_bytes = query("false")
        pruned, pruned_bytes = query("true")
    finally:
        spark.conf.unset(CONF)
    assert len(full) == 50_000 and pruned == full
    if FILTERS_PUSHED:
        # one partition of four: about a quarter of the bytes, never another partition's part
        assert pruned_bytes < full_bytes * 0.35, (pruned_bytes, full_bytes)
    else:  # PySpark 4.0 pushes no filter: every part is fetched, as without the option
        with natsobj.connect(server.url) as client:
            manifest = client.store(bucket_name).get_bytes(f"{PREFIX}/_manifest.json")
        parts = json.loads(manifest)["parts"]
        assert pruned_bytes >= sum(p["size"] for p in parts), (pruned_bytes, full_bytes)


def test_the_reader_plans_only_the_partitions_the_filters_may_match(spark, options) -> None:
    """PySpark 4.0 pushes no filter: there the reader plans every partition."""
    from natsobj.spark.reader import PrunedPartition
    from natsobj.spark.source import NatsObjDataSource

    spark.createDataFrame(
        [(i, REGIONS[i % 5], i % 3) for i in range(30)], "id long, region string, tier int"
    ).write.format("natsobj").mode("overwrite").options(**options, partitionBy="region,tier").save(
        PREFIX
    )

    def planned(*filters) -> set[str]:
        # One data source per load(): a second push for the same load plans a full read.
        source = NatsObjDataSource({**options, "path": PREFIX, "pushdown": "true"})
        reader = source.reader(source.schema())
        reader.pushFilters(list(filters))
        kept = [
            part
            for p in reader.partitions()
            for part in (p.kept if isinstance(p, PrunedPartition) else (p,))
        ]
        return {p.name.split("/")[2] + "/" + p.name.split("/")[3] for p in kept}

    assert len(planned()) == 12  # four regions (null and "" are one) times three tiers
    if not FILTERS_PUSHED:
        return
    from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNull

    assert planned(EqualTo(("region",), "eu")) == {f"region=eu/tier={t}" for t in range(3)}
    assert planned(In(("region",), ("us", "eu")), GreaterThan(("tier",), 1)) == {
        "region=us/tier=2",
        "region=eu/tier=2",
    }
    assert planned(IsNull(("region",))) == {
        f"region=__HIVE_DEFAULT_PARTITION__/tier={t}" for t in range(3)
    }
    assert planned(EqualTo(("tier",), "two")) == planned()  # another type: undecided, kept


def test_partition_values_are_escaped_and_typed_as_spark_does() -> None:
    assert escape("a/b=c %x#") == "a%2Fb%3Dc %25x%23"
    assert unescape("a%2Fb%3Dc %25x%23") == "a/b=c %x#"
    assert [infer_type(v) for v in ["1", "3000000000", "1.5", "2026-11-01", "x"]] == [
        "integer",
        "long",
        "double",
        "date",
        "string",
    ]
    assert infer_type("99999999999999999999") == "decimal(20,0)"
    assert infer_type("2026-11-01 10%3A00%3A00") == "timestamp"
    assert infer_type("__HIVE_DEFAULT_PARTITION__") == "null"
    assert wider("integer", "long") == "long"
    assert wider("integer", "double") == "double"
    assert wider("long", "double") == "string"  # Spark refuses the precision loss
    assert wider("date", "timestamp") == "timestamp"
    assert wider("null", "date") == "date"
    assert wider("integer", "date") == "string"
    # Spark lists _col=value folders; other _ and . names are hidden
    assert is_data_object("d", "d/_k=1/part-1.parquet")
    assert not is_data_object("d", "d/_k/part-1.parquet")


def test_bad_partition_options_are_refused_on_the_driver(spark, options) -> None:
    df = spark.range(3).selectExpr("id", "CAST(id AS double) AS amount")
    with pytest.raises(Exception, match="partition column 'amount' is 'double'"):
        df.write.format("natsobj").mode("overwrite").options(**options, partitionBy="amount").save(
            PREFIX
        )
    with pytest.raises(Exception, match="every column"):
        spark.range(3).write.format("natsobj").mode("overwrite").options(
            **options, partitionBy="id"
        ).save(PREFIX)
    from natsobj.spark.options import SourceOptions

    with pytest.raises(BadSparkOption, match="names \\['a'\\] twice"):
        SourceOptions.parse({**options, "path": PREFIX, "partitionBy": "a, b, a"})


def test_a_streaming_sink_writes_partitions_one_generation_per_batch(
    spark, options, store, tmp_path: Path
) -> None:
    from tests.spark.test_stream_query import ROWS_PER_OBJECT, SCHEMA, land

    land(store, range(5))
    stream = (
        spark.readStream.format("natsobj")
        .options(**options, glob="landing/*.csv", maxObjectsPerTrigger="2")
        .schema(SCHEMA)
        .load()
    )
    query = (
        stream.writeStream.format("natsobj")
        .options(**options, partitionBy="obj")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start("clean/rows")
    )
    query.awaitTermination(600)
    assert query.exception() is None
    manifest = json.loads(store.get_bytes("clean/rows/_manifest.json"))
    batches = 3 if READ_LIMITS else 1  # two objects a batch, or all five in one
    assert manifest["generation"] == batches and manifest["partition_columns"] == ["obj"]
    assert manifest["streams"] == {str(query.id): batches - 1}
    assert _folders(p["name"] for p in manifest["parts"]) == {
        f"clean/rows/obj={i}" for i in range(5)
    }
    back = spark.read.format("natsobj").options(**options).load("clean/rows")
    assert back.columns == ["row", "obj"]
    assert sorted((r.obj, r.row) for r in back.collect()) == [
        (i, r) for i in range(5) for r in range(ROWS_PER_OBJECT)
    ]
