"""Spark benchmark: a DataFrame written and read through format("natsobj") against
df.write.parquet / spark.read.parquet on local disk, and read scaling from 1 to 2 cores.

Run: python -m benchmarks.bench_spark [--rows N] [--repeat R]. Prints one JSON object, every
round's time of every contender; ``measure`` runs it in a child process (Spark's JVM and
workers are its own) and turns it into the report's sections.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.figures import LOWER, Section, add_row, ratio_target, section, timed

DEFAULT_ROWS = 10_000_000
BUCKET = "bench_spark"
PREFIX = "bench/events"


def _session(cores: int):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(f"natsobj-bench-{cores}")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "6g")
        .config("spark.sql.shuffle.partitions", str(cores))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def _frame(spark, rows: int):
    """A few numeric and string columns, cached so both sinks time only the write."""
    df = spark.range(0, rows, numPartitions=2).selectExpr(
        "id",
        "cast(id % 1000 AS int) AS store_id",
        "id * 0.25 AS amount",
        "cast(id % 97 AS double) / 7 AS ratio",
        "concat('customer-', cast(id % 100000 AS string)) AS customer",
        "CASE WHEN id % 3 = 0 THEN 'north' WHEN id % 3 = 1 THEN 'south' ELSE 'west' END AS region",
    )
    df = df.cache()
    df.count()
    return df


def _warm_up(spark, options: dict[str, str], local: str) -> None:
    """Start the Python workers and JIT the code paths once, outside the timings."""
    small = spark.range(1000, numPartitions=2)
    small.write.format("natsobj").mode("overwrite").options(**options).save("warm")
    small.write.mode("overwrite").parquet(local)
    _consume(spark.read.format("natsobj").options(**options).load("warm"))
    _consume(spark.read.parquet(local))


def _python_source_floor(spark, schema, rows: int, parts: int):
    """A Python data source yielding ready-made Arrow batches of the same columns, values and
    Spark types as the dataset natsobj reads (``schema`` is the written frame's), in as many
    partitions as natsobj has parts, so its read time is what any Python source pays to hand
    those Arrow batches from its workers to the JVM. The batch is built with vectorized Arrow
    kernels (milliseconds), so building it adds next to nothing to the floor.

    The types matter: ``id * 0.25`` is a decimal(23,2) in Spark, which the JVM converts row by
    row through BigDecimal, where a double is copied: a floor yielding a double there measured a
    cheaper conversion than natsobj has to ask for (docs/performance.md, "Spark")."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from natsobj.spark.arrowio import spark_arrow_schema

    class FloorReader(DataSourceReader):
        def partitions(self):
            return [InputPartition(rows // parts) for _ in range(parts)]

        def read(self, partition):
            import numpy as np
            import pyarrow as pa
            import pyarrow.compute as pc

            size = 65_536
            ids = np.arange(size, dtype=np.int64)
            suffix = pc.cast(pa.array(ids % 100_000), pa.string())
            batch = pa.record_batch(
                {
                    "id": pa.array(ids),
                    "store_id": pa.array((ids % 1000).astype(np.int32)),
                    "amount": pa.array(ids * 0.25),
                    "ratio": pa.array((ids % 97) / 7),
                    "customer": pc.binary_join_element_wise("customer-", suffix, ""),
                    "region": pc.take(pa.array(["north", "south", "west"]), pa.array(ids % 3)),
                }
            ).cast(spark_arrow_schema(schema))
            for start in range(0, partition.value, size):
                yield batch.slice(0, min(size, partition.value - start))

    class FloorSource(DataSource):
        @classmethod
        def name(cls):
            return "natsobj_bench_floor"

        def schema(self):
            return schema

        def reader(self, schema):
            return FloorReader()

    spark.dataSource.register(FloorSource)
    return spark.read.format("natsobj_bench_floor").load()


def _register_discard_sink(spark) -> str:
    """A Python data source writer that drops every batch: what any Python writer pays to get
    Arrow batches from the JVM."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class DiscardWriter(DataSourceArrowWriter):
        def write(self, iterator):
            for _ in iterator:
                pass
            return WriterCommitMessage()

    class DiscardSink(DataSource):
        @classmethod
        def name(cls):
            return "natsobj_bench_discard"

        def writer(self, schema, overwrite):
            return DiscardWriter()

    spark.dataSource.register(DiscardSink)
    return DiscardSink.name()


def _race(repeat: int, contenders: dict[str, Callable[[], object]]) -> dict[str, list[float]]:
    """Each contender's time in each of ``repeat`` rounds, taking turns within each round so
    a burst of load on the shared machine does not fall on one contender only."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, action in contenders.items():
            start = time.perf_counter()
            action()
            times[name].append(round(time.perf_counter() - start, 3))
    return times


def _consume(df) -> None:
    """Read every column of every row (the noop sink), so neither source can skip work."""
    df.write.format("noop").mode("overwrite").save()


SELECTIVE_FRACTION = 100  # the selective query keeps 1 row in this many


def _selective_reads(spark, options: dict[str, str], rows: int) -> dict[str, Callable[[], object]]:
    """The same selective query (1% of the ids) as a full scan and with filter pushdown, which
    skips the parts and row groups whose statistics exclude it. Each run loads a fresh
    DataFrame: Spark keeps one pushed-down plan per DataFrame."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    condition = f"id < {rows // SELECTIVE_FRACTION}"

    def query(pushdown: str) -> Callable[[], object]:
        reader = spark.read.format("natsobj").options(**options, pushdown=pushdown)
        return lambda: _consume(reader.load(PREFIX).filter(condition))

    return {
        "read_selective_full_scan_s": query("false"),
        "read_selective_pushdown_s": query("true"),
    }


def run(
    rows: int = DEFAULT_ROWS, repeat: int = 3, compression: str | None = None
) -> dict[str, Any]:
    import natsobj
    from natsobj.local.embedded import NatsServerProcess

    work = Path(tempfile.mkdtemp(prefix="natsobj-bench-spark-"))
    server = NatsServerProcess(work / "nats")
    server.start()
    options = {"url": server.url, "bucket": BUCKET}
    if compression:
        options["compression"] = compression
    local = str(work / "parquet")
    figures: dict[str, Any] = {"rows": rows, "natsobj_compression": compression or "default"}
    try:
        spark = _session(2)
        _warm_up(spark, options, str(work / "warm"))
        df = _frame(spark, rows)
        sink = _register_discard_sink(spark)
        spark.range(10).write.format(sink).mode("append").save()  # warm up
        figures |= _race(
            repeat,
            {
                "write_natsobj_s": lambda: (
                    df.write.format("natsobj").mode("overwrite").options(**options).save(PREFIX)
                ),
                "write_parquet_s": lambda: df.write.mode("overwrite").parquet(local),
                "write_python_sink_floor_s": lambda: df.write.format(sink).mode("append").save(),
            },
        )
        df.unpersist()
        floor = _python_source_floor(spark, df.schema, rows, parts=max(1, rows // 1_000_000))
        _consume(floor)  # warm up

        def reads(session, suffix: str) -> dict[str, Callable[[], object]]:
            ours = session.read.format("natsobj").options(**options).load(PREFIX)
            theirs = session.read.parquet(local)
            return {
                f"read_natsobj{suffix}_s": lambda: _consume(ours),
                f"read_parquet{suffix}_s": lambda: _consume(theirs),
            }

        figures |= _race(
            repeat, {**reads(spark, ""), "read_python_source_floor_s": lambda: _consume(floor)}
        )
        figures |= _race(repeat, _selective_reads(spark, options, rows))
        spark.stop()
        single = _session(1)
        _warm_up(single, options, str(work / "warm"))
        figures |= _race(repeat, reads(single, "_1core"))
        single.stop()

        with natsobj.connect(server.url) as client:
            manifest = json.loads(client.store(BUCKET).get_bytes(f"{PREFIX}/_manifest.json"))
        figures["natsobj_parts"] = manifest["num_parts"]
        figures["natsobj_bytes"] = manifest["num_bytes"]
        figures["parquet_bytes"] = sum(p.stat().st_size for p in Path(local).glob("*.parquet"))
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)

    return figures


SPARK_NOTE = (
    "A DataFrame of six numeric and string columns, cached, written and read through"
    ' `format("natsobj")` beside Spark\'s own Parquet on the local disk, in `local[2]` (and'
    " `local[1]` for the read's scaling), the contenders taking turns in every round. The"
    " floor is what any Python data source pays here: for writes a `DataSourceArrowWriter`"
    " that drops every batch, for reads a source yielding ready-made Arrow batches of the"
    " same columns, Spark types and values, in as many partitions as natsobj has parts."
)


def measure(rows: int, repeat: int) -> list[Section]:
    """The Spark sections, from a child process running ``run``."""
    figures = section(
        "spark",
        f'Spark: {rows:,} rows through `format("natsobj")`',
        SPARK_NOTE,
        {"parquet": "local Parquet", "floor": "Python data source floor", "ours": "natsobj"},
        [("ours", "parquet"), ("ours", "floor")],
    )
    pushdown = section(
        "spark-pushdown",
        "Spark: filter pushdown",
        f"A query keeping 1 row in {SELECTIVE_FRACTION} (`id < rows/{SELECTIVE_FRACTION}`), a"
        " fresh `load()` per run: natsobj fetches and decodes only the parts and row groups"
        " whose statistics overlap the filter.",
        {"scan": "natsobj, full scan", "pushdown": "natsobj, pushdown=true"},
        [("pushdown", "scan")],
    )
    with timed(figures, pushdown):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.bench_spark",
                f"--rows={rows}",
                f"--repeat={repeat}",
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
    times = json.loads(done.stdout[done.stdout.index("{") :])
    for label, keys in SPARK_ROWS.items():
        samples = {column: times[key] for column, key in keys.items()}
        add_row(figures, label, "s", LOWER, samples)
    for label, ratio in (("write", 1.15), ("read (2 cores)", 1.15)):
        speed = round(1 / ratio, 2)
        target = f"Spark {label} >= {speed}x the Python-source floor (its time within {ratio}x)"
        ratio_target(figures, target, label, "ours", "floor", speed)
    scan = {"scan": times["read_selective_full_scan_s"]}
    add_row(
        pushdown,
        "selective read",
        "s",
        LOWER,
        {**scan, "pushdown": times["read_selective_pushdown_s"]},
    )
    return [figures, pushdown]


SPARK_ROWS = {
    "write": {
        "ours": "write_natsobj_s",
        "parquet": "write_parquet_s",
        "floor": "write_python_sink_floor_s",
    },
    "read (2 cores)": {
        "ours": "read_natsobj_s",
        "parquet": "read_parquet_s",
        "floor": "read_python_source_floor_s",
    },
    "read (1 core)": {"ours": "read_natsobj_1core_s", "parquet": "read_parquet_1core_s"},
}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--compression", help="natsobj Parquet codec (default: the source's)")
    args = parser.parse_args(argv)
    figures = run(rows=args.rows, repeat=args.repeat, compression=args.compression)
    print(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main()
