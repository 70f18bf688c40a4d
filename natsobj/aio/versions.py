"""Kept versions of a versioned bucket (``natsobj.versioning``): recorded as a write is about
to replace them, listed beside the current records, read, and removed for good.

A version is recorded before the record replacing it is published (``keep``, called with the
version a put or delete looked up), so no crash between the two leaves a version whose
chunks nothing names. The record is published create-only: a version already kept stays as
it was first recorded. Kept records are read like meta records, as untrusted input: one that
fails validation is left out of a listing (with a warning), never costs another version.

A version removed for good leaves a removal marker on its record's subject (``remove``): an
empty message with the header ``VERSION_REMOVED`` that replaces the record, so the change
feed reports the removal once (``natsobj.aio.version_feed``), and a removed version is never
kept again by a write that raced its removal."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from natsobj.aio import records
from natsobj.aio.jetstream.consumer import StreamMsg
from natsobj.aio.jetstream.jsapi import raw_header
from natsobj.aio.jetstream.nuids import next_nuid
from natsobj.aio.listing import NameFilter, iter_batches
from natsobj.aio.records import publish_record
from natsobj.aio.stream import BucketStream, LastMsg, SequenceConflict
from natsobj.aio.version_feed import is_removal
from natsobj.errors import BadObjectMeta, NatsObjError, ObjectChanged, ObjectNotFound
from natsobj.local.name_index import decoded
from natsobj.model import ObjectInfo, Offload, Tiering
from natsobj.names import all_versions_subject, chunk_subject, version_subject
from natsobj.retry import CONFLICT
from natsobj.versioning import (
    DELETE_MARKER_HEADER,
    VERSION_REMOVED,
    VERSION_SEQUENCE,
    VERSION_TIME,
    ObjectVersion,
)

log = logging.getLogger(__name__)

# How many kept records one read of them asks for at a time.
READ_BATCH = 1024


def keepable(info: ObjectInfo) -> bool:
    """Whether a replaced record is a version to keep: an object's bytes or a versioned
    delete's marker. Not a plain tombstone (a delete before versioning, or another client's:
    no version), not a link, and not a record too broken to name its chunks."""
    if info.is_link or not info.nuid or info.sequence is None:
        return False
    return info.delete_marker if info.deleted else bool(info.digest)


async def keep(stream: BucketStream, info: ObjectInfo) -> None:
    """Record ``info``, the current version of its name, as a kept version, unless it is one
    already or is no version (``keepable``)."""
    if not keepable(info):
        return
    # create-only: a version kept already stays as it was first recorded
    with contextlib.suppress(SequenceConflict):
        await stream.publish_rollup(
            version_subject(stream.bucket, info.name, info.nuid),
            info.encode(),
            rollup=False,
            name=info.name,
            expected_sequence=0,
            headers=_kept_headers(info),
        )


def _kept_headers(info: ObjectInfo) -> dict[str, str]:
    """A kept record's headers: the version's own time and meta sequence."""
    assert info.sequence is not None and info.mtime is not None
    return {VERSION_TIME: info.mtime.isoformat(), VERSION_SEQUENCE: str(info.sequence)}


async def is_kept(stream: BucketStream, info: ObjectInfo) -> bool:
    """Whether ``info`` has a kept record (a suspended bucket purges only what has none)."""
    return keepable(info) and await _kept_message(stream, info.name, info.nuid) is not None


def delete_marker(current: ObjectInfo, version_id: str | None = None) -> ObjectInfo:
    """The tombstone a versioned delete leaves: a version of its own (a new id, or
    ``version_id``: a restore keeps the marker's), with no chunks, which ADR-20 clients read
    as the name deleted."""
    return current.evolve(
        nuid=version_id or next_nuid(),
        deleted=True,
        size=0,
        chunks=0,
        digest="",
        description="",
        metadata={},
        headers={DELETE_MARKER_HEADER: ["true"]},
        tiering=None,
    )


def _parse_kept(bucket: str, subject: str, data: bytes, headers: Any) -> ObjectInfo:
    """A kept record read back; BadObjectMeta when it is not one (untrusted input)."""
    tokens = subject.split(".")
    token, version_id = tokens[-2], tokens[-1]
    name = decoded(token)
    if name is None:
        raise BadObjectMeta(f"kept record on {subject} names no object", bucket=bucket)
    when, sequence = _header(headers, VERSION_TIME), _header(headers, VERSION_SEQUENCE)
    try:
        mtime = datetime.fromisoformat(when) if when else None
        seq = int(sequence) if sequence else None
    except ValueError:
        raise BadObjectMeta(
            f"kept record on {subject} has an unreadable time or sequence", bucket=bucket
        ) from None
    info = ObjectInfo.from_json(
        data, mtime=mtime, sequence=seq, bucket=bucket, name=name, token=token
    )
    if info.nuid != version_id:
        raise BadObjectMeta(
            f"kept record on {subject} is of version {info.nuid!r}", bucket=bucket, name=name
        )
    return info


def _header(headers: Any, name: str) -> str | None:
    if isinstance(headers, bytes):
        return raw_header(headers, name.encode())
    return headers.get(name) if headers else None


async def _kept_message(stream: BucketStream, name: str, version_id: str) -> LastMsg | None:
    """The kept record's message of ``version_id`` of ``name``: None when there is none, or
    only the marker of the version's removal."""
    found = await stream.last(version_subject(stream.bucket, name, version_id), name=name)
    return None if found is None or is_removal(found.headers) else found


async def read_kept(stream: BucketStream, name: str, version_id: str) -> ObjectInfo | None:
    """The kept record of ``version_id`` of ``name``, or None when there is none."""
    found = await _kept_message(stream, name, version_id)
    if found is None:
        return None
    subject = version_subject(stream.bucket, name, version_id)
    return _parse_kept(stream.bucket, subject, found.data, found.headers)


@dataclass(frozen=True)
class KeptVersion:
    """A kept version's record as a change feed asked for them reads it (the archive's, which
    must copy a version replaced before it saw its meta record): ``info`` is the version as it
    was, with its own meta sequence and time, ``sequence`` the stream sequence of the record,
    where the feed resumes after it."""

    info: ObjectInfo
    sequence: int


def kept_version(bucket: str, msg: StreamMsg) -> KeptVersion | None:
    """The kept version a feed's message on a version subject is; None for a removal's marker
    or an unreadable record (warned about)."""
    info = _kept_from(bucket, msg)
    return None if info is None else KeptVersion(info, msg.sequence)


def _kept_from(bucket: str, msg: StreamMsg) -> ObjectInfo | None:
    """The kept record a message is; None for a removal's marker, or for one that is
    unreadable (warned about)."""
    if is_removal(msg.headers):
        return None
    try:
        return _parse_kept(bucket, msg.subject, msg.data, msg.headers)
    except BadObjectMeta as exc:
        log.warning("bucket %r: a kept version is unreadable, left out: %s", bucket, exc)
        return None


async def kept_records(
    stream: BucketStream, name_filter: NameFilter | None = None, *, name: str | None = None
) -> list[ObjectInfo]:
    """Every kept record whose name the filter takes (or of ``name`` alone); unreadable ones
    are warned about and left out."""
    bucket = stream.bucket
    subject = all_versions_subject(bucket) if name is None else version_subject(bucket, name, "*")
    consumer = stream.consumer(subject, batch=READ_BATCH, pulls_ahead=2)
    found: list[ObjectInfo] = []
    try:
        pending = await consumer.start()
        while pending:
            msg = await consumer.next()
            if msg is None:
                break
            info = _kept_from(bucket, msg)
            if info is not None and (name_filter is None or name_filter.matches(info.name)):
                found.append(info)
            if msg.pending == 0:
                break
    finally:
        await consumer.close()
    return found


async def chunk_tokens(stream: BucketStream) -> set[str]:
    """The nuids whose chunk subjects hold messages (one page of the stream's subject state
    per request): a kept version whose nuid is not among them was purged by another client."""
    prefix = chunk_subject(stream.bucket, "")
    tokens: set[str] = set()
    offset = 0
    while True:
        info = await stream.info(subjects_filter=prefix + "*", offset=offset)
        subjects = info.state.subjects
        tokens.update(subject[len(prefix) :] for subject in subjects)
        offset += len(subjects)
        if not subjects or offset >= info.state.subjects_total:
            return tokens


async def listed(stream: BucketStream, name_filter: NameFilter) -> list[ObjectVersion]:
    """Every version of the names the filter takes: by name, newest first (S3's order)."""
    current: dict[str, ObjectInfo] = {}
    async for batch in iter_batches(
        stream, prefix=name_filter.prefix, glob=name_filter.glob, include_deleted=True
    ):
        for info in batch:
            if name_filter.matches(info.name):
                current[info.name] = info
    kept = await kept_records(stream, name_filter)
    present = await chunk_tokens(stream) if kept else set()
    by_name: dict[str, list[ObjectVersion]] = {}
    for name, info in current.items():
        if keepable(info) or not info.deleted:
            by_name.setdefault(name, []).append(ObjectVersion(info, is_latest=True))
    for info in kept:
        latest = current.get(info.name)
        if latest is not None and latest.nuid == info.nuid:
            continue  # kept already while it is still the current one
        lost = bool(info.chunks) and not info.offloaded and info.nuid not in present
        by_name.setdefault(info.name, []).append(ObjectVersion(info, is_latest=False, lost=lost))
    return [
        version
        for name in sorted(by_name)
        for version in sorted(
            by_name[name], key=lambda v: (v.is_latest, v.info.sequence or 0), reverse=True
        )
    ]


async def readable(stream: BucketStream, info: ObjectInfo) -> ObjectInfo:
    """``info``, a kept version about to be read, unless another client purged its chunks:
    then ObjectNotFound saying so (its bytes are gone, and no other bytes are served)."""
    if info.chunks and not info.offloaded and not await _has_chunks(stream, info.nuid):
        raise ObjectNotFound(
            f"version {info.nuid} is lost: its chunks were purged (an ADR-20 client's"
            " overwrite or delete purges the version it replaces)",
            bucket=stream.bucket,
            name=info.name,
        )
    return info


async def _has_chunks(stream: BucketStream, nuid: str) -> bool:
    """Whether a chunk subject holds messages (its subject state: no chunk is sent)."""
    info = await stream.info(subjects_filter=chunk_subject(stream.bucket, nuid))
    return info.state.subjects_total > 0


async def remove(stream: BucketStream, version: ObjectInfo) -> None:
    """Remove ``version`` for good: its chunks, then its record, which a removal marker
    replaces (the change feed's one report of the removal; a crash between the two leaves
    the record, listed lost, for the removal to be asked again). When it is the current one,
    the newest kept version before it becomes current again (its record republished as the
    name's meta record, over exactly the version read), or, with none left, the name is
    deleted as an unversioned delete leaves it. Concurrent removals of one name's versions
    (S3 clients empty a bucket from many threads) each look again after their writes: a
    version promoted by one while another removed it is promoted past, so the name never
    ends on a removed version."""
    bucket, name = stream.bucket, version.name
    purged = False
    for attempt in CONFLICT.tries():
        if attempt:
            await CONFLICT.pause(attempt)
        current = await records.current(stream, name)
        moved_first = (
            current is not None
            and _names(current, version)
            and not await _promote_past(stream, current)
        )
        if moved_first:
            continue  # another writer moved the name first: look again
        if not purged:
            if version.chunks and not version.deleted:
                await stream.purge(chunk_subject(bucket, version.nuid))
            await _mark_removed(stream, name, version.nuid)
            purged = True
        if not _names(await records.current(stream, name), version):
            return
    raise NatsObjError(
        f"version {version.nuid}: too many concurrent writers to move the name off it",
        bucket=bucket,
        name=name,
    )


async def _mark_removed(stream: BucketStream, name: str, version_id: str) -> None:
    """Replace the version's record with the marker of its removal, unless a removal that
    raced this one left it already: the feed reports a removal once."""
    subject = version_subject(stream.bucket, name, version_id)
    found = await stream.last(subject, name=name)
    if found is not None and is_removal(found.headers):
        return
    with contextlib.suppress(SequenceConflict):  # a racing removal marked it first
        await stream.publish_rollup(
            subject,
            b"",
            name=name,
            expected_sequence=found.sequence if found is not None else 0,
            headers={VERSION_REMOVED: "true"},
        )


def _names(current: ObjectInfo | None, version: ObjectInfo) -> bool:
    """Whether the name's record is ``version`` (not the plain tombstone a removal of its last
    version leaves, which keeps its nuid but is no version)."""
    return current is not None and current.nuid == version.nuid and keepable(current)


async def _promote_past(stream: BucketStream, current: ObjectInfo) -> bool:
    """Make the newest kept version other than ``current`` the name's record (a plain
    tombstone when none is left), over exactly ``current``; False when another writer got
    there first. A version removed while it was being promoted is promoted past in turn."""
    while True:
        kept = [
            info
            for info in await kept_records(stream, name=current.name)
            if info.nuid != current.nuid
        ]
        if kept:
            restored = max(kept, key=lambda info: info.sequence or 0)
        else:
            restored = current.evolve(deleted=True, size=0, chunks=0, digest="", headers={})
        try:
            sequence = await publish_record(stream, restored, expected_sequence=current.sequence)
        except SequenceConflict:
            return False
        if not kept or await _kept_message(stream, current.name, restored.nuid) is not None:
            return True
        current = restored.evolve()
        current.sequence = sequence


async def offload_kept(stream: BucketStream, info: ObjectInfo, offload: Offload) -> ObjectInfo:
    """Restate the kept version ``info`` with its bytes at ``offload`` (the archive's tiering
    of a noncurrent version): its record is replaced over exactly the one read (a per-subject
    rollup, so it stays one record) and its chunks purged. ObjectChanged when the record
    changed or went meanwhile. A version made current again meanwhile keeps its chunks: the
    name's record, copied from the kept one before, still names them."""
    subject = version_subject(stream.bucket, info.name, info.nuid)
    found = await _kept_message(stream, info.name, info.nuid)
    try:
        read = _parse_kept(stream.bucket, subject, found.data, found.headers) if found else None
    except BadObjectMeta:
        read = None
    if found is None or read is None or read.digest != info.digest or read.offloaded:
        raise ObjectChanged(
            f"version {info.nuid} changed while being offloaded; left as it is",
            bucket=stream.bucket,
            name=info.name,
        )
    tiering = Tiering(replaces=read.stands_for, offload=offload)
    record = read.evolve(tiering=tiering)
    try:
        await stream.publish_rollup(
            subject,
            record.encode(),
            name=info.name,
            expected_sequence=found.sequence,
            headers=_kept_headers(read),
        )
    except SequenceConflict:
        raise ObjectChanged(
            f"version {info.nuid} changed while being offloaded; left as it is",
            bucket=stream.bucket,
            name=info.name,
        ) from None
    current = await records.current(stream, info.name)
    if current is None or current.nuid != info.nuid:
        await stream.purge(chunk_subject(stream.bucket, info.nuid))
    return record


__all__ = [
    "KeptVersion",
    "chunk_tokens",
    "delete_marker",
    "is_kept",
    "keep",
    "keepable",
    "kept_records",
    "kept_version",
    "listed",
    "offload_kept",
    "read_kept",
    "readable",
    "remove",
]
