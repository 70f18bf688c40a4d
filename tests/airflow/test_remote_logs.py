"""Task logs in NATS through Airflow's own machinery: ``airflow dags test --use-executor`` runs
the task under the real task supervisor (a LocalExecutor worker talking to a real execution API
server), which uploads the log through ``[logging] logging_config_class =
airflow_natsobj.log.config.LOGGING_CONFIG``; Airflow's ``TaskLogReader`` then reads it back in
another process. Without the executor ``dags test`` runs tasks in line and uploads nothing.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from airflow_natsobj.log.lines import MAX_LINE_BYTES, log_lines
from airflow_natsobj.log.nats_task_handler import NatsRemoteLogIO

from natsobj.local.embedded import free_port
from tests.airflow.conftest import AIRFLOW_BIN, AIRFLOW_HOME, conn_json

PREFIX = "airflow-logs"
DAG = """
from datetime import datetime
from airflow.sdk import dag, task

@dag(dag_id="DAG_ID", schedule=None, start_date=datetime(2024, 1, 1), catchup=False)
def d():
    @task
    def speak():
        print("MARKER")

    speak()

d()
"""


@pytest.fixture(scope="module")
def execution_api(airflow_db: Path) -> Iterator[dict[str, str]]:
    """A real execution API server for the LocalExecutor's task supervisors; the environment
    that points ``dags test --use-executor`` at it."""
    port = free_port()
    env = {
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API_AUTH__JWT_SECRET": uuid.uuid4().hex,
    }
    out = AIRFLOW_HOME / "api-server.out"
    with out.open("wb") as sink:
        server = subprocess.Popen(
            [AIRFLOW_BIN, "api-server", "--apps", "execution", "-H", "127.0.0.1", "-p", str(port)],
            env={**os.environ, **env},
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=str(AIRFLOW_HOME),
            start_new_session=True,  # its workers go down with it
        )
    try:
        health = f"http://127.0.0.1:{port}/execution/health"
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, out.read_text()[-3000:]
            try:
                with urllib.request.urlopen(health, timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:  # not listening yet, or still starting up
                pass
            assert time.monotonic() < deadline, out.read_text()[-3000:]
            time.sleep(0.2)  # polling the server's readiness, not waiting for a result
        yield env
    finally:
        # a server still draining its connections after 30 s is killed, workers and all
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)


def remote_logging(bucket: str, **extra: str) -> dict[str, str]:
    return {
        "AIRFLOW__LOGGING__REMOTE_LOGGING": "True",
        "AIRFLOW__LOGGING__REMOTE_BASE_LOG_FOLDER": f"nats://{bucket}/{PREFIX}",
        "AIRFLOW__LOGGING__LOGGING_CONFIG_CLASS": "airflow_natsobj.log.config.LOGGING_CONFIG",
        **extra,
    }


READ_BACK = """
import json, sys
from sqlalchemy import select
from airflow.logging_config import configure_logging
from airflow.models.taskinstance import TaskInstance
from airflow.utils.log.log_reader import TaskLogReader
from airflow.utils.session import create_session

configure_logging()
with create_session() as session:
    ti = session.scalars(select(TaskInstance).where(TaskInstance.dag_id == sys.argv[1])).one()
    lines = list(TaskLogReader().read_log_stream(ti, ti.try_number, {}))
events = []
for line in lines:
    message = json.loads(line)
    events.append(message["event"])
    events.extend(message.get("sources") or ())  # Airflow 3.1 lists them in the group's line
print(json.dumps(events))
"""


def read_back(dag_id: str, env: dict[str, str]) -> list[str]:
    """The task's log as Airflow's own reader returns it, in a process of its own."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(READ_BACK), dag_id],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
        cwd=str(AIRFLOW_HOME),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def attempt_logs(dag_id: str) -> list[Path]:
    return sorted((AIRFLOW_HOME / "logs" / f"dag_id={dag_id}").rglob("attempt=*.log"))


