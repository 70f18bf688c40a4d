"""Both example DAGs pass under ``airflow dags test`` against the real server (the PySpark one
runs Spark locally through the natsobj data source)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess

from natsobj.errors import BucketNotFound

from .conftest import AIRFLOW_BIN, REPO, task_states, xcom

EXAMPLES = REPO / "example_dags"


def _dags_test(dag_id: str, bucket: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NATSOBJ_DEMO_BUCKET": bucket, "AIRFLOW__CORE__DAGS_FOLDER": str(EXAMPLES)}
    return subprocess.run(
        [AIRFLOW_BIN, "dags", "test", dag_id, "-f", str(EXAMPLES / f"{dag_id}.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_pyspark_pipeline_example(nats_default, sync_client, bucket_name) -> None:
    try:
        result = _dags_test("airflow_pipeline", bucket_name, timeout=400)
        output = result.stdout + result.stderr
        assert result.returncode == 0, output[-8000:]
        assert set(task_states("airflow_pipeline").values()) == {"success"}
        store = sync_client.store(bucket_name)
        names = {info.name for info in store.list()}
        raw = xcom("airflow_pipeline", "put_raw")
        report = xcom("airflow_pipeline", "put_report")
        assert raw["name"] in names and raw["size"] > 1_000_000
        manifest = json.loads(store.get_bytes("airflow/trips_hourly/_manifest.json"))
        assert manifest["num_rows"] > 100 and manifest["num_parts"] == 2
        sensed = xcom("airflow_pipeline", "wait_for_result")
        assert sensed["name"] == "airflow/trips_hourly/_manifest.json"
        assert sensed["sequence"] > raw["sequence"]
        assert "running trigger in line" in output  # the sensor deferred to the watch
        png = store.get_bytes(report["name"])
        assert png.startswith(b"\x89PNG") and store.get_info(report["name"]).headers[
            "Content-Type"
        ] == ["image/png"]
        assert "ARTIFACT report" in output
    finally:
        with contextlib.suppress(BucketNotFound):
            sync_client.delete_store(bucket_name)


def test_event_driven_example_summarizes_landed_csvs(nats_default, store, bucket_name) -> None:
    store.put("incoming/a.csv", b"x,y\n1,2\n3,4\n")
    store.put("incoming/notes.txt", b"ignored")
    result = _dags_test("airflow_event_driven", bucket_name, timeout=200)
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    summary = json.loads(store.get_bytes("summaries/a.csv.json"))
    assert (summary["rows"], summary["columns"]) == (2, ["x", "y"])
    assert summary["digest"] == store.get_info("incoming/a.csv").digest
    assert xcom("airflow_event_driven", "summarize") == ["summaries/a.csv.json"]


def test_event_driven_example_declares_a_watched_asset() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("ev", EXAMPLES / "airflow_event_driven.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (watcher,) = module.incoming_csv.watchers
    classpath, kwargs = watcher.trigger.serialize()
    assert classpath == "airflow_natsobj.triggers.object_store.NatsObjectChangeTrigger"
    assert kwargs["glob"] == "incoming/**.csv" and "pattern" not in kwargs
    assert module.incoming_csv.uri == f"nats://{module.BUCKET}/incoming"
