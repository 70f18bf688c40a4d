"""The natsobj example pipeline as an Airflow DAG, every artifact in one NATS object store.

    create_bucket   the bucket, if it is not there yet
    generate_trips  a realistic, dirty day of bike-share trips as CSV (a local temp file)
    put_raw         NatsObjectPutOperator -> nats://demo/airflow/raw/trips/<day>.csv
                    (an asset event on nats://demo/airflow/raw/trips)
    transform       Spark reads every raw CSV through the natsobj data source, cleans and
                    aggregates on the executors -> the Spark dataset airflow/trips_hourly/
    wait_for_result NatsObjectSensor, deferred to the watch trigger, waits for the dataset's
                    manifest to be newer than this run's raw input
    render_report   Spark reads the (small) aggregate back, matplotlib draws a PNG
    put_report      NatsObjectPutOperator -> nats://demo/airflow/reports/trips-<day>.png
    summary         where everything is

Run it against the embedded server (what `make demo` does):

    export AIRFLOW_CONN_NATS_DEFAULT='{"conn_type": "nats", "extra": {"embedded": true}}'
    airflow dags test airflow_pipeline
"""

from __future__ import annotations

import csv
import os
import random
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from airflow.sdk import Asset, dag, task
from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
from airflow_natsobj.operators.object_store import (
    NatsCreateObjectStoreOperator,
    NatsObjectPutOperator,
)
from airflow_natsobj.sensors.object_store import NatsObjectSensor

BUCKET = os.environ.get("NATSOBJ_DEMO_BUCKET", "demo")
RAW_PREFIX = "airflow/raw/trips"
DATASET = "airflow/trips_hourly"
DAY = "{{ dag_run.run_after | ds }}"  # manual runs in Airflow 3 have no logical date (ds)
REPORT = f"airflow/reports/trips-{DAY}.png"
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
RAW_SCHEMA = (
    "trip_id STRING, started_at STRING, ended_at STRING, start_station STRING, "
    "end_station STRING, member STRING, bike STRING, distance_km STRING"
)

raw_trips = Asset(f"nats://{BUCKET}/{RAW_PREFIX}")
reports = Asset(f"nats://{BUCKET}/airflow/reports")


def generate_trips(day: datetime, rows: int = 30_000, seed: int = 11) -> str:
    """A day of trips as the operator's export has them: rush-hour peaks, station names in
    mixed case, missing end times, clock skew (negative durations) and duplicated lines."""
    rng = random.Random(seed + day.toordinal())
    with tempfile.NamedTemporaryFile(
        "w", suffix=".csv", prefix="trips-", delete=False, newline=""
    ) as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(
            [
                "trip_id",
                "started_at",
                "ended_at",
                "start_station",
                "end_station",
                "member",
                "bike",
                "distance_km",
            ]
        )
        for i in range(rows):
            hour = rng.choices(
                range(24),
                weights=[1, 1, 1, 1, 1, 2, 5, 9, 10, 6, 4, 4, 5, 5, 4, 5, 7, 10, 9, 6, 4, 3, 2, 1],
            )[0]
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
    return handle.name


