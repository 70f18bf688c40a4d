"""Read-after-write across nodes: a write returned on a connection to one node is seen by
every read started afterwards on connections to the other nodes (issue 10)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from natsobj import aio
from natsobj.settings import ConnectionSettings
from tests.cluster.harness import ClusterHarness
from tests.cluster.probes import run_probes


async def _probe(
    cluster: ClusterHarness, probes: int, *, consistency: str = "strong", hand_off: bool = False
):
    bucket = f"raw{uuid.uuid4().hex[:10]}"
    clients = [await aio.connect(url, consistency=consistency) for url in cluster.urls]
    try:
        await clients[0].create_store(bucket, replicas=3)
        await asyncio.to_thread(cluster.leader_of, f"OBJ_{bucket}")
        stores = [await client.store(bucket) for client in clients]
        return await run_probes(stores[0], stores[1:], probes, hand_off=hand_off)
    finally:
        await clients[0].delete_store(bucket)
        for client in clients:
            await client.close()


def test_strong_reads_see_every_write_from_other_nodes(cluster: ClusterHarness) -> None:
    result = asyncio.run(_probe(cluster, 400))
    assert result.probes == 400
    assert set(result.reads) == {"get_info", "get_bytes", "list", "changes"}
    assert result.total_stale == 0, dict(result.stale)


def test_a_handed_over_sequence_makes_eventual_reads_safe(cluster: ClusterHarness) -> None:
    result = asyncio.run(_probe(cluster, 300, consistency="eventual", hand_off=True))
    stale_point_reads = result.stale["get_info"] + result.stale["get_bytes"]
    assert result.reads["get_info"] == 300
    assert stale_point_reads == 0, dict(result.stale)


@pytest.mark.slow
def test_3000_probes_find_no_stale_read(cluster: ClusterHarness) -> None:
    result = asyncio.run(_probe(cluster, 3000, hand_off=False))
    assert result.probes == 3000
    assert result.reads["get_info"] == 3000 and sum(result.reads.values()) >= 5000
    assert result.total_stale == 0, dict(result.stale)


def test_strong_is_the_default_and_r1_reads_stay_direct(
    cluster: ClusterHarness, r3_bucket: str
) -> None:
    async def check() -> tuple[bool, bool, bool]:
        strong = await aio.connect(cluster.urls[1])
        eventual = await aio.connect(cluster.urls[1], consistency="eventual")
        try:
            r1 = await strong.create_store(f"r1{uuid.uuid4().hex[:10]}", replicas=1)
            try:
                return (
                    (await strong.store(r3_bucket)).strong_reads,
                    (await eventual.store(r3_bucket)).strong_reads,
                    r1.strong_reads,
                )
            finally:
                await strong.delete_store(r1.bucket)
        finally:
            await strong.close()
            await eventual.close()

    assert asyncio.run(check()) == (True, False, False)


def test_consistency_is_a_connection_option() -> None:
    assert ConnectionSettings.from_url("nats://h:4222").consistency == "strong"
    url = "nats://h:4222?consistency=eventual"
    assert ConnectionSettings.from_url(url).consistency == "eventual"
    with pytest.raises(ValueError, match="consistency must be one of"):
        ConnectionSettings.from_url("nats://h:4222?consistency=sometimes")


def test_read_floor_is_the_leaders_last_sequence_only_for_strong_replicated_reads(
    cluster: ClusterHarness, r3_bucket: str
) -> None:
    async def floors() -> tuple[int | None, int | None]:
        strong = await aio.connect(cluster.url)
        eventual = await aio.connect(cluster.url, consistency="eventual")
        try:
            store = await strong.store(r3_bucket)
            info = await store.put("x", b"data")
            stream_info = await store.bucket_stream.info()
            return (
                store.bucket_stream.read_floor(stream_info),
                (await eventual.store(r3_bucket)).bucket_stream.read_floor(stream_info),
                info.sequence,
            )
        finally:
            await strong.close()
            await eventual.close()

    strong_floor, eventual_floor, sequence = asyncio.run(floors())
    assert strong_floor == sequence
    assert eventual_floor is None
