"""One object store (bucket): every ADR-20 operation on the async core."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol, TypeVar, Unpack, overload

from natsobj.aio import (
    compaction,
    links,
    listing,
    locks,
    meta_update,
    put_modes,
    put_pipeline,
    records,
    scans,
    versions,
)
from natsobj.aio.compaction import CompactResult
from natsobj.aio.expiry import BucketExpiry
from natsobj.aio.jetstream.jsapi import JetStreamApi
from natsobj.aio.put_modes import OVERWRITE, PutMode
from natsobj.aio.ranges import ClientRanges, RangeReader
from natsobj.aio.reader import ObjectReader, check_digest
from natsobj.aio.restate_proof import proven
from natsobj.aio.scans import Changes
from natsobj.aio.sources import PutSource
from natsobj.aio.stream import BucketStream
from natsobj.aio.versioning_state import BucketVersioning
from natsobj.aio.watch import ObjectWatcher
from natsobj.cursors import ChangeCursor
from natsobj.errors import (
    BucketNotFound,
    LinkError,
    NatsObjError,
    ObjectChanged,
    ObjectLocked,
    ObjectNotFound,
    ObjectTooLarge,
)
from natsobj.lifecycle import LifecycleRule, coerce_ttl
from natsobj.local.files import open_target, replacing
from natsobj.model import ObjectInfo, ObjectLink, StoreStatus, StreamInfo, Tiering
from natsobj.names import (
    check_object_name,
    check_subjects_fit,
    chunk_subject,
    meta_subject,
    names_that_always_fit,
)
from natsobj.parsing import parse_version_id
from natsobj.retry import RACED
from natsobj.settings import ConnectionSettings
from natsobj.store_config import StoreConfig, StoreSettings
from natsobj.version_events import Change
from natsobj.versioning import (
    DefaultRetention,
    LockMode,
    ObjectVersion,
    Versioning,
    VersionLock,
    utcnow,
)
from natsobj.wire import direct_get_subject

T = TypeVar("T")
WRITE_BUFFER = 64 * 1024  # get_file: smaller than a chunk, so a chunk is written, not copied


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
        self.versioning_state = BucketVersioning(self.bucket_stream, stream_info)
        # puts of objects up to this size go as one atomic batch where the stream allows it
        # (natsobj.aio.atomic_put; 0: never; None: atomic_put.default_max_bytes for the
        # stream's replica count, chosen in BENCHMARKS.md, "Atomic puts")
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

    # -- info -------------------------------------------------------------------------------------

    async def get_info(
        self,
        name: str,
        *,
        include_deleted: bool = False,
        min_sequence: int | None = None,
        version: str | None = None,
    ) -> ObjectInfo:
        """The object's meta record, read straight from the stream (``mtime`` and ``sequence``
        come from the server); ObjectNotFound when missing, or deleted unless
        ``include_deleted``. A link is returned as the link, not followed. ``min_sequence``:
        the sequence of a write the caller knows about (``ObjectInfo.sequence`` from a put,
        handed over by another task); the read then reflects that write or a later one, at
        the cost of a direct get. A record that fails validation is BadObjectMeta.

        ``expires`` is when the server removes an expiring object (its record's time plus
        its ``Nats-TTL``); an expired one is ObjectNotFound, or with ``include_deleted`` a
        deleted record with ``expired`` set while the server's delete marker is there.

        ``version``: that version of the name (``versions``), current or kept; a delete
        marker is ObjectNotFound unless ``include_deleted``."""
        self._check_name(name)
        version = _version_id(version)
        if version is not None:
            return await self._version_info(name, version, include_deleted)
        found = await records.read(self.bucket_stream, name, min_sequence)
        info = await proven(self.bucket_stream, records.parse(self.bucket, name, found))
        if not include_deleted:
            if info.expired or (info.expires is not None and info.expires <= datetime.now(UTC)):
                raise ObjectNotFound("object expired", bucket=self.bucket, name=name)
            if info.deleted:
                raise ObjectNotFound("object was deleted", bucket=self.bucket, name=name)
        return info

    async def _version_info(self, name: str, version: str, include_deleted: bool) -> ObjectInfo:
        current = await self._current(name)
        if current is not None and current.nuid == version and versions.keepable(current):
            info: ObjectInfo | None = current
        else:
            info = await versions.read_kept(self.bucket_stream, name, version)
        if info is None:
            raise ObjectNotFound(f"no version {version!r}", bucket=self.bucket, name=name)
        if info.deleted and not include_deleted:
            raise ObjectNotFound(
                f"version {version!r} is a delete marker", bucket=self.bucket, name=name
            )
        return info

    async def _current(self, name: str) -> ObjectInfo | None:
        """The version a write to ``name`` replaces (``natsobj.aio.records.current``)."""
        self._check_name(name)
        return await records.current(self.bucket_stream, name)

    async def _replacing(self, name: str) -> ObjectInfo | None:
        """The version a write to ``name`` replaces, kept first where the bucket keeps it
        (before the write is published: no moment leaves its chunks unnamed)."""
        info = await self._current(name)
        if info is not None and await self.versioning_state.keeps(info):
            await versions.keep(self.bucket_stream, info)
        return info

    async def _kept(self, info: ObjectInfo) -> bool:
        """Whether a replaced version is kept, so its chunks stay: those ``_replacing`` kept,
        and in a suspended bucket any kept before; none in an unversioned one (and no request
        asked there: ADR-20's behaviour as it was)."""
        if await self.versioning_state.keeps(info):
            return versions.keepable(info)
        if await self.versioning_state.state() is Versioning.SUSPENDED:
            return await versions.is_kept(self.bucket_stream, info)
        return False

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
        mode: PutMode = OVERWRITE,
        tiering: Tiering | None = None,
        ttl: float | str | timedelta | None = None,
        digest_headers: Callable[[str], Mapping[str, list[str]]] | None = None,
        expected_sequence: int | None = None,
        if_absent: bool = False,
    ) -> ObjectInfo:
        """Store ``source`` as ``name``. Chunks first, meta last: a failed put leaves no object
        and the previous version intact, and its chunks are purged where the server allows.

        ``mode`` (``natsobj.aio.put_modes``): ``OVERWRITE`` (the default), ``CREATE``, as S3's
        ``If-None-Match: *`` (ObjectExists when an object is there, a deleted name counting as
        absent; ObjectChanged when another writer creates it first), or
        ``PutMode.update(n)``, a compare-and-swap that succeeds only if the name's meta record
        is still at sequence ``n`` (0: never written) and raises ObjectChanged otherwise
        (``expected_sequence=`` and ``if_absent=`` are the deprecated spellings of the last
        two). An object up to ``atomic_max_bytes`` goes as one atomic batch
        (natsobj.aio.atomic_put): all-or-nothing on the server, chunks contiguous. ``tiering``
        marks the record as restating the
        version it names rather than being a new one (how ``natsobj.archive.tiering``
        rehydrates an offloaded object: watches and sensors do not see it as a change).

        ``ttl`` (seconds or a timedelta, at least 1 s) makes the object expire on the server
        that long after the put started, with no client running (docs/lifecycle.md); None
        applies the bucket's first matching lifecycle rule, 0 keeps it whatever the rules
        say. Every put is a new version with a clock of its own. ExpiryNotEnabled when the
        bucket does not allow per-object TTLs.

        ``digest_headers`` is called with the object's digest once every byte is read, before
        the record is written; the headers it returns are added to the record's. It is how a
        value that holds only for these bytes is bound to them (the S3 gateway's ETag:
        natsobj.gateway.etags)."""
        self._check_name(name)
        expiry = coerce_ttl(ttl)  # parsed once, here where the caller gave it
        mode = put_modes.from_keywords(mode, expected_sequence, if_absent)
        required = await put_modes.expected_sequence(self, name, mode)
        info = await put_pipeline.put(
            self.bucket_stream,
            self.expiry,
            self._replacing,
            name,
            source,
            window_bytes=self.client.put_window_bytes,
            max_payload=self.client.nc.max_payload,
            atomic_max_bytes=self.atomic_max_bytes,
            description=description,
            headers=headers,
            metadata=metadata,
            chunk_size=chunk_size,
            expected_sequence=required,
            tiering=tiering,
            ttl=expiry,
            digest_headers=digest_headers,
            kept=self._kept,
        )
        retention = await self.versioning_state.default_retention()
        if retention is not None and tiering is None:
            fresh = (VersionLock(), 0)
            now = utcnow()
            lock = retention.lock_from(now)
            await locks.change(
                self.bucket_stream,
                name,
                info.nuid,
                lock,
                now,
                bypass_governance=False,
                current=fresh,
            )
        return info

    # -- get --------------------------------------------------------------------------------------

    async def _resolve(
        self, name: str, min_sequence: int | None, follow_links: bool, version: str | None
    ) -> tuple[ObjectStore, ObjectInfo]:
        """The store and record a read of ``name`` reads: its current version (a link
        followed), or ``version``, unless another client purged that one's chunks."""
        if version is not None:
            info = await self.get_info(name, version=version)
            return self, await versions.readable(self.bucket_stream, info)
        info = await self.get_info(name, min_sequence=min_sequence)
        return await links.follow(self, info, self._store_of, follow_links=follow_links)

    async def _store_of(self, bucket: str) -> ObjectStore:
        """This store, or the client's store of another bucket (a link's)."""
        return self if bucket == self.bucket else await self.client.store(bucket)

    @contextlib.asynccontextmanager
    async def get(
        self,
        name: str,
        *,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        follow_links: bool = False,
        version: str | None = None,
    ) -> AsyncIterator[ObjectReader]:
        """Stream an object (following an object link); the digest is checked at the end.
        ``min_sequence`` as for get_info. A record without a digest is MissingDigest before
        anything is read, unless ``allow_missing_digest`` (for objects known to come from a
        client that writes none: only their size and chunk count are checked then). A link
        into another bucket is LinkError unless ``follow_links`` (``natsobj.aio.links``).
        ``version``: that version (``versions``); one another client purged is
        ObjectNotFound saying it is lost."""
        target, info = await self._resolve(name, min_sequence, follow_links, version)
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
        follow_links: bool = False,
        version: str | None = None,
    ) -> bytes:
        """The whole object, verified; ``max_size`` refuses (ObjectTooLarge) before reading an
        object bigger than that. A read that raced an overwrite is retried. ``min_sequence``
        as for ``get_info``, ``allow_missing_digest``, ``follow_links`` and ``version`` as for
        ``get``."""

        async def read() -> bytes:
            async with self.get(
                name,
                min_sequence=min_sequence,
                allow_missing_digest=allow_missing_digest,
                follow_links=follow_links,
                version=version,
            ) as reader:
                if max_size is not None and reader.info.size > max_size:
                    raise ObjectTooLarge(
                        f"object is {reader.info.size} bytes, over the {max_size} byte cap",
                        bucket=self.bucket,
                        name=name,
                    )
                return await reader.read()

        return await _reread(read)

    async def get_file(
        self,
        name: str,
        path: str | os.PathLike[str],
        *,
        progress: Callable[[int], None] | None = None,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        within: str | os.PathLike[str] | None = None,
        follow_links: bool = False,
        version: str | None = None,
    ) -> ObjectInfo:
        """Write to a temporary file beside ``path`` and rename it only once the digest matches,
        so ``path`` never holds partial or corrupt data. ``progress`` gets each chunk's size;
        ``allow_missing_digest``, ``follow_links`` and ``version`` as for ``get``. ``within``:
        the local directory a transfer fills, ``path`` having been made from the object's name
        below it;
        a place that leads out of it (a symlink planted there) is refused with ``UnsafeLocalPath``
        (``natsobj.local.files.open_target``)."""
        with open_target(path, within, bucket=self.bucket, name=name) as target:

            async def read() -> ObjectInfo:
                with replacing(target, WRITE_BUFFER) as handle:
                    async with self.get(
                        name,
                        min_sequence=min_sequence,
                        allow_missing_digest=allow_missing_digest,
                        follow_links=follow_links,
                        version=version,
                    ) as reader:
                        await reader.copy_to(handle.write, progress)
                return reader.info

            return await _reread(read)

    # -- ranges ----------------------------------------------------------------------------------

    async def get_range(
        self,
        name: str,
        start: int,
        end: int | None = None,
        *,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        follow_links: bool = False,
        version: str | None = None,
    ) -> bytes:
        """Bytes ``[start, end)`` of the object (following a link), fsspec's convention: end
        exclusive, None for the end, negative offsets from the end, clamped to the object.
        Only the chunks holding them are fetched (docs/random-access.md), placed by a chunk
        map proven against the record and each checked for its subject, sequence and length:
        the whole read's bytes, though a range cannot be checked against the SHA-256.
        A read that raced an overwrite reads the new version; ``min_sequence`` as for
        ``get_info``, ``allow_missing_digest``, ``follow_links`` and ``version`` as for
        ``get``."""

        async def read() -> bytes:
            reader = await self.open_range(
                name,
                min_sequence=min_sequence,
                allow_missing_digest=allow_missing_digest,
                follow_links=follow_links,
                version=version,
            )
            try:
                return await reader.read_range(start, end)
            finally:
                await reader.close()

        return await _reread(read)

    async def open_range(
        self,
        name: str,
        *,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        follow_links: bool = False,
        version: str | None = None,
    ) -> RangeReader:
        """A seekable reader of the object's current version (following a link): ``size``,
        ``read(n)``, ``seek``, ``tell``, ``read_range``, fetching only the chunks each read
        needs. An overwrite or delete while it is open makes its next fetch raise
        ObjectChanged (never bytes of two versions). ``min_sequence`` as for ``get_info``.
        A record without a digest is refused as ``get`` refuses it, unless
        ``allow_missing_digest``: a range cannot be checked against the digest, but every
        face treats such a record alike whatever part of it is read. ``follow_links`` and
        ``version`` as for ``get``."""
        target, info = await self._resolve(name, min_sequence, follow_links, version)
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
        await self._check_unlocked(info)
        target = new_name if new_name is not None else name
        self._check_name(target)
        existing = await self._current(target) if target != name else None
        return await meta_update.update_meta(
            self.bucket_stream,
            self.ttl_left,
            info,
            target,
            existing,
            description=description,
            headers=headers,
            metadata=metadata,
        )

    async def delete(
        self, name: str, *, version: str | None = None, bypass_governance: bool = False
    ) -> ObjectInfo:
        """Leave a tombstone meta record and purge the chunks; deleting twice is a no-op.
        An object whose record fails validation is deleted too (this is how it is got rid
        of), its chunks purged only under a nuid that is one subject token. In a bucket
        keeping versions the tombstone is a delete marker, a version of its own, and the
        deleted version is kept; there every delete adds a marker, as in S3 (over a marker,
        or for a name never written).

        ``version``: remove that version for good (its record and its chunks); removing the
        current one makes the newest kept one before it current again. Returns what was
        removed. A version whose lock holds is ObjectLocked (``lock``); a governance-mode
        retention gives way to ``bypass_governance``."""
        version = _version_id(version)
        if version is not None:
            return await self._delete_version(name, version, bypass_governance)
        info = await self._replacing(name)
        if await self.versioning_state.state() is Versioning.ENABLED:
            # S3's delete in a versioned bucket: always a new marker, over a marker or a name
            # never written too
            marker = versions.delete_marker(info or ObjectInfo(name, self.bucket))
            marker.sequence = await records.publish_record(self.bucket_stream, marker)
            return marker
        if info is None:
            raise ObjectNotFound("object does not exist", bucket=self.bucket, name=name)
        if info.deleted:
            return info
        tombstone = info.evolve(deleted=True, size=0, chunks=0, digest="", tiering=None)
        tombstone.sequence = await records.publish_record(self.bucket_stream, tombstone)
        if info.nuid and not await self._kept(info):
            await self.bucket_stream.purge(chunk_subject(self.bucket, info.nuid))
        return tombstone

    async def _delete_version(self, name: str, version: str, bypass_governance: bool) -> ObjectInfo:
        self._check_name(name)
        removed = await self._version_info(name, version, include_deleted=True)
        await locks.check_removable(
            self.bucket_stream, name, version, utcnow(), bypass_governance=bypass_governance
        )
        await versions.remove(self.bucket_stream, removed)
        await locks.forget(self.bucket_stream, name, version)
        return removed

    async def _check_unlocked(self, info: ObjectInfo) -> None:
        """ObjectLocked for a version whose lock holds: its record is not changed in place."""
        if await self.versioning_state.state() is Versioning.UNVERSIONED:
            return  # no version of an unversioned bucket can be locked
        lock, _ = await locks.read(self.bucket_stream, info.name, info.nuid)
        if lock.holds(utcnow()):
            raise ObjectLocked(
                f"version {info.nuid} is locked: its record cannot be changed in place",
                bucket=self.bucket,
                name=info.name,
            )

    async def add_link(self, name: str, target: ObjectInfo) -> ObjectInfo:
        """Make ``name`` a link to the object ``target`` (in any bucket); reads of ``name`` then
        return the target's data. Links to links and to deleted objects are refused."""
        self._check_name(name)
        link = await links.to_object(self.bucket, name, target, self._store_of)
        return await links.publish(self.bucket_stream, name, link, await self._current(name))

    async def add_bucket_link(self, name: str, target_bucket: str | ObjectStore) -> ObjectInfo:
        """Make ``name`` a link to a whole bucket (an ADR-20 bucket link), not readable as data."""
        self._check_name(name)
        bucket = target_bucket.bucket if isinstance(target_bucket, ObjectStore) else target_bucket
        await self.client.store(bucket)
        existing = await self._current(name)
        return await links.publish(self.bucket_stream, name, ObjectLink(bucket=bucket), existing)

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
        Objects already there keep theirs (a restamp, ``natsobj.aio.lifecycle_apply``, gives them
        one). Needs a stream admin's permission; ExpiryNotEnabled when a rule would expire objects
        in a bucket without per-object TTLs."""
        rules = list(rules)
        info = await self.bucket_stream.info()
        if any(rule.ttl for rule in rules) and not info.config.get("allow_msg_ttl"):
            raise self.expiry.not_enabled(None, "a lifecycle rule expires objects")
        return await self.expiry.set_rules(rules)

    # -- versions -------------------------------------------------------------------------------

    async def versioning(self) -> Versioning:
        """The bucket's versioning (read fresh from its stream metadata)."""
        return await self.versioning_state.state(fresh=True)

    async def set_versioning(self, state: Versioning | str) -> Versioning:
        """Keep versions from now on (``ENABLED``), or stop keeping new ones (``SUSPENDED``:
        those kept stay), as S3's PutBucketVersioning; a bucket once versioned cannot be
        unversioned again (ValueError). Needs a stream admin's permission. Other processes'
        puts follow within ``natsobj.aio.expiry.REFRESH_SECONDS``."""
        return await self.versioning_state.set(Versioning.parse(state))

    async def lock(
        self,
        name: str,
        *,
        version: str | None = None,
        mode: LockMode | str | None = None,
        retain_until: datetime | None = None,
        legal_hold: bool | None = None,
        clear_retention: bool = False,
        bypass_governance: bool = False,
    ) -> VersionLock:
        """Retain a version (the current one unless ``version``) in ``mode`` until
        ``retain_until`` (an aware datetime), set or lift its ``legal_hold``, or
        ``clear_retention``, as S3's PutObjectRetention and PutObjectLegalHold; parts not
        given are kept. A locked version cannot be removed, nor its record changed; a
        compliance-mode retention cannot be shortened or lifted by anyone, a governance-mode
        one only with ``bypass_governance`` (ObjectLocked otherwise). Locks need a versioned
        bucket: an unversioned one replaces what it locks with every put."""
        info = await self._lockable(name, version)
        current = await locks.read(self.bucket_stream, name, info.nuid)
        base = VersionLock() if current[0] is locks.UNREADABLE else current[0]
        new = base.with_changes(
            mode=mode,
            retain_until=retain_until,
            legal_hold=legal_hold,
            clear_retention=clear_retention,
        )
        return await locks.change(
            self.bucket_stream,
            name,
            info.nuid,
            new,
            utcnow(),
            bypass_governance=bypass_governance,
            current=current,
        )

    async def lock_info(self, name: str, *, version: str | None = None) -> VersionLock:
        """A version's lock (the current version's unless ``version``): S3's
        GetObjectRetention and GetObjectLegalHold in one."""
        info = await self._lockable(name, version)
        lock, _ = await locks.read(self.bucket_stream, name, info.nuid)
        return lock

    async def _lockable(self, name: str, version: str | None) -> ObjectInfo:
        if await self.versioning_state.state(fresh=True) is Versioning.UNVERSIONED:
            raise NatsObjError(
                "locks need a versioned bucket: an unversioned one replaces the version it"
                " would lock with the next put",
                bucket=self.bucket,
                name=name,
                hint="Turn versioning on first: set_versioning('Enabled').",
            )
        return await self.get_info(name, version=version)

    async def object_lock(self) -> bool:
        """Whether Object Lock is on for the bucket (``enable_object_lock``)."""
        return await self.versioning_state.object_lock(fresh=True)

    async def enable_object_lock(self) -> None:
        """Turn S3 Object Lock on for the bucket, for good: versioning is enabled and can no
        longer be suspended (ValueError then), as S3 has it. Locks themselves (``lock``,
        ``set_default_retention``) need only versioning; this is the bucket-level switch S3
        clients ask about (GetObjectLockConfiguration)."""
        await self.versioning_state.enable_object_lock()

    async def default_retention(self) -> DefaultRetention | None:
        """The retention every new version of the bucket gets (S3's Object Lock default)."""
        return await self.versioning_state.default_retention(fresh=True)

    async def set_default_retention(self, retention: DefaultRetention | None) -> None:
        """Retain every version a natsobj write makes from now on as ``retention`` says
        (None: no default); the bucket must keep versions (ValueError otherwise). Other
        processes follow within ``natsobj.aio.expiry.REFRESH_SECONDS``."""
        await self.versioning_state.set_default_retention(retention)

    async def versions(
        self, *, prefix: str | None = None, glob: str | None = None
    ) -> list[ObjectVersion]:
        """Every version of the names matching ``prefix`` and ``glob``, by name and newest
        first, as S3's ListObjectVersions: the current records and the kept ones, delete
        markers among them, and kept versions whose chunks another client purged marked
        ``lost``."""
        return await versions.listed(self.bucket_stream, listing.make_filter(prefix, glob))

    # -- listing and watching ---------------------------------------------------------------------

    @overload
    def watch(
        self,
        *,
        start: str | int | None = None,
        include_deletes: bool | str | None = None,
        after_sequence: int | ChangeCursor | None = None,
        include_version_events: Literal[False] = False,
        include_history: bool = False,
        updates_only: bool = False,
        ignore_deletes: bool = False,
    ) -> ObjectWatcher[ObjectInfo]: ...

    @overload
    def watch(
        self,
        *,
        start: str | int | None = None,
        include_deletes: bool | str | None = None,
        after_sequence: int | ChangeCursor | None = None,
        include_version_events: bool | str,
        include_history: bool = False,
        updates_only: bool = False,
        ignore_deletes: bool = False,
    ) -> ObjectWatcher[Change]: ...

    def watch(
        self,
        *,
        start: str | int | None = None,
        include_deletes: bool | str | None = None,
        after_sequence: int | ChangeCursor | None = None,
        include_version_events: bool | str = False,
        include_history: bool = False,
        updates_only: bool = False,
        ignore_deletes: bool = False,
    ) -> ObjectWatcher[Any]:
        """Changes as they happen, from ``start`` (``natsobj.operation_options``' follow.start:
        ``current``, the default, is each name's latest record first, then live ones;
        ``earliest`` replays every record kept; ``latest`` starts at the end; a number is the
        meta sequence to start at); ``after_sequence`` resumes after a meta-stream sequence or
        a ``ChangeCursor``. ``include_deletes=False`` skips tombstones and expiries (a delete
        with ``expired`` set); ``include_history``, ``updates_only`` and ``ignore_deletes`` are
        the deprecated spellings of ``start`` and ``include_deletes``.
        ``include_version_events``: versions' lock changes and removals come too, in order
        among the records (``natsobj.version_events``; a watch of the current values starts
        with each version's lock). The watch survives
        server restarts, but not the bucket's: one deleted and created again under it, or a
        cursor taken on an earlier bucket of this name, ends it with ``BucketRecreated`` (see
        ``ChangeCursor``)."""
        return ObjectWatcher(
            self,
            start=start,
            include_deletes=include_deletes,
            after_sequence=after_sequence,
            include_version_events=include_version_events,
            include_history=include_history,
            updates_only=updates_only,
            ignore_deletes=ignore_deletes,
        )

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

    @overload
    async def changes(
        self,
        after_sequence: int | ChangeCursor = 0,
        *,
        limit: int = 100,
        include_deletes: bool = True,
        include_version_events: Literal[False] = False,
    ) -> Changes[ObjectInfo]: ...

    @overload
    async def changes(
        self,
        after_sequence: int | ChangeCursor = 0,
        *,
        limit: int = 100,
        include_deletes: bool = True,
        include_version_events: bool,
    ) -> Changes[Change]: ...

    async def changes(
        self,
        after_sequence: int | ChangeCursor = 0,
        *,
        limit: int = 100,
        include_deletes: bool = True,
        include_version_events: bool = False,
    ) -> Changes[Any]:
        """Meta changes after a sequence, at most ``limit``, without waiting: the building block
        for sensor and trigger cursors. Resume from ``result.last_sequence``. An object that
        expired (docs/lifecycle.md) comes once as a delete with ``expired`` set. Each record
        says the version it is (``version_id``) and whether it is a ``delete_marker``.

        ``include_version_events``: versions' lock changes (``LockEvent``: set, changed,
        lifted, or unreadable) and removals for good (``VersionRemoved``, a deletion) come
        too, in order among the records (``natsobj.version_events``); they count in ``limit``
        with the kept versions' records read beside them.

        With a ``ChangeCursor`` the batch is refused with ``BucketRecreated`` when the cursor
        was taken on an earlier bucket of this name (a bare sequence cannot tell), and
        ``result.cursor`` is where to resume."""
        return await scans.changes(
            self.bucket_stream,
            after_sequence,
            limit=limit,
            include_deletes=include_deletes,
            include_version_events=include_version_events,
        )

    # -- maintenance ------------------------------------------------------------------------------

    async def compact(self, *, min_age: float = 3600.0) -> CompactResult:
        """Purge chunk subjects no meta record references (left by interrupted puts). Chunks
        written within ``min_age`` seconds are left alone: they may belong to a put in progress.
        Every record counts, valid or not: a record that fails validation still names its
        chunks, and one whose nuid cannot be told refuses the compaction (BadObjectMeta)."""
        return await compaction.compact(self.bucket_stream, min_age=min_age)


def _version_id(version: str | None) -> str | None:
    """The version a call names: checked before it reaches a subject (ValueError for anything
    but a version id or ``null``, which, as None, is the current version)."""
    return None if version is None else parse_version_id(version)


async def _reread(read: Callable[[], Awaitable[T]]) -> T:
    """``read`` of an object's current version, read again while it raced an overwrite
    (ObjectChanged), as the retry policy ``RACED`` says: each try reads the version current
    when it starts, and the last one's ObjectChanged is the caller's."""
    for retry in range(1, RACED.attempts or 1):
        try:
            return await read()
        except ObjectChanged:
            await RACED.pause(retry)
    return await read()


__all__ = ["BucketNotFound", "ObjectStore"]
