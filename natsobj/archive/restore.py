"""Rebuild a store from the archive: the latest versions, or the store as it was at a time.

Bytes stream from S3 (packed versions with one ranged GET each) straight into ``put``, and
their SHA-256 is checked against the index before the put publishes its meta record, so a
version that does not verify is never restored, and memory stays bounded.
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
from natsobj.errors import DigestMismatch, NatsObjError
from natsobj.model import ObjectLink

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
    """Restore into ``bucket``, created when missing; it must hold no objects."""
    targets = ArchiveTargets.of(target)
    plan = plan_restore(await targets.load_index(), at)
    for record in plan.objects:  # nothing is written while any version cannot be verified
        _raise_if(BytesCheck(record).unusable_digest(), targets, record)
    store = await client.ensure_store(bucket)
    if await store.list():
        raise NatsObjError(
            "restore needs a new or empty bucket",
            bucket=bucket,
            hint="Pick a new bucket name, or delete this bucket first.",
        )
    result = RestoreResult(bucket=bucket, unrestorable=plan.unrestorable)
    for record in plan.objects:
        with task(record.name, record.length) if task else nullcontext(None) as advance:
            await store.put(
                record.name,
                _advancing(verified_bytes(targets, record), advance),
                description=record.description or None,
                headers=record.header_map,
                metadata=record.metadata_map,
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


async def _advancing(pieces: AsyncIterator[bytes], advance: Advance | None) -> AsyncIterator[bytes]:
    async for piece in pieces:
        if advance is not None:
            advance(len(piece))
        yield piece
