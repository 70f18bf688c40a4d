"""An archive on two S3 targets (two moto servers): replication, failover with the primary
stopped mid-run, and weighted sharding."""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest

import natsobj
from natsobj.archive import Archiver, ArchiveTarget, ArchiveTargets, S3Options, verify
from natsobj.archive.tiering import OffloadPolicy, offload
from tests.airflow.conftest import (  # noqa: F401  (airflow_db, nats_default, run_dag: fixtures)
    airflow_db,
    nats_default,
    run_airflow,
    run_dag,
)
from tests.archive.conftest import create_s3_bucket, s3_client, start_moto, stop_moto

SMALL = 64 * 1024  # versions under this go into packs


def target_url(endpoint: str) -> str:
    """A target on its own endpoint: the URL names it, so readers anywhere find the bytes."""
    return f"s3://{create_s3_bucket(endpoint)}/arch?endpoint={endpoint}"


def keys_in(url: str) -> set[str]:
    target = ArchiveTarget(url)
    listed = s3_client(target.options.endpoint).list_objects_v2(
        Bucket=target.bucket, Prefix=target.prefix + "/"
    )
    return {item["Key"].removeprefix(target.prefix + "/") for item in listed.get("Contents", [])}


def data_keys(url: str) -> set[str]:
    """The packs and version objects a target holds."""
    return {k for k in keys_in(url) if k.startswith(("packs/", "versions/"))}


async def with_store(nats_url: str, bucket: str, body):
    async with await natsobj.aio.connect(nats_url) as client:
        return await body(await client.store(bucket))


def test_a_target_counts_ranges_as_the_core_does(moto, s3_env):
    """One range convention in the package: a target's ``get_range`` and ``stream`` take
    ``[start, end)``, end exclusive, as ``ObjectStore.get_range`` and fsspec do (they took
    an offset and a length)."""
    target = ArchiveTarget(target_url(moto.endpoint))
    data = os.urandom(5000)

    async def body():
        await target.put_bytes("ranges/blob", data)
        streamed = b"".join([piece async for piece in target.stream("ranges/blob", 1000, 1200)])
        return (
            await target.get_range("ranges/blob", 1000, 1200),
            streamed,
            await target.get_range("ranges/blob", 7, 7),
        )

    assert asyncio.run(body()) == (data[1000:1200], data[1000:1200], b"")


def test_replication_every_target_holds_every_version(nats_url, store, moto, second_moto, s3_env):
    a, b = target_url(moto.endpoint), target_url(second_moto.endpoint)
    contents = {"big.bin": os.urandom(300_000), "s1": b"one", "s2": os.urandom(5000)}
    for name, data in contents.items():
        store.put(name, data)

    async def archive_then_offload(aio_store):
        targets = ArchiveTargets.parse([a, b], "replicate")
        await Archiver(aio_store, targets, small_object=SMALL).run(once=True)
        records = await targets.load_index()
        held = (keys_in(a), keys_in(b))
        # a version the second target lost is not offloaded; the others are
        big = next(r for r in records if r.name == "big.bin")
        s3_client(second_moto.endpoint).delete_object(
            Bucket=ArchiveTarget(b).bucket, Key=f"arch/{big.key}"
        )
        return held, records, await offload(aio_store, targets), await verify(targets)

    held, records, result, report = asyncio.run(
        with_store(nats_url, store.bucket, archive_then_offload)
    )

    assert held[0] == held[1]  # packs, versions, index segments, cursor
    assert {k.split("/")[0] for k in held[0]} == {"packs", "versions", "index", "cursor.json"}
    assert {r.name for r in records} == set(contents)
    assert all(r.targets.split() == [a, b] for r in records)
    assert sorted(i.name for i in result.offloaded) == ["s1", "s2"]
    assert [name for name, _ in result.skipped] == ["big.bin"]
    assert "big.bin" in {r.name for r, _ in report.bad}  # verify names the copy missing
    assert not store.get_info("big.bin").offloaded
    kept = store.get_info("s1").tiering.offload
    assert [kept.url, *kept.mirrors] == [a, b]

    # read-through takes the bytes from any target that answers: lose the first copy
    pack_key = store.get_info("s2").tiering.offload.key
    s3_client(moto.endpoint).delete_object(Bucket=ArchiveTarget(a).bucket, Key=f"arch/{pack_key}")
    for name, data in contents.items():
        assert store.get_bytes(name) == data


