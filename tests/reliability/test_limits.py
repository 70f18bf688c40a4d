"""Store limits: max_bytes mid-put, TTL expiry, compression, and compaction of orphans."""

from __future__ import annotations

import os
import threading
import time

import pytest

import natsobj
from natsobj.sync import run


def chunk_subjects(store: natsobj.ObjectStore) -> dict[str, int]:
    from natsobj.sync import run

    async def go() -> dict[str, int]:
        info = await store.aio.api.call(
            f"STREAM.INFO.{store.aio.stream}", {"subjects_filter": f"$O.{store.bucket}.C.>"}
        )
        return info.get("state", {}).get("subjects") or {}

    return run(go())


def test_max_bytes_mid_put_raises_store_full_and_leaves_store_clean(sync_client, bucket_name):
    store = sync_client.create_store(bucket_name, max_bytes=2 * 1024 * 1024)
    previous = os.urandom(500_000)
    kept = store.put("kept", previous)
    with pytest.raises(natsobj.StoreFull, match=bucket_name):
        store.put("too-big", os.urandom(3 * 1024 * 1024))
    with pytest.raises(natsobj.StoreFull):
        store.put("kept", os.urandom(3 * 1024 * 1024))  # an overwrite that does not fit
    assert store.get_bytes("kept") == previous
    assert [i.name for i in store.list()] == ["kept"]
    assert chunk_subjects(store) == {f"$O.{bucket_name}.C.{kept.nuid}": kept.chunks}
    sync_client.delete_store(bucket_name)


def test_ttl_expiry_removes_objects(sync_client, bucket_name):
    store = sync_client.create_store(bucket_name, ttl=1.0)
    store.put("short-lived", b"x" * 1000)
    assert store.status().ttl.total_seconds() == 1.0
    deadline = time.monotonic() + 10
    while store.list() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert store.list() == []
    with pytest.raises(natsobj.ObjectNotFound):
        store.get_info("short-lived")
    sync_client.delete_store(bucket_name)


def test_compression_round_trips(sync_client, bucket_name):
    store = sync_client.create_store(bucket_name, compression=True)
    data = b"compressible " * 100_000
    store.put("c", data)
    assert store.get_bytes("c") == data
    assert store.status().is_compressed
    sync_client.delete_store(bucket_name)


def test_update_store_changes_only_given_settings(sync_client, bucket_name):
    sync_client.create_store(bucket_name, description="one", max_bytes=10_000_000)
    store = sync_client.update_store(bucket_name, description="two")
    status = store.status()
    assert (status.description, status.max_bytes) == ("two", 10_000_000)
    sync_client.delete_store(bucket_name)


def test_compact_purges_orphans_but_never_a_put_in_progress(store, raw):
    kept = store.put("kept", os.urandom(400_000))
    orphan = f"$O.{store.bucket}.C.ORPHANEDNUID0000000000"
    for _ in range(3):
        raw.publish(orphan, os.urandom(1000))
    assert store.compact(min_age=3600).purged_subjects == []  # too recent to be sure

    release = threading.Event()
    started = threading.Event()

    def slow_source():
        yield os.urandom(128 * 1024)
        started.set()
        release.wait(10)
        yield os.urandom(128 * 1024)

    results: list[natsobj.ObjectInfo] = []
    writer = threading.Thread(
        target=lambda: results.append(store.put("in-progress", slow_source()))
    )
    writer.start()
    assert started.wait(10)
    time.sleep(1.2)
    result = store.compact(min_age=5)  # the orphan is ~1 s old now, and so is the live put
    assert result.skipped_recent == 2 and result.purged_subjects == []
    release.set()
    writer.join(10)
    time.sleep(0.1)
    result = store.compact(min_age=1)
    assert result.purged_subjects == [orphan] and result.purged_messages == 3
    assert result.reclaimed_bytes > 3000
    assert store.get_info("in-progress").size == 2 * 128 * 1024
    assert len(store.get_bytes("in-progress")) == 2 * 128 * 1024
    assert set(chunk_subjects(store)) == {
        f"$O.{store.bucket}.C.{kept.nuid}",
        f"$O.{store.bucket}.C.{results[0].nuid}",
    }


@pytest.mark.parametrize("name", ["new", "kept"], ids=["new-name", "overwrite"])
def test_a_refused_last_chunk_keeps_out_the_meta_record_sent_behind_it(
    sync_client, bucket_name, name
):
    """A put sends its meta record right behind the last chunk, before that chunk is
    acknowledged (``natsobj.aio.put_pipeline._commit_behind_last_chunk``). A chunk the stream
    refuses (over its max_msg_size here) while the small record behind it would fit must
    still leave no object, and the previous version intact."""
    store = sync_client.create_store(bucket_name)
    kept = store.put("kept", b"previous")
    api = store.aio.api
    config = run(api.call(f"STREAM.INFO.{store.aio.stream}"))["config"]
    run(api.call(f"STREAM.UPDATE.{store.aio.stream}", dict(config, max_msg_size=4096)))
    with pytest.raises(natsobj.NatsObjError, match="size"):
        store.put(name, os.urandom(10_000), chunk_size=16_384)
    assert [i.name for i in store.list()] == ["kept"]
    assert store.get_bytes("kept") == b"previous"
    assert chunk_subjects(store) == {f"$O.{bucket_name}.C.{kept.nuid}": 1}
    sync_client.delete_store(bucket_name)
