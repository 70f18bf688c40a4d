"""A mixed small-object workload through the S3 gateway at 1 and 2 workers (issue 41), beside
natsobj's own client and moto's S3 server.

16 clients at once, each making its requests one after another: 70% GETs and 30% PUTs, of
4 KiB objects (four requests in five) and 1 MiB objects (one in five); GETs read a key space
filled before timing, PUTs write each client's own keys. Every server gets the same sequence
of requests (one seeded random stream per client), so the columns differ only by the server.
The gateway runs as ``natsobj gateway --workers N`` in a process of its own; the S3 client is
the gateway group's plain SigV4 session (``benchmarks.gateway.S3Client``). Reported: requests
per second, MiB per second of bodies moved either way, and latency percentiles over all
requests of a repeat.

Reading it: on this machine's 2 cores the client, nats-server and the gateway share two
cores, so a second worker has no idle core to use; the method for a bigger host is in
docs/performance.md, "Gateway workers".
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.archive import _Moto
from benchmarks.figures import HIGHER, LOWER, KiB, MiB, Section, add_row, section, timed
from benchmarks.gateway import GatewayProcess, S3Client

CLIENTS = 16
GET_SHARE = 0.7
LARGE_SHARE = 0.2
SIZES = {"small": 4 * KiB, "large": MiB}
KEYS = {"small": 64, "large": 16}
COLUMNS = {
    "gateway-1": "natsobj gateway, 1 worker",
    "gateway-2": "natsobj gateway, 2 workers",
    "ours": "natsobj's own client",
    "moto": "moto_server",
}
NOTE = (
    f"{CLIENTS} clients at once, each making its requests one after another: {GET_SHARE:.0%}"
    f" GETs and {1 - GET_SHARE:.0%} PUTs, of 4 KiB objects ({1 - LARGE_SHARE:.0%} of requests)"
    f" and 1 MiB objects ({LARGE_SHARE:.0%}); GETs read {KEYS['small']} + {KEYS['large']}"
    " keys filled before timing, PUTs write each client's own keys (a read meeting an"
    " overwrite in flight fails by design); the same seeded sequence for every server."
    " `natsobj gateway --workers N` in a process of its own on the run's nats-server;"
    " moto's S3 server on the same cores; *natsobj's own client*: 16 tasks on one async"
    " client. MiB/s counts the bodies moved either way. On 2 cores shared by the client,"
    " nats-server and the gateway a second worker has no idle core: docs/performance.md,"
    " *Gateway workers*, says how to read it on a bigger host."
)


@dataclass(frozen=True)
class Request:
    put: bool
    size: str
    key: str


def sequence(client: int, requests: int) -> list[Request]:
    """Client ``client``'s requests, the same for every server. GETs read the keys filled
    before timing; each client PUTs keys of its own, so no GET meets an overwrite in flight
    (a read whose object is replaced under it fails, as natsobj's reads do, by design)."""
    chance = random.Random(client)
    plan = []
    for _ in range(requests):
        size = "large" if chance.random() < LARGE_SHARE else "small"
        if chance.random() < GET_SHARE:
            plan.append(Request(False, size, f"mixed/{size}/{chance.randrange(KEYS[size])}"))
        else:
            written = chance.randrange(KEYS[size])
            plan.append(Request(True, size, f"mixed/{size}/by-{client}/{written}"))
    return plan


def measure(url: str, work: Path, repeats: int, requests: int) -> list[Section]:
    figures = section(
        "gateway-mixed",
        "S3 gateway: mixed small objects (70% GET / 30% PUT, 4 KiB and 1 MiB), 1 and 2 workers",
        NOTE,
        COLUMNS,
        [("gateway-2", "gateway-1"), ("gateway-1", "ours"), ("gateway-1", "moto")],
    )
    started: list[Any] = []
    try:
        endpoints = {}
        for workers in (1, 2):
            gateway = GatewayProcess(url, work, workers=workers)
            started.append(gateway)
            endpoints[f"gateway-{workers}"] = gateway.endpoint
        moto = _Moto(work)
        started.append(moto)
        endpoints["moto"] = moto.endpoint
        with timed(figures):
            samples = asyncio.run(_measure(url, repeats, requests, endpoints))
    finally:
        for server in started:
            server.stop()
    rows = {
        "requests/s": HIGHER,
        "MiB/s": HIGHER,
        "p50 ms": LOWER,
        "p99 ms": LOWER,
    }
    for row, better in rows.items():
        unit = row.split()[-1]
        add_row(figures, f"mixed, {CLIENTS} clients: {row}", unit, better, samples[row])
    return [figures]


Call = Callable[[Request, bytes], Awaitable[int]]


async def _measure(
    url: str, repeats: int, requests: int, endpoints: dict[str, str]
) -> dict[str, dict[str, list[float]]]:
    import natsobj.aio

    samples: dict[str, dict[str, list[float]]] = {}
    bucket = f"bench-mixed-{os.getpid()}"
    bodies = {size: os.urandom(length) for size, length in SIZES.items()}
    clients = {name: S3Client(endpoint, CLIENTS) for name, endpoint in endpoints.items()}
    async with await natsobj.aio.connect(url) as nats_client:
        try:
            calls: dict[str, Call] = {}
            for name, client in clients.items():
                if name != "gateway-2":  # the same bucket as gateway-1's
                    await client.create_bucket(bucket)
                calls[name] = _s3_call(client, bucket)
            store = await nats_client.store(bucket)

            async def ours(request: Request, body: bytes) -> int:
                if request.put:
                    await store.put(request.key, body)
                    return len(body)
                return len(await store.get_bytes(request.key))

            calls["ours"] = ours
            for name in ("gateway-1", "moto"):  # ours and gateway-2 share gateway-1's keys
                await _fill(calls[name], bodies)
            for _ in range(repeats):
                for name in COLUMNS:
                    for row, value in (await _run(calls[name], bodies, requests)).items():
                        samples.setdefault(row, {}).setdefault(name, []).append(value)
        finally:
            for client in clients.values():
                await client.__aexit__()
            await nats_client.delete_store(bucket)
    return samples


def _s3_call(client: S3Client, bucket: str) -> Call:
    async def call(request: Request, body: bytes) -> int:
        path = f"{bucket}/{request.key}"
        if request.put:
            await client.request("PUT", path, body)
            return len(body)
        return len(await client.request("GET", path))

    return call


async def _fill(call: Call, bodies: dict[str, bytes]) -> None:
    for size, count in KEYS.items():
        for index in range(count):
            await call(Request(True, size, f"mixed/{size}/{index}"), bodies[size])


async def _run(call: Call, bodies: dict[str, bytes], requests: int) -> dict[str, float]:
    latencies: list[float] = []
    moved = 0

    async def one_client(index: int) -> None:
        nonlocal moved
        for request in sequence(index, requests):
            began = time.perf_counter()
            moved += await call(request, bodies[request.size])
            latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(one_client(i) for i in range(CLIENTS)))
    seconds = time.perf_counter() - began
    return {
        "requests/s": len(latencies) / seconds,
        "MiB/s": moved / MiB / seconds,
        "p50 ms": statistics.median(latencies) * 1000,
        "p99 ms": statistics.quantiles(latencies, n=100)[98] * 1000,
    }


def main() -> None:
    """``python -m benchmarks.gateway_mixed [--quick]``: this group alone, on a server of its
    own, printed as BENCHMARKS.md would show it."""
    import shutil
    import sys
    import tempfile

    from benchmarks import report
    from benchmarks.run import FULL, QUICK, _gateway_mixed
    from natsobj.local.embedded import NatsServerProcess

    plan = QUICK if "--quick" in sys.argv else FULL
    work = Path(tempfile.mkdtemp(prefix="natsobj-gateway-mixed-"))
    try:
        with NatsServerProcess(work / "nats") as server:
            sections = _gateway_mixed(plan, server.url, work)
        for each in sections:
            print(report.render_section(each))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
