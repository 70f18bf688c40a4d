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
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta

from natsobj.aio import records
from natsobj.aio.atomic_put import put_atomic
from natsobj.aio.expiry import BucketExpiry
from natsobj.aio.jsapi import status_of
from natsobj.aio.nuids import next_nuid
from natsobj.aio.offload import chunk_sink
from natsobj.aio.publish import PublishWindow
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


Current = Callable[[str], Awaitable[ObjectInfo | None]]
"""The version a write to a name replaces (``ObjectStore._current``)."""


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
    ttl: float | str | timedelta | None,
    digest_headers: Callable[[str], Mapping[str, list[str]]] | None = None,
) -> ObjectInfo:
    """``ObjectStore.put`` of a checked name (its docstring says what a put promises), with
    the client's put window and the server's max_payload."""
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
        )
        if atomic is not None:
            atomic.info.expires = expiry.expires if expiry is not None else None
            return await _purge_replaced(stream, atomic.info, atomic.replaced, atomic.sequence)
    nuid = next_nuid()
    local_chunks = chunk_subject(bucket, nuid)
    window = PublishWindow(
        stream.api,
        stream.publish_subject(local_chunks),
        stream.stream,
        nuid=nuid,
        max_bytes=window_bytes,
        bucket=bucket,
        name=name,
        ack_timeout=2 * stream.api.timeout,
        headers=expiry.chunk_headers if expiry is not None else None,
    )
    hasher = chunk_sink(window_bytes)  # SHA-256 beside the publishing
    digest = b""
    size = chunks = 0
    published = False
    # the version we replace is looked up while the chunks upload: one round trip fewer
    replacing = asyncio.ensure_future(current(name))
    try:
        async for chunk in iter_chunks(source, chunk_size):
            await hasher.put(chunk)
            size += len(chunk)
            chunks += 1
            await window.publish(chunk)
        digest = await hasher.digest()
        await window.drain(keep_last=True)
        meta_headers = expiry.meta_headers(bucket, name) if expiry is not None else None
        # the template is this put's own: filled in rather than copied, a copy being a
        # cost on every small put
        info = template
        info.nuid, info.size, info.chunks = nuid, size, chunks
        info.digest = format_digest(digest)
        if digest_headers is not None:
            info.headers.update(digest_headers(info.digest))
        committed = await _commit_behind_last_chunk(
            stream, info, window, replacing, expected_sequence, meta_headers
        )
        if committed is None:
            await window.drain()
            if expiry is not None:  # the wait for the chunks counts against the TTL
                meta_headers = expiry.meta_headers(bucket, name)
            committed = await _replace_meta(
                stream, current, info, await replacing, expected_sequence, meta_headers
            )
        else:
            replacing.cancel()
        replaced, sequence = committed
        published = True
        info.expires = expiry.expires if expiry is not None else None
    finally:
        if not digest:
            await hasher.abandon()
        if not published:
            replacing.cancel()
            await asyncio.shield(_discard_chunks(stream, window, local_chunks))
    return await _purge_replaced(stream, info, replaced, sequence)


async def _purge_replaced(
    stream: BucketStream, info: ObjectInfo, replaced: ObjectInfo | None, sequence: int
) -> ObjectInfo:
    """A put's last step: drop the chunks of the version it replaced."""
    if replaced is not None and not replaced.deleted and replaced.nuid and not replaced.is_link:
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
        MSG_ID: meta_msg_id(info.nuid),
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
) -> tuple[ObjectInfo | None, int]:
    """Publish meta only over the version we read, so we always purge exactly what we
    replaced: concurrent writers to one name then leave no orphaned chunks. With
    ``required``, anything but that version is a conflict for the caller."""
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
                msg_id=meta_msg_id(info.nuid),
                headers=meta_headers,
            )
            return current, sequence
        except SequenceConflict:
            if required is not None:
                raise
            continue
    raise NatsObjError("too many concurrent writers", bucket=stream.bucket, name=info.name)


async def _discard_chunks(stream: BucketStream, window: PublishWindow, local_chunks: str) -> None:
    """Best effort and bounded, so a failed put reports promptly: chunks left behind (the
    cluster lost its quorum, say) are orphans no meta record names; compact() drops them."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(2 * stream.api.timeout):
            await window.abandon()
            await stream.purge(local_chunks)


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
