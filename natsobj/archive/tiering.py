"""Offload cold objects to the S3 archive, and bring them back.

An offload keeps the object's meta record in NATS, where watches, sensors and listings see
it, and purges its chunks from JetStream. The new record restates the same version (same
name, size, digest, headers, metadata, and the original mtime) and adds where the bytes are
(``Tiering.offload``); ``get`` reads such an object through from S3
(``natsobj.archive.readthrough``). Official clients see the record as a link to a bucket that
never exists, so they fail with "not found" instead of hanging on the purged chunks.

Only a version the archive holds, whose archived bytes verify against its digest, is
offloaded; the record is published with a compare-and-swap on the version it restates, so
an object overwritten meanwhile is left alone. See docs/archive.md, "Tiering".

In a versioned bucket, ``OffloadPolicy.noncurrent_older_than`` also offloads the versions it
keeps once they have been noncurrent that long (S3's NoncurrentVersionTransition): the kept
record says where the bytes are (``natsobj.aio.versions.offload_kept``) and
``get(name, version=)`` reads them through as it reads a current offloaded object.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import groupby
from typing import TYPE_CHECKING

from natsobj.aio import versions
from natsobj.aio.restate_write import restate
from natsobj.aio.version_expiry import noncurrent
from natsobj.archive import index
from natsobj.archive.index import ArchiveRecord
from natsobj.archive.readthrough import offloaded_bytes, trust
from natsobj.archive.restore import verified_bytes
from natsobj.archive.target import ArchiveTarget, ArchiveTargetError
from natsobj.archive.targets import OFFLOAD_METADATA_KEY, REPLICATE, ArchiveTargets
from natsobj.errors import DigestMismatch, ObjectChanged, ObjectNotFound
from natsobj.matching import NameMatcher
from natsobj.model import ObjectInfo, Offload
from natsobj.operation_options import OFFLOAD

if TYPE_CHECKING:
    from natsobj.aio.store import ObjectStore

__all__ = [
    "OffloadPolicy",
    "OffloadResult",
    "offload",
    "rehydrate",
]


@dataclass
class OffloadPolicy:
    """Which objects are cold: every condition given must hold. Age is measured from the
    version's mtime (NATS does not record reads).

    ``expiry_margin``: an object whose TTL runs out sooner than this is never offloaded. Its
    bytes would leave JetStream for S3 just before the server deletes it anyway, for a
    read-through window of hours, at the cost of an S3 round trip per read.

    ``noncurrent_older_than``: also offload the kept versions of a versioned bucket that have
    been noncurrent this long (since the write that replaced them); ``names``, ``glob`` and
    ``larger_than`` select them too. Given without ``older_than``, it offloads kept versions
    only (as S3's noncurrent transition moves no current object). None offloads none."""

    older_than: timedelta | None = None
    larger_than: int | None = None
    glob: str | None = None
    names: frozenset[str] | None = None
    expiry_margin: timedelta = OFFLOAD["expiry_margin"].default
    noncurrent_older_than: timedelta | None = None

    @property
    def selects_current(self) -> bool:
        return self.older_than is not None or self.noncurrent_older_than is None

    def matches(self, info: ObjectInfo, now: datetime) -> bool:
        return (
            self.selects_current
            and self._selects(info)
            and (
                self.older_than is None
                or (info.mtime is not None and now - info.mtime >= self.older_than)
            )
        )

    def matches_noncurrent(self, info: ObjectInfo, since: datetime | None, now: datetime) -> bool:
        """Whether a kept version, noncurrent since ``since``, is cold."""
        limit = self.noncurrent_older_than
        return (limit is not None and since is not None and now - since >= limit) and self._selects(
            info
        )

    def _selects(self, info: ObjectInfo) -> bool:
        if self.names is not None and info.name not in self.names:
            return False
        if self.glob is not None and not NameMatcher(self.glob, "glob").matches(info.name):
            return False
        return self.larger_than is None or info.size > self.larger_than


@dataclass
class OffloadResult:
    offloaded: list[ObjectInfo] = field(default_factory=list)
    bytes: int = 0  # of the current objects and the noncurrent versions offloaded
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (name, why)
    dry_run: bool = False
    noncurrent: list[ObjectInfo] = field(default_factory=list)  # kept versions offloaded


@dataclass
class ArchivedVersions:
    """The archive's copies of versions' bytes, found by nuid or, for a rehydrated object
    (whose chunks have a new nuid), by the sequence of the version its record restates."""

    by_nuid: dict[str, ArchiveRecord] = field(default_factory=dict)
    by_sequence: dict[int, ArchiveRecord] = field(default_factory=dict)

    @classmethod
    async def load(cls, targets: ArchiveTargets) -> ArchivedVersions:
        held = cls()
        for record in await targets.load_index():
            if record.key and record.nuid and record.kind in (index.PUT, index.META):
                held.by_nuid[record.nuid] = record
                held.by_sequence[record.sequence] = record
        return held

    def copy_of(self, info: ObjectInfo) -> ArchiveRecord | None:
        record = self.by_nuid.get(info.nuid)
        if record is None and info.stands_for is not None:
            record = self.by_sequence.get(info.stands_for)
        return record if record is not None and record.digest == info.digest else None


async def offload(
    store: ObjectStore,
    target: ArchiveTarget | ArchiveTargets,
    policy: OffloadPolicy | None = None,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
) -> OffloadResult:
    """Offload every current object the policy selects (all, without one) whose version the
    archive at ``target`` holds. With ``dry_run`` nothing changes; the result says what would
    be offloaded. With several targets replicating, a version every target holds (and
    verifies) is offloaded; one a target lacks is skipped."""
    targets = ArchiveTargets.of(target)
    trust(targets)
    if not dry_run:
        await _record_offload_targets(store, targets)
    policy = policy or OffloadPolicy()
    now = now or datetime.now(UTC)
    held = await ArchivedVersions.load(targets)
    result = OffloadResult(dry_run=dry_run)
    names = sorted(policy.names) if policy.names is not None else None
    candidates = await _candidates(store, names, policy.glob) if policy.selects_current else []
    for info in candidates:
        if not policy.matches(info, now):
            continue
        archived = held.copy_of(info)
        why = _expires_soon(info, policy.expiry_margin, now) or _not_offloadable(
            info, archived, targets
        )
        if why is not None or archived is None:
            result.skipped.append((info.name, why or ""))
            continue
        if dry_run:
            result.offloaded.append(info)
            result.bytes += info.size
            continue
        try:
            done = await _offload_one(store, targets, info, archived)
        except (ObjectChanged, ObjectNotFound, DigestMismatch, ArchiveTargetError) as exc:
            result.skipped.append((info.name, exc.message))
            continue
        result.offloaded.append(done)
        result.bytes += done.size
    if policy.noncurrent_older_than is not None:
        await _offload_noncurrent(store, targets, policy, held, now, result)
    return result


async def _offload_noncurrent(
    store: ObjectStore,
    targets: ArchiveTargets,
    policy: OffloadPolicy,
    held: ArchivedVersions,
    now: datetime,
    result: OffloadResult,
) -> None:
    """Offload the kept versions the policy finds cold (see ``OffloadPolicy``); a version that
    cannot be is skipped, named ``name version ID``."""
    for info in await _noncurrent_candidates(store, policy, now):
        archived = held.copy_of(info)
        label = f"{info.name} version {info.nuid}"
        why = _not_offloadable(info, archived, targets)
        if why is not None or archived is None:
            result.skipped.append((label, why or ""))
            continue
        if not result.dry_run:
            try:
                location = await _verified_location(targets, archived)
                info = await versions.offload_kept(store.bucket_stream, info, location)
            except (ObjectChanged, ObjectNotFound, DigestMismatch, ArchiveTargetError) as exc:
                result.skipped.append((label, exc.message))
                continue
        result.noncurrent.append(info)
        result.bytes += info.size


async def _noncurrent_candidates(
    store: ObjectStore, policy: OffloadPolicy, now: datetime
) -> list[ObjectInfo]:
    """The kept versions with bytes (no delete marker, none lost) the policy finds cold."""
    found = []
    listed = await store.versions(glob=policy.glob)
    for _name, group in groupby(listed, key=lambda version: version.name):
        for version, since in await noncurrent(store, list(group)):
            if version.delete_marker or version.lost:
                continue
            if policy.matches_noncurrent(version.info, since, now):
                found.append(version.info)
    return found


async def _record_offload_targets(store: ObjectStore, targets: ArchiveTargets) -> None:
    """Readers in other processes read through only from targets the stream metadata records
    (docs/archive.md, "Trust"): note these there, before any record names them, apart from
    ``natsobj_archive``, which the next archiver of another target replaces. Changing it
    takes stream-admin rights, as the purge of an offload does."""
    metadata = (await store.status()).metadata
    listed = metadata.get(OFFLOAD_METADATA_KEY, "").split()
    missing = [member.url for member in targets.members if member.url not in listed]
    if missing:
        await store.bucket_stream.set_metadata(OFFLOAD_METADATA_KEY, " ".join(listed + missing))


async def _candidates(
    store: ObjectStore, names: Iterable[str] | None, glob: str | None
) -> list[ObjectInfo]:
    if names is None:
        return await store.list(glob=glob)
    found = []
    for name in names:
        try:
            found.append(await store.get_info(name))
        except ObjectNotFound:
            continue
    return found


def _expires_soon(info: ObjectInfo, margin: timedelta, now: datetime) -> str | None:
    if info.expires is None or info.expires - now >= margin:
        return None
    return (
        f"expires at {info.expires.isoformat(timespec='seconds')}, within the expiry margin "
        f"({margin}): offloading it would gain nothing"
    )


def _not_offloadable(
    info: ObjectInfo, archived: ArchiveRecord | None, targets: ArchiveTargets
) -> str | None:
    if info.is_link:
        return "a link has no bytes of its own"
    if info.offloaded:
        return "already offloaded"
    if info.size == 0:
        return "empty: nothing to reclaim"
    if archived is None:
        return "this version is not in the archive yet: run the archiver first"
    if targets.strategy == REPLICATE:
        lacking = [m.url for m in targets.members if m.target not in targets.holders(archived)]
        if lacking:
            return f"not replicated to every target yet: {' '.join(lacking)} lacks it"
    return None


async def _offload_one(
    store: ObjectStore, targets: ArchiveTargets, info: ObjectInfo, archived: ArchiveRecord
) -> ObjectInfo:
    """Verify the archived bytes (every copy, when replicated), then restate exactly
    ``info``'s version as held there (``natsobj.aio.restate_write``, which purges its chunks): a
    failure at any step leaves the object as it was."""
    return await restate(store, info, offload=await _verified_location(targets, archived))


async def _verified_location(targets: ArchiveTargets, archived: ArchiveRecord) -> Offload:
    """Where the archive holds ``archived``'s bytes, once they verify (every copy, when
    replicated): DigestMismatch or ArchiveTargetError otherwise."""
    holders = targets.holders(archived)
    for holder in holders if targets.strategy == REPLICATE else holders[:1]:
        async for _ in verified_bytes(ArchiveTargets.of(holder), archived):
            pass
    return Offload(
        holders[0].url,
        archived.key,
        archived.offset,
        archived.length,
        mirrors=[holder.url for holder in holders[1:]],
    )


async def rehydrate(store: ObjectStore, name: str) -> ObjectInfo:
    """Bring an offloaded object's bytes back into JetStream (verified against its digest);
    the record restates the same version, so watches and sensors do not see a new one. An
    object that is not offloaded is returned as it is."""
    info = await store.get_info(name)
    if not info.offloaded:
        return info
    return await restate(store, info, data=offloaded_bytes(store.bucket_stream, info))
