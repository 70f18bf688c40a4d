"""Cluster figures for ``make bench``: a 3-node loopback cluster, R3 stores.

- 64 MiB put/get through natsobj against raw JetStream on an R3 stream in the same run (raw:
  nats-py ``publish_async`` of 128 KiB messages and an ordered consumer read, as in
  ``benchmarks.core``).
- 1 KiB ``get_info`` / ``get_bytes`` operations per second on a connection to a follower
  node: strong reads (the default), strong reads given the writer's sequence, and eventual.

``python -m benchmarks.cluster`` prints the section on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path

import nats

from natsobj import aio
from natsobj.embedded import NatsCluster
from natsobj.names import stream_name

MiB = 1024 * 1024
CHUNK = 128 * 1024
BIG = 64 * MiB
READ_MODES = ("strong", "strong + sequence", "eventual")


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


async def _read_ops(cluster: NatsCluster, count: int) -> dict[str, dict[str, float]]:
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


async def measure(repeats: int, ops: int) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="natsobj-bench-cluster-"))
    cluster = NatsCluster(work, size=3)
    cluster.start()
    try:
        data = os.urandom(BIG)
        transfer: dict[str, list[tuple[float, float]]] = defaultdict(list)
        await _raw_r3(cluster.url, data)  # warm-up, not counted
        await _ours_r3(cluster.url, data)
        for _ in range(repeats):  # interleaved, so machine noise hits both alike
            transfer["raw"].append(await _raw_r3(cluster.url, data))
            transfer["ours"].append(await _ours_r3(cluster.url, data))
        samples: dict[str, list[dict[str, dict[str, float]]]] = defaultdict(list)
        for _ in range(repeats):
            samples["ops"].append(await _read_ops(cluster, ops))
    finally:
        cluster.stop()
    medians = {
        impl: {
            "put": BIG / MiB / statistics.median(p for p, _ in runs),
            "get": BIG / MiB / statistics.median(g for _, g in runs),
        }
        for impl, runs in transfer.items()
    }
    reads = {
        mode: {
            op: statistics.median(run[mode][op] for run in samples["ops"])
            for op in ("get_info", "get")
        }
        for mode in READ_MODES
    }
    return {
        "transfer": medians,
        "reads": reads,
        "repeats": repeats,
        "ops": ops,
        "load": os.getloadavg()[1],
    }


def section(figures: dict[str, object]) -> list[str]:
    """The BENCHMARKS.md section for the measured ``figures``."""
    transfer: dict[str, dict[str, float]] = figures["transfer"]  # type: ignore[assignment]
    reads: dict[str, dict[str, float]] = figures["reads"]  # type: ignore[assignment]
    lines = [
        "",
        "## Cluster: 3 nodes, R3 stores",
        "",
        "Three `nats-server` processes clustered on loopback (the test fixture's",
        f"`natsobj.embedded.NatsCluster`), medians of {figures['repeats']} interleaved runs",
        f"(5-minute load average at the end: {figures['load']:.1f} on {os.cpu_count()} cores).",
        "",
        "| 64 MiB, R3 | raw JetStream R3 (MiB/s) | natsobj (MiB/s) | natsobj / raw | >= 0.9x |",
        "|---|---:|---:|---:|---|",
    ]
    for op in ("put", "get"):
        raw, ours = transfer["raw"][op], transfer["ours"][op]
        met = "yes" if ours / raw >= 0.9 else "**no**"
        lines.append(f"| {op} | {raw:.1f} | {ours:.1f} | {ours / raw:.2f}x | {met} |")
    strong = reads["strong"]
    lines += [
        "",
        f"Reads of 1 KiB objects ({figures['ops']} sequential operations, ops/s) on a",
        "connection to a follower node. *strong* (the default) asks the stream leader;",
        "*strong + sequence* is given the writer's `ObjectInfo.sequence` (`min_sequence=`, as",
        "the Airflow and Dagster hand-offs do) and uses a direct get checked against it;",
        "*eventual* takes any replica's answer.",
        "",
        "| R3, 1 KiB | strong | strong + sequence | eventual | strong / eventual |",
        "|---|---:|---:|---:|---:|",
    ]
    for op in ("get_info", "get"):
        cells = [f"{reads[mode][op]:.0f}" for mode in READ_MODES]
        ratio = strong[op] / reads["eventual"][op]
        lines.append(f"| {op} | {' | '.join(cells)} | {ratio:.2f}x |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description="Cluster benchmark section")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ops", type=int, default=500)
    args = parser.parse_args()
    print("\n".join(section(asyncio.run(measure(args.repeats, args.ops)))))


if __name__ == "__main__":
    main()
