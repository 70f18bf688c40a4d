"""Keeping a bucket's local name index (``natsobj.local.name_index``) exact by the stream sequence.

Before every indexed listing, one plain ``STREAM.INFO`` gives ``state.last_seq``; the meta
messages after the index's ``complete_seq`` are read with an ordered consumer on
``$O.<bucket>.M.>`` (the name is in the subject; the record is kept beside it), so the cost
is the number of changes, not of names. A new index, or one whose every known message was
purged (``first_seq`` past ``complete_seq``), is rebuilt from the paged subject state
instead (the O(names) path), by the listing that finds it so, from the same pages it lists; a
listing of a whole single-replica bucket, which needs every record too, rebuilds it with the
catch-up from the start instead (``rebuild_with_records``).

On replicated streams the consumer may live on a replica that is behind the leader; the
catch-up is complete only once it has reached the leader's last meta message, which is asked
for after ``last_seq`` was taken, so the index never claims more than it has read.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator

from natsobj.aio.jetstream.jsapi import raw_header
from natsobj.aio.stream import BucketStream
from natsobj.lifecycle import expires_at, record_to_keep
from natsobj.local.name_index import (
    IndexRow,
    NameIndex,
    NameIndexUnavailable,
    StreamIdentity,
    cache_dir,
    index_enabled,
    remove_other_incarnations,
)
from natsobj.model import StreamInfo
from natsobj.names import all_meta_subject
from natsobj.settings import ConnectionSettings
from natsobj.wire import MSG_TTL

log = logging.getLogger(__name__)
_MSG_TTL = MSG_TTL.encode()

# The server walks every subject of the bucket for each page of names: seconds per page at a
# million objects on a busy machine, so a page gets far longer than an ordinary API call.
PAGE_TIMEOUT = 60.0
PAST_EVERY_SUBJECT = 2**31 - 1  # a subject-state offset that returns the count and no names
CATCH_UP_BATCH = 1024  # meta messages per pull while catching up
WRITE_EVERY = 10_000  # tokens per SQLite transaction while catching up

_warned: set[str] = set()


def open_index(store: BucketStream, stream_info: StreamInfo) -> NameIndex | None:
    """The bucket's index, or None when disabled or unusable here (said once per reason)."""
    settings = store.settings
    if not index_enabled(settings.name_index):
        return None
    identity = stream_identity(settings, store.api.prefix, store.stream, stream_info.created)
    try:
        return NameIndex.open(cache_dir(settings.cache_dir), identity)
    except NameIndexUnavailable as exc:
        warn_once(f"no local name index, listing from the server's subject state ({exc})")
        return None


def stream_identity(
    settings: ConnectionSettings, api_prefix: str, stream: str, created: str = ""
) -> StreamIdentity:
    return StreamIdentity(
        servers=tuple(settings.servers),
        api_prefix=api_prefix,
        user=settings.user or "",
        stream=stream,
        created=created,
    )


def forget_stream(settings: ConnectionSettings, api_prefix: str, stream: str) -> None:
    """Remove this machine's index files of a deleted bucket: up to a few hundred bytes per
    name that nothing would read again (a re-created bucket starts a file of its own)."""
    if not index_enabled(settings.name_index):
        return
    identity = stream_identity(settings, api_prefix, stream)
    try:
        remove_other_incarnations(cache_dir(settings.cache_dir), identity, keep_current=False)
    except OSError as exc:
        log.info("stream %s: name index files not removed: %s", stream, exc)


def warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning("natsobj: %s", message)


async def name_page(store: BucketStream, offset: int) -> StreamInfo:
    """One page of the bucket's meta subjects (``STREAM.INFO`` with ``subjects_filter``)."""
    return await store.info(
        subjects_filter=all_meta_subject(store.bucket),
        offset=offset,
        timeout=max(PAGE_TIMEOUT, store.api.timeout),
    )


