"""Streaming an object's chunks back, verifying count, size and SHA-256 as they arrive.

Short data is never returned: a reader that runs out of chunks raises ``ObjectChanged``, and
one whose bytes do not match the recorded digest raises ``DigestMismatch`` after the last chunk.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from natsobj.aio.consumer import OrderedConsumer
from natsobj.errors import DigestMismatch, ObjectChanged
from natsobj.model import DEFAULT_CHUNK_SIZE, ObjectInfo, digest_bytes

if TYPE_CHECKING:
    from natsobj.aio.store import ObjectStore


class ObjectReader:
    """Returned by ``ObjectStore.get``: ``info``, ``read(n)`` and ``async for chunk``."""

    def __init__(self, store: ObjectStore, info: ObjectInfo) -> None:
        self.store = store
        self.info = info
        self._consumer: OrderedConsumer | None = None
        self._chunks = self._iter_chunks()
        self._buffer = bytearray()
        self._eof = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._drain_then(self._chunks)

    async def _drain_then(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        if self._buffer:
            data = bytes(self._buffer)
            self._buffer.clear()
            yield data
        async for chunk in chunks:
            yield chunk

    async def read(self, n: int = -1) -> bytes:
        """Read up to ``n`` bytes (all that remains when n < 0); b"" at the end."""
        if n < 0:  # join the chunks once instead of growing a buffer and copying it
            rest = [bytes(self._buffer), *[chunk async for chunk in self._chunks]]
            self._buffer.clear()
            self._eof = True
            return b"".join(rest)
        while not self._eof and len(self._buffer) < n:
            try:
                self._buffer += await self._chunks.__anext__()
            except StopAsyncIteration:
                self._eof = True
        if n >= len(self._buffer):
            data = bytes(self._buffer)
            self._buffer.clear()
        else:
            data = bytes(self._buffer[:n])
            del self._buffer[:n]
        return data

    async def _iter_chunks(self) -> AsyncIterator[bytes]:
        info = self.info
        if info.size == 0 and info.chunks == 0:
            self._verify(hashlib.sha256(), 0, 0)
            return
        store = self.store
        sha = hashlib.sha256()
        size = 0
        count = 0
        if info.chunks == 1:
            data = await store._chunk_of_single_chunk_object(info)
            sha.update(data)
            self._verify(sha, len(data), 1)
            yield data
            return
        chunk_size = info.chunk_size or DEFAULT_CHUNK_SIZE
        batch = max(2, min(256, store.client.read_window_bytes // chunk_size))
        consumer, available = await store._chunk_consumer(info, batch)
        self._consumer = consumer
        try:
            if available < info.chunks:
                raise self._changed()
            while count < info.chunks:
                msg = await consumer.next()
                if msg is None:
                    raise self._changed()
                sha.update(msg.data)
                size += len(msg.data)
                count += 1
                if size > info.size:
                    break
                yield msg.data
        finally:
            await consumer.close()
            self._consumer = None
        self._verify(sha, size, count)

    def _changed(self) -> ObjectChanged:
        return ObjectChanged(
            "chunks vanished while reading (overwritten or deleted meanwhile)",
            bucket=self.info.bucket,
            name=self.info.name,
        )

    def _verify(self, sha: hashlib._Hash, size: int, count: int) -> None:
        info = self.info
        if size != info.size or count != info.chunks:
            raise DigestMismatch(
                f"read {size} bytes in {count} chunks, expected {info.size} in {info.chunks}",
                bucket=info.bucket,
                name=info.name,
            )
        expected = digest_bytes(info.digest)
        if info.digest and expected != sha.digest():
            raise DigestMismatch(
                f"SHA-256 of the data does not match {info.digest}",
                bucket=info.bucket,
                name=info.name,
            )

    async def close(self) -> None:
        await self._chunks.aclose()
