"""ADR-20 links: a name made a link to an object (in any bucket) or to a whole bucket, and a
link followed to the object it names. A link has no chunks; links to links are refused.

Anyone who can write a bucket can plant a link in it, to any bucket, without being able to
read the target: following it reads with the *reader's* rights. A read therefore follows a
link into another bucket only when its caller asked for that (``follow_links``); a face that
reads for someone else (the gateway, an operator, a log page, an IO manager) would otherwise
hand the link's writer a bucket it could not read. A link within its own bucket reaches
nothing its writer could not, and is always followed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Protocol, TypeVar

from natsobj.aio import records
from natsobj.aio.jetstream.nuids import next_nuid
from natsobj.aio.stream import BucketStream
from natsobj.errors import BadObjectMeta, LinkError, ObjectExists, ObjectNotFound
from natsobj.model import ObjectInfo, ObjectLink
from natsobj.names import chunk_subject


class Readable(Protocol):
    """What following a link needs of a bucket (an ``ObjectStore``)."""

    bucket: str

    async def get_info(self, name: str) -> ObjectInfo: ...


Store = TypeVar("Store", bound=Readable)


async def follow(
    store: Store,
    info: ObjectInfo,
    store_of: Callable[[str], Awaitable[Store]],
    *,
    follow_links: bool,
) -> tuple[Store, ObjectInfo]:
    """The bucket and record of the object ``info`` (read from ``store``) stands for: itself,
    or the object it links to, in the bucket ``store_of`` opens. A bucket link, a link to a
    link, and a link into another bucket unless ``follow_links``, are LinkError (naming the
    link and its target: never a silent skip)."""
    name = info.name
    if info.link is None:
        if not info.nuid and info.chunks:
            raise BadObjectMeta(
                "meta record has chunks but no nuid", bucket=store.bucket, name=name
            )
        return store, info
    if info.link.is_bucket_link:
        raise LinkError(
            f"is a link to bucket {info.link.bucket!r}, not to an object",
            bucket=store.bucket,
            name=name,
            hint=f"Open store({info.link.bucket!r}) instead.",
        )
    if info.link.bucket != store.bucket and not follow_links:
        raise LinkError(
            f"is a link to {info.link.bucket}/{info.link.name}, in another bucket, and this"
            " read does not follow links out of its bucket",
            bucket=store.bucket,
            name=name,
            hint="Whoever can write a bucket can plant a link to any other; ask for"
            " follow_links (--follow-links) only where the reader's rights are the ones"
            " meant to apply.",
        )
    target = await store_of(info.link.bucket)
    target_info = await target.get_info(info.link.name)
    if target_info.is_link:
        raise LinkError("links to links are not allowed", bucket=store.bucket, name=name)
    return target, target_info


async def to_object(
    bucket: str, name: str, target: ObjectInfo, store_of: Callable[[str], Awaitable[Readable]]
) -> ObjectLink:
    """The link ``name`` in ``bucket`` may be to ``target``: an object that is there now, not
    deleted and not a link itself (LinkError otherwise)."""
    if target.deleted:
        raise LinkError("cannot link to a deleted object", bucket=bucket, name=name)
    if target.is_link:
        raise LinkError("cannot link to a link", bucket=bucket, name=name)
    try:
        await (await store_of(target.bucket)).get_info(target.name)
    except ObjectNotFound as exc:
        raise LinkError(
            f"link target {target.bucket}/{target.name} does not exist", bucket=bucket, name=name
        ) from exc
    return ObjectLink(bucket=target.bucket, name=target.name)


async def publish(
    stream: BucketStream, name: str, link: ObjectLink, existing: ObjectInfo | None
) -> ObjectInfo:
    """Make ``name`` the link, over ``existing`` (the version there now): a link or a deleted
    object is replaced, a regular object is not (ObjectExists)."""
    bucket = stream.bucket
    if existing is not None and not existing.deleted and not existing.is_link:
        raise ObjectExists("a regular object has this name", bucket=bucket, name=name)
    info = ObjectInfo(name=name, bucket=bucket, nuid=next_nuid(), link=link)
    info.sequence = await records.publish_record(stream, info)
    info.mtime = datetime.now(UTC)
    if existing is not None and not existing.deleted and existing.nuid:
        await stream.purge(chunk_subject(bucket, existing.nuid))
    return info