def test_failover_keeps_archiving_while_the_primary_is_down(
    nats_url, store, moto, second_moto, s3_env, tmp_path
):
    primary = target_url(second_moto.endpoint)
    standby = target_url(moto.endpoint)
    fast = S3Options(retry_seconds=2)  # a stopped endpoint fails within seconds
    targets = ArchiveTargets(
        [ArchiveTarget(primary, fast), ArchiveTarget(standby, fast)], "failover", probe_seconds=2
    )
    contents: dict[str, bytes] = {}
    restarted = []

    async def wait_archived(archiver: Archiver, aio_store) -> None:
        last = (await aio_store.status()).last_sequence
        deadline = time.monotonic() + 180
        while archiver.committed < last:
            assert time.monotonic() < deadline, f"archived through {archiver.committed} < {last}"
            await asyncio.sleep(0.2)

    async def put(aio_store, name: str) -> int:
        data = os.urandom(200_000 if len(contents) % 3 == 0 else 2000)
        contents[name] = data
        return int((await aio_store.put(name, data)).sequence)

    async def body(aio_store):
        archiver = Archiver(aio_store, targets, small_object=SMALL, pack_age=0.1, poll_interval=0.1)
        stop = asyncio.Event()
        running = asyncio.create_task(archiver.run(stop=stop))
        try:
            for i in range(6):
                await put(aio_store, f"before/{i}")
                await asyncio.sleep(0.1)
            second_moto.process.kill()  # the primary stops mid-run, uploads maybe in flight
            second_moto.process.wait(10)
            during = []
            for i in range(8):
                during.append(await put(aio_store, f"during/{i}"))
                await asyncio.sleep(0.1)
            await wait_archived(archiver, aio_store)

            records = {r.sequence: r for r in await targets.load_index()}
            assert set(during) <= set(records)
            assert all(records[s].targets == standby for s in during)
            assert {r.name for r in records.values()} == set(contents)
            offloaded = await offload(
                aio_store, targets, OffloadPolicy(names=frozenset(f"during/{i}" for i in range(8)))
            )
            assert len(offloaded.offloaded) == 8, offloaded.skipped
            for name, data in contents.items():  # offloaded ones read from the standby
                assert await aio_store.get_bytes(name) == data, name

            restarted.append(start_moto(tmp_path, second_moto.port))
            s3_client(second_moto.endpoint).create_bucket(Bucket=ArchiveTarget(primary).bucket)
            await asyncio.sleep(2.5)  # the primary is tried first again after probe_seconds
            after = [await put(aio_store, f"after/{i}") for i in range(4)]
            await wait_archived(archiver, aio_store)
        finally:
            stop.set()
            await running
        records = {r.sequence: r for r in await targets.load_index()}
        assert all(records[s].targets == primary for s in after)
        return records

    try:
        records = asyncio.run(with_store(nats_url, store.bucket, body))
    finally:
        for server in restarted:
            stop_moto(server)
    assert {r.name for r in records.values()} == set(contents)  # nothing lost
    for name, data in contents.items():
        assert store.get_bytes(name) == data, name


def test_weighted_sharding_spreads_versions_by_weight(nats_url, store, moto, second_moto, s3_env):
    heavy, light = target_url(moto.endpoint), target_url(second_moto.endpoint)
    contents = {f"obj/{i:03d}": os.urandom(3000 if i % 2 else 500) for i in range(48)}
    for name, data in contents.items():
        store.put(name, data)

    async def body(aio_store):
        targets = ArchiveTargets.parse([f"{heavy}=3", light], "shard")
        assert targets.url == f"shard {heavy}=3 {light}"
        # every pack holds one version, every larger version is its own object
        await Archiver(aio_store, targets, small_object=1000, pack_bytes=1).run(once=True)
        return await offload(aio_store, targets)

    result = asyncio.run(with_store(nats_url, store.bucket, body))

    on_heavy, on_light = data_keys(heavy), data_keys(light)
    assert not on_heavy & on_light
    assert len(on_heavy) + len(on_light) == len(contents)
    assert 0.55 * len(contents) <= len(on_heavy) <= 0.95 * len(contents)  # about 3:1
    assert len(result.offloaded) == len(contents)
    for name, data in contents.items():
        assert store.get_bytes(name) == data


