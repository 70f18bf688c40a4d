"""Archive and restore against moto's S3 server and a real nats-server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os

import pyarrow.parquet as pq

import natsobj
from natsobj.archive import Archiver, ArchiveTarget, ArchiveTargets, load_index, restore, verify
from natsobj.archive import index as layout
from natsobj.model import digest_of
from tests.archive.conftest import s3_client


def run(coro):
    return asyncio.run(coro)


async def archive_once(url: str, bucket: str, target_url: str, **options) -> ArchiveTarget:
    async with await natsobj.aio.connect(url) as client:
        store = await client.store(bucket)
        target = ArchiveTarget(target_url)
        await Archiver(store, target, **options).run(once=True)
        return target


def test_every_version_is_archived_with_its_meta(nats_url, store, archive_url):
    store.put("a.txt", b"one", headers={"Content-Type": "text/plain"}, metadata={"k": "v"})
    store.put("a.txt", b"two", description="second")
    store.update_meta("a.txt", metadata={"k": "w"})
    big = os.urandom(9 * 1024 * 1024 + 17)  # over one 8 MiB part: a real multipart upload
    store.put("big.bin", big)
    store.delete("a.txt")

    target = run(archive_once(nats_url, store.bucket, archive_url, small_object=1024 * 1024))
    records = run(load_index(target))
    # each meta record rolls up the name's previous one: a version replaced before the
    # archiver first ran is not in the stream any more; what is there is all archived
    assert [(r.name, r.kind) for r in records] == [("big.bin", "put"), ("a.txt", "delete")]
    big_record = records[0]
    assert big_record.key == layout.version_key(big_record.sequence)
    assert big_record.length == len(big) and big_record.digest == digest_of(big)
    assert run(target.get_range(big_record.key, 0, len(big))) == big
    assert target.counts.multipart_puts == 1
    # uploaded with S3 SHA-256 checksums: moto keeps the multipart upload's composite one
    head = s3_client().head_object(
        Bucket=target.bucket, Key=f"{target.prefix}/{big_record.key}", ChecksumMode="ENABLED"
    )
    assert head.get("ChecksumSHA256")


def test_versions_seen_by_a_running_archiver_are_all_kept(nats_url, store, archive_url):
    """Overwrites and deletes in NATS never destroy archived versions."""

    async def body() -> list:
        async with await natsobj.aio.connect(nats_url) as client:
            aio_store = await client.store(store.bucket)
            target = ArchiveTarget(archive_url)
            archiver = Archiver(aio_store, target)
            await aio_store.put("a.txt", b"one", headers={"X-A": ["1", "2"]}, metadata={"k": "v"})
            await archiver.run(once=True)
            await aio_store.put("a.txt", b"two", description="second")
            await archiver.run(once=True)
            await aio_store.update_meta("a.txt", metadata={"k": "w"})
            await archiver.run(once=True)
            await aio_store.delete("a.txt")
            await archiver.run(once=True)
            return await load_index(target)

    records = run(body())
    assert [(r.name, r.kind) for r in records] == [
        ("a.txt", "put"),
        ("a.txt", "put"),
        ("a.txt", "meta"),
        ("a.txt", "delete"),
    ]
    first, second, meta, _ = records
    assert first.digest == digest_of(b"one")
    assert first.header_map == {"X-A": ["1", "2"]} and first.metadata_map == {"k": "v"}
    assert second.description == "second" and second.digest == digest_of(b"two")
    assert meta.metadata_map == {"k": "w"}
    assert (meta.key, meta.offset, meta.length) == (second.key, second.offset, second.length)
    assert len({r.sequence for r in records}) == 4


def test_small_objects_are_packed_and_the_index_is_plain_parquet(
    nats_url, store, archive_url, tmp_path
):
    payloads = {f"small/{i:04d}": os.urandom(1024) for i in range(300)}
    for name, data in payloads.items():
        store.put(name, data)
    target = run(archive_once(nats_url, store.bucket, archive_url))
    # 300 versions in one pack: the pack, one index segment and the cursor
    assert target.counts.puts == 3
    assert target.counts.multipart_puts == 0
    keys = run(target.list(""))
    packs = [k for k in keys if k.startswith("packs/")]
    segments = [k for k in keys if k.startswith("index/")]
    assert len(packs) == 1 and len(segments) == 1

    # the index needs nothing but a Parquet reader
    local = tmp_path / "segment.parquet"
    local.write_bytes(run(target.get_bytes(segments[0])))
    table = pq.read_table(local).to_pylist()
    assert len(table) == 300
    for row in table:
        assert row["key"] == packs[0]
        data = run(target.get_range(row["key"], row["offset"], row["offset"] + row["length"]))
        assert data == payloads[row["name"]]
        assert digest_of(data) == row["digest"]


def test_restore_latest_and_point_in_time(nats_url, sync_client, store, archive_url):
    async def body():
        async with await natsobj.aio.connect(nats_url) as client:
            aio_store = await client.store(store.bucket)
            target = ArchiveTarget(archive_url)
            archiver = Archiver(aio_store, target, small_object=64 * 1024)
            v1 = await aio_store.put("doc", b"version one", metadata={"v": "1"})
            gone = await aio_store.put("gone", os.urandom(200_000), headers={"H": "x"})
            await archiver.run(once=True)
            await asyncio.sleep(0.05)
            await aio_store.put("doc", b"version two", metadata={"v": "2"})
            await aio_store.delete("gone")
            await archiver.run(once=True)
            await aio_store.update_meta("doc", new_name="doc-renamed")
            await archiver.run(once=True)
            return target, v1, gone

    target, v1, gone = run(body())
    latest = f"{store.bucket}l"
    past = f"{store.bucket}p"
    try:
        run(_restore(nats_url, target, latest, None))
        run(_restore(nats_url, target, past, gone.mtime))
        restored = sync_client.store(latest)
        assert sorted(i.name for i in restored.list()) == ["doc-renamed"]
        assert restored.get_bytes("doc-renamed") == b"version two"
        assert restored.get_info("doc-renamed").metadata == {"v": "2"}

        as_of = sync_client.store(past)
        assert sorted(i.name for i in as_of.list()) == ["doc", "gone"]
        assert as_of.get_bytes("doc") == b"version one"
        info = as_of.get_info("gone")
        assert info.digest == gone.digest and info.headers == {"H": ["x"]}
        assert as_of.get_info("doc").digest == v1.digest
    finally:
        for name in (latest, past):
            with contextlib.suppress(natsobj.NatsObjError):
                sync_client.delete_store(name)


async def _restore(url, target, bucket, at):
    async with await natsobj.aio.connect(url) as client:
        return await restore(client, target, bucket, at=at)


def test_verify_finds_a_corrupted_pack(nats_url, store, archive_url):
    for i in range(5):
        store.put(f"o{i}", f"payload {i}".encode())
    target = run(archive_once(nats_url, store.bucket, archive_url))
    report = run(verify(target))
    assert report.ok and report.checked == 5
    pack = next(k for k in run(target.list("packs/")))
    data = bytearray(run(target.get_bytes(pack)))
    data[3] ^= 0xFF
    run(target.put_bytes(pack, bytes(data)))
    report = run(verify(target))
    assert not report.ok and len(report.bad) == 1
    assert report.bad[0][0].name == "o0"


def test_cursor_json_follows_the_index(nats_url, store, archive_url):
    store.put("x", b"x")
    target = run(archive_once(nats_url, store.bucket, archive_url))
    cursor = json.loads(run(target.get_bytes(layout.CURSOR_KEY)))
    assert cursor["sequence"] == run(ArchiveTargets.of(target).indexed_through()) > 0
    assert cursor["versions"] == 1 and cursor["bytes"] == 1
