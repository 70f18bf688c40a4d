"""Streaming figures for ``make bench``: Structured Streaming from and to the object store.

- **Throughput**: objects already in ``landing/`` are read by ``readStream.format("natsobj")``
  in binary mode (content fetched by the executors) with ``Trigger.AvailableNow``, into
  Spark's ``noop`` sink; the baseline is Spark's own ``binaryFile`` file stream over the same
  files in a local directory. Objects/s and MiB/s are over the whole query, start-up included.
- **Latency**: a query with a 1-second processing-time trigger copies (name, size) of every new
  object into a natsobj dataset; a writer puts one small object every 500 ms, and a watcher on
  the dataset's manifest notes when each object's row is first committed. Latency is commit
  seen minus put returned, on one clock.

``measure`` runs it in its own process (``python -m benchmarks.streaming``, which prints the
figures as JSON) and turns them into the report's section.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import natsobj
from benchmarks.figures import HIGHER, LOWER, Section, add_row, section, timed
from natsobj.local.embedded import NatsServerProcess
from natsobj.spark.manifest import manifest_name
from natsobj.spark.storage import read_manifest

MiB = 1024 * 1024
# Spark's per-trigger timings: planning the offsets, running the batch (read + write + our
# commit), and the whole trigger.
PUT_INTERVAL = 0.5  # seconds between puts in the latency run: below what a batch can absorb
PHASES = ("latestOffset", "queryPlanning", "addBatch", "triggerExecution")
BUCKET = "bench-stream"
DATASET = "out/latency"


def spark_session():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def throughput(spark, url: str, work: Path, objects: int, size: int, per_trigger: int) -> dict:
    payload = os.urandom(size)
    local = work / "landing"
    local.mkdir()
    with natsobj.connect(url) as client:
        store = client.ensure_store(BUCKET)
        for i in range(objects):
            store.put(f"landing/{i:05d}.bin", payload)
            (local / f"{i:05d}.bin").write_bytes(payload)

    def timed(stream) -> float:
        began = time.perf_counter()
        query = (
            stream.select("content")
            .writeStream.format("noop")
            .option("checkpointLocation", str(work / f"ckpt-{time.monotonic_ns()}"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        return time.perf_counter() - began

    ours = timed(
        spark.readStream.format("natsobj")
        .options(url=url, bucket=BUCKET, mode="binary", glob="landing/*.bin")
        .option("maxObjectsPerTrigger", str(per_trigger))
        .load()
    )
    files = timed(
        spark.readStream.format("binaryFile")
        .schema("path STRING, modificationTime TIMESTAMP, length LONG, content BINARY")
        .option("maxFilesPerTrigger", str(per_trigger))
        .load(str(local))
    )
    mib = objects * size / MiB
    print(f"throughput: natsobj {ours:.1f} s, binaryFile {files:.1f} s", file=sys.stderr)
    return {
        "objects": objects,
        "object_bytes": size,
        "per_trigger": per_trigger,
        "natsobj_s": ours,
        "binaryfile_s": files,
        "natsobj_objects_s": objects / ours,
        "natsobj_mib_s": mib / ours,
        "binaryfile_objects_s": objects / files,
        "binaryfile_mib_s": mib / files,
    }


def latency(spark, url: str, work: Path, seconds: float, interval: float) -> dict:
    committed: dict[str, float] = {}
    put_at: dict[str, float] = {}
    stop = threading.Event()
    with natsobj.connect(url) as client:
        store = client.ensure_store(BUCKET)
        query = (
            spark.readStream.format("natsobj")
            .options(url=url, bucket=BUCKET, mode="binary", glob="live/*.bin")
            .option("startingSequence", "latest")
            .load()
            .select("name", "size")
            .writeStream.format("natsobj")
            .options(url=url, bucket=BUCKET)
            .option("checkpointLocation", str(work / "ckpt-latency"))
            .trigger(processingTime="1 second")
            .start(DATASET)
        )
        watcher = threading.Thread(target=_watch_commits, args=(store, committed, stop))
        watcher.start()
        try:
            time.sleep(10)  # let the first (empty) batches and the Python workers start
            deadline = time.monotonic() + seconds
            i = 0
            while time.monotonic() < deadline:
                name = f"live/{i:05d}.bin"
                store.put(name, b"x" * 1024)
                put_at[name] = time.monotonic()
                i += 1
                time.sleep(interval)
            wait_until = time.monotonic() + 60
            while set(put_at) - set(committed) and time.monotonic() < wait_until:
                time.sleep(0.1)
        finally:
            stop.set()
            watcher.join()
            query.stop()
    busy = [p["durationMs"] for p in query.recentProgress if p["numInputRows"]]
    phases = (
        {k: statistics.median(d.get(k, 0) for d in busy) / 1000 for k in PHASES} if busy else {}
    )
    lags = sorted(committed[n] - t for n, t in put_at.items() if n in committed)
    if not lags:
        raise RuntimeError(f"no object was committed within the run ({len(put_at)} put)")
    return {
        "batches": len(busy),
        "phase_median_s": phases,
        "objects": len(put_at),
        "committed": len(lags),
        "trigger_s": 1.0,
        "lags_s": [round(lag, 3) for lag in lags],
        "p50_s": statistics.median(lags),
        "p99_s": lags[min(len(lags) - 1, int(0.99 * len(lags)))],
        "max_s": lags[-1],
    }


def _watch_commits(store, committed: dict[str, float], stop: threading.Event) -> None:
    """Note when each object's row first appears in a committed generation."""
    seen_parts: set[str] = set()
    target = manifest_name(DATASET)
    with store.watch(start="latest") as watcher:
        while not stop.is_set():
            info = watcher.next(timeout=0.5)
            if info is None or info.name != target:
                continue
            now = time.monotonic()
            manifest = read_manifest(store, DATASET)
            for part in manifest.parts if manifest else ():
                if part.name in seen_parts:
                    continue
                seen_parts.add(part.name)
                table = pq.read_table(pa.BufferReader(store.get_bytes(part.name)), columns=["name"])
                for name in table["name"].to_pylist():
                    committed.setdefault(name, now)


