"""Dagster test fixtures: an isolated DAGSTER_HOME, the resource on the session's real server,
and one local Spark session for the whole run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance, instance_for_test

from dagster_natsobj import NatsObjectStoreIOManager, NatsObjectStoreResource
from tests.spark.gateway import stop_spark_gateway


@pytest.fixture(scope="session", autouse=True)
def dagster_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("dagster_home")
    previous = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("DAGSTER_HOME", None)
    else:
        os.environ["DAGSTER_HOME"] = previous


@pytest.fixture
def instance() -> Iterator[DagsterInstance]:
    with instance_for_test() as inst:
        yield inst


@pytest.fixture
def nats_resource(nats_url: str) -> NatsObjectStoreResource:
    return NatsObjectStoreResource(url=nats_url)


@pytest.fixture
def io_manager(nats_resource: NatsObjectStoreResource, bucket_name: str) -> Iterator:
    """An IO manager writing to a fresh bucket (created on first use), deleted afterwards."""
    yield NatsObjectStoreIOManager(resource=nats_resource, bucket=bucket_name, prefix="pipe")
    with nats_resource.get_client() as client:
        if bucket_name in client.store_names():
            client.delete_store(bucket_name)


@pytest.fixture
def signed_io_manager(io_manager, nats_resource, bucket_name: str) -> NatsObjectStoreIOManager:
    """``io_manager`` with a pickle signing key: an untyped input then loads a pickle it wrote,
    because the signature (not the object's own metadata) vouches for it."""
    return NatsObjectStoreIOManager(
        resource=nats_resource, bucket=bucket_name, prefix="pipe", pickle_signing_key="test key"
    )


@pytest.fixture
def bucket_store(sync_client, io_manager, bucket_name: str):
    """The IO manager's bucket, for reading back what it wrote."""
    return sync_client.create_store(bucket_name)


@pytest.fixture(scope="session")
def spark() -> Iterator:
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("natsobj-dagster-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    yield session
    stop_spark_gateway()
