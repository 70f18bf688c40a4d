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
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="natsobj-airflow-"))
DAGS_DIR = AIRFLOW_HOME / "dags"
DAGS_DIR.mkdir()
REPO = Path(__file__).resolve().parents[2]
AIRFLOW_ENV = {
    "AIRFLOW_HOME": str(AIRFLOW_HOME),
    "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_DIR),
    "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{AIRFLOW_HOME / 'airflow.db'}",
    "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
}
os.environ.update(AIRFLOW_ENV)
AIRFLOW_BIN = str(Path(sys.executable).parent / "airflow")


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


@pytest.fixture
def run_airflow(nats_default: str):
    """Run the ``airflow`` CLI with the test environment; returns the CompletedProcess."""

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 240):
        full_env = {**os.environ, **(env or {})}
        return subprocess.run(
            [AIRFLOW_BIN, *args],
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=str(AIRFLOW_HOME),
        )

    return run


@pytest.fixture
def dag_file(nats_default: str):
    """Write DAG source into the dags folder under a unique dag id; returns the dag id."""
    written: list[Path] = []

    def write(source: str, dag_id: str | None = None) -> str:
        dag_id = dag_id or f"t_{uuid.uuid4().hex[:10]}"
        path = DAGS_DIR / f"{dag_id}.py"
        path.write_text(source.replace("DAG_ID", dag_id))
        written.append(path)
        return dag_id

    yield write
    for path in written:
        path.unlink(missing_ok=True)


def dags_test_output(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr
