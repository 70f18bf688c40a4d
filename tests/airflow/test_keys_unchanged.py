"""NatsKeysUnchangedSensor (the Amazon provider's S3KeysUnchangedSensor) under ``airflow dags
test``: deferred to the change feed, in poke mode, refusing deletes, and ending at its timeout."""

from __future__ import annotations

import os
import subprocess
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from airflow_natsobj.sensors.object_store import NatsKeysUnchangedSensor
from airflow_natsobj.triggers.object_store import NatsKeysUnchangedTrigger

from tests.airflow.task_exceptions import TaskDeferred

from .conftest import AIRFLOW_BIN, DAGS_DIR, _query, task_states

DAG = """
from airflow.sdk import DAG

from airflow_natsobj.sensors.object_store import NatsKeysUnchangedSensor

B = "{bucket}"

with DAG("DAG_ID", schedule=None) as dag:
    fed = NatsKeysUnchangedSensor(task_id="fed", bucket_name=B, prefix="batch/",
                                  inactivity_period=2, min_objects=3, timeout=120,
                                  deferrable=True)
    poked = NatsKeysUnchangedSensor(task_id="poked", bucket_name=B, prefix="batch/",
                                    inactivity_period=1, min_objects=3, timeout=30,
                                    poke_interval=0.2, deferrable=False)
    refused = NatsKeysUnchangedSensor(task_id="refused", bucket_name=B, prefix="del/",
                                      previous_objects={{"del/gone.csv"}}, allow_delete=False,
                                      inactivity_period=1, timeout=30, deferrable=True)
    timed_out = NatsKeysUnchangedSensor(task_id="timed_out", bucket_name=B, prefix="empty/",
                                        inactivity_period=0, timeout=3, deferrable=True)
    fed >> poked >> [refused, timed_out]
"""


def test_keys_unchanged_follows_the_change_feed_end_to_end(nats_default, store, bucket_name):
    """Two objects are there when the sensor defers and it needs three: only the change feed
    can show it the third, put while the trigger runs; it succeeds no sooner than the
    inactivity period after that put. Poke mode agrees; deletes refused fail the task in
    natsobj's words; a prefix never quiet fails by timeout, the trigger keeping the deadline."""
    store.put("batch/1.csv", b"1")
    store.put("batch/2.csv", b"2")
    dag_id = f"t_{uuid.uuid4().hex[:10]}"
    path = DAGS_DIR / f"{dag_id}.py"
    path.write_text(DAG.format(bucket=bucket_name).replace("DAG_ID", dag_id))
    process = subprocess.Popen(
        [AIRFLOW_BIN, "dags", "test", dag_id, "-f", str(path)],
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    last_put: datetime | None = None
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "running trigger in line" in line and last_put is None:
                store.put("batch/3.csv", b"3")
                last_put = datetime.now(UTC)
        process.wait(150)
    finally:
        process.kill()
        path.unlink(missing_ok=True)
    output = "".join(lines)
    assert last_put is not None, output[-6000:]
    assert task_states(dag_id) == {
        "fed": "success",
        "poked": "success",
        "refused": "failed",
        "timed_out": "failed",
    }, output[-6000:]
    ((ended,),) = _query(
        "select end_date from task_instance where dag_id = ? and task_id = 'fed'", dag_id
    )
    assert datetime.fromisoformat(ended).replace(tzinfo=UTC) >= last_put + timedelta(seconds=2)
    assert f"nats://{bucket_name}/batch/ unchanged for 2s with 3 objects" in output
    assert "PrefixChanged" in output
    assert "objects under prefix 'del/' were deleted while waiting" in output
    assert f"Sensor has timed out: nats://{bucket_name}/empty/ was not quiet" in output


def test_the_sensor_defers_with_its_options_and_deadline() -> None:
    sensor = NatsKeysUnchangedSensor(
        task_id="s",
        bucket_name="b",
        prefix="batch/",
        inactivity_period=30,
        min_objects=4,
        previous_objects={"batch/2", "batch/1"},
        allow_delete=False,
        timeout=60,
        deferrable=True,
    )
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context={})
    trigger = deferred.value.trigger
    assert isinstance(trigger, NatsKeysUnchangedTrigger)
    kwargs = trigger.serialize()[1]
    assert {k: kwargs[k] for k in ("inactivity_period", "min_objects", "allow_delete")} == {
        "inactivity_period": 30,
        "min_objects": 4,
        "allow_delete": False,
    }
    assert kwargs["previous_objects"] == ["batch/1", "batch/2"]
    remaining = datetime.fromisoformat(kwargs["deadline"]) - datetime.now(UTC)
    assert timedelta(seconds=55) < remaining <= timedelta(seconds=60)
    assert timedelta(seconds=55) < deferred.value.timeout <= timedelta(seconds=60)


def test_reschedule_mode_is_refused_as_for_s3() -> None:
    """The quiet period is state of the running task, lost between reschedules."""
    with pytest.raises(ValueError, match="poke"):
        NatsKeysUnchangedSensor(task_id="s", bucket_name="b", prefix="p", mode="reschedule")
