"""The streaming source's driver and task halves, called directly against the real server:
offsets, glob selection, rate limits, and what a task does with an object replaced or
deleted after its batch was planned. (The same code runs under Spark in test_stream_query.)
Before PySpark 4.2 Spark passes no start and no read limit (``READ_LIMITS``): ``next_end`` asks
the source as each version of Spark does."""

from __future__ import annotations

import logging
import re

import pytest
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from natsobj.cursors import ChangeCursor
from natsobj.spark.errors import BadSparkOption, CheckpointOfAnotherBucket
from natsobj.spark.offsets import cursor_of
from natsobj.spark.reader import BINARY_SCHEMA
from natsobj.spark.stream_options import StreamOptions
from natsobj.spark.stream_reader import READ_LIMITS, NatsObjStreamReader, ReplacedSincePlanned

if READ_LIMITS:
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes, ReadMaxFiles

TABLE = StructType([StructField("id", IntegerType()), StructField("v", StringType())])


def reader(options: dict[str, str], schema: StructType = TABLE, **extra: str):
    return NatsObjStreamReader(StreamOptions.parse({**options, **extra}), schema)


def next_end(source: NatsObjStreamReader, start: dict) -> dict:
    """The end of the batch after ``start``, with no read limit: PySpark 4.2 passes the start
    and ReadAllAvailable; before, Spark commits the previous batch (ending at ``start``) and
    asks latestOffset() alone."""
    if READ_LIMITS:
        return source.latestOffset(start, ReadAllAvailable())
    source.commit(start)
    return source.latestOffset()


def planned_names(source: NatsObjStreamReader, start: dict, end: dict) -> list[str]:
    return [o.name for p in source.partitions(start, end) for o in p.objects]


def rows(source: NatsObjStreamReader, start: dict, end: dict) -> list[tuple]:
    out = []
    for partition in source.partitions(start, end):
        for batch in source.read(partition):
            out += list(zip(*batch.to_pydict().values(), strict=True))
    return sorted(out)


def test_offsets_are_meta_sequences_and_the_glob_is_path_aware(store, options) -> None:
    store.put("landing/a.csv", b"id,v\n1,a\n")
    store.put("landing/old/b.csv", b"id,v\n2,b\n")  # `*` stays inside one segment
    store.put("elsewhere/c.csv", b"id,v\n3,c\n")
    store.put("landing/d.txt", b"not csv")
    source = reader(options, glob="landing/*.csv")
    start = source.initialOffset()
    created = store.status().stream_info.created
    # the server's nanosecond creation time, kept to the microsecond it is compared at
    assert cursor_of(start) == ChangeCursor(0, created)
    end = next_end(source, start)
    assert end["sequence"] >= store.get_info("landing/a.csv").sequence
    assert planned_names(source, start, end) == ["landing/a.csv"]
    assert rows(source, start, end) == [(1, "a")]
    # Nothing new that matches: the offset stays put, so Spark runs no empty batch.
    store.put("landing/old/e.csv", b"id,v\n5,e\n")
    assert next_end(source, end) == end
    put = store.put("landing/f.csv", b"id,v\n6,f\n")
    later = next_end(source, end)
    assert cursor_of(later) == ChangeCursor(put.sequence, created)
    assert planned_names(source, end, later) == ["landing/f.csv"]
    # `**` crosses segments; startingSequence=latest starts after everything there now.
    deep = reader(options, glob="landing/**.csv")
    assert planned_names(deep, {"sequence": 0}, later) == [
        "landing/a.csv",
        "landing/old/b.csv",
        "landing/old/e.csv",
        "landing/f.csv",
    ]
    latest = reader(options, glob="landing/*.csv", startingSequence="latest").initialOffset()
    assert cursor_of(latest) == ChangeCursor(store.status().last_sequence, created)
    numbered = reader(options, glob="landing/**.csv", startingSequence=str(put.sequence))
    assert planned_names(numbered, numbered.initialOffset(), later) == ["landing/f.csv"]


def test_a_checkpoint_of_a_deleted_bucket_fails_instead_of_reading_nothing(
    sync_client, store, options
) -> None:
    """A query's checkpoint outlives a bucket that is deleted and created again under the same
    name: its offsets are sequences of the old stream. Whether the new bucket is still shorter
    than the checkpoint (an offset past its end) or has grown past it (another creation time),
    the query stops with the reason instead of skipping the new bucket's objects."""
    for index in range(3):
        store.put(f"in/{index}.csv", b"id,v\n1,a\n")
    source = reader(options, glob="in/*.csv")
    checkpointed = next_end(source, source.initialOffset())
    legacy = {"sequence": checkpointed["sequence"]}  # written before offsets had "created"
    sync_client.delete_store(store.bucket)
    sync_client.create_store(store.bucket).put("in/new.csv", b"id,v\n2,b\n")
    for offset in (checkpointed, legacy):
        with pytest.raises(CheckpointOfAnotherBucket, match="deleted and created again") as err:
            next_end(source, offset)
        assert store.bucket in str(err.value) and "checkpoint directory" in str(err.value)
    for index in range(6):  # the new bucket grows past the checkpoint's sequence
        store.put(f"in/more{index}.csv", b"id,v\n3,c\n")
    with pytest.raises(CheckpointOfAnotherBucket):
        next_end(source, checkpointed)
    fresh = reader(options, glob="in/*.csv")
    start = fresh.initialOffset()
    assert len(planned_names(fresh, start, next_end(fresh, start))) == 7


