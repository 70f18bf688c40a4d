"""NatsObjectSensor in poke mode and deferred to the watch trigger, under ``airflow dags test``;
timeouts, soft_fail and errors behave the same either way."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from datetime import timedelta

import pytest
from airflow_natsobj.sensors.object_store import NatsObjectSensor
from airflow_natsobj.triggers.object_store import NatsObjectTrigger

from natsobj.errors import BucketNotFound
from tests.airflow.task_exceptions import AirflowSensorTimeout, AirflowSkipException, TaskDeferred

from .conftest import AIRFLOW_BIN, DAGS_DIR, task_states, xcom

POKE_DAG = """
from airflow.sdk import DAG

from airflow_natsobj.operators.object_store import NatsCreateObjectOperator
from airflow_natsobj.sensors.object_store import NatsObjectSensor

B = "{bucket}"
common = dict(bucket=B, poke_interval=0.2, mode="poke", deferrable=False)

with DAG("DAG_ID", schedule=None) as dag:
    v1 = NatsCreateObjectOperator(task_id="v1", bucket=B, name="model.bin", data="one")
    v2 = NatsCreateObjectOperator(task_id="v2", bucket=B, name="model.bin", data="two",
                                  replace=True)
    exact = NatsObjectSensor(task_id="exact", name="small.csv", timeout=10, **common)
    glob_check = NatsObjectSensor(
        task_id="glob_check", glob="*.csv", check_fn=lambda i: i.size > 100,
        timeout=10, **common,
    )
    regex = NatsObjectSensor(task_id="regex", regex=r"big\\.(csv|tsv)",
                             timeout=10, **common)
    changed = NatsObjectSensor(
        task_id="changed", name="model.bin",
        after_sequence="{{{{ ti.xcom_pull(task_ids='v1')['sequence'] }}}}", timeout=10, **common,
    )
    skipped = NatsObjectSensor(task_id="skipped", name="never.csv", timeout=1, soft_fail=True,
                               **common)
    timed_out = NatsObjectSensor(task_id="timed_out", name="never.csv", timeout=1, **common)
    v1 >> v2 >> [exact, glob_check, regex, changed, skipped, timed_out]
"""


def test_poke_mode_matches_names_patterns_checks_and_changes(run_dag, store, bucket_name):
    small = store.put("small.csv", b"1")
    big = store.put("big.csv", b"x" * 500)
    run = run_dag(POKE_DAG.format(bucket=bucket_name))
    states = run.states
    assert {k: v for k, v in states.items() if k not in ("skipped", "timed_out")} == dict.fromkeys(
        ["v1", "v2", "exact", "glob_check", "regex", "changed"], "success"
    ), run.output[-5000:]
    assert (states["skipped"], states["timed_out"]) == ("skipped", "failed")
    assert "Sensor has timed out" in run.output
    assert run.xcom("exact")["sequence"] == small.sequence
    assert run.xcom("glob_check")["name"] == "big.csv"
    assert run.xcom("regex")["digest"] == big.digest
    assert run.xcom("changed")["nuid"] == run.xcom("v2")["nuid"]


DEFERRED_DAG = """
from airflow.sdk import DAG

from airflow_natsobj.sensors.object_store import NatsObjectSensor

with DAG("DAG_ID", schedule=None) as dag:
    late = NatsObjectSensor(task_id="late", bucket="{bucket}", name="incoming/late.csv",
                            timeout=120)
    checked = NatsObjectSensor(
        task_id="checked", bucket="{bucket}", glob="incoming/*.csv",
        check_fn=lambda i: i.size >= 10, deferrable=True, timeout=120,
    )
    late >> checked
