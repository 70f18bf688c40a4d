"""Issue 40: the README's Spark tour, read from the README and run as written (its own
SparkSession, the embedded server in an empty directory; see tests/readme_tours.py)."""

from __future__ import annotations

from pathlib import Path

from tests import readme_tours


def test_the_spark_tour(tmp_path: Path) -> None:
    done = readme_tours.run("spark", tmp_path, timeout=480)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.left_running == [], done.left_running  # it stops what it started
    assert "|store|" in done.stdout and "|    6|" in done.stdout  # the seven stores' sums
    assert "sales/daily/_manifest.json" in done.stdout  # natsobj ls
