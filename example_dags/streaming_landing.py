"""Watch-driven streaming: CSV exports land in ``landing/``, a Structured Streaming query
cleans them into the Parquet dataset ``streaming/trips`` (one manifest generation per
micro-batch, exactly once), and a Dagster sensor on the dataset's manifest builds a report for
each committed generation.

``make demo`` runs it bounded (``python -m example_dags.streaming_landing``): two exports land,
the query runs with ``availableNow``, the sensor ticks and the report is built; then a third
export lands and the same happens again, from the same checkpoint. Long-running, start the
query with ``trigger(processingTime="10 seconds")`` and the sensor with
``dagster dev -m example_dags.streaming_landing``.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
from dagster import (
    DagsterInstance,
    Definitions,
    MaterializeResult,
    asset,
    build_sensor_context,
    materialize,
)

from dagster_natsobj import NatsObjectStoreResource, make_nats_object_sensor
from example_dags import bike_trips
from natsobj.spark.manifest import manifest_name
from natsobj.spark.storage import read_manifest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

BUCKET = os.environ.get("NATSOBJ_DEMO_BUCKET", "demo")
LANDING = "landing"
DATASET = "streaming/trips"
REPORTS = "streaming/reports"
URL = os.environ.get("NATS_URL", "embedded")


def start_cleaning(
    spark: SparkSession, checkpoint: str, *, available_now: bool = False
) -> StreamingQuery:
    """landing/*.csv -> typed trips, appended to the dataset one micro-batch at a time."""
    raw = (
        spark.readStream.format("natsobj")
        .options(url=URL, bucket=BUCKET, glob=f"{LANDING}/*.csv", maxObjectsPerTrigger="1")
        .schema(bike_trips.RAW_SCHEMA)
        .load()
    )
    trigger = {"availableNow": True} if available_now else {"processingTime": "10 seconds"}
    return (
        bike_trips.tidy_trips(raw)
        .writeStream.format("natsobj")
        .options(url=URL, bucket=BUCKET)
        .option("checkpointLocation", checkpoint)
        .trigger(**trigger)
        .start(DATASET)
    )


@asset
def trips_stream_report(nats: NatsObjectStoreResource) -> MaterializeResult:
    """Trips per start station in the dataset's newest generation: the few rows a report needs
    are read on the spot, from the parts that generation lists."""
    with nats.get_store(BUCKET) as store:
        manifest = read_manifest(store, DATASET)
        if manifest is None:
            raise RuntimeError(f"no dataset at nats://{BUCKET}/{DATASET} yet")
        per_station: Counter[str] = Counter()
        for part in manifest.parts:
            table = pq.read_table(
                pa.BufferReader(store.get_bytes(part.name)), columns=["start_station"]
            )
            per_station.update(table["start_station"].to_pylist())
        report = {
            "generation": manifest.generation,
            "trips": manifest.num_rows,
            "per_station": dict(per_station.most_common()),
            "streams": manifest.streams,
        }
        name = f"{REPORTS}/generation-{manifest.generation:04d}.json"
        store.put(
            name,
            json.dumps(report, indent=1).encode(),
            headers={"Content-Type": "application/json"},
        )
    return MaterializeResult(
        metadata={"generation": manifest.generation, "trips": manifest.num_rows, "report": name}
    )


# One run per committed generation: the sensor watches the manifest's meta records. Meta is
# rolled up per name, so generations committed between two ticks reach it as the newest one.
trips_committed = make_nats_object_sensor(
    "trips_stream_committed",
    BUCKET,
    asset_selection=[trips_stream_report],
    glob=manifest_name(DATASET),
    minimum_interval_seconds=5,
)

defs = Definitions(
    assets=[trips_stream_report],
    sensors=[trips_committed],
    resources={"nats": NatsObjectStoreResource(url=URL)},
)


def land_export(nats: NatsObjectStoreResource, day: str, rows: int) -> str:
    name = f"{LANDING}/trips-{day}.csv"
    with nats.get_client() as client:
        store = client.ensure_store(BUCKET)
        store.put(name, bike_trips.trips_csv_bytes(datetime.fromisoformat(day), rows=rows))
    return name


def tick_and_report(instance: DagsterInstance, cursor: str | None) -> str | None:
    """One sensor evaluation, and a report run for each run request it makes."""
    resources = {"nats": defs.resources["nats"]}
    with build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources=resources,
        repository_def=defs.get_repository_def(),
    ) as context:
        result = trips_committed.evaluate_tick(context)
    for request in result.run_requests or []:
        generation = request.tags["natsobj/sequence"]
        print(f"  sensor: manifest committed (meta sequence {generation}) -> report run")
        outcome = materialize(
            [trips_stream_report], resources=resources, instance=instance, tags=request.tags
        )
        meta = outcome.asset_materializations_for_node("trips_stream_report")[0].metadata
        print(
            f"  report: generation {meta['generation'].value}, {meta['trips'].value} trips -> nats://{BUCKET}/{meta['report'].value}"
        )
    return result.cursor


def main() -> None:
    nats = defs.resources["nats"]
    checkpoint = str(
        Path(os.environ.get("NATSOBJ_DEMO_CHECKPOINT", ".demo/stream-checkpoint")).resolve()
    )
    spark = bike_trips.spark_session("natsobj-streaming-demo")
    spark.sparkContext.setLogLevel("ERROR")
    instance = DagsterInstance.ephemeral()
    cursor = None
    for days in (["2024-06-03", "2024-06-04"], ["2024-06-05"]):
        for day in days:
            print(f"  landed nats://{BUCKET}/{land_export(nats, day, rows=2_000)}")
        start_cleaning(spark, checkpoint, available_now=True).awaitTermination()
        with nats.get_store(BUCKET) as store:
            manifest = read_manifest(store, DATASET)
        assert manifest is not None
        print(
            f"  stream: nats://{BUCKET}/{DATASET} at generation {manifest.generation}, "
            f"{manifest.num_rows} rows in {len(manifest.parts)} parts (batches {manifest.streams})"
        )
        cursor = tick_and_report(instance, cursor)
    spark.stop()


if __name__ == "__main__":
    main()
