"""Tiering figures for BENCHMARKS.md: reading offloaded objects through natsobj against a
direct S3 GET of the same bytes with the same library (obstore), on one moto S3 server and one
nats-server. Each case runs in its own process (``python -m benchmarks.tiering CASE ...``):

- ``offload``: archive the store once and offload everything (setup, not timed);
- ``through``: stream the large offloaded object through ``ObjectStore.get``;
- ``direct``: stream the same byte range straight from S3 with ``ArchiveTarget.stream``;
- ``ttfb``: time to the first byte of ``get`` for each small (packed) offloaded object.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.archive import CREDENTIALS, MiB, _child, _fill, _Moto, _write_file
from natsobj.embedded import NatsServerProcess

SMALL_COUNT = 50


async def case_offload(url: str, bucket: str, target_url: str) -> dict[str, float]:
    import natsobj.aio
    from natsobj.archive import Archiver, ArchiveTarget
    from natsobj.archive.tiering import offload

    async with await natsobj.aio.connect(url) as client:
        store = await client.store(bucket)
        target = ArchiveTarget(target_url)
        await Archiver(store, target).run(once=True)
        result = await offload(store, target)
        return {"objects": len(result.offloaded), "bytes": result.bytes}


async def case_through(url: str, bucket: str, name: str) -> dict[str, float]:
    import natsobj.aio

    async with await natsobj.aio.connect(url) as client:
        store = await client.store(bucket)
        start = time.perf_counter()
        size = 0
        async with store.get(name) as reader:
            async for piece in reader:
                size += len(piece)
        return {"seconds": time.perf_counter() - start, "bytes": size}


async def case_direct(url: str, bucket: str, name: str) -> dict[str, float]:
    import natsobj.aio
    from natsobj.archive import ArchiveTarget

    async with await natsobj.aio.connect(url) as client:
        info = await (await client.store(bucket)).get_info(name)
    where = info.tiering.offload  # type: ignore[union-attr]
    target = ArchiveTarget(where.url)
    start = time.perf_counter()
    size = 0
    async for piece in target.stream(where.key, where.offset, where.length):
        size += len(piece)
    return {"seconds": time.perf_counter() - start, "bytes": size}


async def case_ttfb(url: str, bucket: str) -> dict[str, float]:
    import natsobj.aio

    waits = []
    async with await natsobj.aio.connect(url) as client:
        store = await client.store(bucket)
        for i in range(SMALL_COUNT):
            start = time.perf_counter()
            async with store.get(f"small/{i:03d}") as reader:
                await reader.read(1)
                waits.append(time.perf_counter() - start)
    return {"median": statistics.median(waits), "p90": statistics.quantiles(waits, n=10)[-1]}


def child_main(argv: list[str]) -> None:
    case, *args = argv
    runner = {
        "offload": case_offload,
        "through": case_through,
        "direct": case_direct,
        "ttfb": case_ttfb,
    }[case]
    print(json.dumps(asyncio.run(runner(*args))), flush=True)
    os._exit(0)  # obstore's runtime threads can abort finalisation; see benchmarks.archive


def _run(env: dict[str, str], *args: str) -> dict[str, float]:
    return _child(env, *args, module="benchmarks.tiering")


def section(quick: bool = False, repeats: int = 3) -> list[str]:
    large = (64 if quick else 256) * MiB
    repeats = 1 if quick else repeats
    work = Path(tempfile.mkdtemp(prefix="natsobj-tiering-bench-"))
    server = NatsServerProcess(work / "nats")
    server.start()
    moto = _Moto(work)
    env = {**os.environ, **CREDENTIALS, "AWS_ENDPOINT_URL": moto.endpoint}
    try:
        path = work / "large.bin"
        _write_file(path, large)
        small = {f"small/{i:03d}": os.urandom(1024) for i in range(SMALL_COUNT)}
        _fill(server.url, "benchtier", {"large.bin": path, **small})
        path.unlink()
        s3 = moto.new_bucket()
        setup = _run(env, "offload", server.url, "benchtier", f"s3://{s3}/t")
        assert setup["objects"] == SMALL_COUNT + 1, setup
        through, direct, ttfb = [], [], []
        for _ in range(repeats):  # interleaved
            direct.append(_run(env, "direct", server.url, "benchtier", "large.bin"))
            through.append(_run(env, "through", server.url, "benchtier", "large.bin"))
            ttfb.append(_run(env, "ttfb", server.url, "benchtier"))
    finally:
        moto.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return render(large, through, direct, ttfb)


def render(
    large: int,
    through: list[dict[str, float]],
    direct: list[dict[str, float]],
    ttfb: list[dict[str, float]],
) -> list[str]:
    def mib_s(runs: list[dict[str, float]]) -> float:
        return large / MiB / statistics.median(r["seconds"] for r in runs)

    ratio = mib_s(through) / mib_s(direct)
    first = statistics.median(r["median"] for r in ttfb) * 1000
    p90 = statistics.median(r["p90"] for r in ttfb) * 1000
    return [
        "",
        "## Tiering: read-through of offloaded objects (moto server on loopback, obstore)",
        "",
        "One nats-server and one moto S3 server in the same run; the store is archived and",
        f"offloaded once, then medians of {len(through)} interleaved runs, each in its own",
        "process. The direct GET streams the same byte range with the same library",
        "(`ArchiveTarget.stream`), so the ratio is what reading through natsobj (meta lookup,",
        "SHA-256 check) costs over the S3 GET itself.",
        "",
        "| figure | measured | target | met |",
        "|---|---:|---:|---|",
        f"| read-through, one {large // MiB} MiB offloaded object | {mib_s(through):.1f} MiB/s"
        " | | |",
        f"| direct S3 GET of the same bytes | {mib_s(direct):.1f} MiB/s | | |",
        f"| read-through / direct | {ratio:.2f}x | >= 0.8x | {'yes' if ratio >= 0.8 else '**no**'}"
        " |",
        f"| time to first byte, 1 KiB object in a pack (median of {SMALL_COUNT}) | {first:.1f} ms"
        " | | |",
        f"| same, 90th percentile | {p90:.1f} ms | | |",
        "",
        "Time to first byte covers the meta record lookup in NATS and one ranged GET of the",
        "pack; moto reads the whole pack object for each ranged request, so against real S3",
        "it is lower.",
    ]


if __name__ == "__main__":
    child_main(sys.argv[1:])
