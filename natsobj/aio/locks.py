"""Versions' locks (``natsobj.versioning.VersionLock``): one record per locked version on
``natsobj.names.lock_subject``, its latest state (a per-subject rollup), changed only over the
state read, so two callers never both shorten or lift a lock they each judged alone. A lock
record is untrusted input like any record: one that cannot be read locks the version (nothing
is removed on a guess), and says so."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from natsobj.aio.stream import BucketStream, SequenceConflict
from natsobj.errors import NatsObjError, ObjectLocked
from natsobj.names import lock_subject
from natsobj.versioning import LockMode, VersionLock

log = logging.getLogger(__name__)
# what an unreadable lock record is taken as: held, for good, until a lock is set over it
UNREADABLE = VersionLock(LockMode.COMPLIANCE, datetime.max.replace(tzinfo=UTC), legal_hold=True)


async def read(stream: BucketStream, name: str, version_id: str) -> tuple[VersionLock, int]:
    """The version's lock and the sequence of its record (0: never locked)."""
    found = await stream.last(lock_subject(stream.bucket, name, version_id), name=name)
    if found is None:
        return VersionLock(), 0
    try:
        return VersionLock.decode(found.data), found.sequence
    except ValueError as exc:
        log.warning(
            "bucket %r, object %r: the lock of version %s is unreadable (%s); it is held as"
            " locked until a lock is set over it",
            stream.bucket,
            name,
            version_id,
            exc,
        )
        return UNREADABLE, found.sequence


async def change(
    stream: BucketStream,
    name: str,
    version_id: str,
    new: VersionLock,
    now: datetime,
    *,
    bypass_governance: bool,
    current: tuple[VersionLock, int] | None = None,
) -> VersionLock:
    """Make ``new`` the version's lock where the one it has allows it (ObjectLocked saying
    why not); an unreadable lock may be replaced only by a caller bypassing governance."""
    lock, sequence = current if current is not None else await read(stream, name, version_id)
    if lock is UNREADABLE and not bypass_governance:
        raise ObjectLocked(
            f"version {version_id}'s lock record is unreadable", bucket=stream.bucket, name=name
        )
    why = (
        None
        if lock is UNREADABLE
        else lock.change_refused(new, now, bypass_governance=bypass_governance)
    )
    if why is not None:
        raise ObjectLocked(
            f"version {version_id}'s lock cannot change: {why}", bucket=stream.bucket, name=name
        )
    try:
        await stream.publish_rollup(
            lock_subject(stream.bucket, name, version_id),
            new.encode(),
            name=name,
            expected_sequence=sequence,
        )
    except SequenceConflict:
        raise NatsObjError(
            f"version {version_id}'s lock changed while it was being set; nothing was changed",
            bucket=stream.bucket,
            name=name,
        ) from None
    return new


async def check_removable(
    stream: BucketStream, name: str, version_id: str, now: datetime, *, bypass_governance: bool
) -> None:
    """ObjectLocked, saying why, when the version's lock keeps it."""
    lock, _ = await read(stream, name, version_id)
    why = lock.removal_refused(now, bypass_governance=bypass_governance)
    if why is not None:
        raise ObjectLocked(
            f"version {version_id} cannot be removed: {why}", bucket=stream.bucket, name=name
        )


async def forget(stream: BucketStream, name: str, version_id: str) -> None:
    """Drop a removed version's lock record (it locked nothing any more)."""
    await stream.purge(lock_subject(stream.bucket, name, version_id))