"""


def test_deferrable_sensor_waits_on_the_watch_end_to_end(nats_default, store, bucket_name):
    """``[operators] default_deferrable`` makes the sensor defer; the object is put only once
    the trigger runs, so only the watch can see it; check_fn rejects, and it defers again."""
    store.put("incoming/tiny.csv", b"1")
    dag_id = f"t_{uuid.uuid4().hex[:10]}"
    path = DAGS_DIR / f"{dag_id}.py"
    path.write_text(DEFERRED_DAG.format(bucket=bucket_name).replace("DAG_ID", dag_id))
    env = {**os.environ, "AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE": "True"}
    process = subprocess.Popen(
        [AIRFLOW_BIN, "dags", "test", dag_id, "-f", str(path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    put_done = False
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "running trigger in line" in line and not put_done:
                time.sleep(1.0)  # the trigger is watching now
                late = store.put("incoming/late.csv", b"0123456789abc")
                put_done = True
        process.wait(120)
    finally:
        process.kill()
        path.unlink(missing_ok=True)
    output = "".join(lines)
    assert process.returncode == 0, output[-6000:]
    assert task_states(dag_id) == {"late": "success", "checked": "success"}
    assert output.count("running trigger in line") == 3  # late, checked (tiny), checked again
    assert "incoming/tiny.csv failed check_fn; waiting for the next" in output
    assert xcom(dag_id, "late")["sequence"] == late.sequence
    assert xcom(dag_id, "checked")["name"] == "incoming/late.csv"


def _sensor(**kwargs) -> NatsObjectSensor:
    return NatsObjectSensor(task_id="s", bucket="b", name="x", deferrable=True, **kwargs)


def test_deferral_carries_the_trigger_and_the_timeout() -> None:
    sensor = _sensor(timeout=90, after_sequence="12")
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context={})
    assert isinstance(deferred.value.trigger, NatsObjectTrigger)
    assert deferred.value.trigger.serialize()[1]["after_sequence"] == 12
    assert timedelta(seconds=85) < deferred.value.timeout <= timedelta(seconds=90)
    assert deferred.value.method_name == "execute_complete"


@pytest.mark.parametrize(
    ("soft_fail", "expected"), [(True, AirflowSkipException), (False, AirflowSensorTimeout)]
)
def test_deferred_timeout_follows_soft_fail_like_poke_mode(soft_fail, expected) -> None:
    from airflow.sdk.bases.operator import TriggerFailureReason

    sensor = _sensor(timeout=1, soft_fail=soft_fail)
    with pytest.raises(expected):
        sensor.resume_execution("__fail__", {"error": TriggerFailureReason.TRIGGER_TIMEOUT}, {})


def test_deferred_timeout_skips_under_never_fail_as_under_soft_fail() -> None:
    from airflow.sdk.bases.operator import TriggerFailureReason

    sensor = _sensor(timeout=1, never_fail=True)
    with pytest.raises(AirflowSkipException):
        sensor.resume_execution("__fail__", {"error": TriggerFailureReason.TRIGGER_TIMEOUT}, {})


def test_trigger_errors_fail_the_task_with_the_natsobj_message() -> None:
    event = {
        "status": "error",
        "error_type": "BucketNotFound",
        "message": "bucket 'b': bucket does not exist. Create it first.",
    }
    with pytest.raises(BucketNotFound) as caught:
        _sensor(soft_fail=True).execute_complete({}, event)
    assert str(caught.value) == event["message"]


def test_bad_after_sequence_and_regex_fail_before_waiting() -> None:
    with pytest.raises(ValueError, match="after_sequence must be a stream sequence"):
        _sensor(after_sequence="{{ not rendered }}").execute(context={})
    with pytest.raises(ValueError, match="invalid regex"):
        NatsObjectSensor(task_id="s", bucket="b", regex="(").execute(context={})


@pytest.mark.parametrize(
    ("match", "expected"),
    [
        ("glob", {"glob": "in/*.csv"}),
        ("regex", {"regex": "in/*.csv"}),
        ("exact", {"name": "in/*.csv"}),
    ],
)
def test_deprecated_match_parameter_still_works_and_warns(match, expected) -> None:
    from airflow.exceptions import AirflowProviderDeprecationWarning

    with pytest.warns(AirflowProviderDeprecationWarning, match=r"match=.*deprecated.*use"):
        sensor = NatsObjectSensor(
            task_id="old", bucket="b", name="in/*.csv", match=match, deferrable=True
        )
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context={})
    kwargs = deferred.value.trigger.serialize()[1]
    assert {k: kwargs[k] for k in ("name", "glob", "regex") if k in kwargs} == expected


def test_sensor_takes_exactly_one_of_name_glob_regex() -> None:
    with pytest.raises(ValueError, match="exactly one of name=, glob= or regex="):
        NatsObjectSensor(task_id="s", bucket="b", name="a", glob="*.csv").execute(context={})


# -- several names or patterns at once (S3KeySensor's bucket_key list) ------------------------

MULTI_DAG = """
from airflow.sdk import DAG

from airflow_natsobj.sensors.object_store import NatsObjectSensor

B = "{bucket}"
deferred = dict(bucket=B, deferrable=True)
poked = dict(bucket=B, deferrable=False, mode="poke", poke_interval=0.2)