def test_task_log_is_stored_in_nats_and_read_back_by_airflow(
    run_dag, execution_api, sync_client, store, bucket_name
):
    marker = f"natsobj-log-{uuid.uuid4().hex}"
    env = {
        **execution_api,
        **remote_logging(bucket_name, AIRFLOW__LOGGING__DELETE_LOCAL_LOGS="True"),
    }
    run = run_dag(DAG.replace("MARKER", marker), env=env, args=("--use-executor",))
    assert run.returncode == 0, run.output[-4000:]
    assert run.states == {"speak": "success"}

    names = [info.name for info in store.list(prefix=f"{PREFIX}/dag_id={run.dag_id}/")]
    assert len(names) == 1, names
    name = names[0]
    assert name.startswith(f"{PREFIX}/dag_id={run.dag_id}/run_id=")
    assert name.endswith("/task_id=speak/attempt=1.log")
    assert marker in store.get_bytes(name).decode()
    # delete_local_logs: what the reader shows can only have come from the store
    assert attempt_logs(run.dag_id) == []

    events = read_back(run.dag_id, env)
    assert f"nats://{bucket_name}/{name}" in events
    assert any(marker in event for event in events), events


def test_unreachable_store_keeps_the_local_log_and_the_task_succeeds(
    run_dag, execution_api, bucket_name
):
    marker = f"natsobj-log-{uuid.uuid4().hex}"
    down = f"nats://127.0.0.1:{free_port()}"  # nothing listens there
    env = {
        **execution_api,
        **remote_logging(bucket_name, AIRFLOW__LOGGING__REMOTE_LOG_CONN_ID="nats_logs_down"),
        "AIRFLOW_CONN_NATS_LOGS_DOWN": conn_json(down),
    }
    run = run_dag(DAG.replace("MARKER", marker), env=env, args=("--use-executor",))
    assert run.returncode == 0, run.output[-4000:]
    assert run.states == {"speak": "success"}
    assert f"Could not upload the task log to nats://{bucket_name}/{PREFIX}/" in run.output
    (local,) = attempt_logs(run.dag_id)
    assert marker in local.read_text()


# -- the IO on its own, against the real server -----------------------------------------------


def log_io(bucket: str, folder: Path) -> NatsRemoteLogIO:
    return NatsRemoteLogIO(remote_base=f"nats://{bucket}/{PREFIX}", base_log_folder=folder)


def test_an_attempt_resumed_after_deferral_appends_its_new_lines(nats_default, store, tmp_path):
    io = log_io(store.bucket, tmp_path)
    relative = "dag_id=d/run_id=r/task_id=t/attempt=1.log"
    local = tmp_path / relative
    local.parent.mkdir(parents=True)
    local.write_bytes(b"before deferral")  # no newline at the end
    io.upload(relative)
    assert local.read_bytes() == b""  # emptied, as S3's IO does, so lines are not sent twice
    with local.open("ab") as handle:  # the supervisor appends to the same file
        handle.write(b"after deferral\n")
    io.upload(local)  # absolute paths are taken too
    assert store.get_bytes(f"{PREFIX}/{relative}") == b"before deferral\nafter deferral\n"
    stored = store.get_info(f"{PREFIX}/{relative}")
    io.upload(relative)  # nothing new: the stored log is left as it is
    assert store.get_info(f"{PREFIX}/{relative}").sequence == stored.sequence


def test_a_missing_bucket_warns_and_keeps_the_local_log(nats_default, tmp_path, caplog):
    io = log_io(f"nope{uuid.uuid4().hex[:8]}", tmp_path)
    local = tmp_path / "attempt=1.log"
    local.write_text("kept\n")
    with caplog.at_level(logging.WARNING, logger="airflow_natsobj.log.nats_task_handler"):
        io.upload(local)
    assert local.read_text() == "kept\n"
    (record,) = caplog.records
    assert f"nats://{io.bucket}/{PREFIX}/attempt=1.log" in record.getMessage()
    assert io.bucket in record.getMessage()  # the error names the bucket that is missing


def test_a_large_log_streams_back_in_bounded_memory(nats_default, store, tmp_path):
    io = log_io(store.bucket, tmp_path)
    line = "x" * 1000
    count = 24 * 1024  # 24 MiB of log
    (tmp_path / "attempt=1.log").write_text((line + "\n") * count)
    io.upload("attempt=1.log")
    sources, streams = io.stream("attempt=1.log", ti=None)
    assert sources == [f"nats://{store.bucket}/{PREFIX}/attempt=1.log"]
    tracemalloc.start()
    try:
        seen = sum(1 for got in streams[0] if got == line)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seen == count
    assert peak < 12 * 1024 * 1024, peak  # half the log: the reader holds a window of it


