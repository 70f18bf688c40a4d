"""Compaction: purge the chunk subjects no meta record names (left by interrupted puts)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from natsobj.aio.jetstream.jsapi import raw_header
from natsobj.aio.scans import scan_meta
from natsobj.aio.stream import BucketStream
from natsobj.errors import BadObjectMeta
from natsobj.hints import Hint, Operation
from natsobj.local.name_index import decoded
from natsobj.model import ObjectInfo
from natsobj.names import (
    all_chunks_subject,
    chunk_subject,
    is_lock_subject,
    is_version_subject,
)
from natsobj.record_fields import trusted_nuid
from natsobj.wire import MARKER_REASON

_MARKER_REASON = MARKER_REASON.encode()


@dataclass
class CompactResult:
    purged_subjects: list[str] = field(default_factory=list)
    purged_messages: int = 0
    reclaimed_bytes: int = 0
    skipped_recent: int = 0


async def compact(stream: BucketStream, *, min_age: float) -> CompactResult:
    """``ObjectStore.compact`` (its docstring says what is kept)."""
    before = await stream.info(subjects_filter=all_chunks_subject(stream.bucket))
    # kept versions' records are under the chunk subjects too, never chunks of their own, and
    # name their version's chunks by their subject's last token, whatever the record says
    records = {s for s in before.state.subjects if is_version_subject(stream.bucket, s)}
    locks = {s for s in before.state.subjects if is_lock_subject(stream.bucket, s)}
    chunk_subjects = set(before.state.subjects) - records - locks
    referenced = await _referenced_chunks(stream)
    referenced.update(chunk_subject(stream.bucket, s.rsplit(".", 1)[-1]) for s in records)
    result = CompactResult()
    now = time.time()
    for subject in sorted(chunk_subjects - referenced):
        last = await stream.last(subject)
        if last is None:
            continue
        if now - last.time.timestamp() < min_age:
            result.skipped_recent += 1
            continue
        result.purged_messages += await stream.purge(subject)
        result.purged_subjects.append(subject)
    after = await stream.info()
    result.reclaimed_bytes = max(0, before.state.bytes - after.state.bytes)
    return result


async def _referenced_chunks(stream: BucketStream) -> set[str]:
    """The chunk subject every current meta record names, read raw rather than through a
    listing, which skips records that fail validation: their chunks are data too. A
    record whose nuid cannot be told (not JSON, or no single subject token) refuses the
    compaction: guessing could purge the chunks of an object that is still there."""
    bucket = stream.bucket
    messages, _ = await scan_meta(
        stream, deliver_policy="last_per_subject", start=None, limit=sys.maxsize
    )
    referenced = set()
    for msg in messages:
        if msg.headers and raw_header(msg.headers, _MARKER_REASON) is not None:
            continue  # an expiry's delete marker: no chunks
        try:
            info = ObjectInfo.from_json(msg.data, bucket=bucket)
            nuid: str | None = "" if info.deleted else info.nuid  # a tombstone's are garbage
        except BadObjectMeta:
            nuid = trusted_nuid(msg.data)
        if nuid is None:
            token = msg.subject.rsplit(".", 1)[-1]
            raise BadObjectMeta(
                f"the meta record at sequence {msg.sequence} has no readable nuid, so the"
                " chunks it names are unknown; compaction refused",
                bucket=bucket,
                name=decoded(token) or token,
                hint=Hint(
                    "Delete that object ({}) or rewrite it, then compact again.",
                    Operation("delete", ("name",)),
                ),
            )
        if nuid:
            referenced.add(chunk_subject(bucket, nuid))
    return referenced