def test_cli_archives_to_several_targets_and_remembers_them(
    nats_url, store, moto, second_moto, s3_env
):
    from click.testing import CliRunner

    from natsobj.cli.app import cli

    def invoke(*args: str):
        return CliRunner().invoke(cli, ["--url", nats_url, *args], catch_exceptions=False)

    a, b = target_url(moto.endpoint), target_url(second_moto.endpoint)
    store.put("report.csv", b"a,b\n1,2\n")
    undecided = invoke("archive", "run", store.bucket, "--to", a, "--to", b, "--once")
    assert undecided.exit_code != 0 and "need a strategy" in undecided.output

    ran = invoke(
        "archive", "run", store.bucket, "--to", a, "--target", b, "--strategy", "replicate",
        "--once",
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    assert data_keys(a) == data_keys(b) != set()

    status = invoke("archive", "status", store.bucket, "--json")  # the recorded configuration
    assert status.exit_code == 0, status.output
    assert json.loads(status.output)["target"] == f"replicate {a} {b}"
    assert json.loads(status.output)["versions"] == 1
    checked = invoke("archive", "verify", a, b, "--strategy", "replicate")
    assert checked.exit_code == 0 and "checked 2 versions" in checked.output, checked.output


def test_airflow_operators_pass_several_targets_through(
    run_dag,  # noqa: F811
    store,
    moto,
    second_moto,
    s3_env,
):
    a, b = target_url(moto.endpoint), target_url(second_moto.endpoint)
    store.put("x.bin", b"payload")
    result = run_dag(
        f"""
        from datetime import datetime
        from airflow.sdk import dag
        from airflow_natsobj.operators.archive import NatsArchiveOperator, NatsOffloadOperator

        @dag(schedule=None, start_date=datetime(2026, 1, 1))
        def DAG_ID():
            targets = ["{a}", "{b}"]
            archive = NatsArchiveOperator(
                task_id="archive", bucket="{store.bucket}", target=targets, strategy="replicate"
            )
            offload = NatsOffloadOperator(
                task_id="offload", bucket="{store.bucket}", target=targets, strategy="replicate"
            )
            archive >> offload

        DAG_ID()
        """
    )
    assert result.returncode == 0, result.output[-6000:]
    assert result.xcom("archive")["target"] == f"replicate {a} {b}"
    assert result.xcom("offload")["offloaded"] == ["x.bin"]
    assert data_keys(a) == data_keys(b) != set()
    kept = store.get_info("x.bin").tiering.offload
    assert [kept.url, *kept.mirrors] == [a, b]
    assert store.get_bytes("x.bin") == b"payload"


def test_dagster_archive_job_passes_several_targets_through(
    nats_url, store, moto, second_moto, s3_env
):
    from dagster import RunConfig

    from dagster_natsobj import NatsObjectStoreResource
    from dagster_natsobj.archive import NatsArchiveConfig, make_nats_archive_job

    a, b = target_url(moto.endpoint), target_url(second_moto.endpoint)
    store.put("model.pkl", b"weights")
    config = NatsArchiveConfig(
        bucket=store.bucket, target=a, more_targets=[b], strategy="replicate"
    )
    result = make_nats_archive_job("nats_archive").execute_in_process(
        run_config=RunConfig(ops={"nats_archive_pass": config}),
        resources={"nats": NatsObjectStoreResource(url=nats_url)},
    )
    assert result.success
    assert result.output_for_node("nats_archive_pass")["versions"] == 1
    assert data_keys(a) == data_keys(b) != set()


def test_configuration_reads_back_and_keeps_secrets_out_of_urls():
    spec = "shard s3://a/p?endpoint=http://127.0.0.1:9000=3 s3://b/p"
    targets = ArchiveTargets.parse(spec)
    assert targets.url == spec  # what the stream metadata records, read back by status
    assert [m.weight for m in targets.members] == [3.0, 1.0]
    assert targets.members[0].target.options.endpoint == "http://127.0.0.1:9000"
    assert ArchiveTargets.parse(["s3://a/p"], "replicate").url == "s3://a/p"  # one: as before
    with pytest.raises(ValueError, match="need a strategy"):
        ArchiveTargets.parse(["s3://a/p", "s3://b/p"])
    with pytest.raises(ValueError, match="named twice"):
        ArchiveTargets.parse(["s3://a/p", "s3://a/p"], "failover")
    with pytest.raises(ValueError, match="unknown setting secret_access_key") as raised:
        ArchiveTarget("s3://a/p?secret_access_key=TOPSECRET")
    assert "TOPSECRET" not in str(raised.value)