def test_on_recreated_restart_reads_the_new_bucket_from_its_beginning(
    sync_client, store, options
) -> None:
    """onRecreated=restart: a checkpoint of the bucket's earlier life is read as the new
    bucket's beginning, so the first batch after the re-creation plans everything it holds."""
    for index in range(3):
        store.put(f"in/{index}.csv", b"id,v\n1,a\n")
    source = reader(options, glob="in/*.csv", onRecreated="restart")
    checkpointed = next_end(source, source.initialOffset())
    sync_client.delete_store(store.bucket)
    recreated = sync_client.create_store(store.bucket)
    recreated.put("in/new.csv", b"id,v\n2,new\n")
    created = recreated.status().stream_info.created
    end = next_end(source, checkpointed)
    assert cursor_of(end) == ChangeCursor(recreated.status().last_sequence, created)
    assert rows(source, checkpointed, end) == [(2, "new")]
    with pytest.raises(CheckpointOfAnotherBucket):  # the default is the table's: fail
        next_end(reader(options, glob="in/*.csv"), checkpointed)


def test_rate_limits_cut_batches_by_objects_and_bytes(store, options, caplog) -> None:
    for i in range(5):
        store.put(f"in/{i}.csv", b"id,v\n" + f"{i},{'x' * 100}\n".encode())
    if not READ_LIMITS:
        _batches_take_everything_without_read_limits(store, options, caplog)
        return
    by_count = reader(options, glob="in/*.csv", maxObjectsPerTrigger="2")
    assert by_count.getDefaultReadLimit() == ReadMaxFiles(2)
    offset, batches = {"sequence": 0}, []
    while (end := by_count.latestOffset(offset, by_count.getDefaultReadLimit())) != offset:
        batches.append(planned_names(by_count, offset, end))
        offset = end
    assert batches == [["in/0.csv", "in/1.csv"], ["in/2.csv", "in/3.csv"], ["in/4.csv"]]
    # Trigger.AvailableNow / Once pass ReadAllAvailable: the engine's limit wins.
    everything = next_end(by_count, {"sequence": 0})
    assert len(planned_names(by_count, {"sequence": 0}, everything)) == 5
    size = store.get_info("in/0.csv").size
    by_bytes = reader(options, glob="in/*.csv", maxBytesPerTrigger=str(3 * size - 1))
    assert by_bytes.getDefaultReadLimit() == ReadMaxBytes(3 * size - 1)
    end = by_bytes.latestOffset({"sequence": 0}, by_bytes.getDefaultReadLimit())
    assert planned_names(by_bytes, {"sequence": 0}, end) == ["in/0.csv", "in/1.csv"]
    # One object larger than the budget still makes progress.
    tiny = reader(options, glob="in/*.csv", maxBytesPerTrigger="1")
    end = tiny.latestOffset({"sequence": 0}, tiny.getDefaultReadLimit())
    assert planned_names(tiny, {"sequence": 0}, end) == ["in/0.csv"]


def _batches_take_everything_without_read_limits(store, options, caplog) -> None:
    """Before PySpark 4.2 the limits cannot apply: the reader says so once, and each batch
    takes every object there is, each exactly once."""
    with caplog.at_level(logging.WARNING, logger="natsobj.spark"):
        by_count = reader(options, glob="in/*.csv", maxObjectsPerTrigger="2")
    assert "need PySpark 4.2" in caplog.text
    first = by_count.latestOffset()  # the first batch of a run: up to the last change
    assert planned_names(by_count, {"sequence": 0}, first) == [f"in/{i}.csv" for i in range(5)]
    assert by_count.latestOffset() == first  # partitions() saw that batch: nothing is left
    store.put("elsewhere/x.csv", b"id,v\n9,x\n")  # not selected: still no batch
    assert by_count.latestOffset() == first
    for i in range(5, 8):
        store.put(f"in/{i}.csv", b"id,v\n" + f"{i},y\n".encode())
    second = by_count.latestOffset()
    assert planned_names(by_count, first, second) == [f"in/{i}.csv" for i in range(5, 8)]


