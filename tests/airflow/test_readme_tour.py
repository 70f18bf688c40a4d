"""Issue 40: the README's Airflow tour, read from the README and run as written: its own
AIRFLOW_HOME and nats_default (not this suite's), ``airflow dags test`` with the deferrable
sensor, the embedded server in an empty directory (see tests/readme_tours.py)."""

from __future__ import annotations

from pathlib import Path

from tests import readme_tours


def test_the_airflow_tour(tmp_path: Path) -> None:
    done = readme_tours.run("airflow", tmp_path, timeout=480)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.left_running == [], done.left_running  # it stops what it started
    assert "GOT hello" in done.stdout  # the task read the object the DAG put
    assert "greetings/hi.txt" in done.stdout  # natsobj ls
