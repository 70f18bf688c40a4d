"""Proving a restatement against the version it names.

Offload and rehydrate write records that restate a version (``Tiering.replaces``): watches and
``changes`` skip them and their ``mtime`` is the version's. Anyone who may publish to the
bucket can write such a field, so a record is taken as a restatement only when the version it
names is still in the stream (restatements are published without a rollup, so it is), on the
same subject, and ``ObjectInfo.restates`` it: same name, bytes and metadata. Anything else is a
new version like any other, with the server's time of its own record.
"""

from __future__ import annotations

import asyncio

from natsobj.aio.stream import BucketStream
from natsobj.errors import BadObjectMeta
from natsobj.model import ObjectInfo
from natsobj.names import encode_name, meta_subject


async def proven(stream: BucketStream, info: ObjectInfo) -> ObjectInfo:
    """``info`` as far as it can be trusted: a proven restatement with the ``mtime`` of the
    version it restates, else (when it claimed to be one) that claim dropped. One direct get,
    for restatements only."""
    named = info.stands_for
    if named is None:
        return info
    if info.sequence is not None and 0 < named < info.sequence:
        found = await stream.first(
            meta_subject(stream.bucket, info.name), after=named - 1, name=info.name
        )
        if found is not None and found.sequence == named:
            try:
                version = ObjectInfo.from_json(
                    found.data,
                    bucket=stream.bucket,
                    name=info.name,
                    token=encode_name(info.name),
                )
            except BadObjectMeta:
                version = None
            if version is not None and info.restates(version):
                info.mtime = found.time
                return info
    return info.as_new_version()


async def proven_batch(stream: BucketStream, infos: list[ObjectInfo]) -> list[ObjectInfo]:
    """``proven`` for each of a listing's batch, the restatements' gets sent together."""
    claims = [i for i, info in enumerate(infos) if info.stands_for is not None]
    if not claims:
        return infos
    checked = await asyncio.gather(*(proven(stream, infos[i]) for i in claims))
    out = list(infos)
    for i, info in zip(claims, checked, strict=True):
        out[i] = info
    return out


__all__ = ["proven", "proven_batch"]
