"""Tiering the versions a versioned bucket keeps (S3's NoncurrentVersionTransition): a kept
version noncurrent long enough is offloaded to the archive and read back through
``get(name, version=)``, against moto's S3 server and a nats-server. Ages are an injected
clock (``offload(now=)``)."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

import pytest

import natsobj
from natsobj.archive import Archiver, ArchiveTarget
from natsobj.archive.tiering import OffloadPolicy, offload
from natsobj.names import chunk_subject
from natsobj.versioning import utcnow

SMALL = 256 * 1024  # archived objects under this go into packs


async def _archive(url: str, bucket: str, target_url: str) -> None:
    """One archiver pass, as a running archiver makes one after each write (it archives the
    versions it sees current; docs/archive.md)."""
    async with await natsobj.aio.connect(url) as client:
        store = await client.store(bucket)
        await Archiver(store, ArchiveTarget(target_url), small_object=SMALL).run(once=True)


def _offload(url: str, bucket: str, target_url: str, policy: OffloadPolicy, now=None):
    async def work():
        async with await natsobj.aio.connect(url) as client:
            store = await client.store(bucket)
            return await offload(store, ArchiveTarget(target_url), policy, now=now)

    return asyncio.run(work())


def test_noncurrent_versions_are_offloaded_after_their_age_and_read_through(
    nats_url, store, archive_url, raw
) -> None:
    store.set_versioning("Enabled")
    big, small, latest = os.urandom(3 * 1024 * 1024 + 7), os.urandom(3000), b"current"
    first = store.put("model.bin", big)
    asyncio.run(_archive(nats_url, store.bucket, archive_url))
    second = store.put("model.bin", small)
    asyncio.run(_archive(nats_url, store.bucket, archive_url))
    store.put("model.bin", latest)
    policy = OffloadPolicy(noncurrent_older_than=timedelta(days=30))

    early = _offload(nats_url, store.bucket, archive_url, policy)
    assert early.noncurrent == [] and early.offloaded == []  # the current one: no older_than

    later = _offload(nats_url, store.bucket, archive_url, policy, now=utcnow() + timedelta(days=31))
    assert later.skipped == [], later.skipped
    assert sorted(info.nuid for info in later.noncurrent) == sorted([first.nuid, second.nuid])
    assert later.offloaded == []  # the current version stays in JetStream
    assert later.bytes == len(big) + len(small)
    for kept in (first, second):
        assert raw.subject_count(store.bucket, chunk_subject(store.bucket, kept.nuid)) == 0
        assert store.get_info("model.bin", version=kept.nuid).offloaded
    assert store.get_bytes("model.bin", version=first.nuid) == big
    assert store.get_bytes("model.bin", version=second.nuid) == small
    assert store.get_bytes("model.bin") == latest
    listed = store.versions()
    assert [v.lost for v in listed] == [False, False, False]
    assert [v.info.offloaded for v in listed] == [False, True, True]

    again = _offload(nats_url, store.bucket, archive_url, policy, now=utcnow() + timedelta(days=31))
    assert again.noncurrent == []
    assert {why for _name, why in again.skipped} == {"already offloaded"}

    # removing the current version makes an offloaded one current: still read through
    store.delete("model.bin", version=store.get_info("model.bin").nuid)
    assert store.get_bytes("model.bin") == small


def test_a_version_the_archive_does_not_hold_is_not_offloaded(nats_url, store, archive_url):
    store.set_versioning("Enabled")
    old = store.put("a", b"old bytes")
    store.put("a", b"new bytes")

    async def without_archiving():
        async with await natsobj.aio.connect(nats_url) as client:
            s = await client.store(store.bucket)
            policy = OffloadPolicy(noncurrent_older_than=timedelta(0))
            return await offload(s, ArchiveTarget(archive_url), policy)

    result = asyncio.run(without_archiving())
    assert result.noncurrent == []
    assert result.skipped == [
        (f"a version {old.nuid}", "this version is not in the archive yet: run the archiver first")
    ]
    assert store.get_bytes("a", version=old.nuid) == b"old bytes"
    with pytest.raises(natsobj.ObjectNotFound):
        store.get_bytes("a", version="A" * 22)
