"""What keeping versions costs (issue 43): 1 KiB overwrites and reads of the current version
in an unversioned and a versioned bucket, taking turns in one process against one server, and
the listing of a versioned bucket's versions. The targets: an overwrite that keeps the version
it replaces (one create-only record instead of the purge) at least 0.95x one that purges it, a
read of the current version unchanged, and 10,000 versions of 1,000 names listed in under 2 s.

``make bench`` runs ``measure``; ``python -m benchmarks.versioning [--repeats N] [--ops N]``
prints the section on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

import natsobj.aio
from benchmarks.figures import (
    HIGHER,
    LOWER,
    Section,
    add_row,
    ratio_target,
    section,
    timed,
    value_target,
)
from natsobj.local.embedded import NatsServerProcess

COLUMNS = {"unversioned": "unversioned", "versioned": "versioning Enabled"}
NAMES = 20  # the overwrites cycle over these names, so every put replaces a version
LISTED_NAMES, LISTED_VERSIONS = 1_000, 10


async def _run(url: str, versioned: bool, count: int) -> dict[str, float]:
    client = await natsobj.aio.connect(url)
    bucket = f"ver{os.getpid()}{'v' if versioned else 'u'}"
    store = await client.create_store(bucket)
    try:
        if versioned:
            await store.set_versioning("Enabled")
        payload = os.urandom(1024)
        for i in range(NAMES):
            await store.put(f"o{i}", payload)
        start = time.perf_counter()
        for i in range(count):
            await store.put(f"o{i % NAMES}", payload)
        puts = count / (time.perf_counter() - start)
        start = time.perf_counter()
        for i in range(count):
            async with store.get(f"o{i % NAMES}") as reader:
                await reader.read()
        gets = count / (time.perf_counter() - start)
        return {"put_ops": puts, "get_ops": gets}
    finally:
        await client.delete_store(bucket)
        await client.close()


async def _listing(url: str) -> float:
    """Seconds to list every version of a bucket of ``LISTED_NAMES`` names with
    ``LISTED_VERSIONS`` versions each."""
    client = await natsobj.aio.connect(url)
    bucket = f"verlist{os.getpid()}"
    store = await client.create_store(bucket)
    try:
        await store.set_versioning("Enabled")
        for version in range(LISTED_VERSIONS):
            await asyncio.gather(
                *(store.put(f"n{i:04d}", b"v%d" % version) for i in range(LISTED_NAMES))
            )
        start = time.perf_counter()
        listed = await store.versions()
        seconds = time.perf_counter() - start
        assert len(listed) == LISTED_NAMES * LISTED_VERSIONS, len(listed)
        return seconds
    finally:
        await client.delete_store(bucket)
        await client.close()


def measure(url: str, repeats: int, count: int) -> list[Section]:
    """Both columns ``repeats`` times, taking turns; the listing ``repeats`` times."""
    figures = section(
        "versioning",
        "Versioned buckets",
        f"{count} overwrites of 1 KiB over {NAMES} names one after another, then {count} reads"
        " of the current versions, in a fresh bucket; *versioning Enabled* keeps every version"
        f" an overwrite replaces (docs/versioning.md). The listing: {LISTED_NAMES:,} names of"
        f" {LISTED_VERSIONS} versions each, every version listed by `versions()`.",
        COLUMNS,
        [("versioned", "unversioned")],
    )
    runs: dict[str, list[dict[str, float]]] = {column: [] for column in COLUMNS}
    listings: list[float] = []
    with timed(figures):
        for _ in range(repeats):
            runs["unversioned"].append(asyncio.run(_run(url, False, count)))
            runs["versioned"].append(asyncio.run(_run(url, True, count)))
            listings.append(asyncio.run(_listing(url)))
    for label, key in (("1 KiB overwrite", "put_ops"), ("1 KiB get", "get_ops")):
        samples = {column: [run[key] for run in runs[column]] for column in COLUMNS}
        add_row(figures, label, "operations/s", HIGHER, samples)
    ratio_target(
        figures,
        "an overwrite keeping a version >= 0.95x",
        "1 KiB overwrite",
        "versioned",
        "unversioned",
        0.95,
    )
    ratio_target(
        figures,
        "a get of the current version >= 0.95x",
        "1 KiB get",
        "versioned",
        "unversioned",
        0.95,
    )
    listing_label = f"{LISTED_NAMES * LISTED_VERSIONS:,} versions listed"
    add_row(figures, listing_label, "s", LOWER, {"versioned": listings})
    value_target(figures, f"{listing_label} in under 2 s", listing_label, "versioned", 2.0)
    return [figures]


def main() -> None:
    from benchmarks.report import render_section

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ops", type=int, default=500, help="1 KiB overwrites per run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="natsobj-versioning-"))
    try:
        with NatsServerProcess(work / "nats") as server:
            sections = measure(server.url, args.repeats, args.ops)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(render_section(each) for each in sections))


if __name__ == "__main__":
    main()
