"""Streaming figures for ``make bench``: Structured Streaming from and to the object store.

- **Throughput**: objects already in ``landing/`` are read by ``readStream.format("natsobj")``
  in binary mode (content fetched by the executors) with ``Trigger.AvailableNow``, into
  Spark's ``noop`` sink; the baseline is Spark's own ``binaryFile`` file stream over the same
  files in a local directory. Objects/s and MiB/s are over the whole query, start-up included.
- **Latency**: a query with a 1-second processing-time trigger copies (name, size) of every new
  object into a natsobj dataset; a writer puts one small object every 500 ms, and a watcher on
  the dataset's manifest notes when each object's row is first committed. Latency is commit
  seen minus put returned, on one clock.

Run by ``benchmarks.run`` in its own process (``python -m benchmarks.streaming``), which prints
the figures as JSON; ``section(figures)`` renders them for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import natsobj
from natsobj.embedded import NatsServerProcess
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
        "p50_s": statistics.median(lags),
        "p99_s": lags[min(len(lags) - 1, int(0.99 * len(lags)))],
        "max_s": lags[-1],
    }


def _watch_commits(store, committed: dict[str, float], stop: threading.Event) -> None:
    """Note when each object's row first appears in a committed generation."""
    seen_parts: set[str] = set()
    target = manifest_name(DATASET)
    with store.watch(updates_only=True) as watcher:
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


def measure(objects: int, size: int, per_trigger: int, seconds: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="natsobj-bench-stream-"))
    server = NatsServerProcess(work / "nats")
    server.start()
    spark = spark_session()
    try:
        figures = {
            "throughput": throughput(spark, server.url, work, objects, size, per_trigger),
            "latency": latency(spark, server.url, work, seconds, interval=PUT_INTERVAL),
        }
        figures["load_average"] = os.getloadavg()[1]  # 5-minute: how shared the machine was
        return figures
    finally:
        spark.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def section(figures: dict[str, Any]) -> list[str]:
    """The streaming section of BENCHMARKS.md."""
    t, lat = figures["throughput"], figures["latency"]
    ph = lat.get("phase_median_s", {})
    ratio = t["natsobj_mib_s"] / t["binaryfile_mib_s"]
    every = f"{PUT_INTERVAL * 1000:.0f} ms"
    counted = f"{lat['committed']} of {lat['objects']} objects, {lat['batches']} micro-batches"
    return [
        "",
        '## Spark Structured Streaming (`readStream` / `writeStream` `format("natsobj")`)',
        "",
        f"Throughput: {t['objects']} objects of {t['object_bytes'] // 1024} KiB already landed, "
        f"read in binary mode with `Trigger.AvailableNow`, {t['per_trigger']} objects per "
        "micro-batch, into the `noop` sink; whole query, start-up included. Baseline: Spark's "
        "`binaryFile` stream over the same files on the local disk.",
        "",
        "| source | seconds | objects/s | MiB/s | natsobj / binaryFile |",
        "|---|---:|---:|---:|---:|",
        f"| natsobj | {t['natsobj_s']:.1f} | {t['natsobj_objects_s']:.0f} | "
        f"{t['natsobj_mib_s']:.1f} | {ratio:.2f}x |",
        f"| binaryFile (local disk) | {t['binaryfile_s']:.1f} | "
        f"{t['binaryfile_objects_s']:.0f} | {t['binaryfile_mib_s']:.1f} | |",
        "",
        "Latency from put to committed micro-batch, 1-second processing-time trigger, natsobj "
        f"source to natsobj sink, one 1 KiB object every {every} ({counted}): "
        f"**p50 {lat['p50_s']:.2f} s, p99 {lat['p99_s']:.2f} s** (max {lat['max_s']:.2f} s). "
        "A put waits for the next trigger (up to 1 s), then the batch is planned from the meta "
        "stream, the executors fetch and write, and the manifest commit makes it visible.",
        "",
        "Median per micro-batch in that run (Spark's `durationMs`): offsets (meta scan) "
        f"{ph.get('latestOffset', 0):.2f} s, planning {ph.get('queryPlanning', 0):.2f} s, "
        f"the batch itself (fetch, write parts, manifest commit) {ph.get('addBatch', 0):.2f} s, "
        f"whole trigger {ph.get('triggerExecution', 0):.2f} s.",
        "",
        f"Machine load average during the run: {figures.get('load_average', 0):.1f} on 2 cores; "
        "every Python worker Spark starts (planning, each task, each commit) is slowed by it.",
    ]


def latency_only(seconds: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="natsobj-bench-stream-"))
    server = NatsServerProcess(work / "nats")
    server.start()
    spark = spark_session()
    try:
        return latency(spark, server.url, work, seconds, interval=PUT_INTERVAL)
    finally:
        spark.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="Structured Streaming benchmark (JSON out)")
    parser.add_argument("--objects", type=int, default=500)
    parser.add_argument("--size", type=int, default=64 * 1024)
    parser.add_argument("--per-trigger", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=40.0)
    args = parser.parse_args()
    figures = measure(args.objects, args.size, args.per_trigger, args.seconds)
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
