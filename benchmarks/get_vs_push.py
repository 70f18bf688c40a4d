"""Issue 13, item 2: a 256 MiB ``get_file`` (and put) against the raw ordered push consumer.

The baseline is ``benchmarks.core``'s ``raw-push`` case: nats-py ``publish_async`` to put, and
``js.subscribe(..., ordered_consumer=True)`` with a callback writing each message to a file to
get. natsobj's case is ``ours`` (``put`` of the file, ``get_file``). The cases alternate in
one run against one server; the section quotes medians and the ratio of medians (speed, so
above 1.0 means natsobj is faster).

``python -m benchmarks.get_vs_push [--repeats N]`` runs only this section on its own server.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

from natsobj.embedded import NatsServerProcess

SIZE = 256 * 1024 * 1024
CASES = ("raw-push", "ours")


def measure(url: str, work: Path, repeats: int) -> dict[str, Any]:
    from benchmarks.run import make_file, run_case  # run.py imports this module

    path = work / "get-vs-push.bin"
    make_file(path, SIZE)
    samples: dict[str, list[dict[str, float]]] = {case: [] for case in CASES}
    for _ in range(repeats):
        for case in CASES:
            samples[case].append(run_case(case, url, SIZE, path))
    path.unlink()
    return {"samples": samples, "load": os.getloadavg()[0]}


def section(figures: dict[str, Any]) -> list[str]:
    samples = figures["samples"]

    def median(case: str, key: str) -> float:
        return statistics.median(s[key] for s in samples[case])

    lines = [
        "## 256 MiB get_file and put against the raw ordered push consumer",
        "",
        f"{len(samples['ours'])} alternating runs of each case in one run, medians in seconds;"
        " *raw push* is nats-py's ordered push consumer with a callback writing each 128 KiB"
        " message to a file (get) and `publish_async` (put). natsobj reads with no-wait pull"
        " requests of `read_window_bytes` and verifies SHA-256 as it writes; it hashes and"
        " writes on a worker thread only with 3+ CPUs (`natsobj/aio/offload.py`), inline here."
        f" Ratios are speed, natsobj / raw push. 1-minute load average at the end:"
        f" {figures['load']:.1f}"
        " (a shared 2-core machine: single runs vary by 2x or more, so only the medians mean"
        " anything).",
        "",
        "| op | raw push (s) | natsobj (s) | natsobj / raw push | all natsobj runs (s) |",
        "|---|---:|---:|---:|---|",
    ]
    for op, key in (("get_file", "get_s"), ("put", "put_s")):
        raw, ours = median("raw-push", key), median("ours", key)
        runs = ", ".join(f"{s[key]:.2f}" for s in samples["ours"])
        lines.append(f"| {op} | {raw:.2f} | {ours:.2f} | {raw / ours:.2f}x | {runs} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="natsobj-get-vs-push-"))
    try:
        with NatsServerProcess(work / "nats") as server:
            figures = measure(server.url, work, args.repeats)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(section(figures)))


if __name__ == "__main__":
    main()
