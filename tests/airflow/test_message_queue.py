"""common-messaging's ``MessageQueueTrigger(scheme="natsobj", ...)`` under a real Airflow: the
test starts a dag processor, a scheduler, a triggerer and the API server its tasks report to
(on an AIRFLOW_HOME and sqlite database of the test's own, so they resume nothing another test
left deferred), and a put into the bucket makes the DAG scheduled on the watched asset run, its
task reading the object the event names."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from airflow_natsobj.triggers.object_store import NatsObjectChangeTrigger

from natsobj.cursors import ChangeCursor

from .conftest import AIRFLOW_BIN
from .cursors import HAS_ASSET_STATE_STORE, cursor_in_nats

CONSUMER = """
from airflow.providers.common.messaging.triggers.msg_queue import MessageQueueTrigger
from airflow.sdk import DAG, Asset, AssetWatcher, task

from airflow_natsobj.hooks.object_store import NatsObjectStoreHook

landed = Asset(
    "nats://{bucket}/landing",
    watchers=[
        AssetWatcher(
            name="landing_csv",
            trigger=MessageQueueTrigger(scheme="natsobj", bucket="{bucket}",
                                        glob="landing/*.csv"),
        )
    ],
)

with DAG("{dag_id}", schedule=[landed]):

    @task
    def acknowledge(triggering_asset_events=None):
        (event,) = triggering_asset_events[landed]
        name = event.extra["payload"]["name"]
        with NatsObjectStoreHook() as hook:
            store = hook.get_store("{bucket}")
            store.put("done/" + name, store.get_bytes(name))
        return name

    acknowledge()
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(condition: Callable[[], Any], timeout: float, what: str, logs: Path) -> Any:
    """Poll ``condition`` until it is truthy; fail with the services' logs after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    tails = "\n".join(
        f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}"
        for log in sorted(logs.glob("*.log"))
    )
    pytest.fail(f"{what} within {timeout}s\n{tails}")


class Database:
    """The services' sqlite metadata database, read as the scheduler leaves it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.path) as db:
            return db.execute(sql, args).fetchall()


@pytest.fixture
def airflow_services(nats_default: str, bucket_name: str, store) -> Iterator[dict[str, Any]]:
    """The consumer DAG in a DAG folder of its own, and the four services running on it, on a
    metadata database of their own: on the session's, they would also resume the deferred
    tasks other tests left behind, competing with this DAG for the executor's two slots."""
    work = Path(tempfile.mkdtemp(prefix="natsobj-mq-"))
    home, dags, logs = work / "home", work / "dags", work / "logs"
    for folder in (home, dags, logs):
        folder.mkdir()
    dag_id = f"mq_{bucket_name.replace('-', '_')}"[:60]
    (dags / "consumer.py").write_text(
        textwrap.dedent(CONSUMER.format(bucket=bucket_name, dag_id=dag_id))
    )
    port = _free_port()
    database = Database(home / "airflow.db")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{database.path}",
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API_AUTH__JWT_SECRET": "natsobj-test-secret",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
        "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
        # a killed triggerer's triggers go to the next one this soon after its last heartbeat
        "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "5",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(logs / "tasks"),
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(_free_port()),
        "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(_free_port()),
        "AIRFLOW__CORE__PARALLELISM": "2",
    }
    commands = {
        "api-server": ["api-server", "--port", str(port), "--host", "127.0.0.1"],
        "dag-processor": ["dag-processor"],
        "scheduler": ["scheduler"],
        "triggerer": ["triggerer"],
    }
    migrated = subprocess.run(
        [AIRFLOW_BIN, "db", "migrate"], env=env, capture_output=True, text=True, timeout=180
    )
    assert migrated.returncode == 0, migrated.stdout[-3000:] + migrated.stderr[-3000:]
    processes: list[subprocess.Popen] = []

    def start(name: str) -> subprocess.Popen:
        """Start one service (again: its log goes on after the previous one's)."""
        with open(logs / f"{name}.log", "a") as log:
            process = subprocess.Popen(
                [AIRFLOW_BIN, *commands[name]],
                env=env,
                cwd=str(home),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its workers go down with it
            )
        processes.append(process)
        return process

    try:
        running = {name: start(name) for name in commands}
        yield {"dag_id": dag_id, "logs": logs, "db": database, "running": running, "start": start}
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        shutil.rmtree(work, ignore_errors=True)


