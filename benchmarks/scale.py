"""How listing cost grows with the number of objects in a store.

Stores are filled fast with raw pipelined publishes of valid ADR-20 objects (one tiny chunk and
one meta record each, as any client writes them), so a million-object store takes a minute,
not an hour of puts.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nats
from nats.nuid import NUID

import natsobj.aio
from benchmarks.before import Checkout
from benchmarks.core import BEFORE, RssSampler
from benchmarks.figures import (
    LOWER,
    MiB,
    Section,
    add_row,
    ratio_target,
    section,
    timed,
    value_target,
)
from natsobj.model import ObjectInfo, format_digest
from natsobj.names import chunk_subject, meta_subject, stream_name

PER_DIR = 500  # objects per "directory": the prefix listing lists one of them
FLUSH_EVERY = 20_000


def object_name(index: int, per_dir: int = PER_DIR) -> str:
    return f"d{index // per_dir:05d}/obj{index % per_dir:04d}.bin"


def directory_of(index: int, per_dir: int = PER_DIR) -> str:
    return f"d{index // per_dir:05d}/"


async def fill_store(url: str, bucket: str, count: int, *, per_dir: int = PER_DIR) -> None:
    """Create ``bucket`` and write ``count`` valid objects named by ``object_name``: each one
    chunk (its own name as the content) and a meta record with the right size and digest."""
    client = await natsobj.aio.connect(url)
    try:
        await client.ensure_store(bucket)
    finally:
        await client.close()
    nc = await nats.connect(url, pending_size=64 * 1024 * 1024)
    nuid = NUID()
    try:
        for index in range(count):
            name = object_name(index, per_dir)
            data = name.encode()
            object_nuid = nuid.next().decode()
            info = ObjectInfo(
                name=name,
                bucket=bucket,
                nuid=object_nuid,
                size=len(data),
                chunks=1,
                digest=format_digest(hashlib.sha256(data).digest()),
            )
            await nc.publish(chunk_subject(bucket, object_nuid), data)
            await nc.publish(meta_subject(bucket, name), info.encode())
            if index % FLUSH_EVERY == FLUSH_EVERY - 1:
                await nc.flush(timeout=120)
        await nc.flush(timeout=120)
        await _wait_stored(nc, bucket, 2 * count)
    finally:
        await nc.close()


async def _wait_stored(nc: nats.NATS, bucket: str, messages: int, timeout: float = 300) -> None:
    """Core publishes are not acknowledged: wait until the stream holds them all."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        reply = await nc.request(f"$JS.API.STREAM.INFO.{stream_name(bucket)}", b"", timeout=30)
        stored = int(json.loads(reply.data)["state"]["messages"])
        if stored >= messages:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"only {stored} of {messages} messages stored in {bucket!r}")
        await asyncio.sleep(0.1)


# -- one measurement per process, so peak RSS is its own ---------------------------------------


async def _ours(url: str, bucket: str):
    client = await natsobj.aio.connect(url, api_timeout=30.0)
    return client, await client.store(bucket)


async def _natspy(url: str, bucket: str):
    nc = await nats.connect(url)
    return nc, await nc.jetstream(timeout=30.0).object_store(bucket)


async def ours_list(url: str, bucket: str, count: int) -> dict[str, float]:
    client, store = await _ours(url, bucket)
    rss = RssSampler()
    start = time.perf_counter()
    listed = await store.list()
    elapsed = time.perf_counter() - start
    assert len(listed) == count, len(listed)
    result = {"s": elapsed, "rss": rss.growth()}
    await client.close()
    return result


async def ours_iter(url: str, bucket: str, count: int) -> dict[str, float]:
    client, store = await _ours(url, bucket)
    rss = RssSampler()
    start = time.perf_counter()
    seen = sum([1 async for _ in store.iter_list()])
    elapsed = time.perf_counter() - start
    assert seen == count, seen
    result = {"s": elapsed, "rss": rss.growth()}
    await client.close()
    return result


async def natspy_list(url: str, bucket: str, count: int) -> dict[str, float]:
    nc, store = await _natspy(url, bucket)
    rss = RssSampler()
    start = time.perf_counter()
    listed = await store.list()
    elapsed = time.perf_counter() - start
    assert len(listed) == count, len(listed)
    result = {"s": elapsed, "rss": rss.growth()}
    await nc.close()
    return result


