"""``make bench``: every figure in one run against one server, written to BENCHMARKS.md.

Each (implementation, size) case runs in its own process (see ``benchmarks.core``) so peak RSS
is its own; cases are interleaved across repeats so machine noise spreads evenly, and the
report quotes medians and ratios of medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import benchmarks.streaming
from benchmarks import archive, bench_spark, get_vs_push, tiering
from benchmarks.scale import scale_figures, scale_section
from natsobj.embedded import NatsServerProcess, server_binary

ROOT = Path(__file__).resolve().parent.parent
KiB, MiB, GiB = 1024, 1024**2, 1024**3
SIZES = {"1 KiB": KiB, "1 MiB": MiB, "64 MiB": 64 * MiB, "256 MiB": 256 * MiB, "1 GiB": GiB}
IMPLS = ("raw", "natspy", "ours")
LABELS = {"raw": "raw JetStream", "natspy": "nats-py ObjectStore", "ours": "natsobj"}


def run_case(case: str, url: str, size: int, path: Path) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.core", case, url, str(size), str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def make_file(path: Path, size: int) -> None:
    with path.open("wb") as handle:
        remaining = size
        while remaining:
            step = min(remaining, 64 * MiB)
            handle.write(os.urandom(step))
            remaining -= step


def transfer_figures(url: str, work: Path, sizes: dict[str, int], repeats: int) -> dict[str, Any]:
    samples: dict[str, dict[str, list[dict[str, float]]]] = defaultdict(lambda: defaultdict(list))
    for label, size in sizes.items():
        path = work / f"{size}.bin"
        make_file(path, size)
        reps = repeats if size >= 64 * MiB else repeats + 2
        for _ in range(reps):
            for impl in IMPLS:
                samples[label][impl].append(run_case(impl, url, size, path))
        path.unlink()
    figures: dict[str, Any] = {}
    for label, by_impl in samples.items():
        size = sizes[label]
        figures[label] = {
            impl: {
                "put_mib_s": size / MiB / statistics.median(s["put_s"] for s in runs),
                "get_mib_s": size / MiB / statistics.median(s["get_s"] for s in runs),
                "rss_mib": max(s["rss_growth"] for s in runs) / MiB,
                "runs": len(runs),
            }
            for impl, runs in by_impl.items()
        }
    return figures


def ops_figures(url: str, work: Path, repeats: int, count: int) -> dict[str, dict[str, float]]:
    samples: dict[str, list[dict[str, float]]] = defaultdict(list)
    for _ in range(repeats):
        for case in ("natspy-ops", "ours-ops"):
            samples[case].append(run_case(case, url, count, work / "unused"))
    return {
        case: {op: statistics.median(s[op] for s in runs) for op in runs[0]}
        for case, runs in samples.items()
    }


def spark_figures(rows: int) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_spark", "--rows", str(rows)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(result.stdout[result.stdout.index("{") :])


def streaming_figures() -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.streaming"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return json.loads(result.stdout[result.stdout.index("{") :])


def machine() -> dict[str, str]:
    cpu = "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GiB
    server = subprocess.run([server_binary(), "--version"], capture_output=True, text=True).stdout
    versions = {name: _version(name) for name in ("natsobj", "nats-py", "pyspark", "pyarrow")}
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.system()} {platform.machine()}, {cpu}, {os.cpu_count()} cores, "
        f"{memory:.0f} GiB RAM (shared, noisy)",
        "python": platform.python_version(),
        "nats-server": server.strip(),
        **versions,
    }


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x"


def row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def render(
    info: dict[str, str],
    transfer: dict[str, Any],
    ops: dict[str, Any],
    spark: dict[str, Any] | None,
    streaming: dict[str, Any] | None = None,
) -> str:
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (`python -m benchmarks.run`); do not edit by hand.",
        "",
    ]
    lines += [f"- **{key}**: {value}" for key, value in info.items()]
    lines += [
        "",
        "All three clients talk to the same local `nats-server` (file storage) in one run. Each",
        "case runs in its own process, cases are interleaved across repeats, and figures are",
        "medians. *raw JetStream* is nats-py's `publish_async` of 128 KiB messages and an ordered",
        "consumer read, with the same file I/O: the practical limit for a Python client here.",
        "nats-py's get uses its `writeinto` path. RSS is the worst peak growth over the",
        "process's baseline across runs.",
        "",
        "## Throughput (MiB/s, median) and memory",
        "",
        row("size", "op", *(LABELS[i] for i in IMPLS), "natsobj / raw", "natsobj / nats-py"),
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for label, by_impl in transfer.items():
        for op in ("put", "get"):
            key = f"{op}_mib_s"
            raw, npy, ours = (by_impl[i][key] for i in IMPLS)
            cells = (f"{raw:.1f}", f"{npy:.1f}", f"{ours:.1f}", ratio(ours, raw), ratio(ours, npy))
            lines.append(row(label, op, *cells))
    lines += ["", "| size | peak RSS growth: raw | nats-py | natsobj |", "|---|---:|---:|---:|"]
    for label, by_impl in transfer.items():
        raw, npy, ours = (by_impl[i]["rss_mib"] for i in IMPLS)
        lines.append(f"| {label} | {raw:.1f} MiB | {npy:.1f} MiB | {ours:.1f} MiB |")
    theirs, mine = ops["natspy-ops"], ops["ours-ops"]
    lines += [
        "",
        "## Small objects (1 KiB, sequential operations per second, median)",
        "",
        "| operation | nats-py ObjectStore | natsobj | natsobj / nats-py |",
        "|---|---:|---:|---:|",
    ]
    for op in ("put_ops", "get_ops", "get_info_ops"):
        lines.append(
            f"| {op[:-4]} | {theirs[op]:.0f} | {mine[op]:.0f} | {ratio(mine[op], theirs[op])} |"
        )
    lines += ["", "## Targets", "", "| target | measured | met |", "|---|---|---|"]
    lines += [target_row(*row) for row in targets(transfer, ops)]
    if spark:
        lines += spark_section(spark) + bench_spark.markdown(spark)
    if streaming:
        lines += benchmarks.streaming.section(streaming)
    return "\n".join(lines) + "\n"


def targets(transfer: dict[str, Any], ops: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, what was measured, whether it was met) for every target the issues set."""
    rows: list[tuple[str, str, bool]] = []

    def against(name: str, measured: float, threshold: float) -> None:
        rows.append((name, f"{measured:.2f}x", measured >= threshold))

    if "256 MiB" in transfer:
        t = transfer["256 MiB"]
        for op in ("put", "get"):
            key = f"{op}_mib_s"
            against(f"256 MiB {op} >= 0.9x raw", t["ours"][key] / t["raw"][key], 0.9)
        against("256 MiB put >= 2x nats-py", t["ours"]["put_mib_s"] / t["natspy"]["put_mib_s"], 2)
        against(
            "256 MiB get >= 5x nats-py writeinto",
            t["ours"]["get_mib_s"] / t["natspy"]["get_mib_s"],
            5,
        )
    if "1 GiB" in transfer:
        rss = transfer["1 GiB"]["ours"]["rss_mib"]
        rows.append(
            ("1 GiB file -> store -> file: RSS growth < 64 MiB", f"{rss:.1f} MiB", rss < 64)
        )
    for op in ("put_ops", "get_ops", "get_info_ops"):
        ratio_ = ops["ours-ops"][op] / ops["natspy-ops"][op]
        against(f"1 KiB {op[:-4]} >= 1.5x nats-py ops/s", ratio_, 1.5)
    return rows


