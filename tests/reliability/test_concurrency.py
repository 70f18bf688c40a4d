"""Concurrent writers and readers on one name, and a short soak with a consistency check."""

from __future__ import annotations

import asyncio
import hashlib
import os

import pytest

import natsobj.aio
from natsobj.model import digest_of
from natsobj.sync import run


async def chunk_subject_counts(store: natsobj.aio.ObjectStore) -> dict[str, int]:
    info = await store.api.call(
        f"STREAM.INFO.{store.stream}", {"subjects_filter": f"$O.{store.bucket}.C.>"}
    )
    return info.get("state", {}).get("subjects") or {}


def test_concurrent_writers_last_wins_without_orphans(nats_url, bucket_name):
    async def body() -> None:
        async with await natsobj.aio.connect(nats_url) as client:
            store = await client.create_store(bucket_name)
            payloads = [os.urandom(300_000 + i) for i in range(8)]
            infos = await asyncio.gather(
                *(store.put("contended", data, chunk_size=32 * 1024) for data in payloads)
            )
            winner = max(infos, key=lambda info: info.sequence)
            current = await store.get_info("contended")
            assert current.nuid == winner.nuid
            data = await store.get_bytes("contended")
            assert data == payloads[infos.index(winner)]  # never mixed chunks
            assert await chunk_subject_counts(store) == {
                f"$O.{bucket_name}.C.{winner.nuid}": winner.chunks
            }
            await client.delete_store(bucket_name)

    run(body())


def test_readers_during_overwrites_see_old_or_new(nats_url, bucket_name):
    async def body() -> None:
        async with await natsobj.aio.connect(nats_url) as client:
            store = await client.create_store(bucket_name)
            versions = [os.urandom(600_000) for _ in range(6)]
            valid = {hashlib.sha256(v).digest() for v in versions}
            await store.put("hot", versions[0], chunk_size=16 * 1024)

            async def writer() -> None:
                for data in versions[1:]:
                    await store.put("hot", data, chunk_size=16 * 1024)
                    await asyncio.sleep(0.01)

            async def reader() -> list[bytes]:
                seen = []
                for _ in range(15):
                    seen.append(hashlib.sha256(await store.get_bytes("hot")).digest())
                return seen

            _, *reads = await asyncio.gather(writer(), reader(), reader())
            assert all(digest in valid for seen in reads for digest in seen)
            await client.delete_store(bucket_name)

    run(body())


async def soak(url: str, bucket: str, small: int, large: int, large_size: int) -> None:
    async with await natsobj.aio.connect(url) as client:
        store = await client.create_store(bucket)
        semaphore = asyncio.Semaphore(32)

        async def put(name: str, data: bytes) -> None:
            async with semaphore:
                await store.put(name, data)

        await asyncio.gather(*(put(f"small/{i:05d}", os.urandom(200)) for i in range(small)))
        for i in range(large):
            await store.put(f"large/{i:03d}", os.urandom(large_size))
        listed = await store.list()
        assert len(listed) == small + large
        for info in listed[::7] + [i for i in listed if i.name.startswith("large/")]:
            assert digest_of(await store.get_bytes(info.name)) == info.digest
        await asyncio.gather(*(store.delete(i.name) for i in listed[: small // 2]))
        survivors = await store.list()
        assert len(survivors) == small + large - small // 2
        counts = await chunk_subject_counts(store)
        expected = {f"$O.{bucket}.C.{i.nuid}": i.chunks for i in survivors if i.chunks}
        assert counts == expected  # stream accounting matches ObjectInfo: no orphan, no loss
        status = await store.status()
        assert status.size >= sum(i.size for i in survivors)
        await client.delete_store(bucket)


def test_soak_short(nats_url, bucket_name):
    run(soak(nats_url, bucket_name, small=1000, large=5, large_size=10 * 1024 * 1024))


@pytest.mark.slow
def test_soak_long(nats_url, bucket_name):
    run(soak(nats_url, bucket_name, small=10_000, large=100, large_size=10 * 1024 * 1024))
