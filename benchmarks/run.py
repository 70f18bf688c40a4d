"""``make bench``: every figure in one run on one machine, written to BENCHMARKS.md.

Measuring and rendering are separate: this module runs every benchmark module and collects
their sections into one results dict (``benchmarks.figures``), keeps it in
``benchmarks/results/`` and renders BENCHMARKS.md from it and the previous run of the same mode
(``benchmarks.report``). Each case runs in its own process (so peak RSS is its own), cases
take turns within every repeat (so machine noise spreads evenly), and the report quotes
min/median/max and ratios of medians.

``python -m benchmarks.run`` is the full mode; ``--quick`` is the same set of comparisons with
smaller objects and stores, for development (docs/install.md, "Benchmarks", says how long
each takes).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import (
    archive,
    cluster,
    core,
    expiry,
    gateway,
    gateway_mixed,
    get_vs_push,
    ranges,
    report,
    scale,
    small_ops,
    tiering,
    versioning,
)
from benchmarks.before import Checkout
from benchmarks.figures import GiB, KiB, MiB, Section, machine
from natsobj.local.embedded import NatsServerProcess

ROOT = Path(__file__).resolve().parent.parent
GROUPS = (
    "transfer",
    "small-ops",
    "expiry",
    "versioning",
    "get-vs-push",
    "listing",
    "ranges",
    "gateway",
    "gateway-mixed",
    "archive",
    "tiering",
    "cluster",
)
ATOMIC_SIZES = {"1 KiB": KiB, "64 KiB": 64 * KiB, "1 MiB": MiB, "16 MiB": 16 * MiB}
OPT_IN = ("spark", "streaming")


@dataclass(frozen=True)
class Plan:
    """What one mode measures: sizes, counts and repeats of every module."""

    mode: str
    sizes: dict[str, int]
    repeats: int = 3
    ops: int = 500
    push_size: int = 256 * MiB
    scale_counts: list[int] = field(default_factory=lambda: [10_000, 50_000])
    archive_sizes: tuple[int, int, int] = (256 * MiB, GiB, 10_000)  # large, huge, small count
    tiering_size: int = 256 * MiB
    cluster_size: int = 64 * MiB
    spark_rows: int = 10_000_000
    streaming: tuple[int, int, int, float] = (500, 64 * KiB, 200, 40.0)
    # issue 22: atomic-put size classes; the Parquet file's row groups and rows per group
    atomic_sizes: dict[str, int] = field(
        default_factory=lambda: {**ATOMIC_SIZES, "256 MiB": 256 * MiB}
    )
    parquet: tuple[int, int] = (8, 500_000)
    # issue 32: the gateway's transfer file, its large file, and requests per concurrent client
    gateway: tuple[int, int, int] = (256 * MiB, GiB, 10)
    # issue 41: requests per client of the mixed small-object workload
    mixed_requests: int = 200
    groups: tuple[str, ...] = GROUPS + OPT_IN
    before: str | None = None  # a git ref: natsobj at that commit measured beside today's


FULL = Plan(
    "full",
    sizes={"1 KiB": KiB, "1 MiB": MiB, "64 MiB": 64 * MiB, "256 MiB": 256 * MiB, "1 GiB": GiB},
)
QUICK = Plan(
    "quick",
    sizes={"1 KiB": KiB, "1 MiB": MiB, "64 MiB": 64 * MiB},
    ops=200,
    push_size=64 * MiB,
    scale_counts=[10_000],
    archive_sizes=(32 * MiB, 64 * MiB, 1_000),
    tiering_size=32 * MiB,
    cluster_size=16 * MiB,
    spark_rows=1_000_000,
    streaming=(100, 64 * KiB, 50, 15.0),
    atomic_sizes=ATOMIC_SIZES,
    parquet=(8, 50_000),
    gateway=(64 * MiB, 256 * MiB, 4),
    mixed_requests=50,
    groups=GROUPS,
)


def plan_of(args: argparse.Namespace) -> Plan:
    base = QUICK if args.quick else FULL
    groups = [g for g in base.groups if g not in args.skip]
    if args.spark:
        groups += [g for g in OPT_IN if g not in groups]
    if args.spark is False:
        groups = [g for g in groups if g not in OPT_IN]
    changes: dict[str, Any] = {"groups": tuple(groups)}
    if args.repeats:
        changes["repeats"] = args.repeats
    if args.before:
        changes["before"] = args.before
    if args.scale:
        changes["scale_counts"] = [int(count) for count in args.scale.split(",")]
    return Plan(**{**asdict(base), **changes})


# -- measuring ----------------------------------------------------------------------------------


def measure(plan: Plan) -> dict[str, Any]:
    """Every group of ``plan`` in turn; a group that fails is recorded as failed, so one
    broken module does not cost the whole run's figures."""
    started, clock = datetime.now(UTC), time.monotonic()
    uses = set(plan.groups)
    packages = [
        *(
            ("pyarrow", "obstore", "moto")
            if uses & {"archive", "tiering", "spark", "ranges", "gateway"}
            else ()
        ),
        *(("s3fs", "fsspec") if "ranges" in uses else ()),
        *(("aiohttp", "psutil") if "gateway" in uses else ()),
        *(("pyspark",) if uses & set(OPT_IN) else ()),
    ]
    results: dict[str, Any] = {
        "schema": 1,
        "mode": plan.mode,
        "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "plan": asdict(plan),
        "machine": {**machine(packages), "natsobj commit": _commit()},
        "skipped": [g for g in GROUPS + OPT_IN if g not in plan.groups],
        "load_start": [round(load, 2) for load in os.getloadavg()],
        "sections": [],
    }
    work = Path(tempfile.mkdtemp(prefix="natsobj-bench-"))
    before = Checkout(plan.before) if plan.before else None
    if before:
        results["machine"]["natsobj before"] = before.commit
    try:
        with NatsServerProcess(work / "nats") as server:
            for group, run in _on_one_server(plan, server.url, work, before):
                results["sections"] += _guarded(plan, group, run)
        for group, run in _on_their_own(plan):
            results["sections"] += _guarded(plan, group, run)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if before:
            before.remove()
    results["load_end"] = [round(load, 2) for load in os.getloadavg()]
    results["seconds"] = round(time.monotonic() - clock, 1)
    return results


