"""The example pipeline's logic, shared by the orchestrator examples so they run the same job.

Raw bike-share trips (a realistic, dirty CSV export) are cleaned and aggregated by Spark on
the executors, reading the raw objects through the natsobj data source; the small hourly
aggregate becomes a PNG report. The orchestrators only decide where each artifact goes.
"""

from __future__ import annotations

import csv
import io
import os
import random
import sys
import tempfile
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

STATIONS = [
    "Alexanderplatz",
    "Bergmannkiez",
    "Hauptbahnhof",
    "Kottbusser Tor",
    "Mauerpark",
    "Ostkreuz",
    "Tempelhofer Feld",
    "Warschauer Str",
]
STATION_WEIGHTS = [9, 4, 12, 7, 3, 6, 5, 8]
HEADER = [
    "trip_id",
    "started_at",
    "ended_at",
    "start_station",
    "end_station",
    "member",
    "bike",
    "distance_km",
]
RAW_SCHEMA = (
    "trip_id STRING, started_at STRING, ended_at STRING, start_station STRING, "
    "end_station STRING, member STRING, bike STRING, distance_km STRING"
)
HOUR_WEIGHTS = [1, 1, 1, 1, 1, 2, 5, 9, 10, 6, 4, 4, 5, 5, 4, 5, 7, 10, 9, 6, 4, 3, 2, 1]


def write_trips(handle: Any, day: datetime, rows: int = 30_000, seed: int = 11) -> None:
    """A day of trips as the operator's export has them: rush-hour peaks, station names in
    mixed case, missing end times, clock skew (negative durations) and duplicated lines."""
    rng = random.Random(seed + day.toordinal())
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(HEADER)
    for i in range(rows):
        hour = rng.choices(range(24), weights=HOUR_WEIGHTS)[0]
        start = day.replace(hour=hour, minute=rng.randrange(60), second=rng.randrange(60))
        minutes = max(2.0, rng.gauss(16, 7))
        end = start + timedelta(minutes=minutes)
        if rng.random() < 0.005:
            end = start - timedelta(minutes=3)  # a dock with a wrong clock
        station = rng.choices(STATIONS, weights=STATION_WEIGHTS)[0]
        row = [
            f"t-{day:%Y%m%d}-{i:06d}",
            start.isoformat(timespec="seconds"),
            "" if rng.random() < 0.01 else end.isoformat(timespec="seconds"),
            station.upper() if rng.random() < 0.05 else station,
            rng.choice(STATIONS),
            rng.choices(["member", "casual"], weights=[7, 3])[0],
            rng.choices(["classic", "electric"], weights=[6, 4])[0],
            f"{minutes * rng.uniform(0.15, 0.3):.2f}",
        ]
        writer.writerow(row)
        if rng.random() < 0.01:
            writer.writerow(row)


def generate_trips(day: datetime, rows: int = 30_000, seed: int = 11) -> str:
    """The day's CSV in a temporary file (streamed to the store from there); returns its path."""
    with tempfile.NamedTemporaryFile(
        "w", suffix=".csv", prefix="trips-", delete=False, newline=""
    ) as handle:
        write_trips(handle, day, rows, seed)
    return handle.name


def trips_csv_bytes(day: datetime, rows: int = 30_000, seed: int = 11) -> bytes:
    out = io.StringIO(newline="")
    write_trips(out, day, rows, seed)
    return out.getvalue().encode("utf-8")


def spark_session(app_name: str = "natsobj-demo") -> SparkSession:
    """A local session whose Python workers run this interpreter (they import natsobj)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )


def clean_trips(files: DataFrame) -> DataFrame:
    """Raw CSV objects (the data source's binary rows) -> typed, de-duplicated, plausible trips."""
    from pyspark.sql import functions as F

    lines = files.select(
        F.explode(F.split(F.decode(F.col("content"), "UTF-8"), "\n")).alias("line")
    ).where((F.col("line") != "") & ~F.col("line").startswith("trip_id,"))
    return tidy_trips(
        lines.select(F.from_csv("line", RAW_SCHEMA).alias("r"))
        .select("r.*")
        .dropDuplicates(["trip_id"])
    )


def tidy_trips(rows: DataFrame) -> DataFrame:
    """Rows of RAW_SCHEMA (all strings) -> typed, plausible trips; row by row, so it works on a
    stream as well as on a batch."""
    from pyspark.sql import functions as F

    return (
        rows.withColumn("start_station", F.initcap("start_station"))
        .withColumn("started_at", F.to_timestamp("started_at"))
        .withColumn("ended_at", F.to_timestamp("ended_at"))
        .withColumn("distance_km", F.col("distance_km").try_cast("double"))
        .withColumn("minutes", (F.unix_timestamp("ended_at") - F.unix_timestamp("started_at")) / 60)
        .where(F.col("ended_at").isNotNull() & (F.col("minutes") > 0))
    )


def hourly_summary(trips: DataFrame) -> DataFrame:
    """Trips, duration, distance and e-bike share per day, hour, start station and rider type."""
    from pyspark.sql import functions as F

    return trips.groupBy(
        F.to_date("started_at").alias("day"),
        F.hour("started_at").alias("hour"),
        "start_station",
        "member",
    ).agg(
        F.count("*").alias("trips"),
        F.round(F.avg("minutes"), 1).alias("avg_minutes"),
        F.round(F.sum("distance_km"), 1).alias("km"),
        F.round(F.avg(F.when(F.col("bike") == "electric", 1).otherwise(0)), 3).alias(
            "electric_share"
        ),
    )


def render_report(frame: Any, title: str) -> bytes:
    """The hourly aggregate (a small pandas frame) as a two-panel PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    hourly = frame.pivot_table(index="hour", columns="member", values="trips", aggfunc="sum")
    by_station = frame.groupby("start_station")[["trips", "km"]].sum().sort_values("trips")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=100)
    hourly.plot.area(ax=left, linewidth=0, color=["#e9c46a", "#2a9d8f"])
    left.set_title("Trips per hour of day")
    left.set_xlabel("hour")
    by_station["trips"].plot.barh(ax=right, color="#264653")
    right.set_title("Trips by start station")
    right.set_ylabel("")
    for y, (trips, km) in enumerate(zip(by_station["trips"], by_station["km"], strict=True)):
        right.text(trips, y, f" {km:,.0f} km", va="center", fontsize="small")
    right.set_xlim(0, by_station["trips"].max() * 1.25)
    fig.suptitle(title)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    return buffer.getvalue()
