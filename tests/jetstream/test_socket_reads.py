"""The connection's read and write paths with fewer copies, against a real nats-server:
``natsobj.aio.jetstream.socket_reads`` (reads taken whole from the stream, payloads cut with one
copy) and ``JetStreamApi._write_hpub`` (a put's chunks queued in pieces). Payloads and headers of
every size arrive intact, and other requests sent while a put fills the outgoing buffer never
land inside a chunk's message."""

from __future__ import annotations

import asyncio
import os

import nats
import pytest

import natsobj.aio
from natsobj.aio.jetstream.socket_reads import PayloadBuffer, ReceiveBuffer, enlarge_reads

SIZES = [0, 1, 4095, 65_536, 131_072, 300_001, 1_000_000]  # under max_payload with headers


def test_payload_buffer_slices_are_bytes_of_the_same_bytes():
    buffer = PayloadBuffer(b"0123456789")
    assert buffer[2:5] == b"234" and type(buffer[2:5]) is bytes
    assert buffer[:0] == b"" and buffer[7:] == b"789" and buffer[3] == ord("3")
    del buffer[:4]  # no view left behind: the parser can consume what it cut out
    assert bytes(buffer) == b"456789"


@pytest.mark.fast_paths
def test_messages_of_every_size_arrive_intact(nats_url):
    async def body() -> None:
        nc = await nats.connect(nats_url)
        enlarge_reads(nc)
        try:
            sub = await nc.subscribe("sizes.>")
            sent = []
            for i, size in enumerate(SIZES * 2):
                data = os.urandom(size)
                headers = {"Index": str(i)} if i % 2 else None
                sent.append((data, headers))
                await nc.publish(f"sizes.{i}", data, headers=headers)
            for i, (data, headers) in enumerate(sent):
                msg = await sub.next_msg(timeout=10)
                assert msg.subject == f"sizes.{i}"
                assert msg.data == data
                assert (msg.headers or None) == headers
            assert type(nc._ps.buf) is PayloadBuffer
            # every read landed in the one kept buffer
            assert type(nc._transport._io_reader._transport.get_protocol()) is ReceiveBuffer
        finally:
            await nc.close()

    asyncio.run(body())


@pytest.mark.fast_paths
def test_a_reconnect_receives_into_a_kept_buffer_again(nats_url):
    """A reconnect makes a new stream on a new socket: its reads land in a kept buffer too,
    and messages still arrive intact."""

    async def body() -> None:
        nc = await nats.connect(nats_url, reconnect_time_wait=0.1)
        enlarge_reads(nc)
        try:
            sub = await nc.subscribe("again")
            await nc.publish("again", b"before")
            assert (await sub.next_msg(timeout=10)).data == b"before"
            first = nc._transport._io_reader
            nc._transport._io_writer.transport.abort()  # the socket drops
            for _ in range(200):
                if nc.is_connected and nc._transport._io_reader is not first:
                    break
                await asyncio.sleep(0.05)
            data = os.urandom(300_001)
            await nc.publish("again", data)
            assert (await sub.next_msg(timeout=10)).data == data
            assert nc.stats["reconnects"] == 1
            stream = nc._transport._io_reader
            assert stream is not first
            assert type(stream._transport.get_protocol()) is ReceiveBuffer
        finally:
            await nc.close()

    asyncio.run(body())


def test_requests_during_a_put_never_land_inside_a_chunk(nats_url, bucket_name):
    """A tiny outgoing-buffer limit makes every chunk force a flush, the one place a publish
    waits: a get_info sent meanwhile must queue behind the whole chunk, or the server drops
    the connection for a protocol error."""

    async def body() -> None:
        client = await natsobj.aio.connect(nats_url)
        try:
            store = await client.create_store(bucket_name)
            nc = client.api.nc
            nc._max_pending_size = 16 * 1024
            data = os.urandom(6 * 1024 * 1024 + 7)
            await store.put("other", b"x")
            put = asyncio.create_task(store.put("big", data))
            lookups = 0
            while not put.done():
                assert (await store.get_info("other")).size == 1
                lookups += 1
            await put
            assert lookups > 0
            assert nc.stats["reconnects"] == 0
            assert await store.get_bytes("big") == data
        finally:
            await client.close()

    asyncio.run(body())
