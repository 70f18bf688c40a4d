"""Cluster figures for ``make bench``: a 3-node loopback cluster, R3 stores.

- A large put/get (64 MiB in the full run) through natsobj against raw JetStream on an R3
  stream in the same run (raw: nats-py ``publish_async`` of 128 KiB messages and an ordered
  consumer read, as in ``benchmarks.core``).
- 1 KiB ``get_info`` / ``get_bytes`` operations per second on a connection to a follower
  node: strong reads (the default), strong reads given the writer's sequence, and eventual.

``python -m benchmarks.cluster`` prints the sections on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import nats

from benchmarks.figures import (
    HIGHER,
    MiB,
    Section,
    add_row,
    ratio_target,
    section,
    timed,
)
from natsobj import aio
from natsobj.names import stream_name
from tests.cluster.harness import ClusterHarness

CHUNK = 128 * 1024
READ_MODES = {"strong": "strong", "strong + sequence": "strong + sequence", "eventual": "eventual"}


async def _raw_r3(url: str, data: bytes) -> tuple[float, float]:
    nc = await nats.connect(url.split(","))
    js = nc.jetstream(publish_async_max_pending=64)
    stream = f"RAW{os.getpid()}"
    await js.add_stream(name=stream, subjects=[f"{stream}.>"], num_replicas=3)
    await asyncio.sleep(0.5)  # the new stream's interest reaches every node
    start = time.perf_counter()
    for offset in range(0, len(data), CHUNK):
        await js.publish_async(f"{stream}.data", data[offset : offset + CHUNK])
    await js.publish_async_completed()
    put = time.perf_counter() - start
    start = time.perf_counter()
    sub = await js.subscribe(f"{stream}.data", ordered_consumer=True)
    received = 0
    while received < len(data):
        received += len((await sub.next_msg(timeout=30)).data)
    await sub.unsubscribe()
    get = time.perf_counter() - start
    await js.delete_stream(stream)
    await nc.close()
    return put, get


async def _ours_r3(url: str, data: bytes) -> tuple[float, float]:
    client = await aio.connect(url)
    bucket = f"bench{os.getpid()}"
    store = await client.create_store(bucket, replicas=3)
    await asyncio.sleep(0.5)
    start = time.perf_counter()
    await store.put("obj", data)
    put = time.perf_counter() - start
    start = time.perf_counter()
    assert len(await store.get_bytes("obj")) == len(data)
    get = time.perf_counter() - start
    await client.delete_store(bucket)
    await client.close()
    return put, get


async def _ops_per_second(count: int, op: Callable[[int], Awaitable[object]]) -> float:
    start = time.perf_counter()
    for index in range(count):
        await op(index)
    return count / (time.perf_counter() - start)


async def _read_ops(cluster: ClusterHarness, count: int) -> dict[str, dict[str, float]]:
    bucket = f"ops{os.getpid()}"
    writer = await aio.connect(cluster.url)
    store = await writer.create_store(bucket, replicas=3)
    await asyncio.sleep(0.5)
    payload = os.urandom(1024)
    sequences = [(await store.put(f"o{i}", payload)).sequence for i in range(count)]
    leader = await asyncio.to_thread(cluster.leader_of, stream_name(bucket))
    follower = next(i for i in range(len(cluster.nodes)) if i != leader)
    figures: dict[str, dict[str, float]] = {}
    for mode in READ_MODES:
        consistency = "eventual" if mode == "eventual" else "strong"
        reader = await aio.connect(cluster.urls[follower], consistency=consistency)
        view = await reader.store(bucket)

        def known(i: int, mode: str = mode) -> int | None:
            return sequences[i] if mode == "strong + sequence" else None

        figures[mode] = {
            "get_info": await _ops_per_second(
                count, lambda i, v=view, k=known: v.get_info(f"o{i}", min_sequence=k(i))
            ),
            "get": await _ops_per_second(
                count, lambda i, v=view, k=known: v.get_bytes(f"o{i}", min_sequence=k(i))
            ),
        }
        await reader.close()
    await writer.delete_store(bucket)
    await writer.close()
    return figures


async def measure(repeats: int, ops: int, size: int = 64 * MiB) -> list[Section]:
    label = f"{size // MiB} MiB"
    transfer = section(
        "cluster-transfer",
        f"Cluster: {label} put and get, 3 nodes, R3",
        "Three `nats-server` processes clustered on loopback (`tests/cluster/harness.py`)."
        " *raw JetStream R3* is nats-py `publish_async` of 128 KiB messages and an ordered"
        " consumer read on an R3 stream; natsobj is `put` and `get_bytes` on an R3 store."
        " One warm-up of each first, not counted.",
        {"raw": "raw JetStream R3", "ours": "natsobj"},
        [("ours", "raw")],
    )
    reads = section(
        "cluster-reads",
        "Cluster: 1 KiB reads on a connection to a follower",
        f"{ops} sequential operations per run on an R3 store. *strong* (the default) asks the"
        " stream leader; *strong + sequence* is given the writer's `ObjectInfo.sequence`"
        " (`min_sequence=`, as the Airflow and Dagster hand-offs do) and uses a direct get"
        " checked against it; *eventual* takes any replica's answer. The ratios are what"
        " each guarantee costs against eventual reads.",
        READ_MODES,
        [("strong", "eventual"), ("strong + sequence", "eventual")],
    )
    work = Path(tempfile.mkdtemp(prefix="natsobj-bench-cluster-"))
    cluster = ClusterHarness(work, size=3)
    cluster.start()
    try:
        with timed(transfer, reads):
            runs = await _transfers(cluster.url, os.urandom(size), repeats)
            modes = [await _read_ops(cluster, ops) for _ in range(repeats)]
    finally:
        cluster.stop()
    for op, index in (("put", 0), ("get", 1)):
        samples = {impl: [size / MiB / run[index] for run in runs[impl]] for impl in runs}
        add_row(transfer, f"{label} {op}", "MiB/s", HIGHER, samples)
        target = f"R3 {label} {op} >= 0.9x raw"
        ratio_target(transfer, target, f"{label} {op}", "ours", "raw", 0.9)
    for op in ("get_info", "get"):
        samples = {mode: [run[mode][op] for run in modes] for mode in READ_MODES}
        add_row(reads, op, "operations/s", HIGHER, samples)
    return [transfer, reads]


async def _transfers(url: str, data: bytes, repeats: int) -> dict[str, list[tuple]]:
    """Interleaved, so machine noise hits both alike, after one warm-up of each."""
    await _raw_r3(url, data)
    await _ours_r3(url, data)
    runs: dict[str, list[tuple[float, float]]] = {"raw": [], "ours": []}
    for _ in range(repeats):
        runs["raw"].append(await _raw_r3(url, data))
        runs["ours"].append(await _ours_r3(url, data))
    return runs


def main() -> None:
    from benchmarks.report import render_section

    parser = argparse.ArgumentParser(description="Cluster benchmark sections")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ops", type=int, default=500)
    parser.add_argument("--mib", type=int, default=64, help="object size in MiB")
    args = parser.parse_args()
    sections = asyncio.run(measure(args.repeats, args.ops, args.mib * MiB))
    print("\n".join(render_section(each) for each in sections))


if __name__ == "__main__":
    main()
