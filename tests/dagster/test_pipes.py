"""Dagster Pipes over NATS, end to end: the example asset ``spark-submit``s its PySpark job on a
real instance, and what the job reports through the object store (a log line, the
materialization's metadata, the asset check) lands in Dagster's event log. The job's process
imports no Dagster: Python's own import trace of that process (``PYTHONPROFILEIMPORTTIME``)
lists every module it loaded."""

from __future__ import annotations

import io
import json

import pytest
from dagster import AssetKey, DagsterEventType, materialize
from dagster_pipes import DagsterPipesError

from dagster_natsobj import PipesNatsLogReader
from example_dags import dagster_pipes_spark as example
from natsobj.pipes import PipesNatsContextLoader, PipesNatsMessageWriter, PipesParamsMismatch


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
    assert evaluation.metadata["shortest_trip_s"].value == 60

    logs = [e.user_message for e in instance.all_logs(result.run_id)]
    assert any(f"wrote 24 hourly rows to nats://{store.bucket}/" in m for m in logs), logs

    # the session's context object and message chunks are gone: only the dataset is left
    assert {info.name.split("/")[0] for info in store.list()} == {"dagster"}

    modules = imported_modules(trace)
    assert {"dagster_pipes", "natsobj.pipes", "pyspark.sql"} <= modules, sorted(modules)[:50]
    dagster = sorted(
        m
        for m in modules
        if m.split(".")[0].startswith("dagster") and m.split(".")[0] != "dagster_pipes"
    )
    assert dagster == [], dagster


def test_the_log_reader_passes_on_what_is_new_each_time(nats_resource, bucket_name, sync_client):
    """A log object put again as it grows reaches the target stream once, line by line, as
    dagster-aws' S3 log reader passes on a growing S3 log."""
    sink = io.StringIO()
    reader = PipesNatsLogReader(
        bucket=bucket_name, key="job/stdout", resource=nats_resource, target_stream=sink
    )
    store = sync_client.create_store(bucket_name)
    try:
        assert not reader.target_is_readable({})
        store.put("job/stdout", b"started\n")
        assert reader.target_is_readable({})
        assert reader.download_log_chunk({}) == "started\n"
        assert reader.download_log_chunk({}) == ""
        store.put("job/stdout", "started\nwrote 24 rows ✓\n".encode())
        assert reader.download_log_chunk({}) == "wrote 24 rows ✓\n"
        assert reader.name == f"PipesNatsLogReader(nats://{bucket_name}/job/stdout)"
    finally:
        sync_client.delete_store(bucket_name)


@pytest.mark.parametrize(
    ("side", "params", "missing"),
    [
        (PipesNatsMessageWriter, {"path": "/tmp/messages"}, "bucket"),
        (PipesNatsMessageWriter, {"bucket": "b"}, "key_prefix"),
    ],
)
def test_a_writer_given_another_readers_params_says_which_is_missing(side, params, missing):
    with pytest.raises(PipesParamsMismatch) as caught:
        side().make_channel(params)
    assert isinstance(caught.value, DagsterPipesError)
    assert f"{side.__name__} found no {missing!r}" in str(caught.value)
    assert "dagster_natsobj.PipesNatsMessageReader" in str(caught.value)


def test_a_loader_given_another_injectors_params_says_which_is_missing():
    with (
        pytest.raises(PipesParamsMismatch, match="PipesNatsContextLoader found no 'key'"),
        PipesNatsContextLoader().load_context({"bucket": "b", "path": "/tmp/context.json"}),
    ):
        pass