with DAG("DAG_ID", schedule=None) as dag:
    both = NatsObjectSensor(task_id="both", name=["multi/a.csv", "multi/b.csv"], timeout=120,
                            **deferred)
    checked = NatsObjectSensor(
        task_id="checked", glob=["multi/*.csv", "multi/*.json"],
        check_fn=lambda i: i.size >= 3, timeout=120, **deferred,
    )
    globs = NatsObjectSensor(task_id="globs", glob=["multi/*.json", "multi/*.csv"],
                             timeout=10, **poked)
    not_all_deferred = NatsObjectSensor(task_id="not_all_deferred",
                                        name=["multi/a.csv", "multi/never"], timeout=3,
                                        **deferred)
    not_all_poked = NatsObjectSensor(task_id="not_all_poked",
                                     regex=[r"multi/a\\.csv", r"multi/.*\\.parquet"], timeout=1,
                                     **poked)
    both >> checked >> globs >> [not_all_deferred, not_all_poked]
"""


def test_several_names_or_patterns_must_all_be_there(nats_default, store, bucket_name):
    """Every entry of the list needs a live object, in poke mode and deferred; the deferred
    sensor waits on the watch for the one missing, check_fn refusals carry over a deferral,
    and the XCom is the list of objects in the list's order."""
    a = store.put("multi/a.csv", b"1")
    meta = store.put("multi/m.json", b'{"a": 1}')
    dag_id = f"t_{uuid.uuid4().hex[:10]}"
    path = DAGS_DIR / f"{dag_id}.py"
    path.write_text(MULTI_DAG.format(bucket=bucket_name).replace("DAG_ID", dag_id))
    process = subprocess.Popen(
        [AIRFLOW_BIN, "dags", "test", dag_id, "-f", str(path)],
        env=os.environ.copy(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    b = None
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if "running trigger in line" in line and b is None:
                b = store.put("multi/b.csv", b"12345")  # seen by the watch or its replay
        process.wait(120)
    finally:
        process.kill()
        path.unlink(missing_ok=True)
    output = "".join(lines)
    assert b is not None, output[-6000:]
    assert task_states(dag_id) == {
        "both": "success",
        "checked": "success",
        "globs": "success",
        "not_all_deferred": "failed",
        "not_all_poked": "failed",
    }, output[-6000:]
    assert [o["sequence"] for o in xcom(dag_id, "both")] == [a.sequence, b.sequence]
    assert "multi/a.csv failed check_fn; waiting for the next" in output
    assert [o["name"] for o in xcom(dag_id, "checked")] == ["multi/b.csv", "multi/m.json"]
    assert [o["sequence"] for o in xcom(dag_id, "globs")] == [meta.sequence, a.sequence]
    assert output.count("Sensor has timed out") >= 2


# -- the trigger keeps the sensor's deadline ---------------------------------------------------

DEADLINE_DAG = """
from airflow.sdk import DAG

from airflow_natsobj.sensors.object_store import NatsObjectSensor

with DAG("DAG_ID", schedule=None) as dag:
    NatsObjectSensor(task_id="timed_out", bucket="{bucket}", name="never.csv", timeout=3,
                     deferrable=True)
    NatsObjectSensor(task_id="skipped", bucket="{bucket}", glob="never/*", timeout=3,
                     deferrable=True, soft_fail=True)
"""


def test_dags_test_of_a_deferred_sensor_that_never_matches_ends_at_its_timeout(
    run_dag, store, bucket_name
) -> None:
    """``dags test`` runs the trigger in line, without the deferral timeout a triggerer
    enforces: the trigger ends at the sensor's deadline itself, and the task fails by timeout
    (or is skipped under soft_fail) instead of waiting for ever."""
    started = time.monotonic()
    run = run_dag(DEADLINE_DAG.format(bucket=bucket_name), timeout=150)
    assert time.monotonic() - started < 150
    assert run.states == {"timed_out": "failed", "skipped": "skipped"}, run.output[-6000:]
    assert "AirflowSensorTimeout" in run.output
    assert f"Sensor has timed out: nats://{bucket_name}/never.csv not there" in run.output


def test_the_trigger_fires_a_timeout_at_its_deadline_and_the_sensor_turns_it_into_one() -> None:
    from datetime import UTC, datetime

    sensor = _sensor(timeout=1)
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute(context={})
    kwargs = deferred.value.trigger.serialize()[1]
    deadline = datetime.fromisoformat(kwargs["deadline"])
    assert 0 < (deadline - datetime.now(UTC)).total_seconds() <= 1
    event = {"status": "timeout", "message": "Sensor has timed out: x not there"}
    with pytest.raises(AirflowSensorTimeout, match="x not there"):
        sensor.resume_execution("execute_complete", {"event": event}, {})
    with pytest.raises(AirflowSkipException):
        _sensor(soft_fail=True).resume_execution("execute_complete", {"event": event}, {})
