"""Issue 40: the README's tours run exactly as written. Each is read from README.md (the
blocks marked ``<!-- tour: NAME -->``, see tests/readme_tours.py) and run in an empty
directory with the embedded server the tours say they use. Before, the Python tour put a
``model.bin`` that nothing created, the Dagster tour's ``dagster sensor start`` needed a
``DAGSTER_HOME`` it never set, and the pandas/pyarrow/polars route had no tour at all.

The Spark, Airflow and Dagster tours run beside their faces' suites
(tests/spark/test_readme_tour.py, tests/airflow/test_readme_tour.py,
tests/dagster/test_readme_tour.py); this module holds the rest and holds that every tour has a
test."""

from __future__ import annotations

import socket
from pathlib import Path

from tests import readme_tours

FACE_TESTS = {"spark": "spark", "airflow": "airflow", "dagster": "dagster"}


def test_every_tour_in_the_readme_has_a_test() -> None:
    here = {"python", "data-stack", "cli", "gateway"}
    assert set(readme_tours.tours()) == here | set(FACE_TESTS), readme_tours.tours()
    for folder in FACE_TESTS.values():
        assert (Path(__file__).parents[1] / folder / "test_readme_tour.py").exists(), folder


def test_the_readme_stays_short() -> None:
    assert len(readme_tours.README.read_bytes()) <= 12 * 1024


def test_the_python_tour(tmp_path: Path) -> None:
    done = readme_tours.run("python", tmp_path, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.left_running == [], done.left_running  # it stops what it started
    assert "b'id,total\\n1,42\\n'" in done.stdout
    assert "['models/big.bin']" in done.stdout
    assert (tmp_path / "copy.bin").read_bytes() == (tmp_path / "model.bin").read_bytes()
    assert "reports/day.csv" in done.stdout and "models/big.bin" in done.stdout  # natsobj ls


def test_the_data_stack_tour(tmp_path: Path) -> None:
    done = readme_tours.run("data-stack", tmp_path, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.left_running == [], done.left_running  # it stops what it started
    out = done.stdout
    assert "4.25" in out  # pandas read the frame back
    assert "\n3\n" in out  # pyarrow's num_rows
    assert "shape: (2, 2)" in out  # polars kept the rows of store 1


def test_the_cli_tour(tmp_path: Path) -> None:
    done = readme_tours.run("cli", tmp_path, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.left_running == [], done.left_running  # it stops what it started
    assert (tmp_path / "restored" / "summary.csv").read_text() == "id,total\n"
    assert "models/" in done.stdout and "stage" in done.stdout


def test_the_gateway_tour(tmp_path: Path) -> None:
    with socket.socket() as probe:  # the tour's gateway listens on S3's usual local port
        taken = probe.connect_ex(("127.0.0.1", 9000)) == 0
    assert not taken, "127.0.0.1:9000 is taken: the gateway tour needs it"
    done = readme_tours.run("gateway", tmp_path, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.left_running == [], done.left_running  # it stops what it started
    assert done.stdout.count("day,amount\nmon,3\n") == 2  # through NATS, then the presigned URL
