"""Reading an offloaded object through from the S3 archive, behind the ordinary ``get``.

The bytes stream with one ranged GET (a packed small object is exactly its range of the
pack), in pieces of about a MiB, and are checked against the size and SHA-256 kept in the
meta record: a read never returns short or wrong data.

Any writer of a bucket can publish a meta record, so the record only chooses *which* trusted
target and key to read; the endpoint, region, credentials and S3 bucket of every request come
from a target the reader trusts: one configured in this process (``trust``, and every target
this process offloads to) or one recorded in the bucket's stream metadata, which only a stream
admin may change. A record naming anything else raises ``UntrustedArchiveLocation`` before
any request is sent.

Ranged reads (``get_range``, ``open_range``, the faces' seeks) are served by
``offloaded_range``: one S3 range GET of exactly the bytes asked for, never a read from the
object's start.

Importing this module registers ``offloaded_bytes`` and ``offloaded_range`` as the core's
readers of offloaded objects (``natsobj.aio.offloaded``); the core imports it by name the
first time it meets one.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncGenerator
from datetime import UTC, datetime

from natsobj.aio.offloaded import register_offloaded_reader
from natsobj.aio.stream import BucketStream
from natsobj.archive import index
from natsobj.archive.index import ArchiveRecord
from natsobj.archive.restore import verified_bytes
from natsobj.archive.target import ArchiveTarget, ArchiveTargetError, split_url, url_settings
from natsobj.archive.targets import (
    OFFLOAD_METADATA_KEY,
    REPLICATE,
    TARGET_METADATA_KEY,
    ArchiveTargets,
    member_urls,
)
from natsobj.errors import PermissionDenied, UntrustedArchiveLocation
from natsobj.model import ObjectInfo, Offload

log = logging.getLogger("natsobj.archive")

_configured: dict[str, ArchiveTarget] = {}  # the reader's own targets, by URL


def trust(target: ArchiveTarget | ArchiveTargets) -> None:
    """Let this process read offloaded objects through from ``target`` (with its own options),
    also when the bucket's stream metadata does not record it."""
    for member in ArchiveTargets.of(target).members:
        _configured[member.url] = member.target


@functools.cache
def target_for(url: str) -> ArchiveTarget:
    """One target per recorded URL for the process, with credentials from the AWS chain."""
    return ArchiveTarget(url)


def archived_record(info: ObjectInfo) -> ArchiveRecord:
    """The offloaded version as the archive index would describe it, for ``verified_bytes``."""
    offload = _offload_of(info)
    return ArchiveRecord(
        sequence=int(info.stands_for or info.sequence or 0),
        bucket=info.bucket,
        name=info.name,
        kind=index.PUT,
        mtime=info.mtime or datetime.now(UTC),
        size=info.size,
        digest=info.digest,
        nuid=info.nuid,
        key=offload.key,
        offset=offload.offset,
        length=offload.length,
    )


async def offloaded_bytes(stream: BucketStream, info: ObjectInfo) -> AsyncGenerator[bytes]:
    """The offloaded object's bytes, verified (DigestMismatch after the last piece if not),
    from its target or, when that does not answer, from a replica (``Offload.mirrors``); each
    a target the reader trusts (UntrustedArchiveLocation, and no request, otherwise)."""
    holders = await trusted_holders(stream, info)
    source = holders[0] if len(holders) == 1 else ArchiveTargets(holders, REPLICATE)
    pieces = verified_bytes(source, archived_record(info))
    try:
        async for piece in pieces:
            yield piece
    finally:
        await pieces.aclose()


async def offloaded_range(stream: BucketStream, info: ObjectInfo, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of the offloaded object (0 <= start < end <= size): one ranged
    GET of exactly those bytes at the object's offset in its archive key, from its target or,
    when that does not answer, from the next replica. Like an S3 range GET it cannot be
    checked against the SHA-256, which covers the whole object; the core checks its length."""
    offload = _offload_of(info)
    *others, last = await trusted_holders(stream, info)
    for target in others:
        try:
            return await target.get_range(offload.key, offload.offset + start, offload.offset + end)
        except ArchiveTargetError as exc:
            log.warning("ranged read from %s failed, trying the next: %s", target.url, exc)
    return await last.get_range(offload.key, offload.offset + start, offload.offset + end)


async def trusted_holders(stream: BucketStream, info: ObjectInfo) -> list[ArchiveTarget]:
    """The trusted target each location of the record names, in the record's order."""
    trusted = [*_configured.values(), *await recorded_targets(stream)]
    holders: list[ArchiveTarget] = []
    offload = _offload_of(info)
    for url in [offload.url, *offload.mirrors]:
        match = next((target for target in trusted if names_target(url, target)), None)
        if match is None:
            raise UntrustedArchiveLocation(
                f"its offload record names the S3 location {url!r}, which is not an archive "
                "target this reader trusts; nothing was sent there",
                bucket=info.bucket,
                name=info.name,
            )
        if match not in holders:
            holders.append(match)
    return holders


async def recorded_targets(stream: BucketStream) -> list[ArchiveTarget]:
    """The targets the bucket's stream metadata records: the archive's and the offloads'."""
    try:
        metadata = (await stream.status()).metadata
    except PermissionDenied:  # a reader without stream-info rights trusts its own config only
        return []
    urls = member_urls(metadata.get(TARGET_METADATA_KEY, ""))
    urls += metadata.get(OFFLOAD_METADATA_KEY, "").split()
    found = []
    for url in urls:
        try:
            found.append(target_for(url))
        except ValueError:
            continue  # not a target URL: nothing to trust
    return found


def names_target(url: str, target: ArchiveTarget) -> bool:
    """Does a record's location name ``target``? Same S3 bucket and prefix, and any setting
    the location carries (endpoint, region) is the target's own: a record never redirects."""
    try:
        place, settings = split_url(url), url_settings(url)
    except ValueError:
        return False
    if place != (target.bucket, target.prefix):
        return False
    return all(getattr(target.options, key) == value for key, value in settings.items())


def _offload_of(info: ObjectInfo) -> Offload:
    offload = info.tiering.offload if info.tiering else None
    assert offload is not None, "only offloaded objects are read through"
    return offload


register_offloaded_reader(offloaded_bytes, read_range=offloaded_range)
