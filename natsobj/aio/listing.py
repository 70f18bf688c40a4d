"""Listing a bucket by name, reading only the meta records it needs.

A consumer scan of every meta record costs the whole bucket, even for a 500-object
"directory". Each meta subject is the base64 of a name, so a listing is three steps:

1. **Names.** From the local name index (``natsobj.local.name_index``, kept up to the stream's last
   sequence by ``natsobj.aio.name_sync``): a range query on the literal prefix, O(matches).
   Without it (turned off, or its directory unusable), from the stream's subject state:
   ``STREAM.INFO`` with ``subjects_filter: $O.<bucket>.M.>``, paged by ``offset``;
   nats-server sends at most 100,000 sorted subjects per reply, walking all of them for each.
2. **Filter on the client.** Subject wildcards only match whole tokens, so the server cannot
   narrow base64-encoded names by a prefix. Names are filtered here, by prefix and by the
   path-aware glob of :class:`natsobj.matching.NameMatcher`. On the paged path, the base64 of
   a prefix's first 3k bytes is a literal prefix of every matching subject, which skips
   decoding the rest and, since pages are sorted, ends the walk once past that range.
3. **Meta records of the matches only**, through batched direct gets (ADR-31): ``multi_last``
   with up to 1,024 subjects per request (nats-server refuses more with 413), answered by a
   stream of messages that ends with a ``204 EOB`` status. A few requests are kept in flight.
   The index may hold names whose subject is gone (a purge): the get does not return them.

With the name index, a listing that would fetch a large share of a single-replica bucket
(``CACHED_SHARE``, at least ``CACHED_MIN`` names) first proves that the index holds exactly
the bucket's meta subjects (``name_sync.names_complete``), then takes the meta records the
index kept (from its catch-up and from earlier listings' gets) instead of fetching them: a
kept record costs no message, and a large listing's time goes per message
(docs/performance.md). Records it does not have are fetched as above, and what any listing
fetches is kept for the next one.

Where the server or a permission set does not allow this (stream without ``allow_direct``,
``STREAM.INFO`` or ``DIRECT.GET`` denied, a server without batched direct gets), the listing
falls back to a consumer scan of the last meta record per subject, filtered the same way, so
the result is the same, only slower. The choice is made before anything is yielded.

The listing streams: at most one page (or index fetch) of names and a few batches of
``ObjectInfo`` are held at once, so a million-object listing stays within a small, fixed memory.

**In name order, a page at a time** (``open_ordered``): the index is a B-tree on the names,
so it gives the names after any marker in order, and a page of a listing (S3's ListObjects, a
paged ``ls``) reads only its own names and their meta records, not every record under the
prefix. Where the index cannot be used, or must be rebuilt first, ``open_ordered`` answers
None and the caller lists as above (and sorts).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import itertools
import logging
import re
import sqlite3
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any

import orjson

from natsobj.aio import name_sync
from natsobj.aio.jetstream.directbatch import (
    BatchedGetFailed,
    BatchStalled,
    DirectBatches,
    RawMsg,
    TooManySubjects,
)
from natsobj.aio.jetstream.jsapi import raw_header
from natsobj.aio.restate_proof import proven_batch
from natsobj.aio.stream import BucketStream
from natsobj.aio.watch import info_from_msg
from natsobj.errors import NatsObjError, PermissionDenied, ReplicaLagging
from natsobj.lifecycle import expires_at, kept_expires, record_to_keep
from natsobj.local.name_index import Entry, IndexRow, NameIndex
from natsobj.matching import NameMatcher
from natsobj.model import MAX_RECORD_BYTES, ObjectInfo, StreamInfo, parse_server_time
from natsobj.names import all_meta_subject, decode_name
from natsobj.wire import MARKER_REASON, MSG_TTL, NATS_SEQUENCE, NATS_SUBJECT, NATS_TIME_STAMP

log = logging.getLogger(__name__)
_MARKER_REASON = MARKER_REASON.encode()
_MSG_TTL = MSG_TTL.encode()
_NATS_SUBJECT = NATS_SUBJECT.encode()
_NATS_SEQUENCE = NATS_SEQUENCE.encode()
_NATS_TIME_STAMP = NATS_TIME_STAMP.encode()

MULTI_LAST_LIMIT = 1024  # subjects per batched direct get; nats-server answers 413 above it
IN_FLIGHT = 4  # batched direct gets outstanding at once: enough to hide the round trip
SCAN_BATCH = 1024  # infos per batch in the consumer-scan fallback
CACHED_MIN = 2048  # matches below this are fetched: proving the index costs the whole bucket
CACHED_SHARE = 8  # ... and so do matches below 1/CACHED_SHARE of the bucket's names
HELD_WHILE_PROVING = 16  # index batches parsed ahead while the proof is out
LEARN_EVERY = 8192  # fetched meta records held for one write to the index (~3 MB)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


@dataclass
class _Ready:
    """Objects a listing took from the index: nothing to fetch."""

    infos: list[ObjectInfo]


@dataclass(frozen=True)
class NameFilter:
    """Which names a listing wants: all of ``prefix`` (a plain string prefix) and ``glob``."""

    prefix: str = ""
    glob: str | None = None

    @cached_property
    def _matcher(self) -> NameMatcher | None:
        return NameMatcher(self.glob, "glob") if self.glob else None

    def matches(self, name: str) -> bool:
        matcher = self._matcher
        return name.startswith(self.prefix) and (matcher is None or matcher.matches(name))

    @property
    def literal_prefix(self) -> str:
        """The longest prefix every match has: ``prefix`` or the glob's literal part."""
        matcher = self._matcher
        glob_prefix = matcher.literal_prefix if matcher else ""
        return glob_prefix if glob_prefix.startswith(self.prefix) else self.prefix

    def subject_token_prefix(self) -> str:
        """A prefix of the meta subject token that every match has: the base64 of the literal
        prefix's first 3k bytes (base64 turns each 3 bytes into 4 characters on its own)."""
        raw = self.literal_prefix.encode("utf-8")
        return base64.urlsafe_b64encode(raw[: len(raw) // 3 * 3]).decode("ascii")


def make_filter(prefix: str | None, glob: str | None) -> NameFilter:
    """Validate once, up front, so a bad glob fails before any request is sent."""
    name_filter = NameFilter(prefix or "", glob or None)
    try:
        name_filter.matches("")  # compiles the glob
    except re.error as exc:
        raise ValueError(f"invalid glob {glob!r}: {exc}") from None
    return name_filter


class FastListingUnavailable(Exception):
    """The server or the permissions do not allow subject-state listing; use the scan."""


async def iter_batches(
    store: BucketStream,
    *,
    prefix: str | None = None,
    glob: str | None = None,
    include_deleted: bool = False,
) -> AsyncGenerator[list[ObjectInfo]]:
    """Current objects matching ``prefix`` and ``glob``, in batches (no batch is empty).

    Order is the server's subject order (the base64 of the names), not name order; callers
    that need an order sort what they collect. On replicated stores with strong reads the
    direct gets are pinned to the ``state.last_seq`` the leader reported in ``STREAM.INFO``
    (``up_to_seq``, see ``BucketStream.read_floor``): a replica that is behind answers 404 and
    is asked again, so the listing reflects every write that returned before it started."""
    name_filter = make_filter(prefix, glob)
    listing = _SubjectStateListing(store, name_filter, include_deleted)
    try:
        first = await listing.first_batch()
    except FastListingUnavailable as reason:
        await listing.close()
        log.info("bucket %r: listing by consumer scan (%s)", store.bucket, reason)
        fallback = True
    except BaseException:
        await listing.close()
        raise
    else:
        fallback = False
    if fallback:
        async for batch in _scan_batches(store, name_filter, include_deleted):
            yield await proven_batch(store, batch)
        return
    try:
        if first:
            yield await proven_batch(store, first)
        async for batch in listing.rest():
            yield await proven_batch(store, batch)
    finally:
        await listing.close()


class OrderedListing:
    """Current objects under a prefix in name order, a batch at a time from any lower bound
    (``open_ordered``). The index is caught up to the stream once, when opened; every batch
    is read at that sequence on replicated stores, as ``iter_batches`` reads."""

    def __init__(self, listing: _SubjectStateListing, index: NameIndex) -> None:
        self._listing = listing
        self._index = index

    async def batch(
        self, lower: str, *, inclusive: bool = False, limit: int = MULTI_LAST_LIMIT
    ) -> tuple[list[ObjectInfo], str | None]:
        """The current objects among the next ``limit`` indexed names from ``lower`` on
        (above it unless ``inclusive``), in name order (deleted and purged names are read and
        left out, so it may be fewer, even none), and the name to continue after (None when
        no name follows). FastListingUnavailable when the server refuses the batched gets;
        the caller then lists by ``iter_batches``."""
        listing = self._listing
        assert listing._gets is not None
        limit = min(limit, MULTI_LAST_LIMIT)
        rows = await asyncio.to_thread(
            self._index.names_from,
            listing.name_filter.prefix,
            lower,
            inclusive=inclusive,
            limit=limit,
        )
        if not rows:
            return [], None
        subjects = [listing.meta_prefix + row[0] for row in rows]
        try:
            messages = await listing._gets.fetch(subjects)
        except (PermissionDenied, BatchedGetFailed, BatchStalled) as exc:
            raise FastListingUnavailable(f"batched direct get unavailable: {exc}") from None
        infos = await proven_batch(listing.store, listing._keep(subjects, messages))
        infos.sort(key=lambda info: info.name)
        return infos, (rows[-1][1] if len(rows) == limit else None)

    async def close(self) -> None:
        """Keep what was fetched in the index, forget purged names, release both."""
        await self._listing.close()


async def open_ordered(store: BucketStream, *, prefix: str | None = None) -> OrderedListing | None:
    """A listing of the current objects under ``prefix`` in name order (``OrderedListing``),
    or None where the name index cannot give one: turned off, unusable, or to be rebuilt
    (the next ``iter_batches`` listing rebuilds it), or a server that does not allow
    batched direct gets. Close what it returns."""
    if store.api.batched_gets_cut_off:
        return None
    info = await store.info()
    if not info.allow_direct:
        return None
    index = await asyncio.to_thread(name_sync.open_index, store, info)
    if index is None:
        return None
    try:
        if await asyncio.to_thread(name_sync.rebuild_needed, index, info):
            index.close()
            return None
        await name_sync.catch_up(store, index, info)
    except sqlite3.Error as exc:
        index.close()
        name_sync.warn_once(f"name index unusable, listing without it ({exc})")
        return None
    except NatsObjError as exc:  # the catch-up consumer (denied, unreachable, behind)
        index.close()
        log.info("bucket %r: name index not brought up to date: %s", store.bucket, exc)
        return None
    listing = _SubjectStateListing(store, make_filter(prefix, None), include_deleted=False)
    listing._index = index
    listing._info = info
    listing._last_seq = info.state.last_sequence
    listing.read_floor = store.read_floor(info) or 0
    listing._gets = _BatchedDirectGets(store, listing.read_floor, superset=True)
    try:
        await listing._gets.open()
    except BaseException:
        await listing.close()
        raise
    return OrderedListing(listing, index)


async def _scan_batches(
    store: BucketStream, name_filter: NameFilter, include_deleted: bool
) -> AsyncIterator[list[ObjectInfo]]:
    """The fallback: every current meta record through an ordered consumer, filtered here."""
    consumer = store.consumer(all_meta_subject(store.bucket), deliver_policy="last_per_subject")
    try:
        pending = await consumer.start()
        batch: list[ObjectInfo] = []
        while pending:
            msg = await consumer.next()
            if msg is None:
                break
            info = info_from_msg(store, msg)
            if info is not None and _wanted(info, name_filter, include_deleted):
                batch.append(info)
            if len(batch) >= SCAN_BATCH:
                yield batch
                batch = []
            if msg.pending == 0:
                break
        if batch:
            yield batch
    finally:
        await consumer.close()


def _wanted(info: ObjectInfo, name_filter: NameFilter, include_deleted: bool) -> bool:
    """Wanted by the listing: matching, and neither deleted nor expired (the server removes
    an expired record within moments; the clock hides it meanwhile) unless deletes are."""
    if not include_deleted and (
        info.deleted or (info.expires is not None and info.expires <= datetime.now(UTC))
    ):
        return False
    return name_filter.matches(info.name)


class _SubjectStateListing:
    """Steps 1-3 of the module docstring for one listing."""

    def __init__(self, store: BucketStream, name_filter: NameFilter, include_deleted: bool):
        self.store = store
        self.name_filter = name_filter
        self.include_deleted = include_deleted
        self.meta_prefix = all_meta_subject(store.bucket)[:-1]  # "$O.<bucket>.M."
        self.token_prefix = name_filter.subject_token_prefix()
        self.read_floor = 0
        self._last_seq = 0
        self._index: NameIndex | None = None
        self._absent: list[str] = []  # index tokens whose subjects are gone (see _note_absent)
        self._learned: list[IndexRow] = []  # fetched meta records, for the index
        self._gets: _BatchedDirectGets | None = None
        self._pages: AsyncGenerator[list[str] | _Ready] | None = None
        self._requests: AsyncGenerator[list[str] | _Ready] | None = None
        self._info = StreamInfo()

    async def first_batch(self) -> list[ObjectInfo]:
        """Everything that decides between this path and the scan happens here, before the
        caller sees a single object: where the names come from and the first batched get."""
        if self.store.api.batched_gets_cut_off:
            raise FastListingUnavailable("batched direct get replies are cut to one message")
        try:
            info = await self._names_source()
        except PermissionDenied as exc:
            raise FastListingUnavailable(f"STREAM.INFO denied: {exc}") from None
        if not info.allow_direct:
            await self.close()
            raise FastListingUnavailable("the stream does not allow direct gets")
        self.read_floor = self.store.read_floor(info) or 0
        self._last_seq = info.state.last_sequence
        self._info = info
        self._gets = _BatchedDirectGets(
            self.store, self.read_floor, superset=self._index is not None
        )
        await self._gets.open()
        self._requests = self._batched_requests()
        try:
            request = await anext(self._requests, None)
            if request is None:
                return []
            if isinstance(request, _Ready):
                return request.infos
            return self._keep(request, await self._gets.fetch(request))
        except (PermissionDenied, BatchedGetFailed) as exc:
            await self.close()
            raise FastListingUnavailable(f"batched direct get unavailable: {exc}") from None
        except BatchStalled as exc:
            await self.close()
            if exc.received == 1:  # a service import without response_type: stream
                self.store.api.batched_gets_cut_off = True
            raise FastListingUnavailable(str(exc)) from None

    async def _names_source(self) -> StreamInfo:
        """The local name index, brought up to the stream's last sequence, when it can be
        used (``natsobj.aio.name_sync``); one that must be rebuilt is rebuilt from the pages
        of the subject state this listing reads anyway. Without the index, those pages alone.
        Returns the stream info the listing pins its reads to."""
        info = await self.store.info()
        # opening may wait for another process's write transaction: not on the loop
        index = await asyncio.to_thread(name_sync.open_index, self.store, info)
        if index is not None:
            try:
                if await asyncio.to_thread(name_sync.rebuild_needed, index, info):
                    generation = await asyncio.to_thread(name_sync.start_rebuild, index)
                    if self._wants_every_record():
                        await name_sync.rebuild_with_records(self.store, index, info, generation)
                        # the proof compares with the state after that long read: a write
                        # during it is caught up here instead of failing the proof
                        info = await self.store.info()
                        await name_sync.catch_up(self.store, index, info)
                        self._pages = self._indexed_pages(index, rebuilt=True)
                    else:
                        rebuilt = name_sync.rebuild(self.store, index, generation)
                        self._pages = self._matching_pages(rebuilt)
                else:
                    await name_sync.catch_up(self.store, index, info)
                    self._pages = self._indexed_pages(index)
                self._index = index
                return info
            except sqlite3.Error as exc:
                name_sync.warn_once(f"name index unusable, listing without it ({exc})")
            except NatsObjError as exc:  # the catch-up consumer (denied, unreachable, behind)
                log.info("bucket %r: name index not brought up to date: %s", self.store.bucket, exc)
            finally:
                if self._index is None:
                    index.close()
        first_page = await name_sync.name_page(self.store, 0)
        stop_after = self.meta_prefix + self.token_prefix if self.token_prefix else None
        self._pages = self._matching_pages(
            name_sync.name_pages(self.store, first_page, stop_after=stop_after)
        )
        return first_page

    def _wants_every_record(self) -> bool:
        """A listing of the whole of a single-replica bucket, which needs every meta record:
        one read of every meta message builds the index with the records (each subject holds
        one message), where pages of names and then a batched get for each go over every
        name twice: once in the server's subject walk, once as a reply."""
        everything = not self.name_filter.prefix and not self.name_filter.glob
        return everything and self.store.replicas == 1

    async def _indexed_pages(
        self, index: NameIndex, *, rebuilt: bool = False
    ) -> AsyncGenerator[list[str] | _Ready]:
        """Matching meta subjects from the index: a range query on the literal prefix, then
        the matcher; names that do not decode are left to their meta record. Once the index
        is proven exact for this listing, matches whose record it kept come ready-made; the
        first batches are parsed while the server counts for that proof. ``rebuilt``: the
        index was just rebuilt with every record, so the proof is worth asking for however
        small the bucket (it still guards against rows another process wrote meanwhile)."""
        name_filter = self.name_filter
        everything = not name_filter.prefix and not name_filter.glob
        proof = await self._start_proof(index, rebuilt)
        held: list[tuple[list[Entry], list[ObjectInfo] | None]] = []
        # a final None flushes what is held once the lookup is done
        for rows in itertools.chain(index.lookup(name_filter.literal_prefix), [None]):
            if rows is not None:
                if not everything:
                    rows = [row for row in rows if row[1] is None or name_filter.matches(row[1])]
                if proof is not None and not proof.done() and len(held) < HELD_WHILE_PROVING:
                    held.append((rows, self._from_index(rows)))
                    await asyncio.sleep(0)  # lets the count's reply in
                    continue
                held.append((rows, None))
            proven = proof is not None and await proof
            for held_rows, infos in held:
                for request in self._requests_for(held_rows, proven, infos):
                    yield request
            held = []

    def _requests_for(
        self, rows: list[Entry], proven: bool, infos: list[ObjectInfo] | None = None
    ) -> Iterator[list[str] | _Ready]:
        """What to do for ``rows``: with a proven index, take the records it kept (``infos``
        when already parsed), and fetch the rest."""
        if proven:
            yield _Ready(self._from_index(rows) if infos is None else infos)
            rows = [row for row in rows if row[4] is None]
        if rows:
            yield [self.meta_prefix + row[0] for row in rows]

    async def _start_proof(
        self, index: NameIndex, rebuilt: bool = False
    ) -> asyncio.Future[bool] | None:
        """The proof that this listing may take meta records from the index, under way, or
        None when not worth it: only on one replica (whose answers are the stream's state),
        for a large share of the bucket (``name_sync.names_complete`` counts all of it), or
        after a rebuild that read every record (the alternative is fetching them again)."""
        if self.store.replicas != 1:
            return None
        if rebuilt:
            return asyncio.ensure_future(self._prove(index))
        wanted = await asyncio.to_thread(index.count, self.name_filter.literal_prefix)
        if wanted < CACHED_MIN:
            return None
        share_too_small = self.name_filter.literal_prefix and (
            wanted * CACHED_SHARE < await asyncio.to_thread(index.count)
        )
        if share_too_small:
            return None
        return asyncio.ensure_future(self._prove(index))

    async def _prove(self, index: NameIndex) -> bool:
        try:
            return await name_sync.names_complete(self.store, index, self._info)
        except NatsObjError as exc:
            log.info("bucket %r: listing fetches every record: %s", self.store.bucket, exc)
            return False

    def _from_index(self, rows: list[Entry]) -> list[ObjectInfo]:
        """The wanted objects among the rows whose record the index kept."""
        # an expiry's delete marker is kept as an empty record: not listed, and not in the
        # batch, whose one parse an empty payload would fail
        rows = [row for row in rows if row[4]]
        docs = _decode_all([meta for *_, meta in rows if meta is not None])
        kept = []
        for (token, _, seq, mtime_us, _), doc in zip(rows, docs, strict=True):
            mtime = _EPOCH + mtime_us * _MICROSECOND if mtime_us is not None else None
            info = _parse_meta(self.store, doc, mtime, seq, token)
            if info is None:
                continue
            info.expires = kept_expires(doc)
            if _wanted(info, self.name_filter, self.include_deleted):
                kept.append(info)
        return kept

    async def rest(self) -> AsyncIterator[list[ObjectInfo]]:
        """The remaining batches, with up to IN_FLIGHT requests outstanding."""
        assert self._gets is not None and self._requests is not None
        in_flight: list[tuple[list[str], asyncio.Future[list[RawMsg]]]] = []
        try:
            async for request in self._requests:
                if isinstance(request, _Ready):
                    if request.infos:
                        yield request.infos
                    continue
                in_flight.append((request, asyncio.ensure_future(self._gets.fetch(request))))
                if len(in_flight) >= IN_FLIGHT and (kept := await self._next_done(in_flight)):
                    yield kept
            while in_flight:
                if kept := await self._next_done(in_flight):
                    yield kept
        finally:
            for _, task in in_flight:
                task.cancel()

    async def _next_done(
        self, in_flight: list[tuple[list[str], asyncio.Future[list[RawMsg]]]]
    ) -> list[ObjectInfo]:
        subjects, task = in_flight.pop(0)
        return self._keep(subjects, await task)

    def _keep(self, subjects: list[str], messages: list[RawMsg]) -> list[ObjectInfo]:
        """The wanted objects among the records fetched for ``subjects``; with the index,
        the records are kept there for later listings."""
        learned = self._learned if self._index is not None else None
        if learned is not None and self.store.replicas == 1 and len(messages) < len(subjects):
            self._note_absent(subjects, messages)
        kept = []
        skip = len(self.meta_prefix)
        # the delete marker of an expired object: not listed, and left out before the batch's
        # one parse, which its empty payload would fail
        messages = [msg for msg in messages if raw_header(msg[0], _MARKER_REASON) is None]
        docs = _decode_all([data for _, data in messages])
        for (headers, data), doc in zip(messages, docs, strict=True):
            try:
                subject, sequence, mtime = _direct_get_headers(headers)
            except ValueError as exc:
                log.warning("bucket %r: skipping a direct-get reply: %s", self.store.bucket, exc)
                continue
            if not subject.startswith(self.meta_prefix):
                log.warning(
                    "bucket %r: skipping a direct-get reply for %r, not a meta subject",
                    self.store.bucket,
                    subject,
                )
                continue
            info = _parse_meta(self.store, doc, mtime, sequence, subject[skip:])
            if info is None:
                continue
            info.expires = expires_at(mtime, raw_header(headers, _MSG_TTL), subject=subject)
            if learned is not None and subject.startswith(self.meta_prefix):
                kept_data = record_to_keep(data, info.expires)
                learned.append(
                    (subject[skip:], sequence, (mtime - _EPOCH) // _MICROSECOND, kept_data)
                )
            if _wanted(info, self.name_filter, self.include_deleted):
                kept.append(info)
        if len(self._learned) >= LEARN_EVERY:
            self._write_learned()
        return kept

    def _write_learned(self) -> None:
        """Keep the fetched records in the index, in one transaction on the loop's thread:
        written from a worker thread, the per-row handing back and forth of the GIL stalls
        the loop's socket calls (docs/performance.md). An error costs only the keeping."""
        rows, self._learned = self._learned, []
        if rows and self._index is not None:
            try:
                self._index.keep_records(rows)
            except sqlite3.Error as exc:
                log.info(
                    "bucket %r: fetched records not kept in the name index: %s",
                    self.store.bucket,
                    exc,
                )

    def _note_absent(self, subjects: list[str], messages: list[RawMsg]) -> None:
        """Indexed names the single replica no longer has (a purge): forgotten at the end.
        Only on one replica, whose answer is at least as new as ``last_seq``; a lagging
        replica's silence proves nothing."""
        found = {raw_header(headers, _NATS_SUBJECT) for headers, _ in messages}
        skip = len(self.meta_prefix)
        self._absent += [s[skip:] for s in subjects if s not in found]

    async def _batched_requests(self) -> AsyncGenerator[list[str] | _Ready]:
        assert self._pages is not None
        async for subjects in self._pages:
            if isinstance(subjects, _Ready):
                yield subjects
                continue
            for start in range(0, len(subjects), MULTI_LAST_LIMIT):
                yield subjects[start : start + MULTI_LAST_LIMIT]

    async def _matching_pages(self, pages: AsyncIterator[list[str]]) -> AsyncGenerator[list[str]]:
        """The matching subjects of each page of the subject state."""
        async for subjects in pages:
            if matching := self._matching(iter(subjects)):
                yield matching

    def _matching(self, subjects: Iterator[str]) -> list[str]:
        if not self.name_filter.prefix and not self.name_filter.glob:
            return list(subjects)  # everything: no name to decode
        bound = self.meta_prefix + self.token_prefix
        skip = len(self.meta_prefix)
        out = []
        for subject in subjects:
            if not subject.startswith(bound):
                continue
            try:
                name = decode_name(subject[skip:])
            except (binascii.Error, UnicodeDecodeError, ValueError):
                out.append(subject)  # not our encoding: let the meta record decide
                continue
            if self.name_filter.matches(name):
                out.append(subject)
        return out

    async def close(self) -> None:
        for generator in (self._requests, self._pages):  # ends the index's read, if any
            if generator is not None:
                await generator.aclose()
        if self._gets is not None:
            await self._gets.close()
            self._gets = None
        if self._index is not None:
            self._write_learned()
            index, self._index = self._index, None
            try:
                if self._absent:
                    await asyncio.to_thread(index.prune, self._absent, absent_at=self._last_seq)
            except sqlite3.Error as exc:
                log.info("bucket %r: name index not pruned: %s", self.store.bucket, exc)
            finally:
                index.close()


class _BatchedDirectGets:
    """Batched last-per-subject direct gets (``multi_last``) of meta subjects."""

    def __init__(self, store: BucketStream, read_floor: int, *, superset: bool = False) -> None:
        self.store = store
        self.read_floor = read_floor
        # the subjects asked for may include some that are gone (names from the local index)
        self.superset = superset
        self._gets = DirectBatches(store.api, store.stream, bucket=store.bucket)

    async def open(self) -> None:
        await self._gets.open()

    async def fetch(self, subjects: list[str]) -> list[RawMsg]:
        """The last message of each subject (in stream order). With a read floor, a replica
        that is behind answers 404 (nothing): ask again, another replica may answer. Subjects
        listed by the leader at that sequence all exist, so any shortfall is such a replica;
        names from the local index may be gone (purged), so there only an empty answer is
        asked again, and one that stays empty means they are all gone."""
        wanted = 1 if self.superset else len(subjects)
        try:
            return await self.store.until_caught_up(
                lambda: self._fetch_once(subjects),
                lambda messages: not self.read_floor or len(messages) >= wanted,
                what="the listing",
                floor=self.read_floor,
            )
        except ReplicaLagging:
            if self.superset:
                return []
            raise

    async def _fetch_once(self, subjects: list[str]) -> list[RawMsg]:
        body: dict[str, Any] = {"multi_last": subjects, "batch": len(subjects)}
        if self.read_floor:
            body["up_to_seq"] = self.read_floor
        try:
            return await self._gets.get(body)
        except TooManySubjects:
            if len(subjects) == 1:
                raise BatchedGetFailed(
                    "batched direct get refused a single subject (413)", bucket=self.store.bucket
                ) from None
            half = len(subjects) // 2
            return [
                *await self._fetch_once(subjects[:half]),
                *await self._fetch_once(subjects[half:]),
            ]

    async def close(self) -> None:
        await self._gets.close()


# nats-server writes a direct get's headers in this order: one search finds all three
_SUBJECT_SEQUENCE_TIME = re.compile(
    rb"\r\n%s: *([^\r]+)\r\n%s: *(\d+)\r\n%s: *([^\r]+)"
    % tuple(re.escape(name) for name in (_NATS_SUBJECT, _NATS_SEQUENCE, _NATS_TIME_STAMP))
)
_SUBJECT_LINE = b"\r\n" + _NATS_SUBJECT + b":"  # where the server's own headers start


def _decode_all(payloads: list[bytes]) -> list[Any]:
    """The JSON of every payload, parsed as one array: a single ``orjson.loads`` call per batch
    instead of one per record, so its per-call overhead is paid once per batch. Any
    record that is not exactly one JSON value makes the count differ or the parse fail; then
    each is handed on raw, for ``from_json`` to parse (and to report) on its own. So is a
    batch with a record above ``MAX_RECORD_BYTES``, which ``from_json`` refuses unparsed."""
    if not payloads or any(len(payload) > MAX_RECORD_BYTES for payload in payloads):
        return payloads
    try:
        docs = orjson.loads(b"[" + b",".join(payloads) + b"]")
    except ValueError:
        docs = None
    if isinstance(docs, list) and len(docs) == len(payloads):
        return docs
    return payloads


def _direct_get_headers(headers: bytes) -> tuple[str, int, datetime]:
    """Subject, sequence and server time of a direct-get reply (ValueError when missing).
    The server appends these after the headers the message was published with, which may
    carry their own (any writer can add them): the last occurrence is the server's."""
    found = _SUBJECT_SEQUENCE_TIME.match(headers, max(headers.rfind(_SUBJECT_LINE), 0))
    if found:
        subject, sequence, stamp = (value.decode() for value in found.groups())
    else:  # headers in another order: look for each
        subject = raw_header(headers, _NATS_SUBJECT) or ""
        sequence = raw_header(headers, _NATS_SEQUENCE) or ""
        stamp = raw_header(headers, _NATS_TIME_STAMP) or ""
    return subject, int(sequence), parse_server_time(stamp)


def _parse_meta(
    store: BucketStream,
    doc: bytes | dict[str, Any],
    mtime: datetime | None,
    sequence: int,
    token: str,
) -> ObjectInfo | None:
    """The meta record read from the meta subject ending in ``token``, or None for a corrupt
    one or one claiming another name than its subject's, which is logged and skipped."""
    try:
        return ObjectInfo.from_json(
            doc, mtime=mtime, sequence=sequence, bucket=store.bucket, token=token
        )
    except NatsObjError as exc:
        log.warning(
            "bucket %r: skipping unreadable meta record on %s: %s", store.bucket, token, exc
        )
        return None
