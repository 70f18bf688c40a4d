"""The natsobj example pipeline as an Airflow DAG, every artifact in one NATS object store.

    create_bucket   the bucket, if it is not there yet
    generate        a realistic, dirty day of bike-share trips as CSV (a local temp file)
    put_raw         NatsCreateObjectOperator -> nats://demo/airflow/raw/trips/<day>.csv
                    (an asset event on nats://demo/airflow/raw/trips)
    transform       Spark reads every raw CSV through the natsobj data source, cleans and
                    aggregates on the executors -> the Spark dataset airflow/trips_hourly/
    wait_for_result NatsObjectSensor, deferred to the watch trigger, waits for the dataset's
                    manifest to be newer than this run's raw input
    render_report   Spark reads the (small) aggregate back, matplotlib draws a PNG
    put_report      NatsCreateObjectOperator -> nats://demo/airflow/reports/trips-<day>.png
    summary         where everything is

Run it against the embedded server (what `make demo` does):

    export AIRFLOW_CONN_NATS_DEFAULT='{"conn_type": "nats", "extra": {"embedded": true}}'
    airflow dags test airflow_pipeline
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from airflow.sdk import Asset, dag, task
from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
from airflow_natsobj.operators.object_store import (
    NatsCreateObjectOperator,
    NatsCreateObjectStoreOperator,
)
from airflow_natsobj.sensors.object_store import NatsObjectSensor

from example_dags import bike_trips
from natsobj.local.embedded_rule import resolve_server

BUCKET = os.environ.get("NATSOBJ_DEMO_BUCKET", "demo")
RAW_PREFIX = "airflow/raw/trips"
DATASET = "airflow/trips_hourly"
DAY = "{{ dag_run.run_after | ds }}"  # manual runs in Airflow 3 have no logical date (ds)
REPORT = f"airflow/reports/trips-{DAY}.png"

raw_trips = Asset(f"nats://{BUCKET}/{RAW_PREFIX}")
reports = Asset(f"nats://{BUCKET}/airflow/reports")


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
        path = bike_trips.generate_trips(day)
        print(f"generated {Path(path).stat().st_size:,} bytes of trips in {path}")
        return path

    raw_file = generate()
    put_raw = NatsCreateObjectOperator(
        task_id="put_raw",
        bucket=BUCKET,
        name=f"{RAW_PREFIX}/{DAY}.csv",
        source=raw_file,
        headers={"Content-Type": "text/csv"},
        metadata={"dag_run": "{{ run_id }}"},
        replace=True,  # a re-run of the day replaces its file
        outlets=[raw_trips],
    )

    @task
    def transform() -> dict[str, Any]:
        """Parse, clean and aggregate on the executors; only the manifest reaches the driver."""
        from natsobj.spark import read_dataframe, write_dataframe

        settings = resolve_server(NatsObjectStoreHook().settings)  # executors need a real URL
        session = bike_trips.spark_session("natsobj-airflow-demo")
        files = read_dataframe(
            session, settings, BUCKET, RAW_PREFIX, layout="binary", glob=f"{RAW_PREFIX}/*.csv"
        )
        hourly = bike_trips.hourly_summary(bike_trips.clean_trips(files))
        manifest = write_dataframe(
            hourly.repartition(2), settings, BUCKET, DATASET, mode="overwrite"
        )
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
        from natsobj.spark import read_dataframe

        settings = resolve_server(NatsObjectStoreHook().settings)
        session = bike_trips.spark_session("natsobj-airflow-demo")
        frame = read_dataframe(session, settings, BUCKET, DATASET).toPandas()
        title = f"Bike-share trips up to {dag_run.run_after:%Y-%m-%d} (natsobj + Spark + Airflow)"
        path = Path(tempfile.mkdtemp(prefix="natsobj-report-")) / "report.png"
        path.write_bytes(bike_trips.render_report(frame, title))
        return str(path)

    report_file = render_report()
    put_report = NatsCreateObjectOperator(
        task_id="put_report",
        bucket=BUCKET,
        name=REPORT,
        source=report_file,
        headers={"Content-Type": "image/png"},
        replace=True,
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
