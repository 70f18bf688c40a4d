"""The archive of a versioned bucket records every version it keeps under its version id, and
a restore into a versioned bucket rebuilds them with the same ids (issue 43), against moto's
S3 server and a nats-server."""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from datetime import timedelta

import pytest

import natsobj
from natsobj.archive import Archiver, ArchiveTarget, load_index, restore
from natsobj.archive import index as layout
from natsobj.archive.tiering import OffloadPolicy, offload
from natsobj.names import version_subject
from natsobj.versioning import VERSION_SEQUENCE, VERSION_TIME, utcnow

SMALL = 64 * 1024  # archived objects under this go into packs; larger ones are uploaded alone


async def _archive(url: str, bucket: str, target_url: str) -> None:
    async with await natsobj.aio.connect(url) as client:
        store = await client.store(bucket)
        await Archiver(store, ArchiveTarget(target_url), small_object=SMALL).run(once=True)


async def _restore(url: str, target_url: str, bucket: str, at=None):
    async with await natsobj.aio.connect(url) as client:
        return await restore(client, ArchiveTarget(target_url), bucket, at=at)


def _listing(store) -> list[tuple[str, str, bool, bool]]:
    return [(v.info.name, v.info.nuid, v.is_latest, v.info.delete_marker) for v in store.versions()]


def _versioned_store(sync_client, name: str):
    restored = sync_client.create_store(name)
    restored.set_versioning("Enabled")
    return restored


def test_a_restore_into_a_versioned_bucket_keeps_every_version_and_its_id(
    nats_url, store, sync_client, archive_url, bucket_name
) -> None:
    store.set_versioning("Enabled")
    big = os.urandom(SMALL + 4099)
    first = store.put("report.csv", b"first")
    store.put("report.csv", big)
    asyncio.run(_archive(nats_url, store.bucket, archive_url))  # sees these two current
    store.put("report.csv", b"third")
    store.put("report.csv", b"fourth")  # three overwrites
    marker = store.delete("report.csv")
    removed = store.put("notes.txt", b"removed for good")
    store.put("notes.txt", b"stays")
    store.delete("notes.txt", version=removed.nuid)  # no lock: removed
    asyncio.run(_archive(nats_url, store.bucket, archive_url))
    before = _listing(store)
    assert len(before) == 6  # four versions and a marker of one name, one of the other
    assert ("report.csv", marker.nuid, True, True) in before

    rows = asyncio.run(load_index(ArchiveTarget(archive_url)))
    archived = Counter(row.nuid for row in rows if row.kind in (layout.PUT, layout.DELETE))
    # the removed version was gone before a pass saw it: only its removal is indexed
    assert set(archived) == {nuid for _, nuid, _, _ in before}
    assert set(archived.values()) == {1}  # each version once, by its id
    assert [row.nuid for row in rows if row.kind == layout.REMOVED] == [removed.nuid]

    restored = _versioned_store(sync_client, f"{bucket_name}-dr")
    try:
        asyncio.run(_restore(nats_url, archive_url, restored.bucket))
        assert _listing(restored) == before
        for name, nuid, _, delete_marker in before:
            if not delete_marker:
                expected = store.get_bytes(name, version=nuid)
                assert restored.get_bytes(name, version=nuid) == expected
        assert restored.get_bytes("report.csv", version=first.nuid) == b"first"
        with pytest.raises(natsobj.ObjectNotFound):
            restored.get_bytes("report.csv")  # the delete marker is current
        assert restored.get_bytes("notes.txt") == b"stays"
        with pytest.raises(natsobj.ObjectNotFound):
            restored.get_bytes("notes.txt", version=removed.nuid)
    finally:
        sync_client.delete_store(restored.bucket)


def test_a_restore_at_a_time_picks_the_versions_as_they_were_then(
    nats_url, store, sync_client, archive_url, bucket_name
) -> None:
    store.set_versioning("Enabled")
    first = store.put("a", b"one")
    second = store.put("a", b"two")
    then = store.get_info("a").mtime
    store.put("a", b"three")
    asyncio.run(_archive(nats_url, store.bucket, archive_url))
    store.delete("a", version=first.nuid)  # removed after it was archived
    asyncio.run(_archive(nats_url, store.bucket, archive_url))

    restored = _versioned_store(sync_client, f"{bucket_name}-then")
    try:
        asyncio.run(_restore(nats_url, archive_url, restored.bucket, at=then))
        assert [(nuid, latest) for _, nuid, latest, _ in _listing(restored)] == [
            (second.nuid, True),
            (first.nuid, False),
        ]
        assert restored.get_bytes("a") == b"two"
        assert restored.get_bytes("a", version=first.nuid) == b"one"
    finally:
        sync_client.delete_store(restored.bucket)
    latest = _versioned_store(sync_client, f"{bucket_name}-now")
    try:
        asyncio.run(_restore(nats_url, archive_url, latest.bucket))
        assert _listing(latest) == _listing(store)  # the removed version stays out
        assert first.nuid not in {nuid for _, nuid, _, _ in _listing(latest)}
    finally:
        sync_client.delete_store(latest.bucket)


