"""A Spark write while the NATS stream leader is SIGKILLed (3-node cluster, replicas=3 store):
it commits exactly once, or it aborts and leaves nothing behind. Never a partial dataset."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

import pyarrow as pa

import natsobj
from natsobj.spark import register
from natsobj.spark.manifest import ABORTED, WRITE_ID_KEY, manifest_name

PREFIX = "lake/failover"
ROWS, PARTITIONS = 60_000, 4


def _slow(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        time.sleep(0.5)
        yield batch


def _kill_after_first_part(
    url: str, bucket: str, kill: Callable[[str], int], done: threading.Event, seen: dict
) -> None:
    """Runs beside the write (Spark calls stay on the test's thread, where the session is)."""
    with natsobj.connect(url) as client:
        store = client.store(bucket)
        deadline = time.monotonic() + 300
        while not done.is_set() and time.monotonic() < deadline:
            names = {i.name for i in store.list()}
            if any(name.endswith(".parquet") for name in names):
                seen["manifest_before_kill"] = manifest_name(PREFIX) in names
                seen["killed"] = kill(bucket)
                return
            time.sleep(0.1)


def test_write_while_the_stream_leader_is_killed_commits_once_or_aborts_cleanly(
    spark, cluster_url: str, r3_bucket: str, kill_leader
) -> None:
    register(spark)
    options = {"url": cluster_url, "bucket": r3_bucket, "rows_per_object": "5000"}
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "5000")
    df = spark.range(0, ROWS, numPartitions=PARTITIONS).mapInArrow(_slow, "id long")
    done, seen = threading.Event(), {}
    killer = threading.Thread(
        target=_kill_after_first_part, args=(cluster_url, r3_bucket, kill_leader, done, seen)
    )
    killer.start()
    error: Exception | None = None
    try:
        df.write.format("natsobj").mode("overwrite").options(**options).save(PREFIX)
    except Exception as exc:  # the outcome under test, either way
        error = exc
    finally:
        done.set()
        killer.join()
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert "killed" in seen and not seen["manifest_before_kill"], "the leader died mid-write"

    with natsobj.connect(cluster_url) as client:
        store = client.store(r3_bucket)
        objects = {i.name: i for i in store.list()}
        if error is not None:
            # aborted: no manifest and no part; only the abort marker may remain
            assert all(f"/{ABORTED}/" in name for name in objects), (error, sorted(objects))
            return
        manifest = json.loads(store.get_bytes(manifest_name(PREFIX)))
    parts = {p["name"] for p in manifest["parts"]}
    assert manifest["generation"] == 1 and manifest["num_rows"] == ROWS
    assert set(objects) == parts | {manifest_name(PREFIX)}
    assert {objects[n].metadata[WRITE_ID_KEY] for n in parts} == {manifest["write_id"]}
    ids = spark.read.format("natsobj").options(**options).load(PREFIX)
    assert ids.count() == ROWS and ids.distinct().count() == ROWS
