"""A name's meta record in its bucket's stream: published, read (the record, or what the
server's delete marker in its place stands for), and the version a write to it replaces.

Names reach here checked (``ObjectStore._check_name``): a name too long to send would cost
the connection.
"""

from __future__ import annotations

import logging

from natsobj.aio.stream import BucketStream, LastMsg
from natsobj.errors import BadObjectMeta, ObjectNotFound
from natsobj.lifecycle import expired_record, expires_at
from natsobj.model import ObjectInfo
from natsobj.names import encode_name, meta_subject
from natsobj.record_fields import trusted_nuid
from natsobj.wire import MARKER_REASON, MSG_TTL

log = logging.getLogger(__name__)


async def publish_record(
    stream: BucketStream,
    info: ObjectInfo,
    *,
    expected_sequence: int | None = None,
    msg_id: str | None = None,
    headers: dict[str, str] | None = None,
) -> int:
    """Publish ``info``'s record, the one rule every writer of records follows (puts,
    updates, deletes, links and restatements of a version): on its name's meta subject as a
    per-subject rollup, except a restatement, which keeps the version it restates beneath it
    (``ObjectInfo.rolls_up``). Returns its stream sequence (SequenceConflict when
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


async def read(stream: BucketStream, name: str, min_sequence: int | None = None) -> LastMsg:
    """The last message on ``name``'s meta subject (ObjectNotFound when there is none);
    ``min_sequence`` as for ``ObjectStore.get_info``."""
    found = await stream.last(
        meta_subject(stream.bucket, name), name=name, min_sequence=min_sequence
    )
    if found is None:
        raise ObjectNotFound("object does not exist", bucket=stream.bucket, name=name)
    return found


def parse(bucket: str, name: str, found: LastMsg) -> ObjectInfo:
    """The record, or what the server's delete marker in its place stands for; a record that
    fails validation is BadObjectMeta."""
    if MARKER_REASON in found.headers:
        return expired_record(name, bucket, mtime=found.time, sequence=found.sequence)
    info = ObjectInfo.from_json(
        found.data,
        mtime=found.time,
        sequence=found.sequence,
        bucket=bucket,
        name=name,
        token=encode_name(name),
    )
    info.expires = expires_at(
        found.time,
        found.headers.get(MSG_TTL),
        subject=f"bucket {bucket!r}, object {name!r}",
    )
    return info


async def current(stream: BucketStream, name: str) -> ObjectInfo | None:
    """The version a write replaces (deleted or not), or None. A record that fails
    validation is still a version to replace: what can be trusted of it (its name,
    sequence and a nuid that is one subject token) is enough, so ``put`` and ``delete``
    get rid of it without purging anything by a nuid it does not validly name."""
    try:
        found = await read(stream, name)
    except ObjectNotFound:
        return None
    try:
        return parse(stream.bucket, name, found)
    except BadObjectMeta as exc:
        log.warning("replacing an invalid meta record: %s", exc)
        nuid = trusted_nuid(found.data) or ""
        return ObjectInfo(name, stream.bucket, nuid, mtime=found.time, sequence=found.sequence)
