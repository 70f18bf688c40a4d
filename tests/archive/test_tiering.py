"""Offload to the S3 archive and read-through, against moto's S3 server and a nats-server."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

import natsobj
from natsobj.archive import Archiver, ArchiveTarget, load_index
from natsobj.archive.tiering import OffloadPolicy, offload, rehydrate
from natsobj.errors import DigestMismatch
from natsobj.model import OFFLOADED_LINK_BUCKET, digest_of
from tests.archive.conftest import s3_client

PEER = Path(__file__).resolve().parents[1] / "interop_js"
SMALL = 256 * 1024  # archived objects under this go into packs


def run(coro):
    return asyncio.run(coro)


async def archive_and_offload(url: str, bucket: str, target_url: str, policy=None):
    async with await natsobj.aio.connect(url) as client:
        store = await client.store(bucket)
        target = ArchiveTarget(target_url)
        await Archiver(store, target, small_object=SMALL).run(once=True)
        return await offload(store, target, policy)


async def with_store(url: str, bucket: str, body):
    async with await natsobj.aio.connect(url) as client:
        return await body(await client.store(bucket))


def test_offloaded_objects_read_through_and_the_stream_shrinks(
    nats_url, store, archive_url, tmp_path
):
    big = os.urandom(3 * 1024 * 1024 + 5)  # a version object of its own in the archive
    small = os.urandom(3000)  # inside a pack: read with a ranged GET
    before_big = store.put(
        "data/big.bin", big, headers={"Content-Type": "x/y"}, metadata={"k": "v"}
    )
    before_small = store.put("data/small.bin", small, description="tiny")
    size_before = store.status().size

    result = run(archive_and_offload(nats_url, store.bucket, archive_url))

    assert sorted(i.name for i in result.offloaded) == ["data/big.bin", "data/small.bin"]
    assert result.bytes == len(big) + len(small)
    # the chunks are gone from JetStream: the stream's byte count drops by at least the
    # offloaded bytes, less what the two restating meta records add
    meta_growth = sum(len(i.encode()) for i in result.offloaded) - sum(
        len(i.encode()) for i in (before_big, before_small)
    )
    status = store.status(count_offloaded=True)
    assert size_before - status.size >= result.bytes - meta_growth
    assert status.size < size_before - len(big)
    assert (status.offloaded_objects, status.offloaded_bytes) == (2, len(big) + len(small))
    assert store.status().offloaded_bytes is None  # counted only when asked

    info = store.get_info("data/big.bin")
    assert info.offloaded and not info.is_link
    assert (info.size, info.digest, info.headers, info.metadata) == (
        len(big),
        digest_of(big),
        {"Content-Type": ["x/y"]},
        {"k": "v"},
    )
    assert info.mtime == before_big.mtime or abs(info.mtime - before_big.mtime) < timedelta(
        seconds=1
    )
    assert store.get_info("data/small.bin").description == "tiny"

    assert store.get_bytes("data/big.bin") == big
    assert store.get_bytes("data/small.bin") == small
    store.get_file("data/big.bin", tmp_path / "big.bin")
    assert (tmp_path / "big.bin").read_bytes() == big

    async def streamed(aio_store):
        async with aio_store.get("data/big.bin") as reader:
            first = await reader.read(1000)
            return first + await reader.read()

    assert run(with_store(nats_url, store.bucket, streamed)) == big
    assert [i.name for i in store.list() if i.offloaded] == ["data/big.bin", "data/small.bin"]


def test_read_through_verifies_the_digest(nats_url, store, archive_url):
    store.put("doc", b"the real bytes")
    run(archive_and_offload(nats_url, store.bucket, archive_url))
    offload_info = store.get_info("doc").tiering.offload
    target = ArchiveTarget(offload_info.url)
    pack = bytearray(run(target.get_bytes(offload_info.key)))
    pack[offload_info.offset] ^= 0xFF
    run(target.put_bytes(offload_info.key, bytes(pack)))
    with pytest.raises(DigestMismatch, match="do not match"):
        store.get_bytes("doc")


def test_rehydrate_brings_the_bytes_back(nats_url, store, archive_url):
    data = os.urandom(600_000)
    original = store.put("report.csv", data, metadata={"owner": "etl"})
    run(archive_and_offload(nats_url, store.bucket, archive_url))
    offloaded_size = store.status().size

    back = run(with_store(nats_url, store.bucket, lambda s: rehydrate(s, "report.csv")))

    assert not back.offloaded
    info = store.get_info("report.csv")
    assert not info.offloaded and info.digest == original.digest
    assert info.metadata == {"owner": "etl"}
    assert store.status().size >= offloaded_size + len(data)
    assert store.get_bytes("report.csv") == data
    # rehydrating a resident object changes nothing
    again = run(with_store(nats_url, store.bucket, lambda s: rehydrate(s, "report.csv")))
    assert again.sequence == info.sequence


def test_watches_and_changes_do_not_see_offload_or_rehydrate_as_versions(
    nats_url, store, archive_url
):
    first = store.put("a.bin", os.urandom(5000))

    async def body(aio_store):
        cursor = first.sequence
        watcher = aio_store.watch(start="latest")
        await watcher.start()
        target = ArchiveTarget(archive_url)
        await Archiver(aio_store, target, small_object=SMALL).run(once=True)
        await offload(aio_store, target)
        await rehydrate(aio_store, "a.bin")
        await offload(aio_store, target)
        seen_by_cursor = await aio_store.changes(cursor)
        await aio_store.put("b.bin", b"a real new version")
        live = await watcher.next(timeout=30)
        await watcher.stop()
        from_scratch = await aio_store.changes(0)
        return seen_by_cursor, live, from_scratch

    seen_by_cursor, live, from_scratch = run(with_store(nats_url, store.bucket, body))
    assert list(seen_by_cursor) == []
    assert seen_by_cursor.last_sequence > first.sequence
    assert live is not None and live.name == "b.bin"
    # a consumer that never saw the version gets it (the record restating it), once
    assert [i.name for i in from_scratch] == ["a.bin", "b.bin"]
    assert from_scratch[0].offloaded


def test_only_archived_current_versions_are_offloaded(nats_url, store, archive_url):
    store.put("old.bin", b"x" * 100)
    store.put("keep.bin", b"y" * 100)

    async def body(aio_store):
        target = ArchiveTarget(archive_url)
        await Archiver(aio_store, target, small_object=SMALL).run(once=True)
        await aio_store.put("old.bin", b"changed after the archive ran")
        await aio_store.put("new.bin", b"never archived")
        return await offload(aio_store, target, OffloadPolicy(glob="*.bin", larger_than=10))

    result = run(with_store(nats_url, store.bucket, body))
    assert [i.name for i in result.offloaded] == ["keep.bin"]
    assert {name for name, _ in result.skipped} == {"old.bin", "new.bin"}
    assert all("not in the archive" in why for _, why in result.skipped)
    assert store.get_bytes("old.bin") == b"changed after the archive ran"


def test_policy_by_age_size_glob_and_name(nats_url, store, archive_url):
    store.put("logs/a.txt", b"a" * 2000)
    store.put("logs/b.bin", b"b" * 10)
    store.put("other/c.txt", b"c" * 2000)

    async def body(aio_store):
        target = ArchiveTarget(archive_url)
        await Archiver(aio_store, target, small_object=SMALL).run(once=True)
        young = await offload(aio_store, target, OffloadPolicy(older_than=timedelta(days=30)))
        dry = await offload(
            aio_store, target, OffloadPolicy(glob="logs/*", larger_than=100), dry_run=True
        )
        named = await offload(aio_store, target, OffloadPolicy(names=frozenset({"other/c.txt"})))
        return young, dry, named

    young, dry, named = run(with_store(nats_url, store.bucket, body))
    assert young.offloaded == []
    assert dry.dry_run and [i.name for i in dry.offloaded] == ["logs/a.txt"]
    assert not store.get_info("logs/a.txt").offloaded  # a dry run changes nothing
    assert [i.name for i in named.offloaded] == ["other/c.txt"]


def test_javascript_client_fails_cleanly_on_an_offloaded_object(
    nats_url, store, archive_url, tmp_path
):
    """nats.js follows the record's link to a bucket that never exists and reports it; it
    never hangs on the purged chunks nor writes short data."""
    store.put("cold.bin", os.urandom(400_000))
    run(archive_and_offload(nats_url, store.bucket, archive_url))
    node = shutil.which("node")
    assert node, "Node.js is required for the JavaScript interop tests"
    out = tmp_path / "out.bin"
    result = subprocess.run(
        [node, str(PEER / "peer.mjs"), "get", nats_url, store.bucket, "cold.bin", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=PEER,
    )
    assert result.returncode != 0
    assert not out.exists()
    assert "not found" in result.stderr.lower() or "no object" in result.stderr.lower()
    info = subprocess.run(
        [node, str(PEER / "peer.mjs"), "info", nats_url, store.bucket, "cold.bin"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=PEER,
    )
    assert info.returncode == 0, info.stderr
    assert OFFLOADED_LINK_BUCKET in info.stdout


def test_offload_leaves_the_s3_archive_untouched(nats_url, store, archive_url):
    store.put("x.bin", os.urandom(1000))
    target_keys_before = None

    async def keys():
        return await ArchiveTarget(archive_url).list("")

    run(archive_and_offload(nats_url, store.bucket, archive_url))
    target_keys_before = run(keys())
    assert store.get_bytes("x.bin")
    assert run(keys()) == target_keys_before
    assert s3_client()  # the endpoint stays reachable for the read-through above


def test_a_second_archive_copies_offloaded_versions_from_the_first(
    nats_url, store, archive_url, moto
):
    """An archiver whose cursor is behind the offload reads the version through from S3."""
    from tests.archive.conftest import create_s3_bucket

    data = os.urandom(400_000)
    store.put("shared.bin", data)
    run(archive_and_offload(nats_url, store.bucket, archive_url))
    second_url = f"s3://{create_s3_bucket(moto.endpoint)}/second"

    async def body():
        async with await natsobj.aio.connect(nats_url) as client:
            second = ArchiveTarget(second_url)
            await Archiver(await client.store(store.bucket), second, small_object=SMALL).run(
                once=True
            )
            records = await load_index(second)
            first = records[0]
            return records, await second.get_range(
                first.key, first.offset, first.offset + len(data)
            )

    records, copied = run(body())
    assert [(r.name, r.kind, r.digest) for r in records] == [("shared.bin", "put", digest_of(data))]
    assert copied == data
