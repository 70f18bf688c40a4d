"""Rebuild a store from the archive: the latest versions, or the store as it was at a time.

Bytes stream from S3 (packed versions with one ranged GET each) straight into ``put``, and
their SHA-256 is checked against the index before the put publishes its meta record, so a
version that does not verify is never restored, and memory stays bounded.

Into a bucket keeping versions (``natsobj.versioning``), each name's versions are rebuilt
oldest first under the ids they had, delete markers as markers, so the restored bucket lists
and reads the versions the archived one kept.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from natsobj.archive import index
from natsobj.archive.index import ArchiveRecord
from natsobj.archive.target import ArchiveTarget
from natsobj.archive.targets import ArchiveTargets
from natsobj.archive.verify import BytesCheck
from natsobj.errors import BucketNotFound, DigestMismatch, NatsObjError
from natsobj.model import ObjectLink
from natsobj.versioning import DELETE_MARKER_HEADER, Versioning

if TYPE_CHECKING:
    from natsobj.aio.client import Client

Advance = Callable[[int], None]
ProgressTask = Callable[[str, int], AbstractContextManager[Advance]]


@dataclass
class RestorePlan:
    """Which record each name comes back as; names whose last version was skipped are
    listed apart, since restoring an older version in their place would be wrong."""

    objects: list[ArchiveRecord] = field(default_factory=list)
    links: list[ArchiveRecord] = field(default_factory=list)
    unrestorable: list[ArchiveRecord] = field(default_factory=list)
    # into a bucket keeping versions: each name's versions, oldest first, in ``objects``,
    # with its delete markers among them here (a name's link, last, stays in ``links``)


def is_marker(record: ArchiveRecord) -> bool:
    """Whether a delete row is a versioned delete's marker (a version), not a plain delete."""
    return record.kind == index.DELETE and DELETE_MARKER_HEADER in record.header_map


def plan_restore(records: list[ArchiveRecord], at: datetime | None = None) -> RestorePlan:
    latest: dict[str, ArchiveRecord | None] = {}
    for record in records:
        if at is not None and record.mtime > at:
            continue
        if record.kind == index.EXPIRED:
            continue  # expiry in NATS is not deletion from the archive: the version stays
        if record.previous_name:  # a rename moved these bytes away from their old name
            old = latest.get(record.previous_name)
            if old is not None and old.nuid == record.nuid:
                latest[record.previous_name] = None
        if record.kind == index.REMOVED:
            continue  # a kept version removed; a current one's successor has a record of its own
        latest[record.name] = None if record.kind == index.DELETE else record
    plan = RestorePlan()
    for name in sorted(latest):
        if (kept := latest[name]) is None:
            continue
        if kept.kind == index.SKIPPED:
            plan.unrestorable.append(kept)
        elif kept.kind == index.LINK:
            plan.links.append(kept)
        else:
            plan.objects.append(kept)
    return plan


def plan_versions(records: list[ArchiveRecord], at: datetime | None = None) -> RestorePlan:
    """Each name's versions as the bucket kept them (as of ``at``), oldest first: every
    version the archive holds, less those removed for good and those a plain (unversioned)
    delete purged. A version whose record changed (update_meta, made current again) keeps
    its place. A name whose last version was skipped is unrestorable whole, as in
    ``plan_restore``; a skipped older one is listed unrestorable and left out."""
    histories: dict[str, list[ArchiveRecord]] = {}
    for record in records:
        if (at is not None and record.mtime > at) or record.kind == index.EXPIRED:
            continue
        if record.previous_name:
            _drop(histories.get(record.previous_name, []), record.nuid)
        history = histories.setdefault(record.name, [])
        if record.kind == index.REMOVED:
            _drop(history, record.nuid)
        elif record.kind == index.DELETE and not is_marker(record):
            history.clear()
        elif record.kind == index.META and _replace(history, record):
            continue
        else:
            history.append(record)
    plan = RestorePlan()
    for name in sorted(histories):
        history = histories[name]
        if not history:
            continue
        if history[-1].kind == index.SKIPPED:
            plan.unrestorable.append(history[-1])
            continue
        if history[-1].kind == index.LINK:
            plan.links.append(history[-1])
        for record in history:
            if record.kind == index.SKIPPED:
                plan.unrestorable.append(record)
            elif record.kind != index.LINK:  # a link is no version: it replaced one
                plan.objects.append(record)
    return plan


