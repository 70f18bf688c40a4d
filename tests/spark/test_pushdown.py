"""Filter pushdown for table reads: parts and row groups whose Parquet statistics exclude the
filter are skipped, and the rows returned are exactly those of a full scan."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import PySparkException

from natsobj.spark.pushdown import Condition, file_stats, may_match, row_group_stats

CONF = "spark.sql.python.filterPushdown.enabled"
PREFIX = "lake/pushdown"
ROWS = 40_000


@pytest.fixture
def pushdown(spark) -> Iterator[None]:
    spark.conf.set(CONF, "true")
    yield
    spark.conf.unset(CONF)


def _write(spark, options) -> None:
    df = spark.range(0, ROWS, numPartitions=4).selectExpr(
        "id",
        "CASE WHEN id % 10 = 0 THEN NULL ELSE concat('c', cast(id % 7 AS string)) END AS tag",
        "id * 0.5 AS amount",
    )
    df.write.format("natsobj").mode("overwrite").options(**options, row_group_rows="2500").save(
        PREFIX
    )


def test_parts_outside_the_filter_are_not_read(spark, options, store, pushdown) -> None:
    _write(spark, options)
    manifest = json.loads(store.get_bytes(f"{PREFIX}/_manifest.json"))
    assert [p["stats"]["id"][:2] for p in manifest["parts"]] == [
        [i * 10_000, i * 10_000 + 9_999] for i in range(4)
    ]
    assert "amount" not in manifest["parts"][0]["stats"]  # floating point: NaN-unsafe

    full = spark.read.format("natsobj").options(**options).load(PREFIX)

    def pushed():  # a fresh DataFrame per query: Spark keeps one pushdown per DataFrame
        return spark.read.format("natsobj").options(**options, pushdown="true").load(PREFIX)

    assert full.filter("id >= 12000 AND id < 13000").rdd.getNumPartitions() == 4
    assert pushed().filter("id >= 12000 AND id < 13000").rdd.getNumPartitions() == 1
    for condition in [
        "id >= 12000 AND id < 13000",
        "id = 25000 OR id = 5",
        "id IN (5, 39999)",
        "id > 40000",
        "tag IS NULL AND id < 10000",
        "tag = 'c3' AND id <= 20000",
        "amount > 100",
    ]:
        expected = sorted(tuple(r) for r in full.filter(condition).collect())
        got = sorted(tuple(r) for r in pushed().filter(condition).collect())
        assert got == expected, condition


def test_the_reader_plans_only_parts_the_filters_may_match(options, store, spark) -> None:
    from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNull, StringStartsWith

    from natsobj.spark.options import SourceOptions
    from natsobj.spark.source import NatsObjDataSource

    _write(spark, options)
    source = NatsObjDataSource({**options, "path": PREFIX, "pushdown": "true"})
    schema = source.schema()

    def planned(*filters) -> list[int]:
        reader = source.reader(schema)
        assert list(reader.pushFilters(list(filters))) == list(filters)  # Spark re-checks all
        return [int(p.name.rsplit("/", 1)[1].split("-")[1]) for p in reader.partitions()]

    assert planned() == [0, 1, 2, 3]
    assert planned(GreaterThan(("id",), 29_999)) == [3]
    assert planned(In(("id",), (5, 39_999))) == [0, 3]
    assert planned(EqualTo(("id",), 10_000), IsNull(("tag",))) == [1]
    assert planned(StringStartsWith(("tag",), "c")) == [0, 1, 2, 3]  # not decidable: all
    assert planned(EqualTo(("id",), "ten")) == [0, 1, 2, 3]  # another type: all
    assert SourceOptions.parse({**options, "path": PREFIX}).pushdown is False


def test_pushdown_without_the_spark_conf_names_the_conf(spark, options, store) -> None:
    _write(spark, options)
    df = spark.read.format("natsobj").options(**options, pushdown="true").load(PREFIX)
    with pytest.raises(PySparkException, match=CONF.replace(".", r"\.")):
        df.filter("id = 3").collect()


def test_row_groups_are_chosen_by_their_statistics() -> None:
    sink = io.BytesIO()
    table = pa.table(
        {"id": pa.array(range(1000), pa.int64()), "s": [f"k{i:04d}" for i in range(1000)]}
    )
    pq.write_table(table, sink, row_group_size=100)
    metadata = pq.ParquetFile(pa.BufferReader(sink.getvalue())).metadata
    keep = [
        i
        for i in range(metadata.num_row_groups)
        if may_match(row_group_stats(metadata, i), [Condition("gt", "id", (849,))])
    ]
    assert keep == [8, 9]
    assert file_stats(metadata) == {"id": [0, 999, 0], "s": ["k0000", "k0999", 0]}
    between = [Condition("ge", "s", ("k0150",)), Condition("lt", "s", ("k0250",))]
    assert [i for i in range(10) if may_match(row_group_stats(metadata, i), between)] == [1, 2]
    # values of another type, or columns without statistics, never skip anything
    assert may_match(file_stats(metadata), [Condition("eq", "id", ("x",))])
    assert may_match(file_stats(metadata), [Condition("eq", "missing", (1,))])
    assert not may_match(file_stats(metadata), [Condition("null", "id")])


def test_this_spark_shares_one_pushed_plan_per_loaded_dataframe(
    spark, options, store, pushdown
) -> None:
    """Why ``pushdown`` is off by default. Spark 4.1-4.3 keep the read plan of a Python data
    source on the relation (``PythonDataSourceV2.readInfo``), set by each ``pushFilters`` and
    reused by every later scan of that DataFrame, so scans of one ``load()`` read the parts the
    last pushed filter kept. Nothing on the Python side sees which scan it serves. When this
    test fails, the installed Spark plans per scan (the fix is on Spark's master, for 5.0):
    turn the option's default on and drop this test."""
    _write(spark, options)
    df = spark.read.format("natsobj").options(**options, pushdown="true").load(PREFIX)
    assert df.filter("id < 5000").count() == 5000
    # 40,000 rows; the parts and row groups the filter kept are read again, unfiltered
    assert df.count() == 5000
    again = spark.read.format("natsobj").options(**options, pushdown="true").load(PREFIX)
    both = again.filter("id < 5000").union(again.filter("id >= 35000"))
    assert both.count() == 5000  # 10,000 rows: both scans read the part of the last filter
    fresh = spark.read.format("natsobj").options(**options, pushdown="true")
    assert fresh.load(PREFIX).filter("id < 5000").count() == 5000  # one load per scan is right
    assert fresh.load(PREFIX).count() == ROWS
