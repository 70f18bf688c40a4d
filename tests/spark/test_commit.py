"""Commit semantics: generations, retention, abort on task failure, readers pinned to a
generation, and the save modes."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import LongType
from pyspark.sql.utils import AnalysisException

from natsobj.spark import DatasetExists, SchemaMismatch, read_dataframe, write_dataframe
from natsobj.spark.errors import WriteAborted
from natsobj.spark.manifest import WRITE_ID_KEY, retained_name

PREFIX = "lake/events"


def _parts(store) -> set[str]:
    return {i.name for i in store.list() if i.name.endswith(".parquet")}


def _manifest(store) -> dict:
    return json.loads(store.get_bytes(f"{PREFIX}/_manifest.json"))


def _dataset(store) -> dict[str, str]:
    """The dataset's objects (parts and manifest) with their digests."""
    return {i.name: i.digest for i in store.list() if "/_aborted/" not in i.name}


def _aborted_id(store) -> str:
    (marker,) = [i.name for i in store.list() if "/_aborted/" in i.name]
    return marker.rsplit("/", 1)[1]


def _write(spark, options, mode: str, start: int, end: int, **extra) -> None:
    df = spark.range(start, end, numPartitions=2)
    df.write.format("natsobj").mode(mode).options(**options, **extra).save(PREFIX)


def _ids(spark, options) -> list[int]:
    df = spark.read.format("natsobj").options(**options).load(PREFIX)
    return sorted(r.id for r in df.collect())


def test_append_then_overwrite_retains_one_generation_then_deletes_it(
    spark, options, store
) -> None:
    _write(spark, options, "overwrite", 0, 10)
    first = _parts(store)
    _write(spark, options, "append", 10, 20)
    appended = _parts(store)
    assert first < appended and len(appended) == 4
    assert _ids(spark, options) == list(range(20))
    assert _manifest(store)["generation"] == 2

    _write(spark, options, "overwrite", 100, 105)
    manifest = _manifest(store)
    new = {p["name"] for p in manifest["parts"]}
    assert _ids(spark, options) == list(range(100, 105))
    # The superseded generation is kept for readers still running on it, out of the folder...
    retained = {retained_name(n) for n in appended}
    assert manifest["retained"][0]["generation"] == 2
    assert set(manifest["retained"][0]["parts"]) == retained
    assert _parts(store) == retained | new
    # ...and deleted by the next write.
    _write(spark, options, "append", 105, 106)
    assert _parts(store).isdisjoint(retained | appended)
    assert _ids(spark, options) == list(range(100, 106))


def test_overwrite_with_no_retention_deletes_old_parts_at_once(spark, options, store) -> None:
    _write(spark, options, "overwrite", 0, 10)
    _write(spark, options, "append", 10, 20)
    old = _parts(store)
    _write(spark, options, "overwrite", 50, 60, retain_generations=0)
    assert _parts(store).isdisjoint(old)
    assert _parts(store) == {p["name"] for p in _manifest(store)["parts"]}
    assert _manifest(store)["retained"] == []
    assert _ids(spark, options) == list(range(50, 60))


def _explode_at(value: int):
    @F.udf(LongType())
    def check(x):  # no hints: they would make Spark try to infer a pandas UDF
        if x == value:
            raise RuntimeError(f"injected failure at row {value}")
        return x

    return check


def test_failed_task_leaves_no_parts_and_no_manifest(spark, options, store) -> None:
    # Partition 0 succeeds; partition 1 fails after it stored two 100-row objects.
    df = spark.range(0, 1000, numPartitions=2).withColumn("id", _explode_at(750)("id"))
    with pytest.raises(Exception, match="injected failure at row 750"):
        df.write.format("natsobj").mode("overwrite").options(**options).option(
            "rows_per_object", 100
        ).save(PREFIX)
    # Only the abort marker is left: no part, no manifest.
    assert [i.name for i in store.list()] == [f"{PREFIX}/_aborted/{_aborted_id(store)}"]


def test_failed_overwrite_keeps_the_previous_dataset(spark, options, store) -> None:
    _write(spark, options, "overwrite", 0, 10)
    before = _dataset(store)
    df = spark.range(0, 1000, numPartitions=2).withColumn("id", _explode_at(999)("id"))
    with pytest.raises(Exception, match="injected failure"):
        df.write.format("natsobj").mode("overwrite").options(**options).save(PREFIX)
    assert _dataset(store) == before
    assert _ids(spark, options) == list(range(10))


def test_reader_planned_before_an_overwrite_reads_its_own_generation(spark, options, store) -> None:
    _write(spark, options, "overwrite", 0, 1000)
    reader = spark.read.format("natsobj").options(**options).load(PREFIX)
    assert reader.rdd.getNumPartitions() == 2  # planning pins generation 1's manifest

    _write(spark, options, "overwrite", 5000, 5003)  # a concurrent overwrite commits
    assert _manifest(store)["generation"] == 2
    # The planned read still sees exactly generation 1: no mix, no missing parts.
    assert sorted(r.id for r in reader.collect()) == list(range(1000))
    assert _ids(spark, options) == [5000, 5001, 5002]  # a new read sees generation 2


def test_reader_older_than_the_retention_fails_clearly(spark, options, store) -> None:
    _write(spark, options, "overwrite", 0, 10)
    reader = spark.read.format("natsobj").options(**options).load(PREFIX)
    reader.rdd.getNumPartitions()
    _write(spark, options, "overwrite", 10, 20, retain_generations=0)
    with pytest.raises(Exception, match="of generation 1 is gone") as failure:
        reader.collect()
    assert "retain_generations" in str(failure.value)


