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

from benchmarks.archive import CREDENTIALS, _child, _fill, _Moto
from benchmarks.core import make_file
from benchmarks.figures import (
    HIGHER,
    LOWER,
    MiB,
    Section,
    add_row,
    ratio_target,
    section,
    throughput,
    timed,
)
from natsobj.local.embedded import NatsServerProcess

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
    async for piece in target.stream(where.key, where.offset, where.offset + where.length):
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


TIERING_NOTE = (
    "One nats-server and one moto S3 server on the same cores; the store is archived and"
    " offloaded once, then the cases take turns, each in its own process. The anchor streams"
    " the same byte range straight from S3 with the same library (`ArchiveTarget.stream`), so"
    " the ratio is what reading through natsobj (meta lookup, SHA-256 check) costs over the S3"
    " GET itself. Time to first byte covers the meta lookup in NATS and one ranged GET of the"
    " pack; moto reads the whole pack object for each ranged request, so against real S3 it is"
    " lower."
)


def measure(large: int, repeats: int) -> list[Section]:
    figures = section(
        "tiering",
        "Tiering: reading offloaded objects through natsobj (moto on loopback, obstore)",
        TIERING_NOTE,
        {"direct": "direct S3 GET (obstore)", "ours": "natsobj read-through"},
        [("ours", "direct")],
    )
    work = Path(tempfile.mkdtemp(prefix="natsobj-tiering-bench-"))
    server = NatsServerProcess(work / "nats")
    server.start()
    moto = _Moto(work)
    env = {**os.environ, **CREDENTIALS, "AWS_ENDPOINT_URL": moto.endpoint}
    try:
        with timed(figures):
            _offloaded_store(server.url, moto, env, work / "large.bin", large)
            runs = _interleaved(server.url, env, repeats)
    finally:
        moto.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    label = f"read one {large // MiB} MiB offloaded object"
    speeds = {case: throughput(large, runs[case], "seconds") for case in ("ours", "direct")}
    add_row(figures, label, "MiB/s", HIGHER, speeds)
    first = f"time to first byte, 1 KiB object in a pack (median of {SMALL_COUNT})"
    add_row(figures, first, "ms", LOWER, {"ours": [r["median"] * 1000 for r in runs["ttfb"]]})
    p90 = f"time to first byte, 90th percentile of {SMALL_COUNT}"
    add_row(figures, p90, "ms", LOWER, {"ours": [r["p90"] * 1000 for r in runs["ttfb"]]})
    ratio_target(figures, "read-through >= 0.8x direct S3 GET", label, "ours", "direct", 0.8)
    return [figures]


def _offloaded_store(url: str, moto: _Moto, env: dict[str, str], path: Path, size: int) -> None:
    make_file(path, size)
    small = {f"small/{i:03d}": os.urandom(1024) for i in range(SMALL_COUNT)}
    _fill(url, "benchtier", {"large.bin": path, **small})
    path.unlink()
    setup = _run(env, "offload", url, "benchtier", f"s3://{moto.new_bucket()}/t")
    assert setup["objects"] == SMALL_COUNT + 1, setup


def _interleaved(url: str, env: dict[str, str], repeats: int) -> dict[str, list]:
    runs: dict[str, list[dict[str, float]]] = {"direct": [], "ours": [], "ttfb": []}
    for _ in range(repeats):
        runs["direct"].append(_run(env, "direct", url, "benchtier", "large.bin"))
        runs["ours"].append(_run(env, "through", url, "benchtier", "large.bin"))
        runs["ttfb"].append(_run(env, "ttfb", url, "benchtier"))
    return runs


if __name__ == "__main__":
    child_main(sys.argv[1:])
