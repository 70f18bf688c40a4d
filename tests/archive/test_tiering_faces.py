"""Offloaded objects read through from every face built on the core: fsspec, Airflow's
ObjectStoragePath, and the Dagster IO manager (each reads the bytes back from moto's S3)."""

from __future__ import annotations

import asyncio
import os
import subprocess

import fsspec
from airflow.sdk import ObjectStoragePath
from dagster import asset, materialize

import natsobj
from dagster_natsobj import NatsObjectStoreIOManager
from natsobj.archive import Archiver, ArchiveTarget
from natsobj.archive.tiering import offload
from tests.airflow.conftest import (  # noqa: F401  (airflow_db, nats_default are fixtures)
    AIRFLOW_BIN,
    REPO,
    airflow_db,
    nats_default,
    xcom,
)
from tests.dagster.conftest import dagster_home, nats_resource  # noqa: F401  (fixtures)


def archive_and_offload(url: str, bucket: str, target_url: str) -> list[str]:
    async def body() -> list[str]:
        async with await natsobj.aio.connect(url) as client:
            store = await client.store(bucket)
            target = ArchiveTarget(target_url)
            await Archiver(store, target, small_object=64 * 1024).run(once=True)
            return [info.name for info in (await offload(store, target)).offloaded]

    return asyncio.run(body())


def test_fsspec_reads_offloaded_objects(nats_url, store, archive_url):
    big, small = os.urandom(1_500_000), b"packed and small"
    store.put("dir/big.bin", big)
    store.put("dir/small.txt", small)
    assert archive_and_offload(nats_url, store.bucket, archive_url) == [
        "dir/big.bin",
        "dir/small.txt",
    ]
    fs = fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)
    assert fs.cat(f"{store.bucket}/dir/big.bin") == big
    with fs.open(f"{store.bucket}/dir/small.txt", "rb") as handle:
        assert handle.read() == small
    assert fs.info(f"{store.bucket}/dir/big.bin")["size"] == len(big)


def test_airflow_object_storage_path_reads_an_offloaded_object(
    nats_default,  # noqa: F811
    store,
    archive_url,
):
    data = os.urandom(300_000)
    store.put("reports/q1.bin", data)
    assert archive_and_offload(nats_default, store.bucket, archive_url) == ["reports/q1.bin"]
    path = ObjectStoragePath(f"nats://nats_default@{store.bucket}/reports/q1.bin")
    assert path.read_bytes() == data
    assert path.stat().st_size == len(data)


def test_dagster_asset_loads_an_offloaded_upstream_output(
    nats_url,
    nats_resource,  # noqa: F811
    bucket_name,
    sync_client,
    archive_url,
):
    payload = os.urandom(200_000)

    @asset
    def blob() -> bytes:
        return payload

    @asset
    def size_of(blob: bytes) -> int:
        return len(blob) if blob == payload else -1

    manager = NatsObjectStoreIOManager(resource=nats_resource, bucket=bucket_name, prefix="pipe")
    try:
        assert materialize([blob], resources={"io_manager": manager}).success
        offloaded = archive_and_offload(nats_url, bucket_name, archive_url)
        assert offloaded and all(name.startswith("pipe/") for name in offloaded)
        result = materialize(
            [blob, size_of], selection=[size_of], resources={"io_manager": manager}
        )
        assert result.success
        assert result.output_for_node("size_of") == len(payload)
    finally:
        sync_client.delete_store(bucket_name)


def test_airflow_example_dag_archives_then_offloads(
    nats_default,  # noqa: F811
    store,
    archive_url,
    s3_env,
):
    big = os.urandom(2 * 1024 * 1024)
    store.put("reports/big.bin", big)
    store.put("reports/small.txt", b"under the 1 MiB policy")
    env = {
        **os.environ,
        "NATSOBJ_DEMO_BUCKET": store.bucket,
        "NATSOBJ_ARCHIVE_TARGET": archive_url,
        "NATSOBJ_OFFLOAD_AFTER_DAYS": "0",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "example_dags"),
    }
    dag_file = str(REPO / "example_dags" / "airflow_offload.py")
    result = subprocess.run(
        [AIRFLOW_BIN, "dags", "test", "airflow_offload", "-f", dag_file],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    summary = xcom("airflow_offload", "offload")
    assert summary["offloaded"] == ["reports/big.bin"] and summary["bytes"] == len(big)
    assert store.get_info("reports/big.bin").offloaded
    assert not store.get_info("reports/small.txt").offloaded
    assert store.get_bytes("reports/big.bin") == big


def test_dagster_offload_job(nats_url, store, archive_url):
    from dagster import RunConfig

    from dagster_natsobj import NatsObjectStoreResource
    from dagster_natsobj.archive import (
        NatsArchiveConfig,
        NatsOffloadConfig,
        make_nats_archive_job,
        make_nats_offload_job,
    )

    data = os.urandom(100_000)
    store.put("models/weights.bin", data)
    store.put("logs/run.txt", b"not matched by the glob")
    resources = {"nats": NatsObjectStoreResource(url=nats_url)}
    archived = make_nats_archive_job("nats_archive").execute_in_process(
        run_config=RunConfig(
            ops={"nats_archive_pass": NatsArchiveConfig(bucket=store.bucket, target=archive_url)}
        ),
        resources=resources,
    )
    assert archived.success
    result = make_nats_offload_job("nats_offload").execute_in_process(
        run_config=RunConfig(
            ops={
                "nats_offload_pass": NatsOffloadConfig(
                    bucket=store.bucket, target=archive_url, glob="models/**"
                )
            }
        ),
        resources=resources,
    )
    assert result.success
    summary = result.output_for_node("nats_offload_pass")
    assert summary["offloaded"] == ["models/weights.bin"] and summary["bytes"] == len(data)
    assert store.get_info("models/weights.bin").offloaded
    assert not store.get_info("logs/run.txt").offloaded
    assert store.get_bytes("models/weights.bin") == data