def _drop(history: list[ArchiveRecord], version_id: str) -> None:
    history[:] = [record for record in history if record.nuid != version_id]


def _replace(history: list[ArchiveRecord], record: ArchiveRecord) -> bool:
    """Put a changed record of a version in its place; False when the name has no such one."""
    for place, old in enumerate(history):
        if old.nuid == record.nuid and old.kind != index.LINK:
            history[place] = record
            return True
    return False


@dataclass
class RestoreResult:
    bucket: str
    objects: int = 0
    bytes: int = 0
    links: int = 0
    unrestorable: list[ArchiveRecord] = field(default_factory=list)


async def verified_bytes(
    target: ArchiveTarget | ArchiveTargets, record: ArchiveRecord
) -> AsyncGenerator[bytes]:
    """The record's bytes from the archive (the first target holding them that answers),
    checked as ``verify`` checks them: an index digest that is empty or not a SHA-256 raises
    DigestMismatch before anything is read, bytes that are not what the index says raise it
    after the last piece (so a put fed by this never publishes them)."""
    targets = ArchiveTargets.of(target)
    check = BytesCheck(record)
    _raise_if(check.unusable_digest(), targets, record)
    async for piece in targets.stream(record):
        check.update(piece)
        yield piece
    _raise_if(check.problem(), targets, record)


def _raise_if(problem: str | None, targets: ArchiveTargets, record: ArchiveRecord) -> None:
    if problem is not None:
        raise DigestMismatch(
            f"archived bytes at {targets.url} for sequence {record.sequence} "
            f"do not match the index: {problem}",
            bucket=record.bucket,
            name=record.name,
            hint="Run `natsobj archive verify` and restore from another archive copy.",
        )


async def restore(
    client: Client,
    target: ArchiveTarget | ArchiveTargets,
    bucket: str,
    *,
    at: datetime | None = None,
    task: ProgressTask | None = None,
) -> RestoreResult:
    """Restore into ``bucket``, created when missing; it must hold no objects. Into a bucket
    whose versioning is enabled, every version is restored under its id (``plan_versions``),
    else the latest one of each name is put anew."""
    targets = ArchiveTargets.of(target)
    versioned = await _keeps_versions(client, bucket)
    records = await targets.load_index()
    plan = plan_versions(records, at) if versioned else plan_restore(records, at)
    for record in plan.objects:  # nothing is written while any version cannot be verified
        if not is_marker(record):
            _raise_if(BytesCheck(record).unusable_digest(), targets, record)
    store = await client.ensure_store(bucket)
    if await store.list(include_deleted=versioned):
        raise NatsObjError(
            "restore needs a new or empty bucket",
            bucket=bucket,
            hint="Pick a new bucket name, or delete this bucket first.",
        )
    result = RestoreResult(bucket=bucket, unrestorable=plan.unrestorable)
    for record in plan.objects:
        version = record.nuid if versioned else None
        if is_marker(record):
            await store.delete(record.name, _version=version)
            continue
        with task(record.name, record.length) if task else nullcontext(None) as advance:
            await store.put(
                record.name,
                _advancing(verified_bytes(targets, record), advance),
                description=record.description or None,
                headers=record.header_map,
                metadata=record.metadata_map,
                _version=version,
            )
        result.objects += 1
        result.bytes += record.length
    for record in plan.links:
        link = json.loads(record.link)
        if link.get("name"):
            target_store = store if link["bucket"] == bucket else await client.store(link["bucket"])
            await store.add_link(record.name, await target_store.get_info(link["name"]))
        else:
            await store.add_bucket_link(record.name, ObjectLink(**link).bucket)
        result.links += 1
    return result


async def _keeps_versions(client: Client, bucket: str) -> bool:
    """Whether ``bucket`` is there with its versioning enabled (a bucket the restore creates
    is not: it is created only once every version is known to verify)."""
    try:
        store = await client.store(bucket)
    except BucketNotFound:
        return False
    return await store.versioning_state.state(fresh=True) is Versioning.ENABLED


async def _advancing(pieces: AsyncIterator[bytes], advance: Advance | None) -> AsyncIterator[bytes]:
    async for piece in pieces:
        if advance is not None:
            advance(len(piece))
        yield piece