def _commit() -> str:
    """The checkout measured, and whether it had uncommitted changes to tracked files."""
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode:
        return "unknown (not a git checkout)"
    dirty = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout.strip()
    return head.stdout.strip() + (" with uncommitted changes" if dirty else "")


Runner = Callable[[], list[Section]]


def _on_one_server(
    plan: Plan, url: str, work: Path, before: Checkout | None
) -> list[tuple[str, Runner]]:
    """The groups that share the run's nats-server, in order; ``before`` adds natsobj at an
    earlier commit to the transfer, small-object and listing figures."""
    return [
        (
            "transfer",
            lambda: core.measure_transfer(url, work, plan.sizes, plan.repeats, before=before),
        ),
        ("small-ops", lambda: small_ops.measure(url, work, plan.repeats, plan.ops, before=before)),
        ("expiry", lambda: expiry.measure(url, plan.repeats, plan.ops)),
        ("versioning", lambda: versioning.measure(url, plan.repeats, plan.ops)),
        ("get-vs-push", lambda: get_vs_push.measure(url, work, plan.repeats, plan.push_size)),
        ("listing", lambda: scale.measure(url, plan.scale_counts, plan.repeats, before=before)),
        (
            "ranges",
            lambda: ranges.measure(
                url, work, plan.repeats, plan.atomic_sizes, plan.parquet, before=before
            ),
        ),
        ("gateway", lambda: _gateway(plan, url, work, before)),
        ("gateway-mixed", lambda: _gateway_mixed(plan, url, work)),
    ]


def _on_their_own(plan: Plan) -> list[tuple[str, Runner]]:
    """The groups that start their own servers (S3, a cluster, Spark), in order."""
    large, huge, small = plan.archive_sizes
    return [
        ("archive", lambda: archive.measure(large, huge, small, plan.repeats)),
        ("tiering", lambda: tiering.measure(plan.tiering_size, plan.repeats)),
        ("cluster", lambda: _cluster(plan)),
        ("spark", lambda: _spark(plan)),
        ("streaming", lambda: _streaming(plan)),
    ]


def _gateway(plan: Plan, url: str, work: Path, before: Checkout | None) -> list[Section]:
    transfer, large, requests = plan.gateway
    sizes = gateway.Sizes(transfer, large, plan.parquet, requests=requests)
    return gateway.measure(url, work, plan.repeats, sizes, before=before)


def _gateway_mixed(plan: Plan, url: str, work: Path) -> list[Section]:
    return gateway_mixed.measure(url, work, plan.repeats, plan.mixed_requests)


def _cluster(plan: Plan) -> list[Section]:
    return asyncio.run(cluster.measure(plan.repeats, plan.ops, plan.cluster_size))


def _spark(plan: Plan) -> list[Section]:
    from benchmarks import bench_spark  # only where Spark is measured

    return bench_spark.measure(plan.spark_rows, plan.repeats)


def _streaming(plan: Plan) -> list[Section]:
    from benchmarks import streaming  # imports pyarrow and the Spark source

    return streaming.measure(*plan.streaming)


def _guarded(plan: Plan, group: str, run: Runner) -> list[Section]:
    if group not in plan.groups:
        return []
    print(f"benchmarks: {group} ...", file=sys.stderr, flush=True)
    try:
        return run()
    except Exception as error:  # recorded in the report, and the run exits 1
        detail = str(error)
        if isinstance(error, subprocess.CalledProcessError) and error.stderr:
            detail += f": {str(error.stderr).strip().splitlines()[-1]}"
        failed = {"id": group, "title": group, "note": "", "columns": {}, "ratios": []}
        return [{**failed, "rows": [], "error": f"{type(error).__name__}: {detail}"}]


# -- the command --------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the benchmarks and write BENCHMARKS.md")
    parser.add_argument(
        "--quick", action="store_true", help="smaller objects and stores, for development"
    )
    parser.add_argument("--repeats", type=int, help="repeats of every case (default 3)")
    parser.add_argument(
        "--spark",
        action=argparse.BooleanOptionalAction,
        help="Spark and Structured Streaming (default: on in the full mode, off with --quick)",
    )
    parser.add_argument(
        "--scale",
        help="store sizes of the listing benchmark, e.g. 10000,50000,1000000 (the million"
        " takes several minutes)",
    )
    parser.add_argument(
        "--skip", default="", type=lambda text: text.split(","), help=f"any of {GROUPS}"
    )
    parser.add_argument(
        "--before",
        metavar="REF",
        help="also measure natsobj at this git commit, in the same run (transfer, small-ops,"
        " listing, Parquet ranged reads, the gateway)",
    )
    parser.add_argument("--output", default=str(ROOT / "BENCHMARKS.md"))
    parser.add_argument("--results", default=str(report.RESULTS), help="the history directory")
    args = parser.parse_args(argv)
    results = measure(plan_of(args))
    directory = Path(args.results)
    saved = report.save(results, directory)
    markdown = report.render(results, report.previous_of(results, directory))
    Path(args.output).write_text(markdown)
    print(f"benchmarks: wrote {args.output} and {saved}", file=sys.stderr)
    return 1 if any("error" in each for each in results["sections"]) else 0


if __name__ == "__main__":
    sys.exit(main())
