"""A put whose size is known is refused before any byte is sent when it cannot fit the
bucket's max_bytes (natsobj.aio.room): the server would refuse it only once the room was used
up, after uploading that much."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import natsobj
from natsobj.sync import run

MiB = 1024 * 1024


def _chunk_subjects(store: natsobj.ObjectStore) -> dict[str, int]:
    async def go() -> dict[str, int]:
        info = await store.aio.api.call(
            f"STREAM.INFO.{store.aio.stream}", {"subjects_filter": f"$O.{store.bucket}.C.>"}
        )
        return info.get("state", {}).get("subjects") or {}

    return run(go())


def test_a_file_larger_than_max_bytes_is_refused_before_a_byte_is_sent(
    sync_client, bucket_name: str, tmp_path: Path
) -> None:
    store = sync_client.create_store(bucket_name, max_bytes=MiB)
    try:
        kept = store.put("kept", b"k" * 1000)
        before = store.status()
        big = tmp_path / "big.bin"
        big.write_bytes(os.urandom(2 * MiB))
        for source in (big, big.read_bytes()):
            with pytest.raises(natsobj.NoRoom) as raised:
                store.put("big.bin", source)
            assert isinstance(raised.value, natsobj.StoreFull)  # callers catching that see it
            error = raised.value
            assert (error.bucket, error.name, error.size) == (bucket_name, "big.bin", 2 * MiB)
            assert error.room == MiB - before.size and error.max_bytes == MiB
            assert "does not fit" in str(error) and str(2 * MiB) in str(error)
        with big.open("rb") as handle, pytest.raises(natsobj.NoRoom):
            store.put("big.bin", handle)
        after = store.status()
        # nothing was published: not even chunks purged later (the sequence would move)
        assert after.last_sequence == before.last_sequence
        assert [i.name for i in store.list()] == ["kept"]
        assert _chunk_subjects(store) == {f"$O.{bucket_name}.C.{kept.nuid}": kept.chunks}
    finally:
        sync_client.delete_store(bucket_name)


def test_room_left_counts_what_the_bucket_holds(nats_url: str, bucket_name: str) -> None:
    """Below max_bytes but above the room left: refused up front too, when the object is
    larger than the put window (a smaller one the server refuses within its first window)."""
    client = natsobj.connect(nats_url, put_window_bytes=256 * 1024)
    try:
        store = client.create_store(bucket_name, max_bytes=4 * MiB)
        store.put("first", os.urandom(3 * MiB))
        before = store.status()
        with pytest.raises(natsobj.NoRoom) as raised:
            store.put("second", os.urandom(2 * MiB))
        assert raised.value.room == 4 * MiB - before.size
        assert store.status().last_sequence == before.last_sequence
        assert store.put("fits", os.urandom(MiB // 2)).size == MiB // 2
        client.delete_store(bucket_name)
    finally:
        client.close()


def test_a_compressed_bucket_counts_the_bytes_put(sync_client, bucket_name: str) -> None:
    """The server holds a compressed bucket's max_bytes against the bytes put, not the bytes
    stored: a compressible object too large is refused up front just the same."""
    store = sync_client.create_store(bucket_name, max_bytes=MiB, compression=True)
    try:
        before = store.status().last_sequence
        with pytest.raises(natsobj.NoRoom):
            store.put("squeezed", b"compressible " * (2 * MiB // 13))
        assert store.status().last_sequence == before
    finally:
        sync_client.delete_store(bucket_name)
