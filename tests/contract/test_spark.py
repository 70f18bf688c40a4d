"""The Spark face against the operation options table (``natsobj.operation_options``): every
spelling of every option the table gives Spark, under each key Spark takes it by, reaches the
source's parsed options as the value the table says; with nothing given, Spark's defaults from
the table; and one real query on local[2] per operation shows the value reaching the operation
(a change feed's deletes, a read of a record without digest, how Parquet parts are written).

Spark hands a data source every option as text (``DataFrameReader.option`` turns ``True`` into
``"true"``), so each case is given as PySpark would pass it."""

from __future__ import annotations

import io
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql.readwriter import to_str

from natsobj.operation_options import Face, for_face
from natsobj.spark.errors import BadSparkOption
from natsobj.spark.options import SourceOptions
from natsobj.spark.stream_options import StreamOptions
from tests.contract.cases import Case, cases, defaults
from tests.security.test_missing_digest_faces import CONTENT, strip_digest
from tests.spark.conftest import options, spark  # noqa: F401  (fixtures)

# The operations Spark takes options of, and which parsed options carry them.
OPERATIONS = ("follow", "get", "write_parquet")
# A parsed option's attribute where it is not the option's core name.
ATTRIBUTE = {"start": "starting"}
BASE = {"url": "nats://127.0.0.1:4222", "bucket": "contract", "path": "data"}


def parsed(operation: str, given: dict[str, Any]) -> Any:
    """The options the source or sink hands its tasks, as Spark would build them from
    ``given`` (a binary stream for the change feed: it is the layout that takes deletes)."""
    texts = {key: to_str(value) for key, value in given.items()}
    if operation == "follow":
        return StreamOptions.parse({**BASE, "layout": "binary", **texts})
    return SourceOptions.parse({**BASE, **texts})


def value(got: Any, name: str) -> Any:
    return getattr(got, ATTRIBUTE.get(name, name))


def keys(case: Case) -> list[str]:
    """Every key Spark takes the option by: the table's camelCase spelling as a user writes
    it, and each lower-cased key (Spark's option map is case-insensitive)."""
    return sorted({case.option.spelled(Face.SPARK), *case.option.spark_keys()})


SPELLINGS = [
    pytest.param(case, key, id=f"{case.id}@{key}")
    for operation in OPERATIONS
    for case in cases(Face.SPARK, operation)
    for key in keys(case)
]


@pytest.mark.parametrize(("case", "key"), SPELLINGS)
def test_every_spelling_reaches_the_parsed_options(case: Case, key: str) -> None:
    got = parsed(case.option.operation, {key: case.given})
    assert value(got, case.option.name) == case.expected


@pytest.mark.parametrize("operation", OPERATIONS)
def test_nothing_given_is_sparks_default_from_the_table(operation: str) -> None:
    got = parsed(operation, {})
    expected = defaults(Face.SPARK, operation)
    assert {name: value(got, name) for name in expected} == expected


def test_the_spark_face_takes_options_of_these_operations_only() -> None:
    """A row given to Spark for another operation must come with its parsing here."""
    from natsobj.operation_options import OPERATIONS as TABLE

    assert {op for op in TABLE if for_face(Face.SPARK, op)} == set(OPERATIONS)


@pytest.mark.parametrize("spelling", ["true", "on", "yes", "1"])
def test_include_deletes_in_any_spelling_is_refused_for_a_table_stream(spelling: str) -> None:
    with pytest.raises(BadSparkOption, match="includeDeletes needs binary mode"):
        StreamOptions.parse({**BASE, "includeDeletes": spelling})


def test_a_bad_value_is_refused_naming_the_spark_option() -> None:
    with pytest.raises(BadSparkOption, match="option includeDeletes: include_deletes must be"):
        parsed("follow", {"includeDeletes": "maybe"})
    with pytest.raises(BadSparkOption, match="option rowGroupRows: row_group_rows must be"):
        parsed("write_parquet", {"rowGroupRows": "0"})


# -- one real query per operation ----------------------------------------------------------------


def test_follow_include_deletes_on_yields_delete_rows(spark, options, store, tmp_path) -> None:  # noqa: F811
    """``includeDeletes=on`` (not only ``true``) reaches the stream: the delete is a row."""
    store.put("raw/kept.bin", b"kept")
    store.put("raw/gone.bin", b"gone")
    store.delete("raw/gone.bin")
    query = (
        spark.readStream.format("natsobj")
        .options(**options, layout="binary", glob="raw/*", includeDeletes="on")
        .option("startingSequence", "history")
        .load()
        .writeStream.format("memory")
        .queryName("contract_follow")
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    got = spark.sql("SELECT name, size, content FROM contract_follow").collect()
    assert sorted((r.name, r.size, r.content) for r in got) == [
        ("raw/gone.bin", 0, None),
        ("raw/kept.bin", 4, bytearray(b"kept")),
    ]


def test_get_allow_missing_digest_yes_reads_a_record_without_digest(
    spark,  # noqa: F811
    options,  # noqa: F811
    store,
    raw,
) -> None:
    store.put("raw/blob", CONTENT)
    strip_digest(raw, store.bucket, "raw/blob")
    read = (
        spark.read.format("natsobj")
        .options(**options, layout="binary", allowMissingDigest="yes")
        .load("raw")
    )
    assert [r.content for r in read.collect()] == [bytearray(CONTENT)]


def test_write_parquet_options_reach_the_parts(spark, options, store) -> None:  # noqa: F811
    df = spark.range(0, 3000).selectExpr("id", "id % 3 AS k").coalesce(1)
    df.write.format("natsobj").mode("overwrite").options(
        **options, compression="GZIP", dictionary="on", rowGroupRows="1_000"
    ).save("written")
    parts = [i for i in store.list(prefix="written/") if i.name.endswith(".parquet")]
    assert len(parts) == 1
    meta = pq.ParquetFile(io.BytesIO(store.get_bytes(parts[0].name))).metadata
    assert [meta.row_group(g).num_rows for g in range(meta.num_row_groups)] == [1000] * 3
    column = meta.row_group(0).column(1)
    assert column.compression == "GZIP"
    assert column.has_dictionary_page
