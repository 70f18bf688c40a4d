"""Follow a store's meta stream and copy every version to the archive target.

The durable cursor is the index: each flush uploads the pack and then one Parquet segment
covering every sequence since the previous segment, then ``cursor.json``. Anything not yet in
a segment is simply done again after a crash, to the same keys (versions are keyed by
sequence), so a replay duplicates nothing in the index.

A bucket that keeps versions (``natsobj.versioning``) is followed through its kept versions'
records too: a version replaced before a pass read its meta record is archived from its kept
record, under the meta sequence it had, and a version removed for good is indexed as removed,
so a restore rebuilds each name's versions as the bucket kept them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from natsobj.aio import scans
from natsobj.aio.reader import check_digest
from natsobj.aio.versions import KeptVersion
from natsobj.archive import index
from natsobj.archive.index import ArchiveRecord
from natsobj.archive.packer import (
    DEFAULT_PACK_AGE,
    DEFAULT_PACK_BYTES,
    DEFAULT_SMALL_OBJECT,
    Packer,
)
from natsobj.archive.target import ArchiveTarget
from natsobj.archive.targets import TARGET_METADATA_KEY, ArchiveTargets
from natsobj.errors import (
    BucketNotFound,
    DigestMismatch,
    MissingDigest,
    NatsObjError,
    ObjectChanged,
    ObjectNotFound,
    PermissionDenied,
)
from natsobj.model import ObjectInfo
from natsobj.retry import RESUME
from natsobj.version_events import VersionRemoved
from natsobj.versioning import Versioning

if TYPE_CHECKING:
    from natsobj.aio.scans import Changes
    from natsobj.aio.store import ObjectStore

log = logging.getLogger("natsobj.archive")

CHANGES_BATCH = 500
MAX_PENDING_RECORDS = 5000


@dataclass
class ArchiveTotals:
    """What the archive holds, counted from its index."""

    versions: int = 0  # put records: versions with their own bytes
    bytes: int = 0
    meta_updates: int = 0
    deletes: int = 0
    expired: int = 0
    skipped: list[int] = field(default_factory=list)  # sequences whose bytes were gone

    def count(self, record: ArchiveRecord) -> None:
        if record.kind == index.PUT:
            self.versions += 1
            self.bytes += record.length
        elif record.kind == index.META:
            self.meta_updates += 1
        elif record.kind == index.DELETE:
            self.deletes += 1
        elif record.kind == index.EXPIRED:
            self.expired += 1
        elif record.kind == index.SKIPPED:
            self.skipped.append(record.sequence)

    def as_dict(self) -> dict[str, object]:
        return {
            "versions": self.versions,
            "bytes": self.bytes,
            "meta_updates": self.meta_updates,
            "deletes": self.deletes,
            "expired": self.expired,
            "skipped": list(self.skipped),
        }


Progress = Callable[[ArchiveRecord], None]


class Archiver:
    """One store's archiver; ``run(once=True)`` is a catch-up pass, ``run()`` follows.
    ``target`` is one ``ArchiveTarget`` or several with a write strategy (``ArchiveTargets``)."""

    def __init__(
        self,
        store: ObjectStore,
        target: ArchiveTarget | ArchiveTargets,
        *,
        small_object: int = DEFAULT_SMALL_OBJECT,
        pack_bytes: int = DEFAULT_PACK_BYTES,
        pack_age: float = DEFAULT_PACK_AGE,
        poll_interval: float = 1.0,
        on_record: Progress | None = None,
    ) -> None:
        self.store = store
        self.targets = ArchiveTargets.of(target)
        self.small_object = small_object
        self.pack_bytes = pack_bytes
        self.pack_age = pack_age
        self.poll_interval = poll_interval
        self.on_record = on_record
        self.totals = ArchiveTotals()
        self.committed = 0  # the last sequence in a written segment
        self._position = 0  # the last sequence taken from the stream
        self._pending: list[ArchiveRecord] = []
        self._packer = Packer(pack_bytes, pack_age)
        # nuid -> the record of its archived bytes (a packed one gets its targets at upload)
        self._locations: dict[str, ArchiveRecord] = {}
        self._sequences: dict[int, str] = {}  # meta sequence indexed -> its nuid: each once
        self._opened = False

    def __repr__(self) -> str:
        return f"Archiver(bucket={self.store.bucket!r}, target={self.targets.url!r})"

    # -- state ------------------------------------------------------------------------------------

    async def open(self) -> None:
        """Load the index: where archiving resumes, and which bytes are already archived."""
        self.totals = ArchiveTotals()
        self._locations = {}
        self._sequences = {}
        for record in await self.targets.load_index():
            self._remember(record)
        self.committed = await self.targets.indexed_through()
        self._reset()
        await self._record_target()
        self._opened = True

    def _reset(self) -> None:
        """Forget everything not yet in a segment: it is archived again from the cursor."""
        self._position = self.committed
        self._pending = []
        self._packer = Packer(self.pack_bytes, self.pack_age)

    def _remember(self, record: ArchiveRecord) -> None:
        self.totals.count(record)
        self._sequences[record.sequence] = record.nuid
        if record.key and record.nuid:
            self._locations[record.nuid] = record

    async def _record_target(self) -> None:
        """Note the target in the stream's metadata so ``archive status BUCKET`` finds it."""
        status = await self.store.status()
        if status.metadata.get(TARGET_METADATA_KEY) == self.targets.url:
            return
        try:
            await self.store.bucket_stream.set_metadata(TARGET_METADATA_KEY, self.targets.url)
        except PermissionDenied as exc:
            log.warning("cannot record the archive target in the stream metadata: %s", exc)

    # -- archiving --------------------------------------------------------------------------------

    async def catch_up(self) -> int:
        """Archive every change after the cursor; returns how many records were made."""
        made = 0
        while True:
            changes = await self._changes()
            await self.archive_changes(changes)
            made += len(changes)
            if not changes:
                return made

    async def _changes(self) -> Changes:
        """The next batch: the records, and in a bucket that keeps versions (or kept them
        once) the kept versions' records and removals among them."""
        stream = self.store.bucket_stream
        if await self.store.versioning_state.state() is Versioning.UNVERSIONED:
            return await self.store.changes(self._position, limit=CHANGES_BATCH)
        return await scans.changes(
            stream,
            self._position,
            limit=CHANGES_BATCH,
            include_deletes=True,
            include_version_events=True,
            include_kept=True,
        )

    async def archive_changes(self, changes: Changes) -> None:
        """Archive one batch from ``store.changes(cursor)``; the position moves past it."""
        for change in changes:
            if isinstance(change, ObjectInfo):
                await self._archive_version(change)
                at = int(change.sequence or self._position)
            elif isinstance(change, KeptVersion):
                if self._unarchived(change):
                    await self._archive_version(change.info)
                at = change.sequence
            elif isinstance(change, VersionRemoved):
                self._archived(_removal(change))
                at = change.sequence
            else:
                continue  # a lock event: nothing to archive
            if self._packer.full or len(self._pending) >= MAX_PENDING_RECORDS:
                self._position = at
                await self.flush()
        self._position = max(self._position, changes.last_sequence)

    def _unarchived(self, kept: KeptVersion) -> bool:
        """Whether a kept version's record is one to archive: not archived already (seen
        current, or kept before), and naming a meta sequence it can have had. The record is
        untrusted input: one claiming a sequence after its own, or one another version is
        indexed under, is logged and left out, never indexed over that version."""
        claimed = int(kept.info.sequence or 0)
        indexed = self._sequences.get(claimed)
        if indexed == kept.info.nuid:
            return False
        if indexed is None and 0 < claimed < kept.sequence:
            return True
        log.warning(
            "bucket %r, object %r: the kept record of version %s at sequence %d claims meta"
            " sequence %d, which it cannot have had; not archived",
            self.store.bucket,
            kept.info.name,
            kept.info.nuid,
            kept.sequence,
            claimed,
        )
        return False

    async def _archive_version(self, info: ObjectInfo) -> None:
        sequence = int(info.sequence or 0)
        record = ArchiveRecord(
            sequence=sequence,
            bucket=info.bucket,
            name=info.name,
            kind=index.PUT,
            mtime=info.mtime or datetime.now(UTC),
            size=info.size,
            digest=info.digest,
            nuid=info.nuid,
            chunks=info.chunks,
            description=info.description,
            headers=json.dumps(info.headers, sort_keys=True),
            metadata=json.dumps(info.metadata, sort_keys=True),
        )
        known = self._locations.get(info.nuid) if info.nuid else None
        packed = False
        if info.deleted:
            record.kind = index.EXPIRED if info.expired else index.DELETE
        elif info.link is not None:
            record.kind = index.LINK
            record.link = json.dumps(info.link.to_json())
        elif known is not None and known.digest == info.digest:
            record.kind = index.META
            record.key, record.offset, record.length = known.key, known.offset, known.length
            record.targets = known.targets
            if known.name != info.name:
                record.previous_name = known.name
        elif await self._copy_bytes(info, record):
            packed = True
        self._archived(record, packed=packed)

    def _archived(self, record: ArchiveRecord, *, packed: bool = False) -> None:
        """Note a record made: pending for the next segment (a packed one joins when its pack
        is uploaded), remembered, reported."""
        record.archived_at = datetime.now(UTC)
        if not packed:
            self._pending.append(record)
        self._remember(record)
        if self.on_record is not None:
            self.on_record(record)

    async def _copy_bytes(self, info: ObjectInfo, record: ArchiveRecord) -> bool:
        """Read the version's chunks (the reader checks count, size and SHA-256) into a pack
        or a multipart upload; True when packed. Bytes that are gone or do not verify are
        recorded as skipped, and so is a version whose record has no digest: archived, it
        would be restored as if verified."""
        try:
            check_digest(info)
        except DigestMismatch as exc:
            self._skip(record, _unarchivable(exc))
            return False
        reader = self.store.reader(info)  # an offloaded version is read from S3
        try:
            if info.size < self.small_object:
                data = await reader.read()
                self._packer.add(record, data)
                return True
            key = index.version_key(record.sequence)
            holders = await self.targets.write_stream(key, reader)
            record.key, record.offset, record.length = key, 0, info.size
            record.targets = " ".join(holders)
        except (ObjectChanged, ObjectNotFound, DigestMismatch) as exc:
            self._skip(record, exc)  # ObjectNotFound: its chunks expired (its TTL ran out)
        finally:
            await reader.close()
        return False

    def _skip(self, record: ArchiveRecord, reason: NatsObjError) -> None:
        """Index the version as skipped, with why, and say so once in the log."""
        record.kind = index.SKIPPED
        record.description = f"not archived: {reason}"
        log.warning("version at sequence %d skipped: %s", record.sequence, reason)

    async def flush(self) -> None:
        """Upload the pack, then the index segment up to the position, then the cursor."""
        taken = self._packer.take()
        if taken is not None:
            key, data, records = taken
            holders = " ".join(await self.targets.write(key, data))
            for record in records:
                record.targets = holders
            self._pending.extend(records)
        if self._position <= self.committed:
            return
        records = sorted(self._pending, key=lambda r: r.sequence)
        for record in records:  # a meta update of bytes packed since the last flush
            if record.key and not record.targets and record.nuid in self._locations:
                record.targets = self._locations[record.nuid].targets
        key = index.segment_key(self.committed + 1, self._position)
        await self.targets.write_everywhere(key, index.encode_segment(records))
        self.committed = self._position
        self._pending = []
        await self.targets.write_cursor(self.store.bucket, self.committed, **self.totals.as_dict())

    # -- the loop ---------------------------------------------------------------------------------

    async def run(
        self,
        *,
        once: bool = False,
        stop: asyncio.Event | None = None,
        give_up_after: float | None = None,
    ) -> ArchiveTotals:
        """Archive until ``stop`` is set (or, with ``once``, until caught up).

        Failures of NATS or of the target are retried (``natsobj.retry.RESUME``) from the
        durable cursor; ``give_up_after`` seconds of failing in a row raise the last error."""
        stop = stop or asyncio.Event()
        failures = 0  # in a row: the pause before the next try grows with them
        failing_since: float | None = None
        while not stop.is_set():
            try:
                if not self._opened:
                    await self.open()
                await self.catch_up()
                if once:
                    await self.flush()
                    return self.totals
                if self._packer.stale or (not len(self._packer) and self._pending):
                    await self.flush()
                failures, failing_since = 0, None
                delay = self.poll_interval
            except (BucketNotFound, PermissionDenied, ValueError):
                raise
            except (TimeoutError, NatsObjError, OSError) as exc:
                now = time.monotonic()
                failing_since = failing_since or now
                if give_up_after is not None and now - failing_since > give_up_after:
                    raise
                failures += 1
                delay = RESUME.delay(failures)
                log.warning("archiving %r failed, retrying in %.1fs: %s", self, delay, exc)
                self._opened = False  # reload the index: uncommitted work is done again
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
        with contextlib.suppress(NatsObjError, OSError, asyncio.TimeoutError):
            await self.flush()  # a clean stop keeps what was done
        return self.totals


def _removal(event: VersionRemoved) -> ArchiveRecord:
    """The index's row of a version removed for good: the version's id, at its removal."""
    return ArchiveRecord(
        sequence=event.sequence,
        bucket=event.bucket,
        name=event.name,
        kind=index.REMOVED,
        mtime=event.mtime,
        nuid=event.version_id,
    )


def _unarchivable(exc: DigestMismatch) -> DigestMismatch:
    """The check's error with a hint for the archive, which has no opt-out: an archived
    version must be one restore and verify can check."""
    if not isinstance(exc, MissingDigest):
        return exc
    return MissingDigest(
        exc.message,
        bucket=exc.bucket,
        name=exc.name,
        hint="The archive keeps only versions it can verify, as `natsobj archive verify` "
        "requires; re-upload the object with a client that records a digest.",
    )