def run(objects: int, size: int, per_trigger: int, seconds: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="natsobj-bench-stream-"))
    server = NatsServerProcess(work / "nats")
    server.start()
    spark = spark_session()
    try:
        figures = {
            "throughput": throughput(spark, server.url, work, objects, size, per_trigger),
            "latency": latency(spark, server.url, work, seconds, interval=PUT_INTERVAL),
        }
        return figures
    finally:
        spark.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


STREAMING_NOTE = (
    "Throughput: {objects} objects of {kib} KiB already landed, read by"
    ' `readStream.format("natsobj")` in binary mode with `Trigger.AvailableNow`, {per_trigger}'
    " objects per micro-batch, into the `noop` sink, beside Spark's `binaryFile` stream over"
    " the same files on the local disk; the whole query, start-up included, once each."
    " Latency: a query with a 1-second processing-time trigger copies (name, size) of every new"
    " object into a natsobj dataset while a writer puts one 1 KiB object every"
    " {every:.0f} ms; latency is from put returned to the object's row first seen committed, one"
    " sample per object. A put waits for the next trigger (up to 1 s), then the batch is"
    " planned from the meta stream, the executors fetch and write, and the manifest commit"
    " makes it visible."
)


def measure(objects: int, size: int, per_trigger: int, seconds: float) -> list[Section]:
    """The streaming section, from a child process running ``run``."""
    figures = section(
        "streaming",
        'Spark Structured Streaming (`readStream` / `writeStream` `format("natsobj")`)',
        STREAMING_NOTE.format(
            objects=objects, kib=size // 1024, per_trigger=per_trigger, every=PUT_INTERVAL * 1000
        ),
        {"files": "binaryFile (local disk)", "ours": "natsobj"},
        [("ours", "files")],
    )
    args = [f"--objects={objects}", f"--size={size}", f"--per-trigger={per_trigger}"]
    with timed(figures):
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.streaming", *args, f"--seconds={seconds}"],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
    result = json.loads(done.stdout[done.stdout.index("{") :])
    speed, lat = result["throughput"], result["latency"]
    rate = {"ours": [speed["natsobj_objects_s"]], "files": [speed["binaryfile_objects_s"]]}
    add_row(figures, "throughput", "objects/s", HIGHER, rate)
    add_row(figures, "latency, put to committed", "s", LOWER, {"ours": lat["lags_s"]})
    add_row(figures, "latency, 99th percentile", "s", LOWER, {"ours": [lat["p99_s"]]})
    return [figures]


def main() -> None:
    parser = argparse.ArgumentParser(description="Structured Streaming benchmark (JSON out)")
    parser.add_argument("--objects", type=int, default=500)
    parser.add_argument("--size", type=int, default=64 * 1024)
    parser.add_argument("--per-trigger", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=40.0)
    args = parser.parse_args()
    figures = run(args.objects, args.size, args.per_trigger, args.seconds)
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
