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
from typing import Any

import nats
from nats.nuid import NUID

import natsobj.aio
from benchmarks.core import RssSampler
from natsobj.embedded import NatsServerProcess
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


def run_case(case: str, url: str, bucket: str, count: int, cache: Path) -> dict[str, float] | None:
    """One case in its own process, with its name index in ``cache``; None when it outlived
    CASE_TIMEOUT."""
    try:
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.scale", case, url, bucket, str(count)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            timeout=CASE_TIMEOUT,
            env={**os.environ, "NATSOBJ_CACHE_DIR": str(cache)},
        )
    except subprocess.TimeoutExpired:
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


CASE_TIMEOUT = 1800
ROOT = Path(__file__).resolve().parent.parent


def scale_figures(
    url: str, counts: list[int], repeats: int, runs: tuple[str, ...] = tuple(r[0] for r in RUNS)
) -> dict[Any, Any]:
    """Each store filled once; then, per repeat, every run in RUNS order (a cold run starts
    from an empty name index, the warm ones after it reuse what it built)."""
    figures: dict[Any, Any] = {"load": os.getloadavg()[0]}
    cache = Path(tempfile.mkdtemp(prefix="natsobj-scale-cache-"))
    try:
        _measure_all(url, counts, repeats, runs, cache, figures)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    figures["load_after"] = os.getloadavg()[0]
    return figures


def _measure_all(
    url: str,
    counts: list[int],
    repeats: int,
    runs: tuple[str, ...],
    cache: Path,
    figures: dict[Any, Any],
) -> None:
    for count in counts:
        bucket = f"scale{count}"
        asyncio.run(fill_store(url, bucket, count))
        reps = repeats if count < 1_000_000 else 1
        samples: dict[str, list[dict[str, float] | None]] = {label: [] for label in runs}
        for _ in range(reps):
            for label, case, cold in RUNS:
                if label not in runs:
                    continue
                if cold:
                    shutil.rmtree(cache, ignore_errors=True)
                samples[label].append(run_case(case, url, bucket, count, cache))
        figures[count] = {label: _medians(samples[label]) for label in runs}
        asyncio.run(_delete_store(url, bucket))


def _medians(runs: list[dict[str, float] | None]) -> dict[str, float] | None:
    """Medians of the runs that finished (None: none did, or the case was not run)."""
    done = [r for r in runs if r is not None]
    if not done:
        return None
    out = {key: statistics.median(r[key] for r in done) for key in done[0]}
    if "rss" in out:
        out["rss"] = max(r["rss"] for r in done)
    return out


async def _delete_store(url: str, bucket: str) -> None:
    client = await natsobj.aio.connect(url)
    try:
        await client.delete_store(bucket)
    finally:
        await client.close()