def test_append_with_another_schema_is_refused_before_any_task(spark, options, store) -> None:
    _write(spark, options, "overwrite", 0, 10)
    other = spark.range(3).selectExpr("cast(id as string) AS id")
    with pytest.raises(AnalysisException, match="cannot append"):
        other.write.format("natsobj").mode("append").options(**options).save(PREFIX)
    with pytest.raises(SchemaMismatch):
        write_dataframe(other, options["url"], options["bucket"], PREFIX, mode="append")
    assert _ids(spark, options) == list(range(10))


def test_spark_save_modes_errorifexists_and_ignore_name_the_working_modes(
    spark, options, store
) -> None:
    df = spark.range(3)
    for mode in ("errorifexists", "ignore"):
        with pytest.raises(AnalysisException, match='either the "Append" or "Overwrite" mode'):
            df.write.format("natsobj").mode(mode).options(**options).save(PREFIX)


def test_helper_supports_errorifexists_and_ignore(spark, nats_url, store) -> None:
    first = write_dataframe(spark.range(3), nats_url, store.bucket, PREFIX, mode="errorifexists")
    assert first["num_rows"] == 3
    with pytest.raises(DatasetExists, match="already exists"):
        write_dataframe(spark.range(5), nats_url, store.bucket, PREFIX, mode="errorifexists")
    kept = write_dataframe(spark.range(7), nats_url, store.bucket, PREFIX, mode="ignore")
    assert kept["write_id"] == first["write_id"] and kept["num_rows"] == 3
    assert read_dataframe(spark, nats_url, store.bucket, PREFIX).count() == 3


def _writer(options: dict, schema, *, overwrite: bool, **extra):
    from natsobj.spark.options import SourceOptions
    from natsobj.spark.writer import prepare_writer

    opts = SourceOptions.parse({**options, "path": PREFIX, **extra})
    return prepare_writer(opts, schema, overwrite)


def _batches(start: int, end: int):
    import pyarrow as pa

    yield pa.RecordBatch.from_pydict({"id": pa.array(range(start, end), pa.int64())})


def test_if_exists_error_is_checked_again_at_commit(spark, options, store) -> None:
    # The writer is planned while the prefix is empty; another writer publishes first.
    schema = spark.range(1).schema
    late = _writer(options, schema, overwrite=False, if_exists="error")
    message = late.write(_batches(0, 10))
    _write(spark, options, "overwrite", 100, 103)
    winner = _parts(store) - {p.name for p in message.parts}

    with pytest.raises(DatasetExists, match="created by another writer"):
        late.commit([message])
    assert _parts(store) == winner  # the late write's parts are gone
    assert _ids(spark, options) == [100, 101, 102]


def test_commit_sweeps_parts_of_failed_attempts(spark, options, store) -> None:
    schema = spark.range(1).schema
    writer = _writer(options, schema, overwrite=True)
    lost_attempt = writer.write(_batches(0, 5))  # a killed attempt: its message never arrives
    retry = writer.write(_batches(0, 5))
    writer.commit([retry])
    assert _parts(store) == {p.name for p in retry.parts}
    assert not {p.name for p in lost_attempt.parts} & _parts(store)


def test_abort_deletes_parts_with_or_without_messages(spark, options, store) -> None:
    schema = spark.range(1).schema
    writer = _writer(options, schema, overwrite=True, rows_per_object="2")
    reported = writer.write(_batches(0, 5))
    writer.write(_batches(5, 9))  # a task that died before reporting
    assert len(_parts(store)) == 5
    writer.abort([reported, None])
    assert _dataset(store) == {}
    assert _aborted_id(store) == writer.write_id


def test_a_task_that_stores_a_part_after_the_abort_removes_it(spark, options, store) -> None:
    schema = spark.range(1).schema
    writer = _writer(options, schema, overwrite=True)
    writer.abort([])  # another task failed; this one was still running
    with pytest.raises(WriteAborted, match="aborted while this task ran"):
        writer.write(_batches(0, 5))
    assert _dataset(store) == {}


def test_a_later_commit_sweeps_parts_of_aborted_writes(spark, options, store) -> None:
    schema = spark.range(1).schema
    aborted = _writer(options, schema, overwrite=True)
    aborted.abort([])
    # A worker killed between storing its part and checking for the abort leaves this behind:
    straggler = f"{PREFIX}/part-00003-0-feed.parquet"
    store.put(straggler, b"PAR1", metadata={WRITE_ID_KEY: aborted.write_id})
    _write(spark, options, "overwrite", 0, 4)
    assert straggler not in _dataset(store)
    assert _ids(spark, options) == [0, 1, 2, 3]


def test_concurrent_commits_are_serialized_and_lose_nothing(spark, options, store) -> None:
    import threading

    schema = spark.range(1).schema
    writers = [_writer(options, schema, overwrite=False) for _ in range(6)]
    messages = [w.write(_batches(10 * i, 10 * i + 10)) for i, w in enumerate(writers)]
    start = threading.Barrier(len(writers))

    def commit(writer, message) -> None:
        start.wait()
        writer.commit([message])

    pairs = zip(writers, messages, strict=True)
    threads = [threading.Thread(target=commit, args=pair) for pair in pairs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    every_part = {p.name for m in messages for p in m.parts}
    assert _parts(store) == every_part  # each commit built on the one before it
    assert _ids(spark, options) == list(range(60))
