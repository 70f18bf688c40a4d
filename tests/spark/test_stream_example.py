"""The streaming example of `make demo` on the test server: exports land, the query commits
them, and the Dagster sensor on the dataset's manifest builds one report per tick that found
a new generation, whose counts match the committed dataset."""

from __future__ import annotations

import csv
import importlib
import io
import json
from datetime import datetime

from dagster import DagsterInstance

from example_dags import bike_trips
from natsobj.spark.storage import read_manifest


def test_landed_exports_become_generations_and_each_gets_a_report(
    spark, nats_url, bucket_name, sync_client, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("NATS_URL", nats_url)
    monkeypatch.setenv("NATSOBJ_DEMO_BUCKET", bucket_name)
    example = importlib.reload(importlib.import_module("example_dags.streaming_landing"))
    nats = example.defs.resources["nats"]
    instance = DagsterInstance.ephemeral()
    checkpoint = str(tmp_path / "checkpoint")
    cursor = None
    for day in ("2024-06-03", "2024-06-04"):
        example.land_export(nats, day, rows=300)
        query = example.start_cleaning(spark, checkpoint, available_now=True)
        query.awaitTermination(600)
        assert query.exception() is None
        cursor = example.tick_and_report(instance, cursor)
    store = sync_client.store(bucket_name)
    manifest = read_manifest(store, example.DATASET)
    assert manifest is not None and manifest.generation == 2
    reports = sorted(i.name for i in store.list() if i.name.startswith(example.REPORTS + "/"))
    assert reports == [
        f"{example.REPORTS}/generation-0001.json",
        f"{example.REPORTS}/generation-0002.json",
    ]
    last = json.loads(store.get_bytes(reports[-1]))
    assert last["trips"] == manifest.num_rows
    assert sum(last["per_station"].values()) == manifest.num_rows
    assert manifest.num_rows == sum(plausible_trips(day) for day in ("2024-06-03", "2024-06-04"))


def plausible_trips(day: str) -> int:
    """Rows of the export the cleaning keeps: an end time, after the start."""
    raw = bike_trips.trips_csv_bytes(datetime.fromisoformat(day), rows=300).decode()
    return sum(1 for r in csv.DictReader(io.StringIO(raw)) if r["ended_at"] > r["started_at"])
