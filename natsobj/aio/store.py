"""One object store (bucket): every ADR-20 operation on the async core."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, Unpack

from nats.nuid import NUID

from natsobj.aio import listing
from natsobj.aio.atomic_put import put_atomic
from natsobj.aio.expiry import BucketExpiry
from natsobj.aio.jsapi import JetStreamApi, raw_header, status_of
from natsobj.aio.offload import chunk_sink
from natsobj.aio.publish import PublishWindow
from natsobj.aio.ranges import ClientRanges, RangeReader
from natsobj.aio.reader import ObjectReader, check_digest
from natsobj.aio.restatement import proven
from natsobj.aio.sources import PutSource, iter_chunks
from natsobj.aio.stream import BucketStream, LastMsg
from natsobj.aio.watch import ObjectWatcher, info_from_msg
from natsobj.cursors import ChangeCursor
from natsobj.errors import (
    BadObjectMeta,
    BucketNotFound,
    ChunkTooLarge,
    LinkError,
    NatsObjError,
    ObjectChanged,
    ObjectExists,
    ObjectNotFound,
    ObjectTooLarge,
    SequenceConflict,
)
from natsobj.lifecycle import LifecycleRule, expired_record, expires_at
from natsobj.localfiles import open_target
from natsobj.model import (
    DEFAULT_CHUNK_SIZE,
    ObjectInfo,
    ObjectLink,
    StoreStatus,
    StreamInfo,
    Tiering,
    check_chunk_size,
    format_digest,
)
from natsobj.name_index import decoded
from natsobj.names import (
    all_chunks_subject,
    all_meta_subject,
    check_object_name,
    check_subjects_fit,
    chunk_subject,
    encode_name,
    meta_subject,
    names_that_always_fit,
)
from natsobj.record_fields import check_metadata, trusted_nuid
from natsobj.settings import ConnectionSettings
from natsobj.store_config import StoreConfig, StoreSettings
from natsobj.wire import (
    EXPECTED_LAST_MSG_ID,
    EXPECTED_LAST_SUBJECT_SEQ,
    MARKER_REASON,
    MSG_ID,
    MSG_TTL,
    ROLLUP,
    direct_get_subject,
    meta_msg_id,
)

log = logging.getLogger(__name__)
_nuid = NUID()
READ_ATTEMPTS = 3
WRITE_BUFFER = 64 * 1024  # get_file: smaller than a chunk, so a chunk is written, not copied
META_ATTEMPTS = 20


class Changes(list[ObjectInfo]):
    """A batch of changes; resume after ``last_sequence``, which counts skipped ones too, or
    from ``cursor`` when the batch was asked for with a ``ChangeCursor``."""

    last_sequence: int = 0
    cursor: ChangeCursor | None = None


@dataclass
class CompactResult:
    purged_subjects: list[str] = field(default_factory=list)
    purged_messages: int = 0
    reclaimed_bytes: int = 0
    skipped_recent: int = 0


class StoreClient(Protocol):
    """What a store needs of the client that opened it (``natsobj.aio.Client``): said here
    rather than imported, so the client, which makes stores, is the only one of the two that
    knows the other."""

    api: JetStreamApi
    settings: ConnectionSettings
    nc: Any
    put_window_bytes: int
    read_window_bytes: int
    ranges: ClientRanges

    async def store(self, bucket: str) -> ObjectStore: ...

    async def update_store(
        self, bucket: str | StoreConfig, **changes: Unpack[StoreSettings]
    ) -> ObjectStore: ...


class ObjectStore:
    """A bucket's objects (ADR-20). Stream-level work goes through ``bucket_stream``, the
    public layer the reader, the listing, the name index and the archive share."""

    def __init__(self, client: StoreClient, bucket: str, stream_info: StreamInfo) -> None:
        self.client = client
        self.api = client.api
        self.bucket = bucket
        self.bucket_stream = BucketStream(client.api, bucket, stream_info, client.settings)
        self.stream = self.bucket_stream.stream
        # lifecycle rules and TTL settings, read with the stream info (natsobj.aio.expiry)
        self.expiry = BucketExpiry(
            self.bucket_stream, stream_info, getattr(client.nc, "connected_server_version", None)
        )
        # puts of objects up to this size go as one atomic batch where the stream allows it
        # (natsobj.aio.atomic_put; 0: never; None: the size measured best for the stream's
        # replica count, atomic_put.default_max_bytes)
        self.atomic_max_bytes: int | None = None
        no_token = meta_subject(bucket, "")
        self._names_that_fit = names_that_always_fit(
            [
                self.bucket_stream.publish_subject(no_token),
                direct_get_subject(self.api.prefix, self.stream, no_token),
            ],
            inbox_prefix=self.api.inbox_prefix,
        )

    def __repr__(self) -> str:
        return f"ObjectStore(bucket={self.bucket!r})"

    def _check_name(self, name: str) -> None:
        """A name that can be sent: valid UTF-8, and short enough that the longest subject it
        goes out in (the direct get of its meta subject, or the publish under an API prefix)
        fits the server's protocol line; a longer one would cost the connection."""
        check_object_name(name, bucket=self.bucket)
        if len(name) <= self._names_that_fit:
            return
        local = meta_subject(self.bucket, name)
        check_subjects_fit(
            [
                self.bucket_stream.publish_subject(local),
                direct_get_subject(self.api.prefix, self.stream, local),
            ],
            inbox_prefix=self.api.inbox_prefix,
            bucket=self.bucket,
            name=name,
        )

    @property
    def strong_reads(self) -> bool:
        """See ``BucketStream.strong_reads``."""
        return self.bucket_stream.strong_reads

    def read_floor(self, stream_info: StreamInfo) -> int | None:
        """The listing hook; see ``BucketStream.read_floor``."""
        return self.bucket_stream.read_floor(stream_info)

    # -- info -------------------------------------------------------------------------------------

    async def get_info(
        self, name: str, *, include_deleted: bool = False, min_sequence: int | None = None
    ) -> ObjectInfo:
        """The object's meta record, read straight from the stream (``mtime`` and ``sequence``
        come from the server); ObjectNotFound when missing, or deleted unless
        ``include_deleted``. A link is returned as the link, not followed. ``min_sequence``:
        the sequence of a write the caller knows about (``ObjectInfo.sequence`` from a put,
        handed over by another task); the read then reflects that write or a later one, at
        the cost of a direct get. A record that fails validation is BadObjectMeta.

        ``expires`` is when the server removes an expiring object (its record's time plus
        its ``Nats-TTL``); an expired one is ObjectNotFound, or with ``include_deleted`` a
        deleted record with ``expired`` set while the server's delete marker is there."""
        info = await proven(
            self.bucket_stream, self._parse_meta(name, await self._read_meta(name, min_sequence))
        )
        if not include_deleted:
            if info.expired or (info.expires is not None and info.expires <= datetime.now(UTC)):
                raise ObjectNotFound("object expired", bucket=self.bucket, name=name)
            if info.deleted:
                raise ObjectNotFound("object was deleted", bucket=self.bucket, name=name)
        return info

    async def _read_meta(self, name: str, min_sequence: int | None = None) -> LastMsg:
        self._check_name(name)
        found = await self.bucket_stream.last(
            meta_subject(self.bucket, name), name=name, min_sequence=min_sequence
        )
        if found is None:
            raise ObjectNotFound("object does not exist", bucket=self.bucket, name=name)
        return found

    def _parse_meta(self, name: str, found: LastMsg) -> ObjectInfo:
        """The record, or what the server's delete marker in its place stands for."""
        if MARKER_REASON in found.headers:
            return expired_record(name, self.bucket, mtime=found.time, sequence=found.sequence)
        info = ObjectInfo.from_json(
            found.data,
            mtime=found.time,
            sequence=found.sequence,
            bucket=self.bucket,
            name=name,
            token=encode_name(name),
        )
        info.expires = expires_at(
            found.time,
            found.headers.get(MSG_TTL),
            subject=f"bucket {self.bucket!r}, object {name!r}",
        )
        return info

    async def _current(self, name: str) -> ObjectInfo | None:
        """The version a write replaces (deleted or not), or None. A record that fails
        validation is still a version to replace: what can be trusted of it (its name,
        sequence and a nuid that is one subject token) is enough, so ``put`` and ``delete``
        get rid of it without purging anything by a nuid it does not validly name."""
        try:
            found = await self._read_meta(name)
        except ObjectNotFound:
            return None
        try:
            return self._parse_meta(name, found)
        except BadObjectMeta as exc:
            log.warning("replacing an invalid meta record: %s", exc)
            nuid = trusted_nuid(found.data) or ""
            return ObjectInfo(name, self.bucket, nuid, mtime=found.time, sequence=found.sequence)

    async def publish_meta(
        self,
        info: ObjectInfo,
        *,
        expected_sequence: int | None = None,
        msg_id: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> int:
        """Publish a meta record as a per-subject rollup; returns its stream sequence
        (SequenceConflict when ``expected_sequence`` is not where the name is). For records
        this client builds (puts, updates, tiering's restatements of a version)."""
        return await self.bucket_stream.publish_rollup(
            meta_subject(self.bucket, info.name),
            info.encode(),
            rollup=info.rolls_up,
            name=info.name,
            expected_sequence=expected_sequence,
            msg_id=msg_id,
            headers=headers,
        )

    # -- put --------------------------------------------------------------------------------------

    async def put(
        self,
        name: str,
        source: PutSource,
        *,
        description: str | None = None,
        headers: Mapping[str, list[str] | str] | None = None,
        metadata: dict[str, str] | None = None,
        chunk_size: int | None = None,
        expected_sequence: int | None = None,
        tiering: Tiering | None = None,
        ttl: float | timedelta | None = None,
    ) -> ObjectInfo:
        """Store ``source`` as ``name``. Chunks first, meta last: a failed put leaves no object
        and the previous version intact, and its chunks are purged where the server allows.

        With ``expected_sequence`` the put is a compare-and-swap: it succeeds only if the
        name's meta record is still at that sequence (0: the name has never been written),
        and raises ObjectChanged otherwise. An object up to ``atomic_max_bytes`` goes as one
        atomic batch (natsobj.aio.atomic_put): all-or-nothing on the server, chunks
        contiguous. ``tiering`` marks the record as restating the
        version it names rather than being a new one (how ``natsobj.archive.tiering``
        rehydrates an offloaded object: watches and sensors do not see it as a change).

        ``ttl`` (seconds or a timedelta, at least 1 s) makes the object expire on the server
        that long after the put started, with no client running (docs/lifecycle.md); None
        applies the bucket's first matching lifecycle rule, 0 keeps it whatever the rules
        say. Every put is a new version with a clock of its own. ExpiryNotEnabled when the
        bucket does not allow per-object TTLs."""
        self._check_name(name)
        metadata = check_metadata(metadata, bucket=self.bucket, name=name)
        chunk_size = _chunk_size(chunk_size, self.client.nc.max_payload, self.bucket, name)
        expiry = await self.expiry.plan(name, ttl)
        template = ObjectInfo(
            name=name,
            bucket=self.bucket,
            description=description or "",
            headers=_normalize_headers(headers),
            metadata=metadata,
            chunk_size=chunk_size,
            tiering=tiering,
        )
        template.check_size()
        if self.bucket_stream.allow_atomic:  # one ADR-50 batch when it fits and is faster
            atomic, source = await put_atomic(
                self.bucket_stream,
                template,
                source,
                chunk_size=chunk_size,
                window_bytes=self.client.put_window_bytes,
                max_bytes=self.atomic_max_bytes,
                current=lambda: self._current(name),
                required=expected_sequence,
                chunk_headers=expiry.chunk_headers if expiry is not None else None,
                meta_headers=(
                    (lambda: expiry.meta_headers(self.bucket, name)) if expiry is not None else None
                ),
            )
            if atomic is not None:
                atomic.info.expires = expiry.expires if expiry is not None else None
                return await self._purge_replaced(atomic.info, atomic.replaced, atomic.sequence)
        nuid = _nuid.next().decode()
        local_chunks = chunk_subject(self.bucket, nuid)
        window = PublishWindow(
            self.api,
            self.bucket_stream.publish_subject(local_chunks),
            self.stream,
            nuid=nuid,
            max_bytes=self.client.put_window_bytes,
            bucket=self.bucket,
            name=name,
            ack_timeout=2 * self.api.timeout,
            headers=expiry.chunk_headers if expiry is not None else None,
        )
        hasher = chunk_sink(self.client.put_window_bytes)  # SHA-256 beside the publishing
        digest = b""
        size = chunks = 0
        published = False
        # the version we replace is looked up while the chunks upload: one round trip fewer
        current = asyncio.ensure_future(self._current(name))
        try:
            async for chunk in iter_chunks(source, chunk_size):
                await hasher.put(chunk)
                size += len(chunk)
                chunks += 1
                await window.publish(chunk)
            digest = await hasher.digest()
            await window.drain(keep_last=True)
            meta_headers = expiry.meta_headers(self.bucket, name) if expiry is not None else None
            # the template is this put's own: filled in rather than copied (a copy of the
            # dataclass is a measurable part of a small put)
            info = template
            info.nuid, info.size, info.chunks = nuid, size, chunks
            info.digest = format_digest(digest)
            committed = await self._commit_behind_last_chunk(
                info, window, current, expected_sequence, meta_headers
            )
            if committed is None:
                await window.drain()
                if expiry is not None:  # the wait for the chunks counts against the TTL
                    meta_headers = expiry.meta_headers(self.bucket, name)
                committed = await self._replace_meta(
                    info, await current, expected_sequence, meta_headers
                )
            else:
                current.cancel()
            replaced, sequence = committed
            published = True
            info.expires = expiry.expires if expiry is not None else None
        finally:
            if not digest:
                await hasher.abandon()
            if not published:
                current.cancel()
                await asyncio.shield(self._discard_chunks(window, local_chunks))
        return await self._purge_replaced(info, replaced, sequence)

    async def _purge_replaced(
        self, info: ObjectInfo, replaced: ObjectInfo | None, sequence: int
    ) -> ObjectInfo:
        """A put's last step: drop the chunks of the version it replaced."""
        if replaced is not None and not replaced.deleted and replaced.nuid and not replaced.is_link:
            await self.bucket_stream.purge(chunk_subject(self.bucket, replaced.nuid))
        info.mtime = datetime.now(UTC)
        info.sequence = sequence
        return info

    async def _commit_behind_last_chunk(
        self,
        info: ObjectInfo,
        window: PublishWindow,
        current: asyncio.Future[ObjectInfo | None],
        required: int | None,
        meta_headers: dict[str, str] | None = None,
    ) -> tuple[ObjectInfo | None, int] | None:
        """Publish the meta record right behind the last chunk, without waiting for that
        chunk's acknowledgement: one round trip fewer per put, half of a small put's.

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
        if last_msg_id is None or self.bucket_stream.replicas > 1:
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
        subject = self.bucket_stream.publish_subject(meta_subject(self.bucket, info.name))
        try:
            reply = await self.api.request(subject, info.encode(), headers=headers)
        except NatsObjError:
            return None
        if status_of(reply) is not None:
            return None
        response = self.api.reply_json(reply, subject)
        if "error" in response:
            return None
        return replaced, int(response["seq"])

    async def _replace_meta(
        self,
        info: ObjectInfo,
        current: ObjectInfo | None,
        required: int | None,
        meta_headers: dict[str, str] | None = None,
    ) -> tuple[ObjectInfo | None, int]:
        """Publish meta only over the version we read, so we always purge exactly what we
        replaced: concurrent writers to one name then leave no orphaned chunks. With
        ``required``, anything but that version is a conflict for the caller."""
        replaced = current
        for attempt in range(META_ATTEMPTS):
            if attempt:
                current = await self._current(info.name)
                if current is not None and current.nuid == info.nuid and current.sequence:
                    # our record landed, but its acknowledgement was lost to a failover
                    return replaced, current.sequence
                replaced = current
            expected = current.sequence if current else 0
            if required is not None and required != expected:
                raise SequenceConflict(
                    f"it is no longer at sequence {required}", bucket=self.bucket, name=info.name
                )
            try:
                sequence = await self.publish_meta(
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
        raise NatsObjError("too many concurrent writers", bucket=self.bucket, name=info.name)

    async def _discard_chunks(self, window: PublishWindow, local_chunks: str) -> None:
        """Best effort and bounded, so a failed put reports promptly: chunks left behind (the
        cluster lost its quorum, say) are orphans no meta record names; compact() drops them."""
        with contextlib.suppress(Exception):
            async with asyncio.timeout(2 * self.api.timeout):
                await window.abandon()
                await self.bucket_stream.purge(local_chunks)

    # -- get --------------------------------------------------------------------------------------

    async def _resolve(
        self, name: str, min_sequence: int | None = None
    ) -> tuple[ObjectStore, ObjectInfo]:
        info = await self.get_info(name, min_sequence=min_sequence)
        if info.link is None:
            if not info.nuid and info.chunks:
                raise BadObjectMeta(
                    "meta record has chunks but no nuid", bucket=self.bucket, name=name
                )
            return self, info
        if info.link.is_bucket_link:
            raise LinkError(
                f"is a link to bucket {info.link.bucket!r}, not to an object",
                bucket=self.bucket,
                name=name,
                hint=f"Open store({info.link.bucket!r}) instead.",
            )
        target = (
            self if info.link.bucket == self.bucket else await self.client.store(info.link.bucket)
        )
        target_info = await target.get_info(info.link.name)
        if target_info.is_link:
            raise LinkError("links to links are not allowed", bucket=self.bucket, name=name)
        return target, target_info

    @contextlib.asynccontextmanager
    async def get(
        self,
        name: str,
        *,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
    ) -> AsyncIterator[ObjectReader]:
        """Stream an object (following an object link); the digest is checked at the end.
        ``min_sequence`` as for get_info. A record without a digest is MissingDigest before
        anything is read, unless ``allow_missing_digest`` (for objects known to come from a
        client that writes none: only their size and chunk count are checked then)."""
        target, info = await self._resolve(name, min_sequence)
        check_digest(info, allow_missing=allow_missing_digest)
        reader = target.reader(info)
        try:
            yield reader
        finally:
            await reader.close()

    def reader(self, info: ObjectInfo) -> ObjectReader:
        """A reader of the version ``info`` describes (a record read before, by a listing or
        ``get_info``), from its chunks or, offloaded, from the S3 archive; its digest is
        checked at the end. ``get`` is the usual way in."""
        return ObjectReader(
            self.bucket_stream, info, read_window_bytes=self.client.read_window_bytes
        )

    async def get_bytes(
        self,
        name: str,
        *,
        max_size: int | None = None,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
    ) -> bytes:
        """The whole object, verified; ``max_size`` refuses (ObjectTooLarge) before reading an
        object bigger than that. A read that raced an overwrite is retried. ``min_sequence``
        as for ``get_info``, ``allow_missing_digest`` as for ``get``."""
        for attempt in range(READ_ATTEMPTS):
            try:
                async with self.get(
                    name, min_sequence=min_sequence, allow_missing_digest=allow_missing_digest
                ) as reader:
                    if max_size is not None and reader.info.size > max_size:
                        raise ObjectTooLarge(
                            f"object is {reader.info.size} bytes, over the {max_size} byte cap",
                            bucket=self.bucket,
                            name=name,
                        )
                    return await reader.read()
            except ObjectChanged:
                if attempt == READ_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    async def get_file(
        self,
        name: str,
        path: str | os.PathLike[str],
        *,
        progress: Callable[[int], None] | None = None,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        within: str | os.PathLike[str] | None = None,
    ) -> ObjectInfo:
        """Write to a temporary file beside ``path`` and rename it only once the digest matches,
        so ``path`` never holds partial or corrupt data. ``progress`` gets each chunk's size;
        ``allow_missing_digest`` as for ``get``. ``within``: the local directory a transfer
        fills, ``path`` having been made from the object's name below it; a place that leads
        out of it (a symlink planted there) is refused with ``UnsafeLocalPath``
        (``natsobj.localfiles.open_target``)."""
        with open_target(path, within, bucket=self.bucket, name=name) as target:
            for attempt in range(READ_ATTEMPTS):
                try:
                    with target.part(WRITE_BUFFER) as handle:
                        async with self.get(
                            name,
                            min_sequence=min_sequence,
                            allow_missing_digest=allow_missing_digest,
                        ) as reader:
                            await reader.copy_to(handle.write, progress)
                            info = reader.info
                        target.commit(handle)
                    return info
                except ObjectChanged:
                    if attempt == READ_ATTEMPTS - 1:
                        raise
        raise AssertionError("unreachable")

    # -- ranges ----------------------------------------------------------------------------------

    async def get_range(
        self,
        name: str,
        start: int,
        end: int | None = None,
        *,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
    ) -> bytes:
        """Bytes ``[start, end)`` of the object (following a link), fsspec's convention: end
        exclusive, None for the end, negative offsets from the end, clamped to the object.
        Only the chunks holding them are fetched (docs/random-access.md), placed by a chunk
        map proven against the record and each checked for its subject, sequence and length:
        the whole read's bytes, though a range cannot be checked against the SHA-256.
        A read that raced an overwrite reads the new version; ``min_sequence`` as for
        ``get_info``, ``allow_missing_digest`` as for ``get``."""
        for attempt in range(READ_ATTEMPTS):
            reader = await self.open_range(
                name, min_sequence=min_sequence, allow_missing_digest=allow_missing_digest
            )
            try:
                return await reader.read_range(start, end)
            except ObjectChanged:
                if attempt == READ_ATTEMPTS - 1:
                    raise
            finally:
                await reader.close()
        raise AssertionError("unreachable")

    async def open_range(
        self, name: str, *, min_sequence: int | None = None, allow_missing_digest: bool = False
    ) -> RangeReader:
        """A seekable reader of the object's current version (following a link): ``size``,
        ``read(n)``, ``seek``, ``tell``, ``read_range``, fetching only the chunks each read
        needs. An overwrite or delete while it is open makes its next fetch raise
        ObjectChanged (never bytes of two versions). ``min_sequence`` as for ``get_info``.
        A record without a digest is refused as ``get`` refuses it, unless
        ``allow_missing_digest``: a range cannot be checked against the digest, but every
        face treats such a record alike whatever part of it is read."""
        target, info = await self._resolve(name, min_sequence)
        check_digest(info, allow_missing=allow_missing_digest)
        return target.range_reader(info)

    def range_reader(self, info: ObjectInfo) -> RangeReader:
        """A seekable reader of the version ``info`` describes (a record read before, by a
        listing or ``get_info``; not a link). ``open_range`` is the usual way in."""
        if info.is_link:
            raise LinkError(
                "a link has no data of its own; open_range follows it",
                bucket=self.bucket,
                name=info.name,
            )
        return RangeReader(
            self.bucket_stream,
            info,
            read_window_bytes=self.client.read_window_bytes,
            shared=self.client.ranges,
        )

    # -- meta, delete, links ----------------------------------------------------------------------

    async def ttl_left(self, info: ObjectInfo) -> int | None:
        """Whole seconds left of ``info``'s expiry, for a record or put that restates that
        version and must expire when it would have (None: it never expires); ObjectNotFound
        once it has expired. Rounded up: the version stays in the stream beneath its
        restatement (``ObjectInfo.rolls_up``) and must go first, never show through."""
        if info.expires is None:
            return None
        left = await self.expiry.seconds_left(info.expires)
        if left < 1:
            raise ObjectNotFound("object expired", bucket=self.bucket, name=info.name)
        return left + 1

    async def update_meta(
        self,
        name: str,
        *,
        new_name: str | None = None,
        description: str | None = None,
        headers: Mapping[str, list[str] | str] | None = None,
        metadata: dict[str, str] | None = None,
    ) -> ObjectInfo:
        """Change name, description, headers or metadata; fields left as None are kept.
        A rename keeps the chunks and moves only the meta record. An expiring object keeps
        its expiry: the new record gets the time left (its chunks expire after it as before)."""
        info = await self.get_info(name)
        target = new_name if new_name is not None else name
        self._check_name(target)
        expected = info.sequence
        if target != name:
            existing = await self._current(target)
            if existing is not None and not existing.deleted:
                raise ObjectExists(
                    "cannot rename onto an existing object", bucket=self.bucket, name=target
                )
            expected = existing.sequence if existing else 0
        updated = info.evolve(
            tiering=info.tiering and info.tiering.evolve_for_update(),
            name=target,
            description=info.description if description is None else description,
            headers=info.headers if headers is None else _normalize_headers(headers),
            metadata=(
                info.metadata
                if metadata is None
                else check_metadata(metadata, bucket=self.bucket, name=target)
            ),
        )
        left = await self.ttl_left(info)
        ttl_headers = None if left is None else {MSG_TTL: str(left)}
        try:
            updated.sequence = await self.publish_meta(
                updated, expected_sequence=expected, headers=ttl_headers
            )
        except SequenceConflict:
            raise ObjectChanged(
                "changed by another writer during update_meta", bucket=self.bucket, name=target
            ) from None
        if target != name:
            await self.bucket_stream.purge(meta_subject(self.bucket, name))
        return updated

    async def delete(self, name: str) -> ObjectInfo:
        """Leave a tombstone meta record and purge the chunks; deleting twice is a no-op.
        An object whose record fails validation is deleted too (this is how it is got rid
        of), its chunks purged only under a nuid that is one subject token."""
        info = await self._current(name)
        if info is None:
            raise ObjectNotFound("object does not exist", bucket=self.bucket, name=name)
        if info.deleted:
            return info
        tombstone = info.evolve(deleted=True, size=0, chunks=0, digest="", tiering=None)
        tombstone.sequence = await self.publish_meta(tombstone)
        if info.nuid:
            await self.bucket_stream.purge(chunk_subject(self.bucket, info.nuid))
        return tombstone

    async def add_link(self, name: str, target: ObjectInfo) -> ObjectInfo:
        """Make ``name`` a link to the object ``target`` (in any bucket); reads of ``name`` then
        return the target's data. Links to links and to deleted objects are refused."""
        self._check_name(name)
        if target.deleted:
            raise LinkError("cannot link to a deleted object", bucket=self.bucket, name=name)
        if target.is_link:
            raise LinkError("cannot link to a link", bucket=self.bucket, name=name)
        target_store = (
            self if target.bucket == self.bucket else await self.client.store(target.bucket)
        )
        try:
            await target_store.get_info(target.name)
        except ObjectNotFound as exc:
            raise LinkError(
                f"link target {target.bucket}/{target.name} does not exist",
                bucket=self.bucket,
                name=name,
            ) from exc
        return await self._put_link(name, ObjectLink(bucket=target.bucket, name=target.name))

    async def add_bucket_link(self, name: str, target_bucket: str | ObjectStore) -> ObjectInfo:
        """Make ``name`` a link to a whole bucket (an ADR-20 bucket link), not readable as data."""
        self._check_name(name)
        bucket = target_bucket.bucket if isinstance(target_bucket, ObjectStore) else target_bucket
        await self.client.store(bucket)
        return await self._put_link(name, ObjectLink(bucket=bucket))

    async def _put_link(self, name: str, link: ObjectLink) -> ObjectInfo:
        existing = await self._current(name)
        if existing is not None and not existing.deleted and not existing.is_link:
            raise ObjectExists("a regular object has this name", bucket=self.bucket, name=name)
        info = ObjectInfo(name=name, bucket=self.bucket, nuid=_nuid.next().decode(), link=link)
        info.sequence = await self.publish_meta(info)
        info.mtime = datetime.now(UTC)
        if existing is not None and not existing.deleted and existing.nuid:
            await self.bucket_stream.purge(chunk_subject(self.bucket, existing.nuid))
        return info

    # -- bucket ---------------------------------------------------------------------------------

    async def status(self, *, count_offloaded: bool = False) -> StoreStatus:
        """The bucket's settings and usage, read from its stream (BucketNotFound once deleted).

        ``count_offloaded`` adds how many current objects, and how many of their bytes, live
        in an S3 archive only (docs/archive.md, "Tiering"). That reads the listing's meta
        records (one message per object, no chunks), so it is asked for rather than done on
        every call: sensors and triggers poll ``status()`` for ``last_sequence``."""
        status = await self.bucket_stream.status()
        if count_offloaded:
            status.offloaded_objects = status.offloaded_bytes = 0
            async for info in self.iter_list():
                if info.offloaded:
                    status.offloaded_objects += 1
                    status.offloaded_bytes += info.size
        return status

    async def seal(self) -> StoreStatus:
        """Make the bucket read-only for good: puts and deletes are refused from then on."""
        updated = await self.bucket_stream.update(sealed=True)
        return StoreStatus.from_stream_info(self.bucket, updated)

    async def lifecycle_rules(self) -> list[LifecycleRule]:
        """The bucket's lifecycle rules, in the order puts try them (read fresh from the
        stream metadata; puts use a copy at most ``natsobj.aio.expiry.REFRESH_SECONDS`` old)."""
        return await self.expiry.rules()

    async def set_lifecycle_rules(self, rules: list[LifecycleRule]) -> list[LifecycleRule]:
        """Keep ``rules`` with the bucket (its stream metadata; [] clears them): every later
        natsobj put whose name matches one takes the first match's TTL unless it names one.
        Objects already there keep theirs (``natsobj store lifecycle --apply`` restamps them).
        Needs a stream admin's permission; ExpiryNotEnabled when a rule would expire objects
        in a bucket without per-object TTLs."""
        rules = list(rules)
        info = await self.bucket_stream.info()
        if any(rule.ttl for rule in rules) and not info.config.get("allow_msg_ttl"):
            raise self.expiry.not_enabled(None, "a lifecycle rule expires objects")
        return await self.expiry.set_rules(rules)

    # -- listing and watching ---------------------------------------------------------------------

    def watch(
        self,
        *,
        include_history: bool = False,
        updates_only: bool = False,
        ignore_deletes: bool = False,
        after_sequence: int | ChangeCursor | None = None,
    ) -> ObjectWatcher:
        """Changes as they happen: by default each name's latest record first, then live ones.

        ``include_history`` replays every record kept, ``updates_only`` starts at the end,
        ``after_sequence`` resumes after a meta-stream sequence or a ``ChangeCursor``;
        ``ignore_deletes`` skips tombstones and expiries (a delete with ``expired`` set). The
        watch survives server restarts, but not the bucket's: one deleted and created again
        under it, or a cursor taken on an earlier bucket of this name, ends it with
        ``BucketRecreated`` (see ``ChangeCursor``)."""
        return ObjectWatcher(
            self,
            include_history=include_history,
            updates_only=updates_only,
            ignore_deletes=ignore_deletes,
            after_sequence=after_sequence,
        )

    async def _scan_meta(
        self, *, deliver_policy: str, start: int | None, limit: int
    ) -> tuple[list[Any], int]:
        """Read meta records through an ordered consumer. The consumer may live on a replica
        that is behind; with strong reads, a scan that ends before the leader's last meta
        record (and before ``limit``) came from such a replica and is read again."""
        stream = self.bucket_stream
        floor = await stream.leader_floor(all_meta_subject(self.bucket))

        def complete(scan: tuple[list[Any], int]) -> bool:
            messages, last_sequence = scan
            # a scan that starts after the floor has nothing to miss
            return max(last_sequence, (start or 1) - 1) >= floor or len(messages) >= limit

        return await stream.until_caught_up(
            lambda: self._scan_meta_once(deliver_policy=deliver_policy, start=start, limit=limit),
            complete,
            what="the meta records",
            floor=floor,
        )

    async def _scan_meta_once(
        self, *, deliver_policy: str, start: int | None, limit: int
    ) -> tuple[list[Any], int]:
        consumer = self.bucket_stream.consumer(
            all_meta_subject(self.bucket),
            deliver_policy=deliver_policy,
            start_sequence=start,
            batch=min(max(limit, 1), 1024),
        )
        messages: list[Any] = []
        try:
            pending = await consumer.start()
            while pending and len(messages) < limit:
                msg = await consumer.next()
                if msg is None:
                    break
                messages.append(msg)
                if msg.pending == 0:
                    break
        finally:
            await consumer.close()
        return messages, consumer.last_sequence

    async def list(
        self,
        *,
        prefix: str | None = None,
        glob: str | None = None,
        include_deleted: bool = False,
    ) -> list[ObjectInfo]:
        """Current objects whose names start with ``prefix`` and match the path-aware ``glob``
        (see ``natsobj.matching``), sorted by name; [] for an empty bucket. Unreadable meta
        records are skipped. For big buckets prefer ``iter_list``, which holds one batch."""
        infos = [
            info
            async for info in self.iter_list(
                prefix=prefix, glob=glob, include_deleted=include_deleted
            )
        ]
        return sorted(infos, key=lambda info: info.name)

    async def iter_list(
        self,
        *,
        prefix: str | None = None,
        glob: str | None = None,
        include_deleted: bool = False,
    ) -> AsyncGenerator[ObjectInfo]:
        """Stream the objects ``list`` returns, in no promised order, without holding them all:
        names come from the stream's subject state and only matching meta records are read
        (``natsobj.aio.listing``, which also says how it falls back to a consumer scan). On
        replicated stores the reads are pinned to the leader's last sequence (``read_floor``),
        so the listing reflects every write that returned before it started."""
        async for batch in listing.iter_batches(
            self.bucket_stream, prefix=prefix, glob=glob, include_deleted=include_deleted
        ):
            for info in batch:
                yield info

    async def changes(
        self,
        after_sequence: int | ChangeCursor = 0,
        *,
        limit: int = 100,
        include_deletes: bool = True,
    ) -> Changes:
        """Meta changes after a sequence, at most ``limit``, without waiting: the building block
        for sensor and trigger cursors. Resume from ``result.last_sequence``. An object that
        expired (docs/lifecycle.md) comes once as a delete with ``expired`` set.

        With a ``ChangeCursor`` the batch is refused with ``BucketRecreated`` when the cursor
        was taken on an earlier bucket of this name (a bare sequence cannot tell), and
        ``result.cursor`` is where to resume."""
        cursor, since = (
            (after_sequence, after_sequence.sequence)
            if isinstance(after_sequence, ChangeCursor)
            else (None, after_sequence)
        )
        messages, last = await self._scan_meta(
            deliver_policy="by_start_sequence", start=since + 1, limit=limit
        )
        result = Changes()
        reported: dict[int | None, int] = {}  # sequence -> place in the result
        for msg in messages:
            info = info_from_msg(self, msg)
            if info is None or (info.deleted and not include_deletes):
                continue
            if info.stands_for is not None:
                info = await proven(self.bucket_stream, info)
                if info.stands_for is not None:
                    # restates a version the caller saw before, or that this batch reports:
                    # then it takes that version's place, saying where its bytes are now
                    if (place := reported.get(info.stands_for)) is not None:
                        result[place] = info
                    continue
            reported[info.sequence] = len(result)
            result.append(info)
        result.last_sequence = max(last, since)
        if cursor is not None:
            # Read after the scan: a stream that is still the cursor's now is the one scanned.
            pinned = cursor.check(await self.status())
            result.cursor = ChangeCursor(result.last_sequence, pinned.stream_created)
        return result

    # -- maintenance ------------------------------------------------------------------------------

    async def compact(self, *, min_age: float = 3600.0) -> CompactResult:
        """Purge chunk subjects no meta record references (left by interrupted puts). Chunks
        written within ``min_age`` seconds are left alone: they may belong to a put in progress.
        Every record counts, valid or not (see ``_referenced_chunks``)."""
        before = await self.bucket_stream.info(subjects_filter=all_chunks_subject(self.bucket))
        chunk_subjects = set(before.state.subjects)
        referenced = await self._referenced_chunks()
        result = CompactResult()
        now = time.time()
        for subject in sorted(chunk_subjects - referenced):
            last = await self.bucket_stream.last(subject)
            if last is None:
                continue
            if now - last.time.timestamp() < min_age:
                result.skipped_recent += 1
                continue
            result.purged_messages += await self.bucket_stream.purge(subject)
            result.purged_subjects.append(subject)
        after = await self.bucket_stream.info()
        result.reclaimed_bytes = max(0, before.state.bytes - after.state.bytes)
        return result

    async def _referenced_chunks(self) -> set[str]:
        """The chunk subject every current meta record names, read raw rather than through a
        listing, which skips records that fail validation: their chunks are data too. A
        record whose nuid cannot be told (not JSON, or no single subject token) refuses the
        compaction: guessing could purge the chunks of an object that is still there."""
        messages, _ = await self._scan_meta(
            deliver_policy="last_per_subject", start=None, limit=sys.maxsize
        )
        referenced = set()
        for msg in messages:
            if msg.headers and raw_header(msg.headers, MARKER_REASON.encode()) is not None:
                continue  # an expiry's delete marker: no chunks
            try:
                info = ObjectInfo.from_json(msg.data, bucket=self.bucket)
                nuid: str | None = "" if info.deleted else info.nuid  # a tombstone's are garbage
            except BadObjectMeta:
                nuid = trusted_nuid(msg.data)
            if nuid is None:
                token = msg.subject.rsplit(".", 1)[-1]
                raise BadObjectMeta(
                    f"the meta record at sequence {msg.sequence} has no readable nuid, so the"
                    " chunks it names are unknown; compaction refused",
                    bucket=self.bucket,
                    name=decoded(token) or token,
                    hint="Delete that object (`natsobj rm`) or rewrite it, then compact again.",
                )
            if nuid:
                referenced.add(chunk_subject(self.bucket, nuid))
        return referenced


def _normalize_headers(headers: Mapping[str, list[str] | str] | None) -> dict[str, list[str]]:
    if not headers:
        return {}
    return {
        str(k): [str(v)] if isinstance(v, str) else [str(x) for x in v] for k, v in headers.items()
    }


# Room kept in a message for a chunk's headers (its Nats-Msg-Id, about 70 bytes), which count
# against the server's max_payload as much as the chunk does.
CHUNK_HEADER_ROOM = 256


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


__all__ = ["BucketNotFound", "Changes", "CompactResult", "ObjectStore"]
