"""How listing cost grows with the number of objects in a store.

Stores are filled fast with raw pipelined publishes of valid ADR-20 objects (one tiny chunk and
one meta record each, as any client writes them), so a million-object store takes a minute,
not an hour of puts.
"""

from __future__ import annotations

import asyncio
import hashlib
import json

import nats
from nats.nuid import NUID

import natsobj.aio
from natsobj.model import ObjectInfo, format_digest
from natsobj.names import chunk_subject, meta_subject, stream_name

PER_DIR = 500  # objects per "directory": the prefix listing lists one of them
FLUSH_EVERY = 20_000


def object_name(index: int, per_dir: int = PER_DIR) -> str:
    return f"d{index // per_dir:05d}/obj{index % per_dir:04d}.bin"


def directory_of(index: int, per_dir: int = PER_DIR) -> str:
    return f"d{index // per_dir:05d}/"


async def fill_store(url: str, bucket: str, count: int, *, per_dir: int = PER_DIR) -> None:
    """Create ``bucket`` and write ``count`` valid objects named by ``object_name``: each one
    chunk (its own name as the content) and a meta record with the right size and digest."""
    client = await natsobj.aio.connect(url)
    try:
        await client.ensure_store(bucket)
    finally:
        await client.close()
    nc = await nats.connect(url, pending_size=64 * 1024 * 1024)
    nuid = NUID()
    try:
        for index in range(count):
            name = object_name(index, per_dir)
            data = name.encode()
            object_nuid = nuid.next().decode()
            info = ObjectInfo(
                name=name,
                bucket=bucket,
                nuid=object_nuid,
                size=len(data),
                chunks=1,
                digest=format_digest(hashlib.sha256(data).digest()),
            )
            await nc.publish(chunk_subject(bucket, object_nuid), data)
            await nc.publish(meta_subject(bucket, name), info.encode())
            if index % FLUSH_EVERY == FLUSH_EVERY - 1:
                await nc.flush(timeout=120)
        await nc.flush(timeout=120)
        await _wait_stored(nc, bucket, 2 * count)
    finally:
        await nc.close()


async def _wait_stored(nc: nats.NATS, bucket: str, messages: int, timeout: float = 300) -> None:
    """Core publishes are not acknowledged: wait until the stream holds them all."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        reply = await nc.request(f"$JS.API.STREAM.INFO.{stream_name(bucket)}", b"", timeout=30)
        stored = int(json.loads(reply.data)["state"]["messages"])
        if stored >= messages:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"only {stored} of {messages} messages stored in {bucket!r}")
        await asyncio.sleep(0.1)