def spark_session() -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return (
        SparkSession.builder.master("local[2]")
        .appName("natsobj-airflow-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )


@dag(
    schedule=None,
    start_date=datetime(2024, 6, 1),
    catchup=False,
    tags=["natsobj", "example"],
    doc_md=__doc__,
)
def airflow_pipeline() -> None:
    create_bucket = NatsCreateObjectStoreOperator(
        task_id="create_bucket", bucket=BUCKET, description="natsobj demo artifacts"
    )

    @task
    def generate(dag_run: Any = None) -> str:
        day = dag_run.run_after.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=None)
        path = generate_trips(day)
        print(f"generated {Path(path).stat().st_size:,} bytes of trips in {path}")
        return path

    raw_file = generate()
    put_raw = NatsObjectPutOperator(
        task_id="put_raw",
        bucket=BUCKET,
        name=f"{RAW_PREFIX}/{DAY}.csv",
        source=raw_file,
        headers={"Content-Type": "text/csv"},
        metadata={"dag_run": "{{ run_id }}"},
        outlets=[raw_trips],
    )

    @task
    def transform() -> dict[str, Any]:
        """Parse, clean and aggregate on the executors; only the manifest reaches the driver."""
        from pyspark.sql import functions as F

        from natsobj.spark import read_dataframe, write_dataframe

        settings = NatsObjectStoreHook().settings.resolved()  # executors need a real URL
        session = spark_session()
        files = read_dataframe(session, settings, BUCKET, RAW_PREFIX, mode="binary", glob="*.csv")
        lines = files.select(
            F.explode(F.split(F.decode(F.col("content"), "UTF-8"), "\n")).alias("line")
        ).where((F.col("line") != "") & ~F.col("line").startswith("trip_id,"))
        trips = (
            lines.select(F.from_csv("line", RAW_SCHEMA).alias("r"))
            .select("r.*")
            .dropDuplicates(["trip_id"])
            .withColumn("start_station", F.initcap("start_station"))
            .withColumn("started_at", F.to_timestamp("started_at"))
            .withColumn("ended_at", F.to_timestamp("ended_at"))
            .withColumn("distance_km", F.col("distance_km").try_cast("double"))
            .withColumn(
                "minutes", (F.unix_timestamp("ended_at") - F.unix_timestamp("started_at")) / 60
            )
            .where(F.col("ended_at").isNotNull() & (F.col("minutes") > 0))
        )
        daily = trips.groupBy(
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
        manifest = write_dataframe(daily.repartition(2), settings, BUCKET, DATASET)
        return {key: manifest[key] for key in ("num_rows", "num_parts", "num_bytes")}

    wait_for_result = NatsObjectSensor(
        task_id="wait_for_result",
        bucket=BUCKET,
        name=DATASET + "/_manifest.json",
        after_sequence="{{ ti.xcom_pull(task_ids='put_raw')['sequence'] }}",
        deferrable=True,
        timeout=600,
    )

    @task
    def render_report(dag_run: Any = None) -> str:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from natsobj.spark import read_dataframe

        settings = NatsObjectStoreHook().settings.resolved()
        frame = read_dataframe(spark_session(), settings, BUCKET, DATASET).toPandas()
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
        day = f"{dag_run.run_after:%Y-%m-%d}"
        fig.suptitle(f"Bike-share trips up to {day} (natsobj + Spark + Airflow)")
        fig.tight_layout()
        path = Path(tempfile.mkdtemp(prefix="natsobj-report-")) / "report.png"
        fig.savefig(path, format="png")
        plt.close(fig)
        return str(path)

    report_file = render_report()
    put_report = NatsObjectPutOperator(
        task_id="put_report",
        bucket=BUCKET,
        name=REPORT,
        source=report_file,
        headers={"Content-Type": "image/png"},
        outlets=[reports],
    )

    @task
    def summary(raw: dict[str, Any], dataset: dict[str, Any], report: dict[str, Any]) -> dict:
        lines = {
            "raw": f"nats://{BUCKET}/{raw['name']} ({raw['size']:,} B)",
            "dataset": f"nats://{BUCKET}/{DATASET}/ ({dataset['num_rows']} rows in "
            f"{dataset['num_parts']} Parquet parts)",
            "report": f"nats://{BUCKET}/{report['name']} ({report['size']:,} B PNG)",
        }
        for kind, where in lines.items():
            print(f"ARTIFACT {kind:8} {where}")
        return lines

    dataset = transform()
    create_bucket >> raw_file >> put_raw >> dataset >> wait_for_result >> report_file
    report_file >> put_report
    summary(put_raw.output, dataset, put_report.output)


airflow_pipeline()
