"""Expiring objects and the archive (moto's S3 server and a real nats-server): an expiry is
indexed as ``expired``, not as a user's delete, so restore brings the object back; and
tiering never offloads an object that expires within its margin, while one it offloads keeps
its expiry."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta

import pytest

import natsobj
from natsobj.archive import Archiver, ArchiveTarget, load_index, restore
from natsobj.archive import index as layout
from natsobj.archive.tiering import OffloadPolicy, offload, rehydrate
from natsobj.errors import ObjectNotFound


def run(coro):
    return asyncio.run(coro)


async def _archive(url: str, bucket: str, target_url: str):
    async with await natsobj.aio.connect(url) as client:
        store = await client.store(bucket)
        return await Archiver(store, ArchiveTarget(target_url)).run(once=True)


async def _restore(url: str, target_url: str, bucket: str):
    async with await natsobj.aio.connect(url) as client:
        return await restore(client, ArchiveTarget(target_url), bucket)


def _wait_gone(store, name: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            store.get_info(name)
        except ObjectNotFound:
            return
        time.sleep(0.5)
    pytest.fail(f"{name} did not expire within {seconds} s")


def test_an_expiry_is_not_a_delete_and_restore_brings_the_object_back(
    nats_url, sync_client, bucket_name, archive_url
):
    # the delete-marker TTL is the shortest TTL a bucket allows: 1 s keeps the test short
    store = sync_client.create_store(bucket_name, delete_marker_ttl=1)
    restored = f"{bucket_name}-dr"
    try:
        store.put("tmp/scratch.bin", b"s" * 5000, ttl=2, metadata={"k": "v"})
        store.put("keep/deleted.txt", b"deleted by a user")
        store.put("keep/model.bin", b"m" * 3000)
        run(_archive(nats_url, bucket_name, archive_url))  # the expiring version is archived

        store.delete("keep/deleted.txt")
        _wait_gone(store, "tmp/scratch.bin")
        totals = run(_archive(nats_url, bucket_name, archive_url))

        records = run(load_index(ArchiveTarget(archive_url)))
        kinds = {(r.name, r.kind) for r in records}
        assert ("tmp/scratch.bin", layout.EXPIRED) in kinds
        assert ("tmp/scratch.bin", layout.DELETE) not in kinds
        assert ("keep/deleted.txt", layout.DELETE) in kinds
        assert totals.expired == 1 and totals.deletes == 1

        result = run(_restore(nats_url, archive_url, restored))
        assert result.objects == 2
        back = sync_client.store(restored)
        assert back.get_bytes("tmp/scratch.bin") == b"s" * 5000
        assert back.get_info("tmp/scratch.bin").metadata == {"k": "v"}
        assert back.get_info("tmp/scratch.bin").expires is None  # restored without a TTL
        assert back.get_bytes("keep/model.bin") == b"m" * 3000
        with pytest.raises(ObjectNotFound):
            back.get_info("keep/deleted.txt")
    finally:
        for name in (bucket_name, restored):
            if name in sync_client.store_names():
                sync_client.delete_store(name)


async def _archive_late(url: str, bucket: str, target_url: str) -> list[layout.ArchiveRecord]:
    """Take the changes while the object lives, and archive them once its chunks are gone
    (an archiver that read the record just before the TTL ran out)."""
    async with await natsobj.aio.connect(url) as client:
        store = await client.store(bucket)
        changes = await store.changes(0)
        assert [i.name for i in changes] == ["short.bin"]
        deadline = time.monotonic() + 60
        while (await store.status()).size > 100_000 and time.monotonic() < deadline:
            await asyncio.sleep(0.5)  # the chunks expire a grace after the record
        archiver = Archiver(store, ArchiveTarget(target_url))
        await archiver.open()
        await archiver.archive_changes(changes)
        await archiver.flush()
    return await load_index(ArchiveTarget(target_url))


def test_a_version_whose_chunks_expired_before_the_archiver_read_them_is_skipped(
    nats_url, sync_client, bucket_name, archive_url
):
    store = sync_client.create_store(bucket_name, delete_marker_ttl=1)
    try:
        store.put("short.bin", b"x" * 300_000, ttl=1)
        (record,) = run(_archive_late(nats_url, bucket_name, archive_url))
        assert record.kind == layout.SKIPPED and "not archived" in record.description
    finally:
        sync_client.delete_store(bucket_name)


async def _offload(url: str, bucket: str, target_url: str, policy: OffloadPolicy):
    async with await natsobj.aio.connect(url) as client:
        store = await client.store(bucket)
        return await offload(store, ArchiveTarget(target_url), policy)


async def _rehydrate(url: str, bucket: str, name: str):
    async with await natsobj.aio.connect(url) as client:
        return await rehydrate(await client.store(bucket), name)


def test_tiering_skips_objects_expiring_within_the_margin_and_keeps_expiry_of_others(
    nats_url, store, archive_url
):
    big = b"b" * 200_000
    store.put("soon.bin", big, ttl=timedelta(hours=2))
    store.put("later.bin", big, ttl=timedelta(days=3))
    store.put("never.bin", big)
    run(_archive(nats_url, store.bucket, archive_url))
    later_expires = store.get_info("later.bin").expires

    result = run(_offload(nats_url, store.bucket, archive_url, OffloadPolicy()))  # margin 1 day
    assert sorted(i.name for i in result.offloaded) == ["later.bin", "never.bin"]
    ((name, why),) = result.skipped
    assert name == "soon.bin" and "within the expiry margin" in why
    assert not store.get_info("soon.bin").offloaded

    offloaded = store.get_info("later.bin")
    assert offloaded.offloaded
    # the restating record goes when the version would have: same expiry, to the second
    assert abs((offloaded.expires - later_expires).total_seconds()) <= 2
    assert store.get_info("never.bin").expires is None
    assert store.get_bytes("later.bin") == big  # read through from S3

    narrower = OffloadPolicy(expiry_margin=timedelta(hours=1))
    result = run(_offload(nats_url, store.bucket, archive_url, narrower))
    assert [i.name for i in result.offloaded] == ["soon.bin"]

    back = run(_rehydrate(nats_url, store.bucket, "later.bin"))
    assert not back.offloaded
    info = store.get_info("later.bin")
    assert not info.offloaded and abs((info.expires - later_expires).total_seconds()) <= 2
    assert store.get_bytes("later.bin") == big
    assert info.expires > datetime.now(UTC) + timedelta(days=2)


def test_cli_offload_expiry_margin_and_run_summary(nats_url, store, archive_url):
    from click.testing import CliRunner

    from natsobj.cli.app import cli

    def invoke(*args: str):
        return CliRunner().invoke(cli, ["--url", nats_url, *args], catch_exceptions=False)

    store.put("a.bin", b"a" * 200_000, ttl=timedelta(hours=5))
    ran = invoke("archive", "run", store.bucket, "--to", archive_url, "--once")
    assert ran.exit_code == 0 and "0 expiries" in ran.output, ran.output

    default = invoke("archive", "offload", store.bucket, "--dry-run", "--json")
    assert default.exit_code == 0, default.output
    (skipped,) = json.loads(default.output)["skipped"]
    assert skipped["name"] == "a.bin" and "expiry margin" in skipped["reason"]
    narrow = invoke("archive", "offload", store.bucket, "--expiry-margin", "4h", "--dry-run")
    assert narrow.exit_code == 0 and "would offload a.bin" in narrow.output, narrow.output
