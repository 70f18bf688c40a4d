"""``format("natsobj")`` on a Spark standalone cluster (master, two workers, executors in
their own JVMs) against the 3-node NATS cluster with a replicas=3 store: an executor killed
mid-write is retried, the write commits exactly once, and no orphaned part remains."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import natsobj
from natsobj.spark.manifest import WRITE_ID_KEY, manifest_name
from tests.spark.standalone_job import PREFIX

ROWS, PARTITIONS = 200_000, 4  # 5 input batches of 10,000 rows per task
BATCH_DELAY = 1.0  # seconds each batch waits in the executor: tasks outlive the kill
JOB_TIMEOUT = 600


def _wait_for_first_part(
    store: natsobj.ObjectStore, driver: subprocess.Popen, log: Path, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if driver.poll() is not None:
            output = driver.stdout.read() if driver.stdout else ""
            raise AssertionError(f"the driver ended early: {output}\n{log.read_text()[-3000:]}")
        if any(i.name.endswith(".parquet") for i in store.list()):
            return
        time.sleep(0.2)
    raise AssertionError(f"no part appeared within {timeout:g}s")


def test_executor_killed_mid_write_commits_once_without_orphans(
    spark_standalone, cluster_url: str, r3_bucket: str, tmp_path: Path
) -> None:
    options = {"url": cluster_url, "bucket": r3_bucket, "rows_per_object": "10000"}
    log = tmp_path / "driver.log"
    args = [spark_standalone.master_url, json.dumps(options), ROWS, PARTITIONS, BATCH_DELAY]
    with log.open("w") as stderr:
        driver = subprocess.Popen(
            [sys.executable, "-m", "tests.spark.standalone_job", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        with natsobj.connect(cluster_url) as client:
            store = client.store(r3_bucket)
            _wait_for_first_part(store, driver, log, timeout=JOB_TIMEOUT)
            executors = spark_standalone.executor_pids()
            assert len(executors) == 2, executors
            os.kill(executors[0], signal.SIGKILL)
            killed_before_commit = not any(i.name == manifest_name(PREFIX) for i in store.list())
            out, _ = driver.communicate(timeout=JOB_TIMEOUT)
            result = json.loads(out.strip().splitlines()[-1])
            manifest = json.loads(store.get_bytes(manifest_name(PREFIX)))
            objects = {i.name: i for i in store.list()}
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()

    assert killed_before_commit, "the executor was killed after the commit, not mid-write"
    assert result == {"ok": True, "rows": ROWS, "sum": ROWS * (ROWS - 1) // 2, "distinct": ROWS}
    # committed exactly once: the first generation, every row once
    assert manifest["generation"] == 1 and manifest["num_rows"] == ROWS
    parts = {p["name"] for p in manifest["parts"]}
    assert sum(p["rows"] for p in manifest["parts"]) == ROWS
    # the killed executor's tasks were retried: a later attempt's parts are in the manifest
    attempts = {int(name.rsplit("/", 1)[1].split("-")[2]) for name in parts}
    assert max(attempts) >= 1, sorted(parts)
    # nothing else is left: no part of the killed attempts, no abort marker
    assert set(objects) == parts | {manifest_name(PREFIX)}
    write_ids = {objects[name].metadata[WRITE_ID_KEY] for name in parts}
    assert write_ids == {manifest["write_id"]}
