"""The example pipeline end to end on the test server: raw CSV, Spark, PNG, and its sensor."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime

from dagster import build_sensor_context, materialize

from dagster_natsobj import NatsObjectStoreIOManager, make_nats_object_sensor
from example_dags import bike_trips
from example_dags import dagster_pipeline as pipeline


def test_generated_trips_are_realistic_dirty_and_reproducible():
    day = datetime(2024, 6, 1)
    data = bike_trips.trips_csv_bytes(day, rows=3000)
    rows = list(csv.DictReader(io.StringIO(data.decode())))
    assert len(rows) > 3000  # duplicated lines included
    assert bike_trips.trips_csv_bytes(day, rows=3000) == data
    with open(bike_trips.generate_trips(day, rows=3000), "rb") as f:
        assert f.read() == data  # the file the Airflow example puts is the same export
    assert any(r["ended_at"] == "" for r in rows)
    assert any(r["start_station"].isupper() for r in rows)
    assert any(r["ended_at"] and r["ended_at"] < r["started_at"] for r in rows)
    assert len({r["trip_id"] for r in rows}) < len(rows)


def test_pipeline_materializes_and_its_sensor_sees_the_raw_csv(
    spark, nats_resource, bucket_name, instance, sync_client, monkeypatch
):
    monkeypatch.setattr(pipeline, "BUCKET", bucket_name)
    io_manager = NatsObjectStoreIOManager(
        resource=nats_resource, bucket=bucket_name, prefix=pipeline.PREFIX
    )
    defs = pipeline.defs
    keys = ("raw_trips", "trips_clean", "trips_hourly", "trips_report", "artifact_index")
    result = materialize(
        [defs.get_assets_def(k) for k in keys],
        resources={
            "nats": nats_resource,
            "spark": pipeline.SparkSessionResource(),
            "io_manager": io_manager,
        },
        instance=instance,
        run_config={"ops": {"raw_trips": {"config": {"rows": 3000}}}},
    )
    try:
        assert result.success
        store = sync_client.store(bucket_name)
        raw = store.get_info("dagster/raw/trips/2024-06-01.csv")
        assert raw.headers["Content-Type"] == ["text/csv"] and raw.size > 100_000
        clean = json.loads(store.get_bytes("dagster/trips_clean/_manifest.json"))
        assert 2_800 < clean["num_rows"] < 3_000 and clean["num_parts"] == 2
        hourly = json.loads(store.get_bytes("dagster/trips_hourly/_manifest.json"))
        assert 0 < hourly["num_rows"] <= 24 * len(bike_trips.STATIONS) * 2
        png = store.get_bytes("dagster/reports/trips.png")
        assert png.startswith(b"\x89PNG") and len(png) > 10_000
        assert store.get_info("dagster/reports/trips.png").headers["Content-Type"] == ["image/png"]
        [index] = result.asset_materializations_for_node("artifact_index")
        assert index.metadata["objects"].value == len(store.list())

        sensor = make_nats_object_sensor(
            "raw_trips_landed_test",
            bucket_name,
            asset_selection=[pipeline.trips_clean],
            name_glob=f"{pipeline.RAW_PREFIX}/*.csv",
        )
        with build_sensor_context(
            instance=instance,
            resources={"nats": nats_resource},
            repository_def=defs.get_repository_def(),
        ) as context:
            tick = sensor.evaluate_tick(context)
        assert [r.tags["natsobj/object"] for r in tick.run_requests] == [raw.name]
        assert tick.run_requests[0].run_key == f"{bucket_name}:{raw.sequence}"
    finally:
        sync_client.delete_store(bucket_name)
