"""Streaming an object's chunks back, verifying count, size and SHA-256 as they arrive.

Short data is never returned: a reader that runs out of chunks raises ``ObjectChanged``
(``ObjectNotFound`` once the object's ``expires`` has passed: it expired), and one whose
bytes do not match the recorded digest raises ``DigestMismatch`` after the last chunk, as one
does at a chunk stored after the meta record (no part of the version:
``chunkmap.stored_before``).
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable

from natsobj.aio.chunk_worker import chunk_sink
from natsobj.aio.chunkmap import changed, stored_before, verify_digest
from natsobj.aio.jetstream.consumer import OrderedConsumer
from natsobj.aio.jetstream.jsapi import raw_header
from natsobj.aio.offloaded import read_offloaded
from natsobj.aio.stream import BucketStream
from natsobj.errors import DigestMismatch, MissingDigest, ObjectChanged, ObjectNotFound
from natsobj.model import DEFAULT_CHUNK_SIZE, ObjectInfo, digest_bytes
from natsobj.names import chunk_subject
from natsobj.wire import MARKER_REASON

_MARKER = MARKER_REASON.encode()


class ObjectReader:
    """Returned by ``ObjectStore.get``: ``info``, ``read(n)``, ``async for chunk`` and
    ``copy_to(write)``. An offloaded object's bytes come from the S3 archive
    (``natsobj.aio.offloaded``), checked the same way."""

    def __init__(self, stream: BucketStream, info: ObjectInfo, *, read_window_bytes: int) -> None:
        self.stream = stream
        self.info = info
        self.read_window_bytes = read_window_bytes
        self._chunks: AsyncGenerator[bytes] | None = None
        self._buffer = bytearray()
        self._eof = False

    def _stream(self, write: Callable[[bytes], object] | None = None) -> AsyncGenerator[bytes]:
        if self._chunks is None:
            self._chunks = self._iter_chunks(write)
        elif write is not None:
            raise RuntimeError("copy_to() needs a reader nothing has been read from yet")
        return self._chunks

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._drain_then(self._stream())

    async def _drain_then(self, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        if self._buffer:
            data = bytes(self._buffer)
            self._buffer.clear()
            yield data
        async for chunk in chunks:
            yield chunk

    async def read(self, n: int = -1) -> bytes:
        """Read up to ``n`` bytes (all that remains when n < 0); b"" at the end."""
        chunks = self._stream()
        if n < 0:  # join the chunks once instead of growing a buffer and copying it
            rest = [bytes(self._buffer), *[chunk async for chunk in chunks]]
            self._buffer.clear()
            self._eof = True
            return b"".join(rest)
        while not self._eof and len(self._buffer) < n:
            try:
                self._buffer += await chunks.__anext__()
            except StopAsyncIteration:
                self._eof = True
        if n >= len(self._buffer):
            data = bytes(self._buffer)
            self._buffer.clear()
        else:
            data = bytes(self._buffer[:n])
            del self._buffer[:n]
        return data

    async def copy_to(
        self, write: Callable[[bytes], object], progress: Callable[[int], None] | None = None
    ) -> None:
        """Pass the whole object to ``write`` (a file's ``write``), hashed and written on a
        worker thread overlapped with receiving where a core is spare (natsobj.aio.chunk_worker);
        returns once all is written and the digest matched. ``progress`` gets each chunk's
        size as it arrives."""
        async for chunk in self._stream(write):
            if progress is not None:
                progress(len(chunk))

    async def _iter_chunks(
        self, write: Callable[[bytes], object] | None = None
    ) -> AsyncGenerator[bytes]:
        info = self.info
        if info.offloaded:
            async for piece in self._offloaded(write):
                yield piece
            return
        if info.size == 0 and info.chunks == 0:
            self._verify(hashlib.sha256().digest(), 0, 0)
            return
        if info.chunks == 1:
            data = await self._single_chunk()
            self._verify(hashlib.sha256(data).digest(), len(data), 1)
            if write is not None:
                write(data)
            yield data
            return
        consumer, available = await self._chunk_consumer()
        worker = chunk_sink(self.read_window_bytes, write)
        size = count = 0
        digest = b""
        last = b""  # held until the digest is checked: no byte leaves unverified
        try:
            if available < info.chunks:
                raise self._changed()
            while count < info.chunks:
                msg = await consumer.next()
                if msg is None or (msg.headers and raw_header(msg.headers, _MARKER) is not None):
                    raise self._changed()
                stored_before(info, msg.sequence)
                size += len(msg.data)
                count += 1
                if size > info.size:
                    break
                await worker.put(msg.data)
                if count < info.chunks:
                    yield msg.data
                else:
                    last = msg.data
            digest = await worker.digest()
        finally:
            if not digest:
                await worker.abandon()
            await consumer.close()
        self._verify(digest, size, count)
        if last:
            yield last

    async def _offloaded(self, write: Callable[[bytes], object] | None) -> AsyncGenerator[bytes]:
        """The bytes from the archive, which checks them against the record as they come."""
        pieces = read_offloaded(self.stream, self.info)
        try:
            async for piece in pieces:
                if write is not None:
                    write(piece)
                yield piece
        finally:
            await pieces.aclose()

    async def _single_chunk(self) -> bytes:
        info = self.info
        found = await self.stream.last(
            chunk_subject(info.bucket, info.nuid), name=info.name, min_sequence=1
        )
        if found is None or MARKER_REASON in found.headers:  # gone, or an expiry's marker
            raise self._changed()
        stored_before(info, found.sequence)
        return found.data

    async def _chunk_consumer(self) -> tuple[OrderedConsumer, int]:
        """A started consumer over the object's chunks and how many it has. The consumer may
        be placed on a replica that has not caught up; with fewer chunks than the meta record
        names while the stream leader holds them all, another one is made after a pause."""
        info, stream = self.info, self.stream
        subject = chunk_subject(info.bucket, info.nuid)
        # pull credit of read_window_bytes, asked for in two halves (the second while the
        # first arrives)
        chunk_size = info.chunk_size or DEFAULT_CHUNK_SIZE
        batch = max(1, min(128, self.read_window_bytes // chunk_size // 2))

        return await stream.started_consumer(
            subject,
            info.chunks,
            what="the object's chunks",
            name=info.name,
            batch=batch,
            pulls_ahead=2,
        )

    def _changed(self) -> ObjectChanged | ObjectNotFound:
        return changed(self.info, "chunks vanished while reading")

    def _verify(self, digest: bytes, size: int, count: int) -> None:
        info = self.info
        if size != info.size or count != info.chunks:
            raise DigestMismatch(
                f"read {size} bytes in {count} chunks, expected {info.size} in {info.chunks}",
                bucket=info.bucket,
                name=info.name,
            )
        verify_digest(info, digest)

    async def close(self) -> None:
        """Stop reading and release the consumer; ``get`` calls it when its block ends."""
        if self._chunks is not None:
            await self._chunks.aclose()


def check_digest(info: ObjectInfo, *, allow_missing: bool = False) -> None:
    """Refuse, before a byte is read, a record whose data could not be verified: one with no
    digest (unless ``allow_missing``), or with one that is no SHA-256 this client can read.
    ``allow_missing`` is a parsed bool: text such as ``"no"`` is truthy, so it is refused here
    rather than read as consent (a face parses its words once: natsobj.operation_options)."""
    if not isinstance(allow_missing, bool):
        raise TypeError(f"allow_missing_digest must be a bool, not {allow_missing!r}")
    if not info.digest:
        if not allow_missing:
            raise MissingDigest(
                "the meta record has no digest, so the data cannot be verified",
                bucket=info.bucket,
                name=info.name,
            )
        return
    expected = digest_bytes(info.digest)
    if expected is None or len(expected) != hashlib.sha256().digest_size:
        raise DigestMismatch(
            f"the recorded digest {info.digest[:80]!r} is not a SHA-256 digest",
            bucket=info.bucket,
            name=info.name,
            hint="The meta record is damaged; re-upload the object.",
        )
