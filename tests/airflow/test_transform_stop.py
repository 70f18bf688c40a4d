"""Issue 39, finding 16: ``NatsFileTransformOperator`` ran past ``execution_timeout`` for as
long as its script ran (it waited with no timeout, never stopped the script, had no
``on_kill``). Now the script's process group is stopped on Airflow's timeout and on
``on_kill``, its temporary files are removed and nothing is put.

The script starts a child (``sleep``) in its group and records both pids and the temporary
folder it was given, so the tests can see that the whole group is gone, not only the script.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from airflow.exceptions import AirflowException

from natsobj.errors import ObjectNotFound
from tests.airflow.conftest import AIRFLOW_HOME

# $1 source, $2 dest, $3 where to record "<script pid> <child pid> <temporary folder>";
# $4 "ignore-term": the script and its child ignore SIGTERM, so only SIGKILL stops them.
SCRIPT = """#!/bin/sh
if [ "$4" = ignore-term ]; then trap '' TERM; fi
sleep 300 &
echo "$$ $! $(dirname "$1")" > "$3.part" && mv "$3.part" "$3"
echo started
wait
"""

DAG = """
from datetime import datetime, timedelta
from airflow.sdk import DAG
from airflow_natsobj.operators.transform import NatsFileTransformOperator

with DAG("DAG_ID", schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
    NatsFileTransformOperator(
        task_id="transform",
        source_key="nats://BUCKET/in.csv",
        dest_key="nats://BUCKET/out.csv",
        transform_script="SCRIPT",
        script_args=["RECORD"],
        execution_timeout=timedelta(seconds=TIMEOUT),
    )
"""
TIMEOUT = 3


def write_script(folder: Path) -> Path:
    script = folder / "slow.sh"
    script.write_text(SCRIPT)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def recorded(record: Path) -> tuple[list[int], Path]:
    script, child, work = record.read_text().split()
    return [int(script), int(child)], Path(work)


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie has exited: it only waits to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def gone(pids: list[int], seconds: float = 10) -> bool:
    """Whether every one of ``pids`` has exited within ``seconds`` (a killed process's exit
    completes a moment after the signal)."""
    deadline = time.monotonic() + seconds
    while any(running(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)  # polling the processes' state, not waiting for a result
    return True


def kill_leftovers(record: Path) -> None:
    """What the old operator left running, so a failing run does not leak processes."""
    if record.exists():
        for pid in recorded(record)[0]:
            if running(pid):
                os.kill(pid, signal.SIGKILL)


def task_end(dag_id: str) -> float:
    """When the task ended, as a POSIX timestamp."""
    with sqlite3.connect(AIRFLOW_HOME / "airflow.db") as db:
        ((end,),) = db.execute(
            "select end_date from task_instance where dag_id = ?", (dag_id,)
        ).fetchall()
    ended = datetime.fromisoformat(end)
    return (ended if ended.tzinfo else ended.replace(tzinfo=UTC)).timestamp()


def test_execution_timeout_stops_the_script_removes_its_files_and_puts_nothing(
    run_dag, store, tmp_path
):
    from airflow_natsobj.operators.script import STOP_GRACE_SECONDS

    store.put("in.csv", b"a,1\n")
    record = tmp_path / "record"
    source = (
        DAG.replace("BUCKET", store.bucket)
        .replace("SCRIPT", str(write_script(tmp_path)))
        .replace("RECORD", str(record))
        .replace("TIMEOUT", str(TIMEOUT))
    )
    try:
        # The old operator waited out the script's sleep, far past this timeout of the run.
        run = run_dag(source, timeout=150)
        assert run.states == {"transform": "failed"}, run.output[-4000:]
        assert "AirflowTaskTimeout" in run.output, run.output[-4000:]
        # From the script's start (its record's time) to the task's end: the timeout, the
        # stop and Airflow's bookkeeping; the old operator's task lasted the script's sleep.
        ran = task_end(run.dag_id) - record.stat().st_mtime
        assert ran < TIMEOUT + STOP_GRACE_SECONDS + 20, ran
        pids, work = recorded(record)
        assert gone(pids)
        assert work.name.startswith("natsobj-transform-")
        assert not work.exists()
        with pytest.raises(ObjectNotFound):
            store.get_info("out.csv")
    finally:
        kill_leftovers(record)


def wait_for(path: Path, worker: threading.Thread, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert worker.is_alive(), "the task ended before its script started"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)  # polling for the script's record, not waiting for a result


@pytest.mark.parametrize("ignore_term", [False, True], ids=["sigterm", "sigkill-after-grace"])
def test_on_kill_stops_a_running_script(nats_default, store, tmp_path, ignore_term: bool):
    from airflow_natsobj.operators.script import STOP_GRACE_SECONDS
    from airflow_natsobj.operators.transform import NatsFileTransformOperator

    store.put("in.csv", b"a,1\n")
    record = tmp_path / f"record-{uuid.uuid4().hex[:6]}"
    operator = NatsFileTransformOperator(
        task_id="t",
        source_key=f"nats://{store.bucket}/in.csv",
        dest_key=f"nats://{store.bucket}/out.csv",
        transform_script=str(write_script(tmp_path)),
        script_args=[str(record), "ignore-term" if ignore_term else "-"],
    )
    raised: list[BaseException] = []

    def execute() -> None:
        try:
            operator.execute({})
        except BaseException as exc:
            raised.append(exc)

    worker = threading.Thread(target=execute, daemon=True)
    worker.start()
    try:
        wait_for(record, worker)
        pids, work = recorded(record)
        assert all(running(pid) for pid in pids)
        started = time.monotonic()
        operator.on_kill()
        # within the grace, so the task is done before Airflow's supervisor would SIGKILL it
        assert time.monotonic() - started < STOP_GRACE_SECONDS + 2
        worker.join(30)
        assert not worker.is_alive(), "execute still waits for the script after on_kill"
        (error,) = raised
        assert isinstance(error, AirflowException)
        assert "was stopped because the task was killed" in str(error)
        assert f"nothing was put to bucket {store.bucket!r}" in str(error)
        assert gone(pids)
        assert not work.exists()
        with pytest.raises(ObjectNotFound):
            store.get_info("out.csv")
    finally:
        kill_leftovers(record)


def test_a_script_line_without_end_comes_in_pieces(tmp_path):
    """The worker reads the script's output a bounded piece at a time: a script echoing an
    object with no newline in it made the operator hold (and log as one record) all of it."""
    from airflow_natsobj.log.lines import MAX_LINE_BYTES
    from airflow_natsobj.operators.script import ScriptProcess

    size = 3 * MAX_LINE_BYTES + 5
    echo = tmp_path / "echo.sh"
    echo.write_text(f"#!/bin/sh\nhead -c {size} /dev/zero | tr '\\0' x\necho\necho done\n")
    echo.chmod(echo.stat().st_mode | stat.S_IXUSR)
    with ScriptProcess([str(echo)]) as script:
        lines = list(script.lines())
        assert script.wait() == 0
    assert [len(line) for line in lines[:-1]] == [MAX_LINE_BYTES] * 3 + [5]
    assert set("".join(lines[:-1])) == {"x"}
    assert lines[-1] == "done"