def scale_section(figures: dict[Any, Any]) -> list[str]:
    """The Markdown section for BENCHMARKS.md."""
    load, load_after = figures.pop("load"), figures.pop("load_after")
    lines = [
        "",
        "## Listing at scale, with the local name index (natsobj vs nats-py `list()`)",
        "",
        "Stores filled with raw pipelined publishes of valid ADR-20 objects (one tiny chunk",
        f"each) in directories of {PER_DIR}. Each run is its own process; times are medians",
        "(one run at 1,000,000), RSS the worst peak growth over the process baseline. *cold*:",
        "the first listing with an empty name index (built from the server's subject state);",
        "*warm*: a fresh process with the index on disk (caught up by sequence). nats-py has",
        "no prefix listing and no `changes()`; it lists everything.",
        f"Load average (1 min) on the machine: {load:.1f} at the start, {load_after:.1f} at the"
        " end.",
        "",
        "| objects | list() cold | list() warm | RSS | iter_list() warm | RSS | nats-py list()"
        " | RSS | nats-py / natsobj cold | nats-py / natsobj warm |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for count, runs in figures.items():
        theirs = runs.get("natspy-list")
        cells = [
            _seconds((runs.get("list-cold") or {}).get("s")),
            *_timed(runs, "list-warm"),
            *_timed(runs, "iter-warm"),
            *_timed(runs, "natspy-list"),
        ]
        ratios = [_ratio(theirs, runs.get(label)) for label in ("list-cold", "list-warm")]
        lines.append(row(f"{count:,}", *cells, *ratios))
    lines += [
        "",
        f"| objects | prefix listing ({PER_DIR} objects) cold | warm | changes() page"
        f" ({CHANGE_PAGE:,} changes, from the middle) | get_info natsobj | get_info nats-py |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for count, runs in figures.items():
        small, theirs = runs.get("ours-small") or {}, runs.get("natspy-small") or {}
        lines.append(
            row(
                f"{count:,}",
                _seconds((runs.get("prefix-cold") or {}).get("s")),
                _seconds((runs.get("prefix-warm") or {}).get("s")),
                _seconds(small.get("changes_page_s")),
                _micros(small.get("get_info_us")),
                _micros(theirs.get("get_info_us")),
            )
        )
    lines += ["", "| target | measured | met |", "|---|---|---|"]
    lines += [row(name, measured, "yes" if met else "**no**") for name, measured, met in
              scale_targets(figures)]  # fmt: skip
    return lines


def scale_targets(figures: dict[int, dict[str, Any]]) -> list[tuple[str, str, bool]]:
    rows = []
    million = figures.get(1_000_000) or {}
    for label in ("prefix-warm", "prefix-cold"):
        if million.get(label):
            seconds = million[label]["s"]
            rows.append((f"500-object prefix listing, 1,000,000 objects < 1 s ({label[7:]})",
                         f"{seconds:.2f} s", seconds < 1))  # fmt: skip
    if million.get("iter-warm"):
        rss = million["iter-warm"]["rss"] / MiB
        rows.append(("iter_list() of 1,000,000: RSS growth <= 100 MiB", f"{rss:.0f} MiB",
                     rss <= 100))  # fmt: skip
    fifty = figures.get(50_000) or {}
    for label in ("list-warm", "list-cold"):
        if fifty.get(label) and fifty.get("natspy-list"):
            speedup = fifty["natspy-list"]["s"] / fifty[label]["s"]
            rows.append((f"list() of 50,000 >= 3x nats-py ({label[5:]})", f"{speedup:.2f}x",
                         speedup >= 3))  # fmt: skip
    return rows


def _ratio(theirs: dict[str, float] | None, ours: dict[str, float] | None) -> str:
    return f"{theirs['s'] / ours['s']:.2f}x" if ours and theirs else "—"


def _timed(runs: dict[str, Any], label: str) -> tuple[str, str]:
    if label not in runs:
        return "not run", "—"
    figures = runs[label]
    if figures is None:
        return f"> {CASE_TIMEOUT} s", "—"
    return _seconds(figures["s"]), f"{figures['rss'] / MiB:.0f} MiB"


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"


def _micros(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} µs"


def row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


MiB = 1024**2
DEFAULT_COUNTS = (10_000, 50_000, 100_000, 1_000_000)


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] in CASES:
        case, url, bucket, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(json.dumps(asyncio.run(CASES[case](url, bucket, count))))
        return
    parser = argparse.ArgumentParser(description="Listing at scale; prints its Markdown section")
    parser.add_argument("--counts", default=",".join(map(str, DEFAULT_COUNTS)))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--runs", default=",".join(r[0] for r in RUNS), help="a subset of the runs (RUNS)"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="natsobj-scale-"))
    try:
        with NatsServerProcess(work / "nats") as server:
            counts = [int(c) for c in args.counts.split(",")]
            runs = tuple(args.runs.split(","))
            figures = scale_figures(server.url, counts, args.repeats, runs)
            print("\n".join(scale_section(figures)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
