"""Restating a version: the one core operation offload and rehydrate write through.

A restatement is a meta record that stands for a version already in the stream (same name,
bytes, headers, metadata and mtime) and says where its bytes are now: in an archive (an
offload) or in JetStream again (a rehydrate). Watches and ``changes`` skip it once it is proven
(``natsobj.aio.restate_proof``). It is written over exactly the version it restates, so an object
replaced meanwhile is left alone (ObjectChanged), keeps that version's expiry, and the chunks
it makes redundant are purged here, so a caller never needs the bucket's subject layout.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import TYPE_CHECKING

from natsobj.aio.put_modes import PutMode
from natsobj.aio.records import publish_record
from natsobj.errors import ObjectChanged, SequenceConflict
from natsobj.model import ObjectInfo, Offload, Tiering, kept_chunk_size
from natsobj.names import chunk_subject
from natsobj.wire import MSG_TTL

if TYPE_CHECKING:
    from natsobj.aio.store import ObjectStore


async def restate(
    store: ObjectStore,
    info: ObjectInfo,
    *,
    offload: Offload | None = None,
    data: AsyncIterable[bytes] | None = None,
) -> ObjectInfo:
    """Restate ``info``'s version of its object, with its bytes in one new place: exactly
    one of ``offload`` (they are held at that archive location: the record says so and the
    version's chunks are purged from JetStream) or ``data`` (they are back in JetStream:
    ``data`` is stored as new chunks, which the caller verifies against ``info.digest`` as
    they come). ObjectChanged when the object is no longer at ``info``'s version; a failure
    before the record is published leaves the object as it was."""
    if (offload is None) == (data is None):
        raise ValueError("restate takes either offload or data")
    replaces = info.stands_for or int(info.sequence or 0)
    ttl = await store.ttl_left(info)
    if data is not None:
        return await store.put(
            info.name,
            data,
            description=info.description or None,
            headers=info.headers,
            metadata=info.metadata,
            chunk_size=kept_chunk_size(info.chunk_size),
            mode=PutMode.replacing(info),
            tiering=Tiering(replaces=replaces, mtime=info.mtime),
            # the same expiry, or none (0) so a lifecycle rule does not give the version one
            ttl=ttl or 0,
        )
    record = info.evolve(tiering=Tiering(replaces=replaces, mtime=info.mtime, offload=offload))
    try:
        record.sequence = await publish_record(
            store.bucket_stream,
            record,
            expected_sequence=info.sequence,
            headers=None if ttl is None else {MSG_TTL: str(ttl)},
        )
    except SequenceConflict:
        raise ObjectChanged(
            "changed while being offloaded; left as it is", bucket=store.bucket, name=info.name
        ) from None
    await store.bucket_stream.purge(chunk_subject(store.bucket, info.nuid))
    return record


__all__ = ["restate"]
