"""Long spans of a ranged read (``natsobj.aio.ranges.STREAM_MIN_BYTES`` and more) come from
one consumer on the object's chunk subject instead of batched direct gets: exact for every
kind of object of tests/core/test_ranges.py and across accounts, asking the server for no chunk
past the span (counted on the wire), ObjectChanged after an overwrite or a delete, and
read-after-write on another node of a cluster."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import random

import fsspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

import natsobj
from benchmarks.ranges import CountingProxy
from natsobj import aio
from natsobj.aio import ranges
from natsobj.errors import ObjectChanged
from tests.cluster.harness import ClusterHarness
from tests.core.test_ranges import KINDS, PROPERTY, written  # noqa: F401 (a fixture)
from tests.jetstream.test_prefix import accounts_server, url_for  # noqa: F401 (a fixture)

MiB = 2**20


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every span, however short, read by a consumer (the objects here are small)."""
    monkeypatch.setattr(ranges, "STREAM_MIN_BYTES", 1)


@pytest.mark.usefixtures("streamed")
@pytest.mark.parametrize("name", KINDS)
@PROPERTY
@given(data=st.data())
def test_streamed_ranges_equal_the_local_bytes(
    written,  # noqa: F811 (the imported fixture)
    name: str,
    data: st.DataObject,
) -> None:
    store, local = written
    expected = local[name]
    offset = st.integers(-len(expected) - 3, len(expected) + 3)
    with contextlib.closing(store.open_range(name)) as reader:
        for _ in range(4):
            start, end = data.draw(offset), data.draw(st.none() | offset)
            assert reader.read_range(start, end) == expected[start:end]


def test_a_long_span_asks_for_no_chunk_past_it(nats_url: str, bucket_name: str) -> None:
    """A 20 MiB range in the middle of a 48 MiB object (three pulls of up to a read window)
    receives its chunks and their protocol, not one chunk (128 KiB) more, even after the
    server had time to send more."""
    data = os.urandom(48 * MiB)
    start, end = 5 * MiB + 12_345, 25 * MiB + 999
    chunk = 128 * 1024
    overlapping = (end + chunk - 1) // chunk * chunk - start // chunk * chunk
    proxy = CountingProxy(nats_url)

    async def body() -> tuple[int, int]:
        client = await aio.connect(proxy.url)
        try:
            store = await client.create_store(bucket_name)
            await store.put("x", data)
            async with await store.open_range("x") as reader:
                assert await reader.read_range(0, 10) == data[:10]  # the map, first chunk held
                fetched, before = reader.bytes_fetched, proxy.received
                assert await reader.read_range(start, end) == data[start:end]
                await asyncio.sleep(0.5)  # anything asked for past the span arrives meanwhile
                received = proxy.received - before
                fetched = reader.bytes_fetched - fetched
            await client.delete_store(bucket_name)
            return fetched, received
        finally:
            await client.close()

    try:
        fetched, received = asyncio.run(body())
    finally:
        proxy.stop()
    assert fetched == overlapping
    assert overlapping <= received < overlapping + chunk, received - overlapping


@pytest.mark.usefixtures("streamed")
def test_an_overwrite_or_delete_during_a_streamed_read_raises_object_changed(store) -> None:
    data = os.urandom(60_000)
    store.put("x", data, chunk_size=1000)
    with contextlib.closing(store.open_range("x")) as reader:
        assert reader.read_range(100, 20_000) == data[100:20_000]
        replacement = os.urandom(60_000)
        store.put("x", replacement, chunk_size=1000)
        with pytest.raises(ObjectChanged):
            reader.read_range(30_000, 50_000)
    assert store.get_range("x", 30_000, 50_000) == replacement[30_000:50_000]
    opened = store.open_range("x")
    store.delete("x")
    with pytest.raises(ObjectChanged):
        opened.read(10_000)


@pytest.mark.usefixtures("streamed")
def test_a_streamed_range_on_another_node_sees_the_write(
    cluster: ClusterHarness, r3_bucket: str
) -> None:
    """docs/production.md's read-after-write for consumer-read spans: a put that returned on
    node 0 is what a ranged read on nodes 1 and 2 returns at once."""

    async def body() -> int:
        clients = [await aio.connect(url) for url in cluster.urls]
        try:
            stores = [await client.store(r3_bucket) for client in clients]
            rng, checked = random.Random(4), 0
            for round_ in range(15):
                size = rng.randrange(2_000, 60_000)
                data = os.urandom(size)
                await stores[0].put("obj", data, chunk_size=rng.choice([512, 1000, 4096]))
                for store in stores[1:]:
                    start = rng.randrange(size)
                    got = await store.get_range("obj", start, start + 20_000)
                    assert got == data[start : start + 20_000], round_
                    async with await store.open_range("obj") as reader:
                        reader.seek(-1_500, io.SEEK_END)
                        assert await reader.read() == data[-1_500:], round_
                    checked += 1
            return checked
        finally:
            for client in clients:
                await client.close()

    assert asyncio.run(body()) == 30


@pytest.mark.usefixtures("streamed")
def test_streamed_ranges_through_an_api_prefix(
    accounts_server,  # noqa: F811 (the imported fixture)
    bucket_name: str,
) -> None:
    """Across accounts (ADR-19) the consumer is a push consumer with flow control; a span is
    read until its last chunk and the consumer deleted, its ranges exact."""
    data = os.urandom(3 * MiB)
    with natsobj.connect(url_for(accounts_server, "a")) as owner:
        owner.create_store(bucket_name)
        with natsobj.connect(
            url_for(accounts_server, "i"), api_prefix="fromA", inbox_prefix="forI"
        ) as importer:
            store = importer.store(bucket_name)
            store.put("x", data)
            with contextlib.closing(store.open_range("x")) as reader:
                for start, end in [(100, 2 * MiB), (MiB + 5, 3 * MiB - 7), (0, None)]:
                    assert reader.read_range(start, end) == data[start:end]


def test_many_long_ranges_at_once_stay_within_the_servers_pending_limit(
    nats_url: str, store
) -> None:
    """fsspec's cat_ranges reads every range at once: twelve 8 MiB ranges ask for 96 MiB,
    more than nats-server queues for one client (64 MiB) before closing it as a slow consumer,
    unless the connection's fetches in flight are bounded."""
    data = os.urandom(96 * MiB)
    store.put("big", data)
    fs = fsspec.filesystem("nats", url=nats_url, skip_instance_cache=True)
    starts = [k * 8 * MiB for k in range(12)]
    path = f"{store.bucket}/big"
    got = fs.cat_ranges([path] * 12, starts, [start + 8 * MiB for start in starts])
    assert got == [data[start : start + 8 * MiB] for start in starts]