def rebuild_needed(index: NameIndex, info: StreamInfo) -> bool:
    """A new index, or one whose every known message is gone (``first_seq`` past
    ``complete_seq``: a purge, or every object rewritten since): its names may all be dead,
    and a catch-up would read as many messages as a rebuild."""
    complete_seq, _ = index.progress()
    return complete_seq == 0 or info.state.first_sequence > complete_seq


def start_rebuild(index: NameIndex) -> int:
    """The generation a rebuild records its progress under; an index that knew something is
    emptied first (what vanished from it is unknowable). A new index is the moment to remove
    the local files of the bucket's earlier incarnations."""
    complete_seq, generation = index.progress()
    if complete_seq:
        return index.restart()
    try:
        remove_other_incarnations(index.path.parent.parent, index.identity)
    except OSError as exc:
        log.info("name index files of earlier buckets not removed: %s", exc)
    return generation


async def rebuild(
    store: BucketStream, index: NameIndex, generation: int
) -> AsyncIterator[list[str]]:
    """Every meta subject from the paged subject state, page by page, each written to the
    index before it is handed on, so the first listing reads meta records while the names are
    still being walked. Complete up to the first page's ``last_seq`` (the subjects of a page
    are at least as new as the state it reports) once the walk ends; a walk stopped early
    records nothing, and the next listing starts again. A SQLite error stops the writing, not
    the walk."""
    first = await name_page(store, 0)
    complete_seq = first.state.last_sequence
    skip = len(all_meta_subject(store.bucket)) - 1
    writing = True
    async for subjects in name_pages(store, first):
        if writing:
            writing = await _write(index, [(subject[skip:], 0, None, None) for subject in subjects])
        yield subjects
    if writing and await _write(index, [], complete_seq=complete_seq, generation=generation):
        log.info("bucket %r: name index rebuilt up to sequence %d", store.bucket, complete_seq)


async def rebuild_with_records(
    store: BucketStream, index: NameIndex, info: StreamInfo, generation: int
) -> None:
    """Rebuild ``index`` by reading every meta message of the bucket, names with their
    records, up to ``info``'s ``last_seq``: the catch-up from the start. Each meta subject
    holds one message (records are rolled up), so this reads one per name, as a consumer scan
    of the last record per subject would."""
    last_seq = info.state.last_sequence
    await _catch_up(store, index, 0, last_seq, generation)
    log.info("bucket %r: name index rebuilt with records up to sequence %d", store.bucket, last_seq)


async def _write(index: NameIndex, rows: list[IndexRow], **progress: int) -> bool:
    try:
        await asyncio.to_thread(index.add, rows, **progress)
    except sqlite3.Error as exc:
        warn_once(f"name index not written, listing without it ({exc})")
        return False
    return True


async def names_complete(store: BucketStream, index: NameIndex, info: StreamInfo) -> bool:
    """Whether the index, caught up to ``info``'s ``last_seq``, holds exactly the bucket's
    meta subjects, so its meta records can stand in for the server's.

    It holds every live one already (a superset, see ``natsobj.local.name_index``); what it cannot
    know is a subject removed without a message (a purge, as a rename by the Go client does;
    an expiry). So the server counts the meta subjects (``STREAM.INFO`` with the filter and an
    offset past them all: the count, no names), and a second plain ``STREAM.INFO`` shows that
    nothing was written in between: sequences only grow, so with the same ``last_seq`` the
    count is of the same subjects the index was caught up to, and equal counts mean equal
    sets. The server walks every subject of the bucket for the count, so listings ask only
    when they would otherwise fetch a large share of the bucket."""
    counted = await name_page(store, PAST_EVERY_SUBJECT)
    after = await store.info()
    if after.state.last_sequence != info.state.last_sequence:
        return False
    return counted.state.subjects_total == await asyncio.to_thread(index.count)


