"""One local[2] SparkSession for all Spark tests, and the options that point it at the test
server. Python workers are started with this interpreter so they import this checkout."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from tests.spark.gateway import stop_spark_gateway
from tests.spark.served import monitored_server


@pytest.fixture(scope="session")
def spark() -> Iterator:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("natsobj-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    stop_spark_gateway()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A SparkSession made elsewhere in the run (the Dagster tests make one) is stopped too."""
    stop_spark_gateway()


@pytest.fixture
def options(nats_url: str, bucket_name: str) -> dict[str, str]:
    """Reader/writer options pointing at the test server and this test's bucket."""
    return {"url": nats_url, "bucket": bucket_name}


@pytest.fixture(scope="module")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A Spark standalone master and two one-core workers, separate JVMs on loopback."""
    from tests.spark.standalone import SparkStandalone

    standalone = SparkStandalone(tmp_path_factory.mktemp("spark-standalone"))
    standalone.start()
    yield standalone
    standalone.stop()


@pytest.fixture(scope="module")
def monitored(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A server of the module's own, and its monitoring port (``tests.spark.served``)."""
    with monitored_server(tmp_path_factory.mktemp("monitored")) as running:
        yield running