def _diagnosis(database: Database, dag_id: str, logs: Path) -> str:
    """What the database and the services' logs say about the DAG's runs, for a failure."""
    rows = {
        "runs": database.query(
            "select id, run_id, run_type, state, queued_at, start_date, end_date from dag_run"
            " where dag_id = ?",
            dag_id,
        ),
        "asset events": database.query("select id, asset_id, timestamp, extra from asset_event"),
        "triggers": database.query("select id, classpath, created_date, triggerer_id from trigger"),
        "task instances": database.query(
            "select run_id, task_id, state, try_number from task_instance where dag_id = ?", dag_id
        ),
    }
    tails = [
        f"--- {log.relative_to(logs)}\n{log.read_text(errors='replace')[-6000:]}"
        for log in sorted(logs.rglob("*.log"))
    ]
    return "\n".join([*(f"{what}: {found}" for what, found in rows.items()), *tails])


def stored_cursor(database: Database, nats_url: str, bucket: str) -> ChangeCursor | None:
    """The watcher's cursor where the triggerer's trigger keeps it: the asset state store
    (Airflow 3.3.2), else NATS."""
    key = NatsObjectChangeTrigger(bucket=bucket, glob="landing/*.csv").cursor_key
    if HAS_ASSET_STATE_STORE:
        found = database.query("select value from asset_state_store where key = ?", key)
        value = json.loads(found[0][0]) if found else None
    else:
        value = cursor_in_nats(nats_url, key)
    return None if value is None else ChangeCursor.parse(value)


def test_a_put_runs_the_dag_scheduled_on_the_watched_asset(
    airflow_services, store, bucket_name, nats_default
) -> None:
    dag_id, logs = airflow_services["dag_id"], airflow_services["logs"]
    query = airflow_services["db"].query
    # the triggerer runs the watcher once it has stored where its watch starts
    wait_for(
        lambda: stored_cursor(airflow_services["db"], nats_default, bucket_name),
        timeout=240,
        what="the asset watcher's trigger did not start",
        logs=logs,
    )
    if query("select 1 from sqlite_master where name = 'asset_watcher'"):
        watching = (
            "select t.classpath from trigger t join asset_watcher w on w.trigger_id = t.id"
            " where w.name = 'landing_csv'",
        )
    else:  # Airflow 3.1 links an asset to its triggers without the watcher's name
        watching = (
            "select t.classpath from trigger t join asset_trigger l on l.trigger_id = t.id"
            " join asset a on a.id = l.asset_id where a.uri = ?",
            f"nats://{bucket_name}/landing",
        )
    (classpath,) = wait_for(
        lambda: query(*watching),
        timeout=30,
        what="no trigger row for the watcher",
        logs=logs,
    )[0]
    assert classpath == "airflow_natsobj.triggers.object_store.NatsObjectChangeTrigger"
    store.put("landing/notes.txt", b"not a csv")
    put = store.put("landing/a.csv", b"x,y\n1,2\n")
    wait_for(
        lambda: query(
            "select 1 from dag_run where dag_id = ? and state in ('success', 'failed')", dag_id
        ),
        timeout=180,
        what="the asset-scheduled DAG did not run",
        logs=logs,
    )
    assert query("select state from dag_run where dag_id = ?", dag_id) == [("success",)], (
        _diagnosis(airflow_services["db"], dag_id, logs)
    )
    assert store.get_bytes("done/landing/a.csv") == b"x,y\n1,2\n"
    runs = query("select run_type from dag_run where dag_id = ?", dag_id)
    assert runs == [("asset_triggered",)]  # one put of a matching name, one run
    (extra,) = query(
        "select e.extra from asset_event e join asset a on a.id = e.asset_id where a.uri = ?",
        f"nats://{bucket_name}/landing",
    )[0]
    assert json.loads(extra)["payload"]["sequence"] == put.sequence