@pytest.mark.parametrize("chunk", [1, 3, 4096])
def test_log_lines_splits_any_chunking_and_cuts_inside_a_character(chunk: int) -> None:
    """Lines split on any chunk boundary; a cut that falls inside a UTF-8 character leaves the
    character out and counts its bytes; bytes that are not UTF-8 read as U+FFFD."""
    text = "a\n\nbé".encode() + b"\xff" + "\nabcdé€f\nlast".encode()
    pieces = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    assert list(log_lines(pieces, limit=5)) == [
        "a",
        "",
        "bé\ufffd",
        "abcd [line cut at 5 bytes: 6 more bytes not shown]",
        "last",
    ]
    assert list(log_lines([b"x" * 7], limit=5)) == [
        "xxxxx [line cut at 5 bytes: 2 more bytes not shown]"
    ]
    assert list(log_lines([b"", b"a\n"])) == ["a"]


def read_timed(io: NatsRemoteLogIO, relative: str) -> tuple[list[str], float]:
    """One stored log's lines through the IO's stream and the seconds reading them took (not
    listing them)."""
    _, streams = io.stream(relative, ti=None)
    started = time.monotonic()
    lines = list(streams[0])
    return lines, time.monotonic() - started


def test_a_log_of_one_huge_line_reads_as_fast_as_normal_lines_and_is_cut(
    nats_default, store, tmp_path
):
    """Issue 39, finding 12: a bucket writer's log of one 64 MiB line took the reader time
    quadratic in the line (each chunk searched the whole line so far) and held it whole. Now
    it reads in about the time of a log of the same size in ordinary lines, in memory far below
    the line, and shows the line cut with a note."""
    io = log_io(store.bucket, tmp_path)
    size = 64 * 1024 * 1024
    ordinary = ("y" * 1023 + "\n").encode() * (size // 1024)
    store.put(f"{PREFIX}/ordinary.log", ordinary)
    store.put(f"{PREFIX}/huge.log", b"before\n" + b"x" * size + b"\nafter\n")
    del ordinary

    lines, baseline = read_timed(io, "ordinary.log")
    assert len(lines) == size // 1024
    del lines
    (before, cut, after), elapsed = read_timed(io, "huge.log")
    # Linear: about the ordinary log's time; the quadratic reader took many times as long.
    assert elapsed < 3 * baseline + 0.5, (elapsed, baseline)
    assert (before, after) == ("before", "after")
    assert cut.startswith("x" * MAX_LINE_BYTES)
    shown = size - MAX_LINE_BYTES
    assert (
        cut[MAX_LINE_BYTES:]
        == f" [line cut at {MAX_LINE_BYTES} bytes: {shown} more bytes not shown]"
    )

    _, streams = io.stream("huge.log", ti=None)
    tracemalloc.start()
    try:
        assert sum(1 for _ in streams[0]) == 3
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the read window and one cut line, far below the line: the reader never holds it
    assert peak < 16 * 1024 * 1024, peak


def test_a_logging_config_of_its_own_gets_the_io_from_the_provider(airflow_db, tmp_path):
    """A deployment's own logging module without REMOTE_TASK_LOG: an Airflow whose providers
    manager dispatches remote logging by scheme (3.3) finds the IO by the folder's scheme in the
    provider info (``remote-logging``). Airflow 3.1 and 3.2 take it only from the module, which
    then names the provider's (docs/airflow.md, "Remote task logs")."""
    from airflow import logging_config
    from airflow.providers_manager import ProvidersManager

    by_scheme = callable(getattr(ProvidersManager, "remote_logging_handler_by_scheme", None))
    (tmp_path / "site_logging.py").write_text(
        "from airflow_natsobj.log.config import LOGGING_CONFIG as BASE\n"
        + ("" if by_scheme else "from airflow_natsobj.log.config import REMOTE_TASK_LOG\n")
        + "LOGGING_CONFIG = dict(BASE)\n"
    )
    found = (  # 3.1 keeps the IO in a module attribute, 3.2 and later behind a function
        "from airflow.logging_config import get_remote_task_log\nio = get_remote_task_log()\n"
        if callable(getattr(logging_config, "get_remote_task_log", None))
        else "from airflow.logging_config import REMOTE_TASK_LOG as io\n"
    )
    probe = found + "print(type(io).__qualname__, io.bucket, io.prefix)\n"
    env = {
        **os.environ,
        **remote_logging(
            "sitelogs", AIRFLOW__LOGGING__LOGGING_CONFIG_CLASS="site_logging.LOGGING_CONFIG"
        ),
        "PYTHONPATH": os.pathsep.join((str(tmp_path), os.environ.get("PYTHONPATH", ""))),
    }
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == f"NatsRemoteLogIO sitelogs {PREFIX}"
