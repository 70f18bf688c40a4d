"""A real Airflow for the provider tests: a sqlite metadata DB under a temporary AIRFLOW_HOME,
migrated once per session, and ``nats_default`` pointing at the session's nats-server through
``AIRFLOW_CONN_NATS_DEFAULT``.

Airflow reads its configuration when first imported, so the environment is set when this file
is loaded, before any test module imports ``airflow``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="natsobj-airflow-"))
DAGS_DIR = AIRFLOW_HOME / "dags"
DAGS_DIR.mkdir()
PLUGINS_DIR = AIRFLOW_HOME / "plugins"
PLUGINS_DIR.mkdir()
# A hook lineage reader switches Airflow's collector on, so tasks can assert their lineage.
(PLUGINS_DIR / "lineage_reader.py").write_text(
    "from airflow.plugins_manager import AirflowPlugin\n"
    "from airflow_natsobj.lineage import HookLineageReader\n\n\n"
    "class TestLineageReader(HookLineageReader):\n    pass\n\n\n"
    "class TestLineagePlugin(AirflowPlugin):\n"
    "    name = 'test_lineage'\n"
    "    hook_lineage_readers = [TestLineageReader]\n"
)
REPO = Path(__file__).resolve().parents[2]
AIRFLOW_ENV = {
    "AIRFLOW_HOME": str(AIRFLOW_HOME),
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_DIR),
    "AIRFLOW__CORE__PLUGINS_FOLDER": str(PLUGINS_DIR),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_HOME / 'airflow.db'}",
    "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
}
os.environ.update(AIRFLOW_ENV)
AIRFLOW_BIN = str(Path(sys.executable).parent / "airflow")
# ``airflow dags test --use-executor`` before apache/airflow#59314 (task SDK 1.1.6, Airflow
# 3.1.6) reads the executor's finished tasks through a session that still holds them as
# running, and fails a task that ended while its loop slept as killed externally: parallel
# tasks hit it on nearly every run. There the command runs with that fix (the session expired
# first) applied; the executor, its workers and the task supervisors are Airflow's own.
DAGS_TEST_EXPIRES_SESSION = Version(version("apache-airflow-task-sdk")) >= Version("1.1.6")
AIRFLOW_WITH_FRESH_EXECUTOR_EVENTS = """
import functools, sys
from airflow.jobs.scheduler_job_runner import SchedulerJobRunner

process = SchedulerJobRunner.process_executor_events.__func__

@functools.wraps(process)
def expired_first(cls, *args, session, **kwargs):
    session.expire_all()
    return process(cls, *args, session=session, **kwargs)

SchedulerJobRunner.process_executor_events = classmethod(expired_first)
from airflow.__main__ import main
sys.exit(main())
"""


def conn_json(url: str, **extra: Any) -> str:
    doc: dict[str, Any] = {"conn_type": "nats", "host": url}
    if extra:
        doc["extra"] = extra
    return json.dumps(doc)


@pytest.fixture(scope="session")
def airflow_db() -> Iterator[Path]:
    """``airflow db migrate`` once; every test in the session shares the database."""
    result = subprocess.run(
        [AIRFLOW_BIN, "db", "migrate"],
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    yield AIRFLOW_HOME
    shutil.rmtree(AIRFLOW_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def nats_default(nats_url: str, airflow_db: Path) -> str:
    """``nats_default`` for in-process tasks and for every ``airflow`` subprocess."""
    os.environ["AIRFLOW_CONN_NATS_DEFAULT"] = conn_json(nats_url)
    return nats_url


@pytest.fixture(scope="module")
def hook(nats_default: str):
    """A hook on ``nats_default``, shared by a module's tests of the hook's own methods."""
    from airflow_natsobj.hooks.object_store import NatsObjectStoreHook

    with NatsObjectStoreHook() as hook:
        yield hook


@pytest.fixture
def run_airflow(nats_default: str):
    """Run the ``airflow`` CLI with the test environment; returns the CompletedProcess."""

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 240):
        """A run past ``timeout`` fails the test with what it printed, its process group
        (executor workers, task supervisors) killed with it instead of left running."""
        airflow = [AIRFLOW_BIN]
        if (
            args[:2] == ("dags", "test")
            and "--use-executor" in args
            and not DAGS_TEST_EXPIRES_SESSION
        ):
            airflow = [sys.executable, "-c", AIRFLOW_WITH_FRESH_EXECUTOR_EVENTS]
        process = subprocess.Popen(
            [*airflow, *args],
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=str(AIRFLOW_HOME),
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            pytest.fail(
                f"airflow {' '.join(args)} did not end within {timeout}s; it printed:\n"
                f"{stdout[-6000:]}\n--- stderr\n{stderr[-6000:]}"
            )
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

    return run


@dataclass
class DagRunResult:
    dag_id: str
    returncode: int
    output: str

    @property
    def states(self) -> dict[str, str]:
        return task_states(self.dag_id)

    def xcom(self, task_id: str, key: str = "return_value") -> Any:
        return xcom(self.dag_id, task_id, key)


@pytest.fixture
def run_dag(run_airflow):
    """Write DAG source (``DAG_ID`` is replaced by a unique id) and run ``airflow dags test``
    (``args``: more of its options, e.g. ``--use-executor``)."""
    written: list[Path] = []

    def run(
        source: str,
        env: dict[str, str] | None = None,
        timeout: float = 240,
        args: tuple[str, ...] = (),
    ) -> DagRunResult:
        dag_id = f"t_{uuid.uuid4().hex[:10]}"
        path = DAGS_DIR / f"{dag_id}.py"
        path.write_text(textwrap.dedent(source).replace("DAG_ID", dag_id))
        written.append(path)
        result = run_airflow(
            "dags", "test", dag_id, "-f", str(path), *args, env=env, timeout=timeout
        )
        return DagRunResult(dag_id, result.returncode, result.stdout + result.stderr)

    yield run
    for path in written:
        path.unlink(missing_ok=True)


def _query(sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(AIRFLOW_HOME / "airflow.db") as db:
        return db.execute(sql, args).fetchall()


def task_states(dag_id: str) -> dict[str, str]:
    return dict(_query("select task_id, state from task_instance where dag_id = ?", dag_id))


def xcom(dag_id: str, task_id: str, key: str = "return_value") -> Any:
    rows = _query(
        "select value from xcom where dag_id = ? and task_id = ? and key = ?", dag_id, task_id, key
    )
    assert rows, f"no XCom {key!r} from {dag_id}.{task_id}"
    value = rows[0][0]  # sqlite hands JSON numbers back as numbers
    return json.loads(value) if isinstance(value, str | bytes) else value


def asset_event_extras(uri: str) -> list[dict[str, Any]]:
    rows = _query(
        "select e.extra from asset_event e join asset a on a.id = e.asset_id where a.uri = ?"
        " order by e.id",
        uri,
    )
    return [json.loads(extra) for (extra,) in rows]