def test_the_natsobj_scheme_is_registered_and_builds_the_change_trigger() -> None:
    from airflow.providers.common.messaging.triggers.msg_queue import MessageQueueTrigger
    from airflow_natsobj.get_provider_info import get_provider_info

    assert get_provider_info()["queues"] == [
        "airflow_natsobj.queues.object_store.NatsObjectMessageQueueProvider"
    ]
    trigger = MessageQueueTrigger(
        scheme="natsobj", bucket="b", glob="in/*.csv", start_at="current", include_deletes="on"
    )
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_natsobj.triggers.object_store.NatsObjectChangeTrigger"
    assert (kwargs["glob"], kwargs["start_at"], kwargs["include_deletes"]) == (
        "in/*.csv",
        "current",
        True,
    )


def test_a_restarted_triggerer_runs_the_dag_once_per_put(
    airflow_services, store, bucket_name, nats_default
) -> None:
    """The triggerer is killed (SIGKILL to its process group, by its PID) and another started:
    the watcher resumes from its stored cursor, in the asset state store on Airflow 3.3.2 and
    in NATS before, so each put runs the DAG exactly once: none again, none missed, the one
    put while no triggerer ran included."""
    dag_id, logs, database = (airflow_services[k] for k in ("dag_id", "logs", "db"))
    query = database.query

    def cursor() -> ChangeCursor | None:
        return stored_cursor(database, nats_default, bucket_name)

    def runs_done(count: int) -> Callable[[], bool]:
        return lambda: (
            len(
                query(
                    "select 1 from dag_run where dag_id = ? and state in ('success', 'failed')",
                    dag_id,
                )
            )
            >= count
        )

    wait_for(cursor, timeout=240, what="the asset watcher's trigger did not start", logs=logs)
    first = store.put("landing/1.csv", b"1")
    wait_for(runs_done(1), timeout=180, what="the first put ran no DAG", logs=logs)
    wait_for(
        lambda: (cursor() or ChangeCursor(0)).sequence >= first.sequence,
        timeout=30,
        what="the trigger did not store its place after the first event",
        logs=logs,
    )

    killed = airflow_services["running"]["triggerer"]
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait(30)
    second = store.put("landing/2.csv", b"2")  # while no triggerer runs
    airflow_services["start"]("triggerer")
    wait_for(runs_done(2), timeout=180, what="the put made while down ran no DAG", logs=logs)
    third = store.put("landing/3.csv", b"3")
    wait_for(runs_done(3), timeout=180, what="the put after the restart ran no DAG", logs=logs)
    wait_for(
        lambda: (cursor() or ChangeCursor(0)).sequence >= third.sequence,
        timeout=30,
        what="the restarted trigger did not store its place",
        logs=logs,
    )

    diagnosis = _diagnosis(database, dag_id, logs)
    events = query(
        "select e.extra from asset_event e join asset a on a.id = e.asset_id where a.uri = ?"
        " order by e.id",
        f"nats://{bucket_name}/landing",
    )
    sequences = [json.loads(extra)["payload"]["sequence"] for (extra,) in events]
    assert sequences == [first.sequence, second.sequence, third.sequence], diagnosis
    # each run's task takes exactly one event (it unpacks one), and succeeded
    assert query("select state from dag_run where dag_id = ?", dag_id) == [("success",)] * 3, (
        diagnosis
    )
    for put in (first, second, third):
        assert store.get_bytes("done/" + put.name) == store.get_bytes(put.name)
