"""Put throughput with and without a TTL (issue 23): 1 KiB puts one after another, and a
larger put, each measured both ways in turn in one process against one server, so the two
columns share the machine's state. The target: a TTL costs nothing measurable (the headers are
a few bytes per message; the rules are read with the stream info the store already holds).

``make bench`` runs ``measure``; ``python -m benchmarks.expiry [--repeats N] [--ops N]`` prints
the section on its own.
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
from benchmarks.figures import HIGHER, MiB, Section, add_row, ratio_target, section, timed
from natsobj.local.embedded import NatsServerProcess

TTL = 86400.0  # a day: well past the run, so nothing expires while it is measured
COLUMNS = {"plain": "no TTL", "ttl": "ttl=1d"}
LARGE = 16 * MiB


async def _run(url: str, ttl: float | None, count: int, large: bytes) -> dict[str, float]:
    client = await natsobj.aio.connect(url)
    bucket = f"exp{os.getpid()}{'t' if ttl else 'p'}"
    store = await client.create_store(bucket)
    try:
        payload = os.urandom(1024)
        start = time.perf_counter()
        for i in range(count):
            await store.put(f"o{i}", payload, ttl=ttl)
        small = count / (time.perf_counter() - start)
        start = time.perf_counter()
        await store.put("large", large, ttl=ttl)
        return {"put_ops": small, "large_mib_s": len(large) / MiB / (time.perf_counter() - start)}
    finally:
        await client.delete_store(bucket)
        await client.close()


def measure(url: str, repeats: int, count: int, large: int = LARGE) -> list[Section]:
    """Both columns ``repeats`` times, taking turns."""
    figures = section(
        "expiry",
        "Puts with and without a TTL",
        f"{count} puts of 1 KiB one after another, then one {large // MiB} MiB put, in a fresh"
        " bucket; *ttl=1d* stamps every chunk and record with Nats-TTL (docs/lifecycle.md).",
        COLUMNS,
        [("ttl", "plain")],
    )
    data = os.urandom(large)
    runs: dict[str, list[dict[str, float]]] = {column: [] for column in COLUMNS}
    with timed(figures):
        for _ in range(repeats):
            runs["plain"].append(asyncio.run(_run(url, None, count, data)))
            runs["ttl"].append(asyncio.run(_run(url, TTL, count, data)))
    for label, key, unit in (
        ("1 KiB put", "put_ops", "operations/s"),
        (f"{large // MiB} MiB put", "large_mib_s", "MiB/s"),
    ):
        samples = {column: [run[key] for run in runs[column]] for column in COLUMNS}
        add_row(figures, label, unit, HIGHER, samples)
        ratio_target(figures, f"{label} with a TTL >= 0.95x without", label, "ttl", "plain", 0.95)
    return [figures]


def main() -> None:
    from benchmarks.report import render_section

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ops", type=int, default=500, help="1 KiB puts per run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="natsobj-expiry-"))
    try:
        with NatsServerProcess(work / "nats") as server:
            sections = measure(server.url, args.repeats, args.ops)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(render_section(each) for each in sections))


if __name__ == "__main__":
    main()
