"""The put pipeline: an object's chunks published and hashed as they are read, its meta record
last, and the chunks of the version it replaced purged.

``ObjectStore.put`` checks the name and hands over here. A put that fits one atomic batch goes
as one (``natsobj.aio.atomic_put``); any other streams its chunks through a ``PublishWindow``
and publishes the meta record over the version it read, so a failed put leaves no object and
the previous version intact, and concurrent writers to one name leave no orphaned chunks.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta

from natsobj.aio import records
from natsobj.aio.atomic_put import put_atomic, version_taken
from natsobj.aio.chunk_worker import chunk_sink
from natsobj.aio.expiry import BucketExpiry, PutExpiry
from natsobj.aio.jetstream.jsapi import status_of
from natsobj.aio.jetstream.nuids import next_nuid, put_id
from natsobj.aio.jetstream.publish import NuidTaken, PublishWindow
from natsobj.aio.room import check_room
from natsobj.aio.sources import PutSource, iter_chunks, known_size
from natsobj.aio.stream import BucketStream
from natsobj.errors import ChunkTooLarge, NatsObjError, SequenceConflict
from natsobj.model import (
    DEFAULT_CHUNK_SIZE,
    ObjectInfo,
    Tiering,
    check_chunk_size,
    format_digest,
)
from natsobj.names import chunk_subject, meta_subject
from natsobj.record_fields import check_metadata
from natsobj.retry import CONFLICT
from natsobj.wire import (
    EXPECTED_LAST_MSG_ID,
    EXPECTED_LAST_SUBJECT_SEQ,
    MSG_ID,
    ROLLUP,
    meta_msg_id,
)

# Room kept in a message for a chunk's headers (its Nats-Msg-Id), which count against the
# server's max_payload as much as the chunk does.
CHUNK_HEADER_ROOM = 256
# Nuids a put draws before it gives up: any but the first is another put's only by a fault.
NUID_DRAWS = 3


Current = Callable[[str], Awaitable[ObjectInfo | None]]
"""The version a write to a name replaces (``ObjectStore._replacing``: in a versioned bucket,
kept before it is looked up as replaced)."""
Kept = Callable[[ObjectInfo], Awaitable[bool]]
"""Whether a replaced version is kept (``ObjectStore._kept``): its chunks are not purged."""


async def put(
    stream: BucketStream,
    expiry_of: BucketExpiry,
    current: Current,
    name: str,
    source: PutSource,
    *,
    window_bytes: int,
    max_payload: int,
    atomic_max_bytes: int | None,
    description: str | None,
    headers: Mapping[str, list[str] | str] | None,
    metadata: dict[str, str] | None,
    chunk_size: int | None,
    expected_sequence: int | None,
    tiering: Tiering | None,
    ttl: timedelta | None,
    digest_headers: Callable[[str], Mapping[str, list[str]]] | None = None,
    kept: Kept | None = None,
    nuid: str | None = None,
) -> ObjectInfo:
    """``ObjectStore.put`` of a checked name (its docstring says what a put promises), with
    the client's put window and the server's max_payload. ``nuid``: the version id to put
    under (the archive's restore keeps ids), create-only: ``version_taken`` when another put
    holds it, and no other is drawn."""
    bucket = stream.bucket
    metadata = check_metadata(metadata, bucket=bucket, name=name)
    chunk_size = _chunk_size(chunk_size, max_payload, bucket, name)
    expiry = await expiry_of.plan(name, ttl)
    template = ObjectInfo(
        name=name,
        bucket=bucket,
        description=description or "",
        headers=normalize_headers(headers),
        metadata=metadata,
        chunk_size=chunk_size,
        tiering=tiering,
    )
    template.check_size()
    await check_room(stream, name, known_size(source), window_bytes)
    if stream.allow_atomic:  # one ADR-50 batch when it fits (up to ``atomic_max_bytes``)
        atomic, source = await put_atomic(
            stream,
            template,
            source,
            chunk_size=chunk_size,
            window_bytes=window_bytes,
            max_bytes=atomic_max_bytes,
            current=lambda: current(name),
            required=expected_sequence,
            chunk_headers=expiry.chunk_headers if expiry is not None else None,
            meta_headers=(
                (lambda: expiry.meta_headers(bucket, name)) if expiry is not None else None
            ),
            digest_headers=digest_headers,
            nuid=nuid,
        )
        if atomic is not None:
            atomic.info.expires = expiry.expires if expiry is not None else None
            return await _purge_replaced(
                stream, atomic.info, atomic.replaced, atomic.sequence, kept
            )
    windowed = _WindowedPut(
        stream, template, window_bytes, current, expected_sequence, expiry, digest_headers
    )
    windowed.nuid = nuid
    # the version we replace is looked up while the chunks upload: one round trip fewer
    replacing = asyncio.ensure_future(current(name))
    chunks_in = iter_chunks(source, chunk_size)
    window: PublishWindow | None = None
    published = False
    try:
        for _ in range(NUID_DRAWS):
            window = windowed.window()
            try:
                (replaced, sequence), info = await windowed.publish(window, chunks_in, replacing)
                break
            except NuidTaken:
                if nuid is not None:
                    raise version_taken(bucket, name, nuid) from None
                continue  # another put holds that nuid: nothing of this one was stored
        else:
            raise NatsObjError(
                "every nuid drawn for it was another put's", bucket=bucket, name=name
            )
        published = True
        info.expires = expiry.expires if expiry is not None else None
    finally:
        if windowed.digest is None:
            await windowed.hasher.abandon()
        if not published:
            replacing.cancel()
            if window is not None:
                await asyncio.shield(_discard_chunks(stream, window))
    return await _purge_replaced(stream, info, replaced, sequence, kept)


class _WindowedPut:
    """What the tries of one windowed put share: the object's record to fill in, the hasher
    (each chunk is hashed once, whichever nuid it goes out under), the put's guards, and
    the chunks read before the nuid's claim was answered (``head``), for the next try."""

    def __init__(
        self,
        stream: BucketStream,
        template: ObjectInfo,
        window_bytes: int,
        current: Current,
        expected_sequence: int | None,
        expiry: PutExpiry | None,
        digest_headers: Callable[[str], Mapping[str, list[str]]] | None,
    ) -> None:
        self.stream = stream
        self.template = template
        self.window_bytes = window_bytes
        self.current = current
        self.expected_sequence = expected_sequence
        self.expiry = expiry
        self.digest_headers = digest_headers
        self.hasher = chunk_sink(window_bytes)  # SHA-256 beside the publishing
        self.digest: bytes | None = None
        self.head: list[bytes] = []
        self.nuid: str | None = None  # the version id asked for, else one drawn per try

    def window(self) -> PublishWindow:
        """A publish window for the chunks, under a new nuid (or the one asked for)."""
        nuid = self.nuid or next_nuid()
        return PublishWindow(
            self.stream.api,
            self.stream.publish_subject(chunk_subject(self.stream.bucket, nuid)),
            self.stream.stream,
            nuid=nuid,
            put_id=put_id(nuid),
            max_bytes=self.window_bytes,
            bucket=self.stream.bucket,
            name=self.template.name,
            ack_timeout=2 * self.stream.api.timeout,
            headers=self.expiry.chunk_headers if self.expiry is not None else None,
        )

    async def _read(self, chunks: AsyncIterator[bytes]) -> None:
        """Read one more chunk into ``head``, if there is one."""
        chunk = await anext(chunks, None)
        if chunk is not None:
            await self.hasher.put(chunk)
            self.head.append(chunk)

    async def publish(
        self,
        window: PublishWindow,
        rest: AsyncIterator[bytes],
        replacing: asyncio.Future[ObjectInfo | None],
    ) -> tuple[tuple[ObjectInfo | None, int], ObjectInfo]:
        """One try under ``window``'s nuid: the first chunk (its claim), the second once the
        claim is answered, then the rest and the record; ``((replaced, sequence), info)``.
        A put of one chunk sends its record right behind it, which the claim's refusal keeps
        out. Raises NuidTaken, before any chunk past the second is read, when another put
        holds the nuid."""
        stream, expiry = self.stream, self.expiry
        bucket, name = stream.bucket, self.template.name
        if not self.head:
            await self._read(rest)
        if self.head:
            await window.publish(self.head[0])
            if len(self.head) == 1:
                await self._read(rest)  # while the claim is on its way
        if len(self.head) > 1:
            await window.drain()  # the claim is answered before anything else goes out
            await window.publish(self.head[1])
        size, chunks = sum(map(len, self.head)), len(self.head)
        async for chunk in rest:
            await self.hasher.put(chunk)
            size += len(chunk)
            chunks += 1
            await window.publish(chunk)
        if self.digest is None:
            self.digest = await self.hasher.digest()
        await window.drain(keep_last=True)
        meta_headers = expiry.meta_headers(bucket, name) if expiry is not None else None
        # the template is this put's own: filled in rather than copied, a copy being a cost
        # on every small put
        info = self.template
        info.nuid, info.size, info.chunks = window.nuid, size, chunks
        info.digest = format_digest(self.digest)
        if self.digest_headers is not None:
            info.headers.update(self.digest_headers(info.digest))
        committed = await _commit_behind_last_chunk(
            stream, info, window, replacing, self.expected_sequence, meta_headers
        )
        if committed is None:
            await window.drain()  # NuidTaken when the one chunk's claim was refused
            if expiry is not None:  # the wait for the chunks counts against the TTL
                meta_headers = expiry.meta_headers(bucket, name)
            committed = await _replace_meta(
                stream,
                self.current,
                info,
                await replacing,
                self.expected_sequence,
                meta_headers,
                msg_id=meta_msg_id(window.put_id),
            )
        else:
            replacing.cancel()
        return committed, info


async def _purge_replaced(
    stream: BucketStream,
    info: ObjectInfo,
    replaced: ObjectInfo | None,
    sequence: int,
    kept: Kept | None,
) -> ObjectInfo:
    """A put's last step: drop the chunks of the version it replaced, unless it is kept."""
    # an object of no chunks never claimed its nuid's subject (natsobj.aio.jetstream.publish): it
    # may be another object's
    if (
        replaced is not None
        and not replaced.deleted
        and not replaced.is_link
        and replaced.chunks
        and replaced.nuid
        and (kept is None or not await kept(replaced))
    ):
        await stream.purge(chunk_subject(stream.bucket, replaced.nuid))
    info.mtime = datetime.now(UTC)
    info.sequence = sequence
    return info


async def _commit_behind_last_chunk(
    stream: BucketStream,
    info: ObjectInfo,
    window: PublishWindow,
    current: asyncio.Future[ObjectInfo | None],
    required: int | None,
    meta_headers: dict[str, str] | None = None,
) -> tuple[ObjectInfo | None, int] | None:
    """Publish the meta record right behind the last chunk, without waiting for that
    chunk's acknowledgement: one round trip fewer per put.

    Two expectations keep it as safe as waiting. ``Nats-Expected-Last-Msg-Id`` (the last
    chunk's id, every earlier chunk being acknowledged) stores the record only if that
    chunk was stored and nothing came between; ``Nats-Expected-Last-Subject-Sequence``
    is the version replaced, as in ``_replace_meta``: the one looked up if the lookup is
    back already, else none (a new name, the common case of a small put). Returns
    (replaced, sequence), or None when the server refused either way or did not answer:
    the caller then waits for the chunks and goes the usual way (``_replace_meta``). Only
    on a single replica: in a cluster the last message may not be applied yet when the
    record arrives, and the refusal would cost a round trip instead of saving one."""
    last_msg_id = window.last_msg_id()
    if last_msg_id is None or stream.replicas > 1:
        return None
    replaced = None
    if current.done():
        if current.cancelled() or current.exception() is not None:
            return None
        replaced = current.result()
    expected = replaced.sequence if replaced is not None else 0
    if required is not None and required != expected:
        return None
    headers = {
        **(meta_headers or {}),
        **(ROLLUP if info.rolls_up else {}),
        EXPECTED_LAST_SUBJECT_SEQ: str(expected),
        EXPECTED_LAST_MSG_ID: last_msg_id,
        MSG_ID: meta_msg_id(window.put_id),
    }
    subject = stream.publish_subject(meta_subject(stream.bucket, info.name))
    try:
        reply = await stream.api.request(subject, info.encode(), headers=headers)
    except NatsObjError:
        return None
    if status_of(reply) is not None:
        return None
    response = stream.api.reply_json(reply, subject)
    if "error" in response:
        return None
    return replaced, int(response["seq"])


async def _replace_meta(
    stream: BucketStream,
    lookup: Current,
    info: ObjectInfo,
    current: ObjectInfo | None,
    required: int | None,
    meta_headers: dict[str, str] | None = None,
    *,
    msg_id: str,
) -> tuple[ObjectInfo | None, int]:
    """Publish meta only over the version we read, so we always purge exactly what we
    replaced: concurrent writers to one name then leave no orphaned chunks. With
    ``required``, anything but that version is a conflict for the caller. ``msg_id``: the
    record's message id (``natsobj.wire.meta_msg_id``)."""
    replaced = current
    for attempt in CONFLICT.tries():
        if attempt:
            await CONFLICT.pause(attempt)
            current = await lookup(info.name)
            if current is not None and current.nuid == info.nuid and current.sequence:
                # our record landed, but its acknowledgement was lost to a failover
                return replaced, current.sequence
            replaced = current
        expected = current.sequence if current else 0
        if required is not None and required != expected:
            raise SequenceConflict(
                f"it is no longer at sequence {required}", bucket=stream.bucket, name=info.name
            )
        try:
            sequence = await records.publish_record(
                stream,
                info,
                expected_sequence=expected,
                msg_id=msg_id,
                headers=meta_headers,
            )
            return current, sequence
        except SequenceConflict:
            if required is not None:
                raise
            continue
    raise NatsObjError("too many concurrent writers", bucket=stream.bucket, name=info.name)


async def _discard_chunks(stream: BucketStream, window: PublishWindow) -> None:
    """Best effort and bounded, so a failed put reports promptly: chunks left behind (the
    cluster lost its quorum, say) are orphans no meta record names; compact() drops them.
    The subject is purged only when this put's first chunk is known stored there: unclaimed,
    it may be another put's."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(2 * stream.api.timeout):
            await window.abandon()
            if window.claimed:
                await stream.purge(chunk_subject(stream.bucket, window.nuid))


def normalize_headers(headers: Mapping[str, list[str] | str] | None) -> dict[str, list[str]]:
    """An object's headers as its record keeps them: each name with a list of values."""
    if not headers:
        return {}
    return {
        str(k): [str(v)] if isinstance(v, str) else [str(x) for x in v] for k, v in headers.items()
    }


def _chunk_size(requested: int | None, max_payload: int, bucket: str, name: str) -> int:
    """The chunk size to put with: the one asked for if the server can take it, else the
    default, shrunk to fit a server with a small max_payload."""
    limit = max_payload - CHUNK_HEADER_ROOM
    if not requested:
        return min(DEFAULT_CHUNK_SIZE, limit)
    chunk_size = check_chunk_size(requested, bucket=bucket, name=name)
    if chunk_size > limit:
        raise ChunkTooLarge(
            f"a chunk size of {chunk_size} bytes is more than the server takes: its max_payload"
            f" is {max_payload} bytes, {CHUNK_HEADER_ROOM} of them kept for each chunk's"
            f" headers, so chunks may be at most {limit} bytes",
            bucket=bucket,
            name=name,
        )
    return chunk_size
