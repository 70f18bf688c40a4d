"""Faults: the archiver killed mid-upload, the S3 endpoint down, NATS restarted, and a
version whose bytes were gone before it could be archived."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import natsobj
from natsobj.archive import Archiver, ArchiveTarget, S3Options, archive_status, load_index, verify
from natsobj.archive import index as layout
from natsobj.local.embedded import NatsServerProcess
from natsobj.model import digest_of
from tests.archive.conftest import s3_client
from tests.archive.proxy import ToggleProxy

MiB = 1024 * 1024


def wait_for(condition, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def in_progress_uploads(endpoint: str, bucket: str) -> list:
    return s3_client(endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", [])


def archive_cli(nats_url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "natsobj.cli", "--url", nats_url, "archive", *args]


def assert_complete(target: ArchiveTarget, expected: dict[str, bytes]) -> None:
    """Every name's latest archived version is the expected bytes, each sequence once."""
    records = asyncio.run(load_index(target))
    latest = {r.name: r for r in records if r.kind in ("put", "meta")}
    assert sorted(latest) == sorted(expected)
    for name, data in expected.items():
        assert latest[name].digest == digest_of(data), name
    report = asyncio.run(verify(target))
    assert report.ok and report.duplicates == 0, report.bad


def test_kill_9_mid_upload_then_restart_resumes(nats_url, store, archive_url, moto, tmp_path):
    expected = {f"big/{i}": os.urandom(24 * MiB) for i in range(3)}
    expected |= {f"small/{i:03d}": os.urandom(2048) for i in range(40)}
    for name, data in expected.items():
        store.put(name, data)
    s3_bucket = archive_url.split("/")[2]
    log = (tmp_path / "archiver.log").open("wb")
    first = subprocess.Popen(
        archive_cli(nats_url, "run", store.bucket, "--to", archive_url, "--pack-age", "0.2"),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(
            lambda: first.poll() is None and in_progress_uploads(moto.endpoint, s3_bucket),
            120,
            "a multipart upload in progress",
            interval=0.05,
        )
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    assert first.returncode == -signal.SIGKILL, (tmp_path / "archiver.log").read_text()

    second = subprocess.run(
        archive_cli(nats_url, "run", store.bucket, "--to", archive_url, "--once"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert second.returncode == 0, second.stderr
    assert_complete(ArchiveTarget(archive_url), expected)
    # a third pass finds nothing new and adds no segment
    target = ArchiveTarget(archive_url)
    before = asyncio.run(layout.segment_keys(target))
    third = subprocess.run(
        archive_cli(nats_url, "run", store.bucket, "--to", archive_url, "--once"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert third.returncode == 0, third.stderr
    assert asyncio.run(layout.segment_keys(target)) == before


def test_s3_down_retries_lag_grows_then_catches_up(nats_url, store, archive_url, moto):
    proxy = ToggleProxy(moto.port)
    direct = ArchiveTarget(archive_url)
    expected: dict[str, bytes] = {}

    async def body() -> None:
        async with await natsobj.aio.connect(nats_url) as client:
            aio_store = await client.store(store.bucket)
            via_proxy = ArchiveTarget(
                archive_url, S3Options(endpoint=proxy.endpoint, retry_seconds=1.0)
            )
            archiver = Archiver(aio_store, via_proxy, pack_age=0.2, poll_interval=0.2)
            stop = asyncio.Event()
            running = asyncio.ensure_future(archiver.run(stop=stop))

            async def put(name: str, data: bytes) -> None:
                await aio_store.put(name, data)
                expected[name] = data

            async def lag() -> int:
                return (await archive_status(aio_store, direct)).lag_sequences

            async def until(check, what: str, timeout: float = 120) -> None:
                deadline = time.monotonic() + timeout
                while not await check():
                    assert not running.done(), running.exception()
                    assert time.monotonic() < deadline, f"timed out waiting for {what}"
                    await asyncio.sleep(0.2)

            for i in range(5):
                await put(f"before/{i}", os.urandom(5000))
            await until(lambda: _zero(lag()), "the first catch-up")

            proxy.down()
            for i in range(5):
                await put(f"during/{i}", os.urandom(5000))
            await put("during/big", os.urandom(9 * MiB))
            await asyncio.sleep(4)  # several failed attempts with backoff
            assert await lag() > 0, "the lag should grow while S3 is down"
            assert not running.done()

            proxy.up()
            await until(lambda: _zero(lag()), "catching up after S3 came back")
            stop.set()
            await running

    try:
        asyncio.run(body())
    finally:
        proxy.close()
    assert_complete(direct, expected)


async def _zero(value) -> bool:
    return await value == 0


@pytest.fixture
def own_server(tmp_path):
    server = NatsServerProcess(tmp_path / "nats")
    server.start()
    yield server
    server.kill()


def test_nats_restart_the_archiver_carries_on(own_server, archive_url, bucket_name):
    expected: dict[str, bytes] = {}

    async def body() -> None:
        async with await natsobj.aio.connect(own_server.url, api_timeout=2.0) as client:
            aio_store = await client.create_store(bucket_name)
            target = ArchiveTarget(archive_url)
            archiver = Archiver(aio_store, target, pack_age=0.2, poll_interval=0.2)
            stop = asyncio.Event()
            running = asyncio.ensure_future(archiver.run(stop=stop))
            for i in range(5):
                expected[f"a/{i}"] = os.urandom(3000)
                await aio_store.put(f"a/{i}", expected[f"a/{i}"])
            await asyncio.to_thread(own_server.restart)
            for _attempt in range(60):  # writes fail until the client has reconnected
                try:
                    expected["b/after"] = os.urandom(3000)
                    await aio_store.put("b/after", expected["b/after"])
                    break
                except natsobj.NatsObjError:
                    await asyncio.sleep(0.5)
            else:
                raise AssertionError("could not write after the restart")
            deadline = time.monotonic() + 120
            while (await archive_status(aio_store, target)).lag_sequences:
                assert not running.done(), running.exception()
                assert time.monotonic() < deadline, "archiver did not catch up"
                await asyncio.sleep(0.3)
            stop.set()
            await running

    asyncio.run(body())
    assert_complete(ArchiveTarget(archive_url), expected)


def test_version_purged_before_archiving_is_reported_skipped(nats_url, store, archive_url):
    async def body():
        async with await natsobj.aio.connect(nats_url) as client:
            aio_store = await client.store(store.bucket)
            archiver = Archiver(aio_store, ArchiveTarget(archive_url))
            await archiver.open()
            first = await aio_store.put("x", os.urandom(300_000))
            seen = await aio_store.changes(archiver.committed)
            await aio_store.put("x", b"second")  # purges the first version's chunks
            await archiver.archive_changes(seen)
            await archiver.flush()
            await archiver.run(once=True)
            return first, archiver.totals, await archiver.targets.load_index()

    first, totals, records = asyncio.run(body())
    assert totals.skipped == [first.sequence]
    skipped, second = records
    assert (skipped.kind, skipped.sequence, skipped.name) == ("skipped", first.sequence, "x")
    assert skipped.key == "" and "not archived" in skipped.description
    assert (second.kind, second.digest) == ("put", digest_of(b"second"))


def test_restore_after_the_nats_data_directory_is_deleted(tmp_path, archive_url):
    """Fill a store, archive it, lose the server's data, restore, every digest verifies."""
    data_dir = tmp_path / "nats"
    server = NatsServerProcess(data_dir)
    server.start()
    port = server.port
    expected = {f"small/{i:03d}": os.urandom(1000 + i) for i in range(120)}
    expected |= {f"large/{i}": os.urandom(6 * MiB + i) for i in range(2)}
    meta = {"owner": "pipeline", "run": "42"}
    try:
        client = natsobj.connect(server.url)
        store = client.create_store("precious")
        for name, data in expected.items():
            store.put(name, data, metadata=meta, headers={"Content-Type": "application/x"})
        client.close()
        done = subprocess.run(
            archive_cli(server.url, "run", "precious", "--to", archive_url, "--once"),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert "122 versions" in done.stdout

        server.stop()
        _remove_tree(data_dir / "jetstream")
        server = NatsServerProcess(data_dir, port=port)
        server.start()
        client = natsobj.connect(server.url)
        assert client.store_names() == []
        client.close()

        done = subprocess.run(
            archive_cli(server.url, "restore", archive_url, "--to", "precious"),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert "restored 122 objects" in done.stdout
        client = natsobj.connect(server.url)
        restored = client.store("precious")
        infos = {i.name: i for i in restored.list()}
        assert sorted(infos) == sorted(expected)
        for name, data in expected.items():
            assert infos[name].digest == digest_of(data)
            assert infos[name].metadata == meta
            assert infos[name].headers == {"Content-Type": ["application/x"]}
            assert restored.get_bytes(name) == data  # the reader verifies the digest too
        client.close()
    finally:
        server.kill()


def _remove_tree(path: Path) -> None:
    import shutil

    assert path.exists(), f"expected the server's JetStream data in {path}"
    shutil.rmtree(path)
