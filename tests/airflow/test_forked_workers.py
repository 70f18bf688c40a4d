"""Issue 39, finding 1, under Airflow: the LocalExecutor forks its workers, and each worker's
task supervisor forks the task, all after remote task logging imported natsobj. With one nuid
generator inherited by every fork, parallel tasks' puts and their log uploads drew the same
chunk subjects: objects were lost and task logs never reached the store. Here several tasks
run at once under ``airflow dags test --use-executor`` with remote logging on, and every
object and every task log is accounted for."""

from __future__ import annotations

import sqlite3
import uuid

from tests.airflow.conftest import AIRFLOW_HOME
from tests.airflow.test_remote_logs import PREFIX, execution_api, remote_logging

__all__ = ["execution_api"]  # the module's fixture: a real execution API server

TASKS = 4
DAG = """
from datetime import datetime
from airflow.sdk import dag, task
from airflow_natsobj.hooks.object_store import NatsObjectStoreHook

@dag(dag_id="DAG_ID", schedule=None, start_date=datetime(2024, 1, 1), catchup=False)
def d():
    @task
    def write(n: int):
        name = f"out/DAG_ID/{n}"
        print(f"MARKER-{n}")
        info = NatsObjectStoreHook().put("BUCKET", name, (name * 5000).encode())
        return info.nuid

    write.expand(n=list(range(TASKS)))

d()
"""


def test_parallel_tasks_keep_every_object_and_every_log(run_dag, execution_api, store, bucket_name):
    marker = f"forked-{uuid.uuid4().hex}"
    env = {
        **execution_api,
        **remote_logging(bucket_name, AIRFLOW__LOGGING__DELETE_LOCAL_LOGS="True"),
        "AIRFLOW__CORE__PARALLELISM": str(TASKS),
    }
    source = DAG.replace("MARKER", marker).replace("BUCKET", bucket_name)
    run = run_dag(source.replace("TASKS", str(TASKS)), env=env, args=("--use-executor",))
    assert run.returncode == 0, run.output[-4000:]
    assert _map_states(run.dag_id) == ["success"] * TASKS

    for n in range(TASKS):
        name = f"out/{run.dag_id}/{n}"
        assert store.get_bytes(name) == (name * 5000).encode()
    logs = sorted(info.name for info in store.list(prefix=f"{PREFIX}/dag_id={run.dag_id}/"))
    assert len(logs) == TASKS, logs
    found = {n for n in range(TASKS) for name in logs if f"{marker}-{n}" in _text(store, name)}
    assert found == set(range(TASKS))


def _text(store, name: str) -> str:
    return store.get_bytes(name).decode()


def _map_states(dag_id: str) -> list[str]:
    """Each mapped task instance's state, by map index."""
    with sqlite3.connect(AIRFLOW_HOME / "airflow.db") as db:
        rows = db.execute(
            "select state from task_instance where dag_id = ? order by map_index", (dag_id,)
        ).fetchall()
    return [state for (state,) in rows]
