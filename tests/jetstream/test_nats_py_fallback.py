"""natsobj's fast paths under nats-py's public API (raw deliveries and direct publishes in
``jsapi``, whole-buffer reads in ``socket_reads``) check the nats-py and asyncio internals they
use before using them. A nats-py that lacks one of them (simulated by expecting a name this
one does not have, since deleting a real one would break nats-py itself) gets nats-py's stock
paths, says so in one debug line per path, and every operation stays correct on a real
server."""

from __future__ import annotations

import asyncio
import logging
import os

import nats.aio.client
import pytest

import natsobj.aio
from natsobj.aio.jetstream import jsapi, socket_reads
from natsobj.aio.jetstream.jsapi import parse_headers, raw_header_block, raw_status
from tests.conftest import NATS_PY_GONE as GONE

SIZES = [0, 1, 131_072, 300_001, 2_000_000]  # empty, one chunk, several chunks


@pytest.fixture
def internals_missing(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture):
    for module, table in (
        (jsapi, "RAW_DELIVERY_INTERNALS"),
        (jsapi, "DIRECT_PUBLISH_INTERNALS"),
        (socket_reads, "STREAM_INTERNALS"),
    ):
        monkeypatch.setattr(module, table, (*getattr(module, table), GONE))
    caplog.set_level(logging.DEBUG, logger="natsobj.aio.jetstream.nats_internals")
    return caplog


def test_without_the_internals_every_path_is_nats_pys_own_and_correct(
    nats_url, bucket_name, internals_missing
):
    async def body() -> None:
        client = await natsobj.aio.connect(nats_url)
        try:
            nc = client.api.nc
            # nothing was patched: the connection reads, delivers and publishes as nats-py does
            assert "_process_msg" not in vars(nc)
            assert "read" not in vars(nc._transport)
            store = await client.create_store(bucket_name)
            blobs = {f"obj/{size}": os.urandom(size) for size in SIZES}
            for name, data in blobs.items():
                await store.put(name, data, chunk_size=128 * 1024)
            for name, data in blobs.items():
                assert await store.get_bytes(name) == data
                assert (await store.get_info(name)).size == len(data)
            assert sorted(info.name for info in await store.list()) == sorted(blobs)
            await store.delete("obj/1")
            assert "obj/1" not in {info.name for info in await store.list()}
            with pytest.raises(natsobj.ObjectNotFound):
                await store.get_info("obj/1")
            assert "_process_msg" not in vars(nc) and "read" not in vars(nc._transport)
        finally:
            await client.close()

    asyncio.run(body())
    said = [r.getMessage() for r in internals_missing.records]
    for path in ("raw deliveries", "direct publish", "socket reads"):
        lines = [line for line in said if line.startswith(path + ":")]
        assert len(lines) == 1 and GONE in lines[0], said


def test_with_the_internals_the_fast_paths_are_taken(nats_url, caplog, request):
    """The other side of the guard: on the nats-py this package pins, nothing falls back;
    in the run with them switched off (``--nats-py-stock``), every path is nats-py's own."""
    caplog.set_level(logging.DEBUG, logger="natsobj.aio.jetstream.nats_internals")
    stock = request.config.getoption("--nats-py-stock")

    async def body() -> None:
        client = await natsobj.aio.connect(nats_url)
        try:
            nc = client.api.nc
            fast = "_process_msg" in vars(nc), "read" in vars(nc._transport)
            assert fast == ((False, False) if stock else (True, True))
        finally:
            await client.close()

    asyncio.run(body())
    assert bool(caplog.records) == stock


@pytest.mark.parametrize(
    "block",
    [
        b"NATS/1.0 404 No Messages\r\n\r\n",
        b"NATS/1.0 100 FlowControl Request\r\nNats-Last-Consumer: 2\r\n\r\n",
        b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\n\r\n",
        b"NATS/1.0\r\nNats-Sequence: 7\r\nNats-Subject: $O.b.M.x\r\n\r\n",
    ],
)
def test_stock_headers_are_written_back_as_the_block_they_came_from(block):
    """On the stock path raw handlers get the block rebuilt from the dict nats-py's own
    parser made: the status, its description and every header read back the same."""
    parsed = asyncio.run(nats.aio.client.Client()._process_headers(block))
    rebuilt = raw_header_block(parsed)
    assert raw_status(rebuilt) == raw_status(block)
    assert parse_headers(rebuilt) == parse_headers(block)
    assert raw_header_block(None) == b""