def test_available_now_stops_at_what_was_there_when_it_started(store, options) -> None:
    store.put("in/a.csv", b"id,v\n1,a\n")
    source = reader(options, glob="in/*.csv")
    if READ_LIMITS:
        source.prepareForTriggerAvailableNow()
        store.put("in/b.csv", b"id,v\n2,b\n")
        end = next_end(source, {"sequence": 0})
    else:  # Spark's own AvailableNow asks latestOffset() once, when the query starts
        end = source.latestOffset()
        store.put("in/b.csv", b"id,v\n2,b\n")
    assert planned_names(source, {"sequence": 0}, end) == ["in/a.csv"]
    if READ_LIMITS:
        assert next_end(source, end) == end  # the query can finish


def test_a_replaced_or_deleted_object_is_skipped_never_mixed(store, options) -> None:
    for name in ("in/keep.csv", "in/replaced.csv", "in/deleted.csv"):
        store.put(name, b"id,v\n1,old\n")
    source = reader(options, glob="in/*.csv")
    start = {"sequence": 0}
    end = next_end(source, start)
    partitions = source.partitions(start, end)
    store.put("in/replaced.csv", b"id,v\n2,new\n")  # after planning, before the task reads
    store.delete("in/deleted.csv")
    with pytest.warns(ReplacedSincePlanned) as warned:
        read = [b.to_pydict() for p in partitions for b in source.read(p)]
    skipped = sorted(re.search(r"\['(.+)'\]", str(w.message)).group(1) for w in warned)
    assert skipped == ["in/deleted.csv", "in/replaced.csv"]  # each task counts its own
    assert read == [{"id": [1], "v": ["old"]}]  # keep.csv only; nothing of the new version
    # The new version and the delete lie after `end`: the next batch has the new version.
    later = next_end(source, end)
    assert rows(source, end, later) == [(2, "new")]


def test_binary_mode_rows_and_deletes(store, options) -> None:
    first = store.put("raw/a.bin", b"\x00\x01")
    store.put("raw/b.bin", b"bb")
    store.delete("raw/b.bin")
    plain = reader(options, BINARY_SCHEMA, glob="raw/*", layout="binary")
    end = next_end(plain, {"sequence": 0})
    got = [r for p in plain.partitions({"sequence": 0}, end) for r in plain.read(p)]
    assert [(r[0], r[1], r[3], r[4]) for r in got] == [("raw/a.bin", 2, first.digest, b"\x00\x01")]
    with_deletes = reader(
        options, BINARY_SCHEMA, glob="raw/*", layout="binary", includeDeletes="true"
    )
    got = [r for p in with_deletes.partitions({"sequence": 0}, end) for r in with_deletes.read(p)]
    assert [(r[0], r[1], r[3], r[4]) for r in got] == [
        ("raw/a.bin", 2, first.digest, b"\x00\x01"),
        ("raw/b.bin", 0, None, None),  # a delete: no digest, no content
    ]


def test_partitions_spread_small_objects_over_executors(store, options) -> None:
    for i in range(10):
        store.put(f"in/{i:02d}.csv", b"id,v\n1,a\n")
    source = reader(options, glob="in/*.csv")
    end = next_end(source, {"sequence": 0})
    partitions = source.partitions({"sequence": 0}, end)
    assert len(partitions) >= 2
    assert sorted(o.name for p in partitions for o in p.objects) == [
        f"in/{i:02d}.csv" for i in range(10)
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"startingSequence": "soon"}, "startingSequence: start must be"),
        ({"maxObjectsPerTrigger": "0"}, "must be a whole number >= 1"),
        ({"includeDeletes": "true"}, "includeDeletes needs binary mode"),
        ({"objectFormat": "xml"}, "objectFormat must be one of"),
    ],
)
def test_bad_stream_options_fail_before_the_query_starts(
    options: dict[str, str], extra: dict[str, str], message: str
) -> None:
    with pytest.raises(BadSparkOption, match=message):
        StreamOptions.parse({"glob": "in/*.csv", **options, **extra})


def test_unknown_stream_options_are_ignored_like_batch_ones(options: dict[str, str]) -> None:
    """As built-in sources do (issue 15): a copied ``mergeSchema`` must not stop the query."""
    parsed = StreamOptions.parse({"glob": "in/*.csv", **options, "mergeSchema": "true"})
    assert parsed.matcher is not None and parsed.matcher.matches("in/a.csv")


def test_an_object_that_does_not_fit_the_schema_names_itself(store, options) -> None:
    store.put("in/bad.csv", b"id,v\nnot-a-number,a\n")
    source = reader(options, glob="in/*.csv")
    end = next_end(source, {"sequence": 0})
    with pytest.raises(ValueError, match=r"object 'in/bad.csv' \(csv\) does not fit"):
        [b for p in source.partitions({"sequence": 0}, end) for b in source.read(p)]
