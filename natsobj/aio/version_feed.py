"""The version events of a change feed (``natsobj.version_events``), read from the subjects
natsobj keeps versions and locks on: a feed asked for them reads those beside the meta
subjects, through one consumer with several filter subjects, so they come in stream order
among the records. ADR-20 clients read the meta subjects and exact chunk subjects only, and
see nothing of this.

Every message there is untrusted input (any writer of the bucket can publish one): a lock
record that cannot be read is reported unreadable, and one on a subject naming no object is
logged and skipped, as an unreadable meta record is; neither costs another event."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from natsobj.aio.jetstream.consumer import StreamMsg
from natsobj.aio.jetstream.jsapi import raw_header
from natsobj.local.name_index import decoded
from natsobj.names import (
    all_locks_subject,
    all_meta_subject,
    all_versions_subject,
    is_lock_subject,
    is_token_of,
    is_version_subject,
)
from natsobj.version_events import LockEvent, VersionEvent, VersionRemoved
from natsobj.versioning import VERSION_REMOVED, VersionLock

log = logging.getLogger(__name__)

# $O.<bucket>.C.<V or L>.<base64url name>.<version id>: a bucket name holds no dot
_VERSION_SUBJECT_TOKENS = 6


def is_removal(headers: bytes | Mapping[str, str]) -> bool:
    """Whether a message on a version's record subject is the marker of its removal
    (``natsobj.aio.versions.remove``): raw headers as a consumer reads them, or a mapping as
    a direct get does."""
    if isinstance(headers, bytes):
        return raw_header(headers, VERSION_REMOVED.encode()) is not None
    return VERSION_REMOVED in headers


def feed_subjects(bucket: str, *, include_version_events: bool) -> tuple[str, ...]:
    """The subjects a change feed reads: the meta subjects, and the version subjects when
    asked for their events."""
    if not include_version_events:
        return (all_meta_subject(bucket),)
    return (all_meta_subject(bucket), all_locks_subject(bucket), all_versions_subject(bucket))


def is_meta(bucket: str, msg: StreamMsg) -> bool:
    """Whether a feed's message is a meta record (else it is on a version subject)."""
    return not (is_lock_subject(bucket, msg.subject) or is_version_subject(bucket, msg.subject))


def event_from_msg(bucket: str, msg: StreamMsg) -> VersionEvent | None:
    """The event a message on a version subject is; None for one that is no event (a kept
    version's record: the write that replaced the version is the change) or names no object."""
    on_record = is_version_subject(bucket, msg.subject)  # else on a lock subject
    if on_record and not is_removal(msg.headers):
        return None
    tokens = msg.subject.split(".")
    name = decoded(tokens[-2]) if len(tokens) == _VERSION_SUBJECT_TOKENS else None
    if not name or not is_token_of(name, tokens[-2]):  # base64 decoding skips what is no token
        log.warning(
            "bucket %r: skipping a message at sequence %s on %r, which names no object",
            bucket,
            msg.sequence,
            msg.subject,
        )
        return None
    version_id = tokens[-1]
    if on_record:
        return VersionRemoved(bucket, name, version_id, msg.sequence, msg.time)
    try:
        lock: VersionLock | None = VersionLock.decode(msg.data)
        problem = ""
    except ValueError as exc:
        lock, problem = None, f"the lock record is unreadable: {exc}"
        log.warning(
            "bucket %r, object %r: the lock record of version %s at sequence %s is unreadable"
            " (%s); reported so, the version held as locked",
            bucket,
            name,
            version_id,
            msg.sequence,
            exc,
        )
    return LockEvent(bucket, name, version_id, lock, msg.sequence, msg.time, problem)


def reported_event(
    bucket: str, msg: StreamMsg, *, include_deletes: bool, initial_value: bool = False
) -> VersionEvent | None:
    """The event a feed reports for a message on a version subject, if any: a removal is a
    deletion (left out with ``include_deletes=False``), and no ``initial_value`` of a watch of
    the current values, which reports each version's lock as it is now: a removal was
    reported when it happened."""
    event = event_from_msg(bucket, msg)
    if isinstance(event, VersionRemoved) and (initial_value or not include_deletes):
        return None
    return event