async def catch_up(store: BucketStream, index: NameIndex, info: StreamInfo) -> None:
    """Bring ``index`` up to ``info``'s ``last_seq`` by the meta messages written since
    (raises sqlite3.Error for the caller to fall back on)."""
    last_seq = info.state.last_sequence
    complete_seq, generation = index.progress()
    if last_seq > complete_seq:
        await _catch_up(store, index, complete_seq, last_seq, generation)


async def name_pages(
    store: BucketStream, page: StreamInfo, *, stop_after: str | None = None
) -> AsyncIterator[list[str]]:
    """Meta subjects page by page, starting from ``page`` (offset 0); the next page is asked
    for before this one is handed on, so the server walks its subjects while we work.

    Pages are recomputed per request, so writes between two requests shift the offsets: a
    subject is taken only if it sorts after the last one taken (no duplicates), and when
    ``total`` shrank the next request steps back by as much. Pages are sorted, so the walk
    ends after the first page past every subject starting with ``stop_after``."""
    last_subject = ""
    offset = 0  # where ``page`` starts
    total = page.state.subjects_total
    upcoming: asyncio.Future[StreamInfo] | None = None
    try:
        while True:
            subjects = list(page.state.subjects)
            if not subjects:
                return
            offset += len(subjects)
            last = subjects[-1]
            past = stop_after is not None and last > stop_after and not last.startswith(stop_after)
            if offset < total and not past:
                upcoming = asyncio.ensure_future(name_page(store, offset))
            fresh = [s for s in subjects if s > last_subject]
            last_subject = max(last_subject, subjects[-1])
            del page, subjects  # hold one page of names at a time
            if fresh:
                yield fresh
            if upcoming is None:
                return
            page, upcoming = await upcoming, None
            latest = page.state.subjects_total
            if latest < total:
                offset = max(0, offset - (total - latest))
                page = await name_page(store, offset)
            total = latest
    finally:
        if upcoming is not None:
            upcoming.cancel()


async def _catch_up(
    store: BucketStream, index: NameIndex, complete_seq: int, last_seq: int, generation: int
) -> None:
    """Read the meta messages after ``complete_seq`` into the index, up to ``last_seq``."""
    floor = 0
    if store.replicas > 1:
        leader_last = await store.leader_last(all_meta_subject(store.bucket))
        floor = leader_last.sequence if leader_last else 0
    reached = complete_seq

    async def read() -> int:
        nonlocal reached
        reached = await _read_meta_after(store, index, reached, generation)
        return reached

    await store.until_caught_up(
        read, lambda reached: reached >= floor, what="the name index catch-up", floor=floor
    )
    await asyncio.to_thread(
        index.add, [], complete_seq=max(last_seq, reached), generation=generation
    )


async def _read_meta_after(
    store: BucketStream, index: NameIndex, after: int, generation: int
) -> int:
    """Every meta message after ``after`` that the consumer's replica holds; returns the
    sequence the index is now complete up to (the last message read, in stream order)."""
    consumer = store.consumer(
        all_meta_subject(store.bucket),
        deliver_policy="by_start_sequence",
        start_sequence=after + 1,
        batch=CATCH_UP_BATCH,
        pulls_ahead=2,  # it reads to the end: the next batch is asked for during this one
    )
    skip = len(all_meta_subject(store.bucket)) - 1
    tokens: list[IndexRow] = []
    reached = after
    try:
        pending = await consumer.start()
        while pending:
            msg = await consumer.next()
            if msg is None:
                break
            # every record is kept with its expiry (or none), whatever the record says
            ttl = raw_header(msg.headers, _MSG_TTL) if msg.headers else None
            data = record_to_keep(msg.data, expires_at(msg.time, ttl, subject=msg.subject))
            tokens.append((msg.subject[skip:], msg.sequence, msg.nanos // 1000, data))
            if len(tokens) >= WRITE_EVERY or msg.pending == 0:
                reached = msg.sequence
                await asyncio.to_thread(
                    index.add, tokens, complete_seq=reached, generation=generation
                )
                tokens = []
            if msg.pending == 0:
                break
    finally:
        await consumer.close()
    return reached