async def ours_prefix(url: str, bucket: str, count: int) -> dict[str, float]:
    """The 500-object prefix listing alone (cold or warm name index: see scale_figures)."""
    client, store = await _ours(url, bucket)
    directory = directory_of(count // 2)
    start = time.perf_counter()
    listed = await store.list(prefix=directory)
    elapsed = time.perf_counter() - start
    assert len(listed) == PER_DIR and all(i.name.startswith(directory) for i in listed)
    await client.close()
    return {"s": elapsed}


async def ours_small_ops(url: str, bucket: str, count: int) -> dict[str, float]:
    """changes() pages and get_info latency."""
    client, store = await _ours(url, bucket)
    last = (await store.status()).last_sequence
    # from the middle of the stream, leaving room for the pages (two messages per object)
    cursor = max(0, min(last // 2, last - 2 * CHANGE_PAGE * CHANGE_PAGES))
    page_times = []
    for _ in range(CHANGE_PAGES):
        start = time.perf_counter()
        page = await store.changes(cursor, limit=CHANGE_PAGE)
        page_times.append(time.perf_counter() - start)
        assert len(page) == CHANGE_PAGE
        cursor = page.last_sequence
    latencies = []
    for index in _sample(count):
        start = time.perf_counter()
        await store.get_info(object_name(index))
        latencies.append(time.perf_counter() - start)
    await client.close()
    return {
        "changes_page_s": statistics.median(page_times),
        "get_info_us": statistics.median(latencies) * 1e6,
    }


async def natspy_small_ops(url: str, bucket: str, count: int) -> dict[str, float]:
    nc, store = await _natspy(url, bucket)
    latencies = []
    for index in _sample(count):
        start = time.perf_counter()
        await store.get_info(object_name(index))
        latencies.append(time.perf_counter() - start)
    await nc.close()
    return {"get_info_us": statistics.median(latencies) * 1e6}


def _sample(count: int) -> list[int]:
    return random.Random(count).sample(range(count), min(GET_INFO_SAMPLES, count))


CHANGE_PAGE = 1000  # changes per changes() page
CHANGE_PAGES = 5
GET_INFO_SAMPLES = 300

CASES = {
    "ours-list": ours_list,
    "ours-iter": ours_iter,
    "ours-prefix": ours_prefix,
    "natspy-list": natspy_list,
    "ours-small": ours_small_ops,
    "natspy-small": natspy_small_ops,
}
# What each run measures, in order: (label, case, whether the name index starts empty). A cold
# run is the first listing on a new machine (the index is built from the server's subject
# state); a warm one is a fresh process with the index on disk, caught up by sequence.
RUNS = (
    ("prefix-cold", "ours-prefix", True),
    ("prefix-warm", "ours-prefix", False),
    ("list-cold", "ours-list", True),
    ("list-warm", "ours-list", False),
    ("iter-warm", "ours-iter", False),
    ("natspy-list", "natspy-list", False),
    ("ours-small", "ours-small", False),
    ("natspy-small", "natspy-small", False),
)


# -- the run: fill each store once, then measure every case on it ----------------------------


def run_case(
    case: str, url: str, bucket: str, count: int, cache: Path, before: Checkout | None = None
) -> dict[str, float] | None:
    """One case in its own process, with its name index in ``cache``; None when it outlived
    CASE_TIMEOUT. With ``before``, natsobj at that earlier commit runs it."""
    try:
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.scale", case, url, bucket, str(count)],
            capture_output=True,
            text=True,
            check=True,
            cwd=before.directory if before else ROOT,
            timeout=CASE_TIMEOUT,
            env={**os.environ, "NATSOBJ_CACHE_DIR": str(cache)},
        )
    except subprocess.TimeoutExpired:
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


CASE_TIMEOUT = 1800
ROOT = Path(__file__).resolve().parent.parent


LISTING_COLUMNS = {
    "natspy-list": "nats-py list()",
    "list-cold": "natsobj list(), cold index",
    "list-warm": "natsobj list(), warm index",
    "iter-warm": "natsobj iter_list(), warm index",
}
DETAIL_COLUMNS = {
    "natspy": "nats-py",
    "ours": "natsobj",
    "cold": "natsobj, cold index",
    "warm": "natsobj, warm index",
}


def measure(
    url: str, counts: list[int], repeats: int, *, before: Checkout | None = None
) -> list[Section]:
    """Each store filled once; then, per repeat, every run in RUNS order (a cold run starts
    from an empty name index, the warm ones after it reuse what it built), and natsobj at
    ``before`` listing with a warm index of its own."""
    columns = {**LISTING_COLUMNS, **({BEFORE: f"{before.label} list(), warm"} if before else {})}
    listing = section(
        "listing",
        "Listing at scale, with the local name index",
        f"Stores filled with raw pipelined publishes of valid ADR-20 objects (one tiny chunk"
        f" each) in directories of {PER_DIR}, each listing in its own process (one run at"
        " 1,000,000). *cold*: the first listing on a machine, with an empty name index;"
        " *warm*: a fresh process with the index on disk, caught up by sequence. How it works:"
        " [docs/listing.md](docs/listing.md).",
        columns,
        [
            *((ours, "natspy-list") for ours in ("list-cold", "list-warm", "iter-warm")),
            *([("list-warm", BEFORE)] if before else []),
        ],
    )
    detail = section(
        "listing-detail",
        "Prefix listings, changes() and get_info in large stores",
        f"The same stores. A prefix listing lists one directory of {PER_DIR} objects (nats-py"
        f" has none, nor `changes()`); a `changes()` page is {CHANGE_PAGE:,} changes from the"
        f" middle of the stream; `get_info` is the median of {GET_INFO_SAMPLES} calls on"
        " random names in each run.",
        DETAIL_COLUMNS,
        [("ours", "natspy")],
    )
    cache = Path(tempfile.mkdtemp(prefix="natsobj-scale-cache-"))
    try:
        with timed(listing, detail):
            for count in counts:
                runs = _runs_of_store(url, count, repeats, cache, before)
                _add_rows(listing, detail, count, runs)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    prefix_of_million = f"{PER_DIR}-object prefix listing among 1,000,000"
    for index in ("warm", "cold"):
        target = f"500-object prefix listing, 1,000,000 objects < 1 s ({index})"
        value_target(detail, target, prefix_of_million, index, 1.0)
        target = f"list() of 50,000 >= 3x nats-py ({index})"
        ratio_target(listing, target, "list() of 50,000", f"list-{index}", "natspy-list", 3)
    target = "iter_list() of 1,000,000: RSS growth <= 100 MiB"
    value_target(listing, target, "peak RSS growth, list() of 1,000,000", "iter-warm", 100)
    return [listing, detail]


def _runs_of_store(
    url: str, count: int, repeats: int, cache: Path, before: Checkout | None
) -> dict[str, list]:
    """Every run in RUNS order, ``repeats`` times (once at a million); runs that outlived
    CASE_TIMEOUT are left out. natsobj at ``before`` keeps its name index in a directory of
    its own (its format may differ), warmed by one listing first."""
    bucket = f"scale{count}"
    asyncio.run(fill_store(url, bucket, count))
    runs: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in RUNS}
    old_cache = cache.with_name(cache.name + "-before")
    try:
        if before:
            shutil.rmtree(old_cache, ignore_errors=True)
            run_case("ours-list", url, bucket, count, old_cache, before)
            runs[BEFORE] = []
        for _ in range(repeats if count < 1_000_000 else 1):
            for label, case, cold in RUNS:
                if cold:
                    shutil.rmtree(cache, ignore_errors=True)
                if (done := run_case(case, url, bucket, count, cache)) is not None:
                    runs[label].append(done)
            if before and (done := run_case("ours-list", url, bucket, count, old_cache, before)):
                runs[BEFORE].append(done)
    finally:
        shutil.rmtree(old_cache, ignore_errors=True)
        asyncio.run(_delete_store(url, bucket))
    return runs


def _add_rows(listing: Section, detail: Section, count: int, runs: dict[str, list]) -> None:
    def of(key: str, scale: float = 1.0, **columns: str) -> dict[str, list[float]]:
        return {column: [r[key] * scale for r in runs[label]] for column, label in columns.items()}

    among = f"{count:,}"
    listed = {column: column for column in LISTING_COLUMNS if column in runs}
    if BEFORE in runs:
        listed[BEFORE] = BEFORE
    add_row(listing, f"list() of {among}", "s", LOWER, of("s", **listed))
    rss = of("rss", 1 / MiB, **listed)
    add_row(listing, f"peak RSS growth, list() of {among}", "MiB", LOWER, rss)
    prefix = of("s", cold="prefix-cold", warm="prefix-warm")
    add_row(detail, f"{PER_DIR}-object prefix listing among {among}", "s", LOWER, prefix)
    page = of("changes_page_s", ours="ours-small")
    add_row(detail, f"changes() page among {among}", "s", LOWER, page)
    info = of("get_info_us", ours="ours-small", natspy="natspy-small")
    add_row(detail, f"get_info among {among}", "µs", LOWER, info)


async def _delete_store(url: str, bucket: str) -> None:
    client = await natsobj.aio.connect(url)
    try:
        await client.delete_store(bucket)
    finally:
        await client.close()


DEFAULT_COUNTS = (10_000, 50_000, 100_000, 1_000_000)


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] in CASES:
        case, url, bucket, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(json.dumps(asyncio.run(CASES[case](url, bucket, count))))
        return
    from benchmarks.report import render_section

    parser = argparse.ArgumentParser(description="Listing at scale; prints its Markdown sections")
    parser.add_argument("--counts", default=",".join(map(str, DEFAULT_COUNTS)))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="natsobj-scale-"))
    try:
        from natsobj.local.embedded import (
            NatsServerProcess,  # not at the top: a --before checkout may lack it
        )

        with NatsServerProcess(work / "nats") as server:
            counts = [int(c) for c in args.counts.split(",")]
            sections = measure(server.url, counts, args.repeats)
        print("\n".join(render_section(each) for each in sections))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