def test_a_version_replaced_before_the_first_pass_is_archived_and_tiered(
    nats_url, store, archive_url
) -> None:
    store.set_versioning("Enabled")
    early = store.put("model.bin", b"replaced before any archiver pass")
    store.put("model.bin", b"current")
    asyncio.run(_archive(nats_url, store.bucket, archive_url))

    rows = asyncio.run(load_index(ArchiveTarget(archive_url)))
    [kept] = [row for row in rows if row.nuid == early.nuid]
    assert kept.kind == layout.PUT and kept.sequence == early.sequence and kept.key

    async def tier():
        async with await natsobj.aio.connect(nats_url) as client:
            s = await client.store(store.bucket)
            policy = OffloadPolicy(noncurrent_older_than=timedelta(days=30))
            return await offload(
                s, ArchiveTarget(archive_url), policy, now=utcnow() + timedelta(days=31)
            )

    result = asyncio.run(tier())
    assert [info.nuid for info in result.noncurrent] == [early.nuid], result.skipped
    assert store.get_bytes("model.bin", version=early.nuid) == b"replaced before any archiver pass"


def test_a_restore_into_an_unversioned_bucket_brings_back_current_versions_anew(
    nats_url, store, sync_client, archive_url, bucket_name
) -> None:
    store.set_versioning("Enabled")
    store.put("a", b"old")
    current = store.put("a", b"new")
    store.put("gone", b"x")
    store.delete("gone")
    asyncio.run(_archive(nats_url, store.bucket, archive_url))

    result = asyncio.run(_restore(nats_url, archive_url, f"{bucket_name}-flat"))
    restored = sync_client.store(result.bucket)
    try:
        assert [info.name for info in restored.list()] == ["a"]
        assert restored.get_bytes("a") == b"new"
        assert restored.get_info("a").nuid != current.nuid  # put anew, as before
    finally:
        sync_client.delete_store(result.bucket)


@pytest.mark.parametrize("atomic_max_bytes", [None, 0], ids=["atomic", "windowed"])
def test_a_put_under_a_taken_version_id_writes_nothing_over_it(
    nats_url, store, atomic_max_bytes
) -> None:
    store.set_versioning("Enabled")
    taken = store.put("a", b"the version there")

    async def put_over() -> None:
        async with await natsobj.aio.connect(nats_url) as client:
            s = await client.store(store.bucket)
            s.atomic_max_bytes = atomic_max_bytes
            await s.put("b", b"other bytes", _version=taken.nuid)

    with pytest.raises(natsobj.ObjectExists, match=taken.nuid):
        asyncio.run(put_over())
    assert store.get_bytes("a", version=taken.nuid) == b"the version there"
    assert [v.info.name for v in store.versions()] == ["a"]


def test_a_kept_record_claiming_another_versions_sequence_costs_it_nothing(
    nats_url, store, archive_url, raw
) -> None:
    """A writer of the bucket can publish a kept record claiming a meta sequence not yet
    written; the version later written there is archived, the claim is not."""
    store.set_versioning("Enabled")
    real = store.put("a", b"real bytes")
    forged_id = "F" * 22
    record = real.evolve(nuid=forged_id).encode()
    claim = int(real.sequence or 0) + 4  # the forged record is next, then three puts
    raw.publish(
        version_subject(store.bucket, "a", forged_id),
        record,
        headers={VERSION_TIME: real.mtime.isoformat(), VERSION_SEQUENCE: str(claim)},
    )
    victim = store.put("n0", b"")
    for i in range(1, 4):
        if victim.sequence >= claim:
            break
        victim = store.put(f"n{i}", b"")
    assert victim.sequence == claim  # the claim names the victim's own sequence
    asyncio.run(_archive(nats_url, store.bucket, archive_url))

    rows = asyncio.run(load_index(ArchiveTarget(archive_url)))
    assert forged_id not in {row.nuid for row in rows}
    [at_claim] = [row for row in rows if row.sequence == claim]
    assert (at_claim.name, at_claim.nuid) == (victim.name, victim.nuid)
