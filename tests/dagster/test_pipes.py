"""Dagster Pipes over NATS, end to end: the example asset ``spark-submit``s its PySpark job on a
real instance, and what the job reports through the object store (a log line, the
materialization's metadata, the asset check) lands in Dagster's event log. The job's process
imports no Dagster: Python's own import trace of that process (``PYTHONPROFILEIMPORTTIME``)
lists every module it loaded."""

from __future__ import annotations

import json

import pytest
from dagster import AssetKey, DagsterEventType, materialize

from example_dags import dagster_pipes_spark as example


def imported_modules(trace: str) -> set[str]:
    """Every module named by ``-X importtime`` lines in ``trace``."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in trace.splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.fixture
def run(nats_url, nats_resource, bucket_name, instance, sync_client, capfd, monkeypatch):
    """One materialization of the example asset; its result, the bucket, and the job's import
    trace."""
    monkeypatch.setattr(example, "BUCKET", bucket_name)
    monkeypatch.setenv("NATS_URL", nats_url)  # the job's connection, as in the example
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")  # children of this process trace imports
    sync_client.create_store(bucket_name)
    capfd.readouterr()
    result = materialize(
        [example.trips_hourly_pipes], resources={"nats": nats_resource}, instance=instance
    )
    out, err = capfd.readouterr()
    yield result, sync_client.store(bucket_name), out + err
    sync_client.delete_store(bucket_name)


def test_a_spark_job_reports_through_nats_and_imports_no_dagster(run, instance):
    result, store, trace = run
    assert result.success

    [stored] = instance.all_logs(result.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)
    materialization = stored.dagster_event.event_specific_data.materialization
    metadata = {name: value.value for name, value in materialization.metadata.items()}
    assert metadata["num_rows"] == 24 and metadata["trips"] == 20_000
    assert metadata["dataset"] == f"nats://{store.bucket}/{example.DATASET}"
    manifest = json.loads(store.get_bytes(f"{example.DATASET}/_manifest.json"))
    assert (manifest["num_rows"], manifest["num_parts"]) == (24, metadata["num_parts"])

    [check] = instance.all_logs(result.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)
    evaluation = check.dagster_event.event_specific_data
    assert (evaluation.asset_key, evaluation.check_name, evaluation.passed) == (
        AssetKey("trips_hourly_pipes"),
        example.CHECK,
        True,
    )
    assert evaluation.metadata["not_positive"].value == 0

    logs = [e.user_message for e in instance.all_logs(result.run_id)]
    assert any(f"wrote 24 hourly rows to nats://{store.bucket}/" in m for m in logs), logs

    # the session's context object and message chunks are gone: only the dataset is left
    assert {info.name.split("/")[0] for info in store.list()} == {"dagster"}

    modules = imported_modules(trace)
    assert {"dagster_pipes", "natsobj.pipes", "pyspark.sql"} <= modules, sorted(modules)[:50]
    dagster = sorted(m for m in modules if m.split(".")[0].startswith("dagster") and m.split(".")[0] != "dagster_pipes")
    assert dagster == [], dagster
