"""Issue 13, item 3: 1 KiB put, get and get_info, sequential operations per second, natsobj
against nats-py's ObjectStore.

The cases are ``benchmarks.core``'s ``natspy-ops`` and ``ours-ops`` (each a fresh bucket, so
every put creates a new name), alternating in one run against one server, each in its own
process. ``make bench`` measures the same cases for its "Small objects" table; this module
re-measures them on their own, with the spread of every round.

``python -m benchmarks.small_ops [--repeats N] [--ops N]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from natsobj.embedded import NatsServerProcess

CASES = ("natspy-ops", "ours-ops")
OPS = (("put", "put_ops"), ("get", "get_ops"), ("get_info", "get_info_ops"))


def measure(url: str, work: Path, repeats: int, count: int) -> dict[str, Any]:
    from benchmarks.run import run_case

    samples: dict[str, list[dict[str, float]]] = {case: [] for case in CASES}
    load_start = os.getloadavg()[0]
    for _ in range(repeats):
        for case in CASES:
            samples[case].append(run_case(case, url, count, work / "unused"))
    return {
        "samples": samples,
        "count": count,
        "load": (load_start, os.getloadavg()[0]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def section(figures: dict[str, Any]) -> list[str]:
    samples = figures["samples"]
    theirs, ours = samples["natspy-ops"], samples["ours-ops"]
    load = figures["load"]
    lines = [
        f"## Small objects (re-measured {figures['date']}, 1 KiB, sequential operations per"
        " second)",
        "",
        f"`python -m benchmarks.small_ops`: {len(ours)} rounds of {figures['count']} operations"
        " of each kind, nats-py and natsobj"
        " back to back in each round, each in its own process; medians. Every put creates a"
        " new name (a fresh bucket per run). 1-minute load average"
        f" {load[0]:.1f} at the start, {load[1]:.1f} at the end (shared 2-core machine).",
        "",
        "| operation | nats-py ObjectStore | natsobj | natsobj / nats-py |"
        " natsobj / nats-py, per round |",
        "|---|---:|---:|---:|---|",
    ]
    for label, key in OPS:
        their_median = statistics.median(s[key] for s in theirs)
        our_median = statistics.median(s[key] for s in ours)
        rounds = ", ".join(f"{o[key] / t[key]:.2f}" for t, o in zip(theirs, ours, strict=True))
        lines.append(
            f"| {label} | {their_median:.0f} | {our_median:.0f}"
            f" | {our_median / their_median:.2f}x | {rounds} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--ops", type=int, default=1000, help="operations of each kind per run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="natsobj-small-ops-"))
    try:
        with NatsServerProcess(work / "nats") as server:
            figures = measure(server.url, work, args.repeats, args.ops)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(section(figures)))


if __name__ == "__main__":
    main()
