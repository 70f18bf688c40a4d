"""Structured Streaming queries on local[2] against the real server: natsobj source to natsobj
sink, rate limits as Spark runs them, the sink's idempotent replay, and batch reads of the
sink's dataset while the stream runs. Before PySpark 4.2 Spark gives the source no read limit
(``READ_LIMITS``): each micro-batch takes every object there is, and the tests check that."""

from __future__ import annotations

import collections
import time
from pathlib import Path

import pytest

import natsobj
from natsobj.spark.manifest import MANIFEST
from natsobj.spark.storage import read_manifest
from natsobj.spark.stream_reader import READ_LIMITS

ROWS_PER_OBJECT = 50
SCHEMA = "obj INT, row INT"


def land(store: natsobj.ObjectStore, objects: range, *, folder: str = "landing") -> None:
    for i in objects:
        body = "obj,row\n" + "".join(f"{i},{r}\n" for r in range(ROWS_PER_OBJECT))
        store.put(f"{folder}/{i:03d}.csv", body.encode())


def start_query(spark, options, checkpoint: Path, *, trigger: dict, **source_options: str):
    stream = (
        spark.readStream.format("natsobj")
        .options(**options, glob="landing/*.csv", **source_options)
        .schema(SCHEMA)
        .load()
    )
    return (
        stream.writeStream.format("natsobj")
        .options(**options)
        .option("checkpointLocation", str(checkpoint))
        .trigger(**trigger)
        .start("clean/rows")
    )


def dataset_rows(spark, options) -> list[tuple[int, int]]:
    df = spark.read.format("natsobj").options(**options).load("clean/rows")
    return [(r.obj, r.row) for r in df.collect()]


def test_stream_applies_glob_and_rate_limit_and_commits_one_generation_per_batch(
    spark, options, store, tmp_path
) -> None:
    land(store, range(5))
    land(store, range(100, 102), folder="landing/old")  # `*` does not cross into old/
    query = start_query(
        spark, options, tmp_path / "ckpt", trigger={"availableNow": True}, maxObjectsPerTrigger="2"
    )
    query.awaitTermination(600)
    assert query.exception() is None
    per_batch = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    objects_per_batch = [2, 2, 1] if READ_LIMITS else [5]
    assert per_batch == [n * ROWS_PER_OBJECT for n in objects_per_batch]
    rows = dataset_rows(spark, options)
    assert sorted(rows) == [(i, r) for i in range(5) for r in range(ROWS_PER_OBJECT)]
    manifest = read_manifest(store, "clean/rows")
    assert manifest is not None
    assert manifest.generation == len(objects_per_batch)
    assert manifest.streams == {str(query.id): len(objects_per_batch) - 1}


def test_a_replayed_batch_is_not_appended_twice(spark, options, store, tmp_path) -> None:
    land(store, range(4))
    checkpoint = tmp_path / "ckpt"
    first = start_query(
        spark, options, checkpoint, trigger={"availableNow": True}, maxObjectsPerTrigger="2"
    )
    first.awaitTermination(600)
    assert first.exception() is None
    last = 1 if READ_LIMITS else 0  # two objects a batch, or all four in one
    before = read_manifest(store, "clean/rows")
    assert before is not None and before.streams == {str(first.id): last}
    # Forget that the last batch finished, as if the driver died between our commit and
    # Spark's commit log: on restart Spark runs that batch again with the same offsets.
    for name in (str(last), f".{last}.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    again = start_query(
        spark, options, checkpoint, trigger={"availableNow": True}, maxObjectsPerTrigger="2"
    )
    again.awaitTermination(600)
    assert again.exception() is None
    assert again.id == first.id
    assert [p["batchId"] for p in again.recentProgress][:1] == [last]  # it did replay it
    counts = collections.Counter(dataset_rows(spark, options))
    assert sorted(counts) == [(i, r) for i in range(4) for r in range(ROWS_PER_OBJECT)]
    assert set(counts.values()) == {1}
    after = read_manifest(store, "clean/rows")
    assert after is not None and after.generation == before.generation
    # The replay's own parts were deleted: only the manifest and its parts remain.
    stored = {i.name for i in store.list() if i.name.startswith("clean/rows/")}
    assert stored == {f"clean/rows/{MANIFEST}"} | {p.name for p in after.parts}


def test_batch_reads_during_the_stream_see_whole_micro_batches(
    spark, options, store, tmp_path
) -> None:
    objects, per_trigger = 12, 2
    # Without read limits the first batch would take every object there is: they land a pair
    # at a time instead, each once the reads have seen the ones before.
    landed = objects if READ_LIMITS else per_trigger
    land(store, range(landed))
    query = start_query(
        spark,
        options,
        tmp_path / "ckpt",
        trigger={"processingTime": "200 milliseconds"},
        maxObjectsPerTrigger=str(per_trigger),
    )
    seen: list[int] = []
    deadline = time.monotonic() + 480  # generous: the machine is shared
    try:
        while not seen or seen[-1] < objects:
            assert time.monotonic() < deadline, f"stream still incomplete: reads saw {seen}"
            assert query.exception() is None
            if read_manifest(store, "clean/rows") is None:
                time.sleep(0.2)
                continue
            counts = collections.Counter(obj for obj, _ in dataset_rows(spark, options))
            # Whole objects, and whole batches of `per_trigger` objects, never a part of one
            # (without read limits a batch holds whatever had landed: whole objects).
            assert set(counts.values()) <= {ROWS_PER_OBJECT}, counts
            if READ_LIMITS:
                assert len(counts) % per_trigger == 0, sorted(counts)
            seen.append(len(counts))
            if len(counts) == landed < objects:
                land(store, range(landed, landed + per_trigger))
                landed += per_trigger
    finally:
        query.stop()
    assert seen[-1] == objects
    assert any(n < objects for n in seen), "no read happened while the stream was running"


def test_on_recreated_restart_carries_a_query_over_to_the_new_bucket(
    spark, options, store, sync_client, tmp_path
) -> None:
    """A query restarted from its checkpoint after its bucket was deleted and created again:
    by default it fails with CheckpointOfAnotherBucket; with onRecreated=restart its next batch
    reads the new bucket from its beginning."""
    checkpoint, out = tmp_path / "ckpt", tmp_path / "out"

    def run_query(**extra: str) -> list[str]:
        query = (
            spark.readStream.format("natsobj")
            .options(**options, layout="binary", glob="in/*", **extra)
            .load()
            .select("name")
            .writeStream.format("parquet")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start(str(out))
        )
        query.awaitTermination()
        return sorted(r.name for r in spark.read.parquet(str(out)).collect())

    store.put("in/old.bin", b"old")
    assert run_query() == ["in/old.bin"]
    sync_client.delete_store(store.bucket)
    sync_client.create_store(store.bucket).put("in/new.bin", b"new")
    with pytest.raises(Exception, match="deleted and created again"):  # wrapped by Spark
        run_query()
    assert run_query(onRecreated="restart") == ["in/new.bin", "in/old.bin"]
