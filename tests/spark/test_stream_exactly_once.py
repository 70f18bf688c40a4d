"""Exactly once across a driver crash: the driver is ``kill -9``-ed (with its JVM and Python
workers) in the middle of a micro-batch, restarted from the checkpoint, and every landed row
is then in the sink's dataset exactly once: none missed, none duplicated."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from natsobj.spark.storage import read_manifest
from natsobj.spark.stream_reader import READ_LIMITS
from tests.spark.test_stream_query import ROWS_PER_OBJECT, land

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 480  # seconds; the machine is shared, Spark starts slowly under load


def start_driver(url: str, bucket: str, checkpoint: Path, trigger: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.spark.stream_job", url, bucket, str(checkpoint), trigger],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the JVM and workers die with it
    )


def batch_in_flight(checkpoint: Path) -> int | None:
    """A batch Spark has planned (offsets/N) but not finished (no commits/N), after batch 0."""
    offsets = {int(p.name) for p in (checkpoint / "offsets").glob("[0-9]*")}
    commits = {int(p.name) for p in (checkpoint / "commits").glob("[0-9]*")}
    open_batches = sorted(offsets - commits)
    return open_batches[0] if commits and open_batches else None


def rows_in_dataset(store) -> collections.Counter:
    manifest = read_manifest(store, "clean/rows")
    assert manifest is not None
    counts: collections.Counter = collections.Counter()
    for part in manifest.parts:
        table = pq.read_table(pa.BufferReader(store.get_bytes(part.name)))
        counts.update(zip(table["obj"].to_pylist(), table["row"].to_pylist(), strict=True))
    return counts


def test_kill_minus_9_mid_batch_then_restart_processes_every_object_once(
    nats_url, bucket_name, store, tmp_path
) -> None:
    landed = 10
    land(store, range(landed))
    checkpoint = tmp_path / "ckpt"
    driver = start_driver(nats_url, bucket_name, checkpoint, "continuous")
    try:
        deadline = time.monotonic() + TIMEOUT
        while (killed_in := batch_in_flight(checkpoint)) is None:
            assert driver.poll() is None, "the streaming driver exited by itself"
            assert time.monotonic() < deadline, "no second micro-batch started in time"
            if not READ_LIMITS and landed == 10 and any(checkpoint.glob("commits/[0-9]*")):
                # Without read limits batch 0 took all ten: the next batch gets two more.
                land(store, range(10, 12))
                landed = 12
            time.sleep(0.1)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    assert not (checkpoint / "commits" / str(killed_in)).exists()  # it really was mid-batch
    land(store, range(landed, 14))  # objects that land while the driver is down are not missed
    # Before PySpark 4.2 Trigger.AvailableNow is Spark's single batch: the first run replays
    # the interrupted batch only, and a second one takes what landed meanwhile.
    for _ in range(1 if READ_LIMITS else 2):
        restarted = start_driver(nats_url, bucket_name, checkpoint, "available-now")
        try:
            assert restarted.wait(TIMEOUT) == 0
        finally:
            if restarted.poll() is None:
                os.killpg(restarted.pid, signal.SIGKILL)
    counts = rows_in_dataset(store)
    expected = {(i, r) for i in range(14) for r in range(ROWS_PER_OBJECT)}
    assert set(counts) == expected, f"missing {sorted(expected - set(counts))[:5]}"
    duplicated = {row: n for row, n in counts.items() if n > 1}
    assert not duplicated, f"rows written more than once: {sorted(duplicated)[:5]}"
    # Parts the killed run stored for its unfinished batch were swept by a later commit.
    manifest = read_manifest(store, "clean/rows")
    stored = {i.name for i in store.list() if i.name.startswith("clean/rows/part-")}
    assert stored == {p.name for p in manifest.parts}
