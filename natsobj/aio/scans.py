"""Scans of a bucket's meta records in one pass, and the change batches sensors poll.

A scan reads the meta subjects through an ordered consumer, which may live on a replica that
is behind; with strong reads a scan that ends before the leader's last meta record is read
again (``BucketStream.until_caught_up``). Compaction (``natsobj.aio.compaction``) scans every
name's last record; ``changes`` scans the records after a sequence, and, asked for version
events (``natsobj.version_events``), the version subjects beside them, in stream order.
"""

from __future__ import annotations

from typing import Any, TypeVar

from natsobj.aio.jetstream.consumer import StreamMsg
from natsobj.aio.restate_proof import proven
from natsobj.aio.stream import BucketStream
from natsobj.aio.version_feed import feed_subjects, is_meta, reported_event
from natsobj.aio.watch import info_from_msg
from natsobj.cursors import ChangeCursor
from natsobj.names import all_meta_subject
from natsobj.version_events import Change

CONSUMER_BATCH = 1024  # the most messages a scan's consumer asks for at once

Scan = tuple[list[StreamMsg], int]
"""The messages read and the last stream sequence the consumer saw."""


C = TypeVar("C", bound=Change)


class Changes(list[C]):
    """A batch of changes (``ObjectInfo`` records, and version events when asked for); resume
    after ``last_sequence``, which counts skipped ones too, or from ``cursor`` when the batch
    was asked for with a ``ChangeCursor``."""

    last_sequence: int = 0
    cursor: ChangeCursor | None = None


async def scan_meta(
    stream: BucketStream,
    *,
    deliver_policy: str,
    start: int | None,
    limit: int,
    subjects: tuple[str, ...] | None = None,
) -> Scan:
    """Read at most ``limit`` meta records (or messages on ``subjects``) with
    ``deliver_policy`` from ``start``; with strong reads, a scan that ends before the leader's
    last message there (and before ``limit``) came from a replica that is behind and is read
    again."""
    subjects = subjects or (all_meta_subject(stream.bucket),)
    floor = max([await stream.leader_floor(subject) for subject in subjects])

    def complete(scan: Scan) -> bool:
        messages, last_sequence = scan
        # a scan that starts after the floor has nothing to miss
        return max(last_sequence, (start or 1) - 1) >= floor or len(messages) >= limit

    return await stream.until_caught_up(
        lambda: _scan_once(
            stream, subjects, deliver_policy=deliver_policy, start=start, limit=limit
        ),
        complete,
        what="the meta records",
        floor=floor,
    )


async def _scan_once(
    stream: BucketStream,
    subjects: tuple[str, ...],
    *,
    deliver_policy: str,
    start: int | None,
    limit: int,
) -> Scan:
    consumer = stream.consumer(
        subjects,
        deliver_policy=deliver_policy,
        start_sequence=start,
        batch=min(max(limit, 1), CONSUMER_BATCH),
    )
    messages: list[StreamMsg] = []
    try:
        pending = await consumer.start()
        while pending and len(messages) < limit:
            msg = await consumer.next()
            if msg is None:
                break
            messages.append(msg)
            if msg.pending == 0:
                break
    finally:
        await consumer.close()
    return messages, consumer.last_sequence


async def changes(
    stream: BucketStream,
    after_sequence: int | ChangeCursor,
    *,
    limit: int,
    include_deletes: bool,
    include_version_events: bool = False,
) -> Changes[Any]:
    """``ObjectStore.changes`` (its docstring says what a batch holds)."""
    cursor, since = (
        (after_sequence, after_sequence.sequence)
        if isinstance(after_sequence, ChangeCursor)
        else (None, after_sequence)
    )
    messages, last = await scan_meta(
        stream,
        deliver_policy="by_start_sequence",
        start=since + 1,
        limit=limit,
        subjects=feed_subjects(stream.bucket, include_version_events=include_version_events),
    )
    result: Changes[Change] = Changes()
    reported: dict[int | None, int] = {}  # sequence -> place in the result
    for msg in messages:
        if not is_meta(stream.bucket, msg):
            event = reported_event(stream.bucket, msg, include_deletes=include_deletes)
            if event is not None:
                result.append(event)
            continue
        info = info_from_msg(stream, msg)
        if info is None or (info.deleted and not include_deletes):
            continue
        if info.stands_for is not None:
            info = await proven(stream, info)
            if info.stands_for is not None:
                # restates a version the caller saw before, or that this batch reports:
                # then it takes that version's place, saying where its bytes are now
                if (place := reported.get(info.stands_for)) is not None:
                    result[place] = info
                continue
        reported[info.sequence] = len(result)
        result.append(info)
    result.last_sequence = max(last, since)
    if cursor is not None:
        # Read after the scan: a stream that is still the cursor's now is the one scanned.
        pinned = cursor.check(await stream.status())
        result.cursor = ChangeCursor(result.last_sequence, pinned.stream_created)
    return result
