"""A green run ends with its summary: no ``--- Logging error ---`` from py4j after it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

A_SPARK_TEST = """
import logging
import sys

from tests.spark.conftest import spark  # noqa: F401  # the suite's own session fixture


def test_a_query(spark):
    # what a test that logs to stderr leaves behind: a handler on pytest's captured stream
    logging.getLogger().addHandler(logging.StreamHandler(sys.stderr))
    logging.getLogger().setLevel(logging.INFO)
    assert spark.range(3).count() == 3
"""


def test_a_run_that_used_spark_exits_without_a_logging_error(tmp_path: Path) -> None:
    """Issue 28: py4j's connections, left open by a stopped session, were closed at
    interpreter exit, after pytest had closed the streams its capture logged to."""
    (tmp_path / "test_one_query.py").write_text(A_SPARK_TEST)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "providers")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "Logging error" not in done.stdout + done.stderr, done.stderr
