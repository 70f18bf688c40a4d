"""Publishing an object's meta record: the one rule every writer of records follows (puts,
updates, deletes, links, and restatements of a version), so none of them needs the subject
layout: the record goes on its name's meta subject as a per-subject rollup, except a
restatement, which keeps the version it restates beneath it (``ObjectInfo.rolls_up``)."""

from __future__ import annotations

from natsobj.aio.stream import BucketStream
from natsobj.model import ObjectInfo
from natsobj.names import meta_subject


async def publish_record(
    stream: BucketStream,
    info: ObjectInfo,
    *,
    expected_sequence: int | None = None,
    msg_id: str | None = None,
    headers: dict[str, str] | None = None,
) -> int:
    """Publish ``info``'s record; returns its stream sequence (SequenceConflict when
    ``expected_sequence`` is not where the name is)."""
    return await stream.publish_rollup(
        meta_subject(stream.bucket, info.name),
        info.encode(),
        rollup=info.rolls_up,
        name=info.name,
        expected_sequence=expected_sequence,
        msg_id=msg_id,
        headers=headers,
    )
