"""Issue 40: the README's Dagster tour, read from the README and run as written, with no
DAGSTER_HOME but the one the tour sets (the suite's is removed): before, the tour's
``dagster sensor start`` needed one the tour never set. The sensor's tick is
``dagster sensor preview``, which ends where ``dagster dev`` would run until stopped."""

from __future__ import annotations

from pathlib import Path

from tests import readme_tours


def test_the_dagster_tour(tmp_path: Path) -> None:
    done = readme_tours.run("dagster", tmp_path, timeout=480)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.left_running == [], done.left_running  # it stops what it started
    assert "tour/cities" in done.stdout and "tour/warm" in done.stdout  # natsobj ls
    assert "in/a.csv" in done.stdout  # the sensor's run request names the object
