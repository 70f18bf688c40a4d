"""An object's meta record rewritten over its chunks: a rename, or a new description, headers
or metadata, the version (its chunks, digest and expiry) kept as it was."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from natsobj.aio import records
from natsobj.aio.put_pipeline import normalize_headers
from natsobj.aio.stream import BucketStream
from natsobj.errors import ObjectChanged, ObjectExists, SequenceConflict
from natsobj.model import ObjectInfo
from natsobj.names import meta_subject
from natsobj.record_fields import check_metadata
from natsobj.wire import MSG_TTL


async def update_meta(
    stream: BucketStream,
    ttl_left: Callable[[ObjectInfo], Awaitable[int | None]],
    info: ObjectInfo,
    target: str,
    existing: ObjectInfo | None,
    *,
    description: str | None,
    headers: Mapping[str, list[str] | str] | None,
    metadata: dict[str, str] | None,
) -> ObjectInfo:
    """``ObjectStore.update_meta`` of the current version ``info`` to the checked name
    ``target``, over ``existing`` (the version there now, when it is another name);
    ``ttl_left`` is ``ObjectStore.ttl_left``."""
    bucket, name = stream.bucket, info.name
    expected = info.sequence
    if target != name:
        if existing is not None and not existing.deleted:
            raise ObjectExists("cannot rename onto an existing object", bucket=bucket, name=target)
        expected = existing.sequence if existing else 0
    updated = info.evolve(
        tiering=info.tiering and info.tiering.evolve_for_update(),
        name=target,
        description=info.description if description is None else description,
        headers=info.headers if headers is None else normalize_headers(headers),
        metadata=(
            info.metadata
            if metadata is None
            else check_metadata(metadata, bucket=bucket, name=target)
        ),
    )
    left = await ttl_left(info)
    ttl_headers = None if left is None else {MSG_TTL: str(left)}
    try:
        updated.sequence = await records.publish_record(
            stream, updated, expected_sequence=expected, headers=ttl_headers
        )
    except SequenceConflict:
        raise ObjectChanged(
            "changed by another writer during update_meta", bucket=bucket, name=target
        ) from None
    if target != name:
        await stream.purge(meta_subject(bucket, name))
    return updated
