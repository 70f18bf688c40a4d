"""The example pipeline end to end on the test server: raw CSV, Spark, PNG, and its sensor."""

from __future__ import annotations

import csv
import io
import json
from datetime import date

import pytest
from dagster import build_sensor_context, materialize

from dagster_natsobj import NatsObjectStoreIOManager

pipeline = pytest.importorskip("example_dags.dagster_pipeline", exc_type=ImportError)


def test_generated_orders_are_realistic_and_dirty():
    rows = list(
        csv.DictReader(io.StringIO(pipeline.generate_orders(2000, date(2024, 6, 1)).decode()))
    )
    assert len(rows) > 2000  # duplicates included
    assert pipeline.generate_orders(50, date(2024, 6, 1)) == pipeline.generate_orders(
        50, date(2024, 6, 1)
    )
    assert any(r["unit_price"] == "" for r in rows)
    assert any(r["country"].islower() for r in rows)
    assert {r["status"] for r in rows} == {"paid", "shipped", "cancelled"}
    assert len({r["order_id"] for r in rows}) < len(rows)


def test_pipeline_materializes_and_its_sensor_sees_the_raw_csv(
    spark, nats_resource, bucket_name, instance, sync_client, monkeypatch
):
    monkeypatch.setattr(pipeline, "BUCKET", bucket_name)
    io_manager = NatsObjectStoreIOManager(resource=nats_resource, bucket=bucket_name)
    defs = pipeline.defs
    result = materialize(
        [
            defs.get_assets_def(k)
            for k in (
                "raw_orders",
                "orders_clean",
                "daily_revenue",
                "revenue_report",
                "artifact_index",
            )
        ],
        resources={
            "nats": nats_resource,
            "spark": pipeline.SparkSessionResource(),
            "io_manager": io_manager,
        },
        instance=instance,
        run_config={"ops": {"raw_orders": {"config": {"rows": 2000}}}},
    )
    try:
        assert result.success
        store = sync_client.store(bucket_name)
        raw = store.get_info("raw/orders/orders-2024-06.csv")
        assert raw.headers["Content-Type"] == ["text/csv"] and raw.size > 100_000
        clean = json.loads(store.get_bytes("dagster/orders_clean/_manifest.json"))
        assert 1_500 < clean["num_rows"] < 2_000 and clean["num_parts"] == 2
        daily = json.loads(store.get_bytes("dagster/daily_revenue/_manifest.json"))
        assert daily["num_rows"] == 28 * len(pipeline.CATEGORIES)
        png = store.get_bytes("reports/daily_revenue.png")
        assert png.startswith(b"\x89PNG") and len(png) > 10_000
        assert store.get_info("reports/daily_revenue.png").headers["Content-Type"] == ["image/png"]

        sensor = pipeline.make_nats_object_sensor(
            "raw_orders_landed_test",
            bucket_name,
            asset_selection=[pipeline.orders_clean],
            name_glob=f"{pipeline.RAW_PREFIX}/*.csv",
        )
        with build_sensor_context(
            instance=instance,
            resources={"nats": nats_resource},
            repository_def=defs.get_repository_def(),
        ) as context:
            tick = sensor.evaluate_tick(context)
        assert [r.tags["natsobj/object"] for r in tick.run_requests] == [
            "raw/orders/orders-2024-06.csv"
        ]
        assert tick.run_requests[0].run_key == f"{bucket_name}:{raw.sequence}"
    finally:
        sync_client.delete_store(bucket_name)