def target_row(name: str, measured: str, met: bool) -> str:
    return row(name, measured, "yes" if met else "**no**")


def seconds(figures: dict[str, Any], key: str) -> str:
    return f"{figures[key]:.1f} s"


def spark_section(spark: dict[str, Any]) -> list[str]:
    return [
        "",
        f'## Spark: {spark["rows"]:,} rows through `format("natsobj")` vs local Parquet',
        "",
        "| | natsobj | local Parquet | ratio (lower is better) |",
        "|---|---:|---:|---:|",
        row(
            "write (2 cores)",
            seconds(spark, "write_natsobj_s"),
            seconds(spark, "write_parquet_s"),
            f"{spark['write_ratio']:.2f}x",
        ),
        row(
            "read (2 cores)",
            seconds(spark, "read_natsobj_s"),
            seconds(spark, "read_parquet_s"),
            f"{spark['read_ratio']:.2f}x",
        ),
        row(
            "read (1 core)",
            seconds(spark, "read_natsobj_1core_s"),
            seconds(spark, "read_parquet_1core_s"),
            "",
        ),
        "",
        f"Read speed-up from 1 to 2 executor cores: {spark['read_speedup_2_vs_1_core']:.2f}x. "
        "Within 1.5x of local Parquet for both write and read: "
        f"{'yes' if spark['target_1_5x_met'] else '**no**'}. A Python data source that only "
        f"generates the same rows takes {seconds(spark, 'read_python_source_floor_s')} "
        "(the floor for any Python data source here).",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the benchmarks and write BENCHMARKS.md")
    parser.add_argument(
        "--quick", action="store_true", help="sizes up to 64 MiB, fewer repeats, small Spark run"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--ops", type=int, default=500, help="operations per small-object run")
    parser.add_argument("--spark-rows", type=int, default=10_000_000)
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument(
        "--scale",
        default="",
        help="listing at scale: comma-separated store sizes, e.g. 10000,50000,100000,1000000"
        " (the million takes several minutes)",
    )
    parser.add_argument("--no-archive", action="store_true", help="skip the S3 archive figures")
    parser.add_argument(
        "--no-tiering", action="store_true", help="skip the offload read-through figures"
    )
    parser.add_argument("--no-cluster", action="store_true", help="skip the 3-node cluster run")
    parser.add_argument(
        "--no-get-vs-push",
        action="store_true",
        help="skip get_file/put against the raw push consumer",
    )
    parser.add_argument("--no-streaming", action="store_true")
    parser.add_argument("--output", default=str(ROOT / "BENCHMARKS.md"))
    args = parser.parse_args()
    sizes = dict(SIZES)
    if args.quick:
        sizes = {k: v for k, v in SIZES.items() if v <= 64 * MiB}
        args.repeats, args.spark_rows = 1, 1_000_000
    work = Path(tempfile.mkdtemp(prefix="natsobj-bench-"))
    server = NatsServerProcess(work / "nats")
    server.start()
    try:
        transfer = transfer_figures(server.url, work, sizes, args.repeats)
        ops = ops_figures(server.url, work, args.repeats, args.ops)
        counts = [int(c) for c in args.scale.split(",") if c]
        scale = scale_figures(server.url, counts, args.repeats) if counts else None
        push = None if args.no_get_vs_push else get_vs_push.measure(server.url, work, args.repeats)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    spark = None if args.no_spark else spark_figures(args.spark_rows)
    streaming = None if args.no_streaming else streaming_figures()
    report = render(machine(), transfer, ops, spark, streaming)
    if scale:
        report += "\n".join(scale_section(scale)) + "\n"
    if not args.no_archive:
        report += "\n".join(archive.section(args.quick, args.repeats)) + "\n"
    if not args.no_tiering:
        report += "\n".join(tiering.section(args.quick, args.repeats)) + "\n"
    if not args.no_cluster:
        from benchmarks import cluster

        figures = asyncio.run(cluster.measure(args.repeats, args.ops))
        report += "\n".join(cluster.section(figures)) + "\n"
    if push is not None:
        report += "\n" + "\n".join(get_vs_push.section(push)) + "\n"
    Path(args.output).write_text(report)
    print(report)


if __name__ == "__main__":
    main()
