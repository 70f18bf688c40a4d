"""Puts sent as one atomic batch (ADR-50): an object's chunks, then its meta record as the
commit, stored all together or not at all.

Today's put (``ObjectStore.put`` with ``PublishWindow``) stores chunks as they come and the
meta record last; a client that dies between the two leaves chunks no record names until
``compact`` drops them, and another writer's messages may land between the chunks. Sent as
one batch instead, the server stages the messages and stores them only when the commit (the
meta record) arrives and passes its checks: nothing of a put that dies or is refused is ever
stored, and the chunks sit at consecutive sequences right before their meta record, which is
what ranged reads' fast path looks for.

The meta record keeps the guards of today's put that ADR-50 allows in a batch: the per-subject
rollup and ``Nats-Expected-Last-Subject-Sequence`` (the version replaced; checked at commit,
under the stream's lock). ``Nats-Expected-Last-Msg-Id`` is refused in a batch, and is not
needed: the batch itself orders the chunks before the record. The first chunk claims the
put's chunk subject as today's put does (``natsobj.aio.jetstream.publish``), with
``Nats-Expected-Last-Subject-Sequence: 0``, also checked at commit: a batch whose nuid another
put holds stores nothing and is sent again under a new one.

Which puts go this way: objects up to ``ObjectStore.atomic_max_bytes`` (by default
``default_max_bytes``, measured per replica count; 0 is never) on a stream that allows atomic
publishes (new stores do; see ``StoreConfig``). Limits: a batch holds at most
``ATOMIC_BATCH_MESSAGES`` messages (the server's default max_batch_size), so chunks + 1 must
fit; the server stages the batch (on disk for a file store on one replica, in memory
otherwise) and drops it after 10 s without a message; a stream keeps at most 50 batches
open. A put that does not fit, or that the server turns away for one of those limits, goes
today's way, which is why the source must be one that can be read again from the start
(``Replayable``). docs/production.md has the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nats.aio.msg import Msg

from natsobj.aio.chunk_worker import chunk_sink
from natsobj.aio.jetstream.api_errors import api_error
from natsobj.aio.jetstream.jsapi import status_of
from natsobj.aio.jetstream.nuids import next_nuid, put_id
from natsobj.aio.sources import PutSource, iter_chunks
from natsobj.aio.stream import BucketStream
from natsobj.errors import NotConnected, ObjectExists, SequenceConflict
from natsobj.model import ObjectInfo, format_digest
from natsobj.names import chunk_subject, meta_subject
from natsobj.retry import RACED
from natsobj.wire import (
    ATOMIC_BATCH_INCOMPLETE,
    ATOMIC_BATCH_TOO_LARGE,
    ATOMIC_PUBLISH_DISABLED,
    ATOMIC_TOO_MANY_INFLIGHT,
    BATCH_COMMIT,
    BATCH_ID,
    BATCH_SEQUENCE,
    EXPECTED_LAST_SUBJECT_SEQ,
    MSG_ID,
    ROLLUP,
    WRONG_LAST_SEQUENCE,
    WRONG_LAST_SEQUENCE_CONSTANT,
    meta_msg_id,
)

# The server's default max_batch_size (nats-server streamDefaultMaxAtomicBatchSize): chunks
# plus the meta record. A server configured lower refuses the batch and the put goes today's way.
ATOMIC_BATCH_MESSAGES = 1000
# The largest object sent as one batch by default (``ObjectStore.atomic_max_bytes`` None), per
# replica count: the batch is used only where it is not slower than the windowed put, which
# BENCHMARKS.md's "Atomic puts" measures (the reason is in docs/performance.md); on one
# replica it never is.
ATOMIC_MAX_BYTES = 0
ATOMIC_MAX_BYTES_REPLICATED = 64 * 1024
# The commit is answered once every staged message is stored: allow for writing the batch.
COMMIT_SECONDS_PER_MIB = 0.1
# Refusals after which the put is sent today's way instead.
_GO_TODAYS_WAY = {
    ATOMIC_PUBLISH_DISABLED,
    ATOMIC_BATCH_TOO_LARGE,
    ATOMIC_TOO_MANY_INFLIGHT,
    ATOMIC_BATCH_INCOMPLETE,
}
_ABORT = "abort"  # any commit value but "1" makes the server drop the batch at once


@dataclass
class Replayable:
    """A put source that fits a batch and can be read again from its start (a retry after a
    refused batch, or today's put after it): ``chunks()`` starts a new reading."""

    chunks: Callable[[], AsyncIterator[bytes]]


async def replayable(
    source: PutSource, chunk_size: int, *, max_bytes: int, lookahead: int
) -> tuple[Replayable | None, PutSource]:
    """``(replayable, source)``: a Replayable when ``source`` holds at most ``max_bytes``
    (else None), and the source to read from now.

    Bytes, paths and regular files are measured without reading them (a file is read again
    from where it stood). Anything else (iterables, pipes) is read ahead up to ``lookahead``
    bytes, the memory a put may hold anyway: when it ends within that, its chunks are kept;
    otherwise the returned source yields what was read ahead and then the rest."""
    if isinstance(source, str):
        source = source.encode("utf-8")
    if isinstance(source, bytes | bytearray | memoryview):
        data = source
        fits = len(data) <= max_bytes
        return (Replayable(lambda: iter_chunks(data, chunk_size)) if fits else None), data
    if isinstance(source, os.PathLike):
        path = Path(source)
        size = path.stat().st_size
        fits = size <= max_bytes
        return (Replayable(lambda: iter_chunks(path, chunk_size)) if fits else None), path
    file_size = _regular_file_size(source)
    if file_size is not None:
        handle: Any = source
        start = handle.tell()
        size = file_size - start
        if size > max_bytes:
            return None, source

        def rewound() -> AsyncIterator[bytes]:
            handle.seek(start)
            return iter_chunks(handle, chunk_size)

        return Replayable(rewound), source
    return await _read_ahead(source, chunk_size, min(lookahead, max_bytes))


def _regular_file_size(source: Any) -> int | None:
    """The size of a seekable handle on a regular file, else None."""
    if not (hasattr(source, "read") and hasattr(source, "seek") and hasattr(source, "tell")):
        return None
    try:
        status = os.fstat(source.fileno())
    except (AttributeError, OSError, ValueError):
        return None
    return status.st_size if stat.S_ISREG(status.st_mode) else None


async def _read_ahead(
    source: Any, chunk_size: int, limit: int
) -> tuple[Replayable | None, PutSource]:
    stream = iter_chunks(source, chunk_size)
    kept: list[bytes] = []
    size = 0
    async for chunk in stream:
        kept.append(chunk)
        size += len(chunk)
        if size > limit:
            return None, _chained(kept, stream)
    chunks = tuple(kept)

    async def again() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return Replayable(again), _chained(kept, stream)


async def _chained(first: list[bytes], rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    for chunk in first:
        yield chunk
    async for chunk in rest:
        yield chunk


def default_max_bytes(replicas: int) -> int:
    """The measured threshold for a stream with ``replicas`` replicas (see above)."""
    return ATOMIC_MAX_BYTES_REPLICATED if replicas > 1 else ATOMIC_MAX_BYTES


async def put_atomic(
    bucket_stream: BucketStream,
    template: ObjectInfo,
    source: PutSource,
    *,
    chunk_size: int,
    window_bytes: int,
    max_bytes: int | None,
    current: Callable[[], Awaitable[ObjectInfo | None]],
    required: int | None,
    chunk_headers: Mapping[str, str] | None = None,
    meta_headers: Callable[[], Mapping[str, str]] | None = None,
    digest_headers: Callable[[str], Mapping[str, list[str]]] | None = None,
    nuid: str | None = None,
) -> tuple[Committed | None, PutSource]:
    """``ObjectStore.put``'s atomic way: ``(committed, source)``, with ``committed`` None when
    the object does not fit a batch or the server turned the batch away, and ``source`` what
    today's put then reads (from its start). ``template``: the meta record but for the
    nuid, size, chunk count and digest; ``max_bytes``: the largest object sent this way
    (``ObjectStore.atomic_max_bytes``; 0: none, None: ``default_max_bytes``). ``current``
    reads the version the put replaces (it runs while the chunks go out); ``required`` is
    the put's compare-and-swap sequence.
    ``chunk_headers`` go with every chunk and ``meta_headers()`` (called when the record
    goes out) with the record: an expiring put's Nats-TTL (natsobj.aio.expiry).
    ``digest_headers(digest)`` adds to the record's own headers (``ObjectStore.put``).
    ``nuid``: the version id to put under, create-only (``put_pipeline.put``)."""
    if max_bytes is None:
        max_bytes = default_max_bytes(bucket_stream.replicas)
    limit = min(max_bytes, (ATOMIC_BATCH_MESSAGES - 1) * chunk_size)
    if limit <= 0:
        return None, source
    replay, source = await replayable(source, chunk_size, max_bytes=limit, lookahead=window_bytes)
    if replay is None:
        return None, source
    put = AtomicPut(
        bucket_stream,
        template,
        window_bytes=window_bytes,
        chunk_headers=chunk_headers,
        meta_headers=meta_headers,
        digest_headers=digest_headers,
        nuid=nuid,
    )
    first = asyncio.ensure_future(current())
    try:
        return await put.run(replay, first, current, required), source
    except GoTodaysWay as exc:
        if exc.code == ATOMIC_PUBLISH_DISABLED:  # the stream was changed since we read it
            bucket_stream.allow_atomic = False
        return None, replay.chunks()
    finally:
        first.cancel()


def version_taken(bucket: str, name: str, nuid: str) -> ObjectExists:
    """A put under a given version id whose chunk subject holds another's chunks."""
    return ObjectExists(
        f"version id {nuid} is taken in this bucket: a put under a given id never writes"
        " over another version's chunks",
        bucket=bucket,
        name=name,
        hint="Restore into a new or empty bucket.",
    )


class GoTodaysWay(Exception):
    """The server turned the batch away for one of its limits (``code``, its err_code, 0 for
    one this client noticed): put the object today's way."""

    def __init__(self, reason: str, code: int = 0) -> None:
        super().__init__(reason)
        self.code = code


class Unanswered(Exception):
    """In a cluster, the batch went unanswered (an election, a lost node). ``info`` and
    ``replaced`` are the record and the version it replaces once the commit went out (the
    batch may then be stored), None before."""

    def __init__(self, info: ObjectInfo | None, replaced: ObjectInfo | None) -> None:
        super().__init__("the cluster did not answer the batch")
        self.info = info
        self.replaced = replaced


@dataclass
class Committed:
    """An atomic put's outcome: the record as stored, the version it replaced, its sequence."""

    info: ObjectInfo
    replaced: ObjectInfo | None
    sequence: int


class AtomicPut:
    """One object's chunks and meta record as one ADR-50 batch, with the unacknowledged bytes
    of the staged messages bounded by ``window_bytes`` (each is acknowledged once the server
    staged it). ``chunk_headers`` go with every chunk, ``meta_headers()`` with the record."""

    def __init__(
        self,
        bucket_stream: BucketStream,
        template: ObjectInfo,
        *,
        window_bytes: int,
        chunk_headers: Mapping[str, str] | None = None,
        meta_headers: Callable[[], Mapping[str, str]] | None = None,
        digest_headers: Callable[[str], Mapping[str, list[str]]] | None = None,
        nuid: str | None = None,
    ) -> None:
        self.stream = bucket_stream
        self.api = bucket_stream.api
        self.template = template
        self.given_nuid = nuid
        self._new_nuid()
        self.window_bytes = window_bytes
        self.name = template.name
        self.bucket = bucket_stream.bucket
        self.chunk_headers = dict(chunk_headers or {})
        self.meta_headers = meta_headers
        self.digest_headers = digest_headers

    async def run(
        self,
        replay: Replayable,
        first_current: Awaitable[ObjectInfo | None],
        current: Callable[[], Awaitable[ObjectInfo | None]],
        required: int | None,
    ) -> Committed:
        """Publish the batch over the version ``first_current`` finds (awaited only before
        the commit, so the lookup overlaps the chunks), then over what ``current`` reads
        after a conflict. ``required``: the put's compare-and-swap sequence; another one
        there is SequenceConflict and nothing is stored. Raises GoTodaysWay when the server
        turns the batch away for a limit."""
        # the lookup of each later attempt starts only when that attempt needs it: one
        # started after the last attempt would never be awaited
        lookup: Callable[[], Awaitable[ObjectInfo | None]] = lambda: first_current  # noqa: E731
        for attempt in RACED.tries():
            if attempt:
                await RACED.pause(attempt)
            try:
                return await self._publish(replay, lookup, required)
            except SequenceConflict:
                if await self._nuid_taken():
                    self._new_nuid()
                elif required is not None:
                    raise
            except Unanswered as silence:
                # a leader election or a lost node: the batch is stored whole or not at all
                if silence.info is not None:
                    landed = await current()
                    if landed is not None and landed.nuid == silence.info.nuid:
                        sequence = int(landed.sequence or 0)
                        return Committed(silence.info, silence.replaced, sequence)
                raise GoTodaysWay("the cluster did not answer the batch") from None
            lookup = current
        raise GoTodaysWay("another writer kept replacing the object")

    def _new_nuid(self) -> None:
        """Put under a nuid of its own (the first, or another after ``_nuid_taken``), or the
        one asked for, which is never swapped for another."""
        nuid = self.given_nuid or next_nuid()
        if self.given_nuid is not None and self.template.nuid == nuid:
            raise version_taken(self.stream.bucket, self.template.name, nuid)
        self.template = replace(self.template, nuid=nuid)
        self.put_id = put_id(nuid)

    async def _nuid_taken(self) -> bool:
        """After a refused commit: whether the refusal was the first chunk's claim, not the
        record's guard. Nothing of the batch was stored, so a message on the chunk subject
        is another put's."""
        chunks = chunk_subject(self.bucket, self.template.nuid)
        return await self.stream.leader_last(chunks, name=self.name) is not None

    def _conflict(self, required: int) -> SequenceConflict:
        return SequenceConflict(
            f"it is no longer at sequence {required}", bucket=self.bucket, name=self.name
        )

    async def _publish(
        self,
        replay: Replayable,
        replacing: Callable[[], Awaitable[ObjectInfo | None]],
        required: int | None,
    ) -> Committed:
        batch = next_nuid()
        chunks_out = self.stream.publish_subject(chunk_subject(self.bucket, self.template.nuid))
        acks: deque[tuple[asyncio.Future[Msg], int]] = deque()
        unacked = 0
        hasher = chunk_sink(self.window_bytes)
        count = size = 0
        committed = False
        info: ObjectInfo | None = None
        replaced: ObjectInfo | None = None
        try:
            async for chunk in replay.chunks():
                count += 1
                if count >= ATOMIC_BATCH_MESSAGES:  # the file grew since it was measured
                    raise GoTodaysWay("more chunks than one batch holds")
                await hasher.put(chunk)
                size += len(chunk)
                headers = {**self.chunk_headers, BATCH_ID: batch, BATCH_SEQUENCE: str(count)}
                if count == 1:  # the claim (see above)
                    headers[EXPECTED_LAST_SUBJECT_SEQ] = "0"
                acks.append((await self.api.send(chunks_out, chunk, headers), len(chunk)))
                unacked += len(chunk)
                while unacked > self.window_bytes:
                    reply, sent = acks.popleft()
                    self._staged(await self._answer(reply, self.api.timeout, chunks_out))
                    unacked -= sent
            replaced = await replacing()
            expected = replaced.sequence if replaced is not None else 0
            if required is not None and required != expected:
                raise self._conflict(required)
            info = replace(
                self.template,
                size=size,
                chunks=count,
                digest=format_digest(await hasher.digest()),
            )
            if self.digest_headers is not None:
                info.headers = {**info.headers, **self.digest_headers(info.digest)}
            headers = {
                **(self.meta_headers() if self.meta_headers is not None else {}),
                BATCH_ID: batch,
                BATCH_SEQUENCE: str(count + 1),
                BATCH_COMMIT: "1",
                **(ROLLUP if info.rolls_up else {}),
                EXPECTED_LAST_SUBJECT_SEQ: str(expected),
                MSG_ID: meta_msg_id(self.put_id),
            }
            meta_out = self.stream.publish_subject(meta_subject(self.bucket, self.name))
            commit = await self.api.send(meta_out, info.encode(), headers)
            committed = True
            for reply, _ in acks:
                self._staged(await self._answer(reply, self.api.timeout, chunks_out))
            timeout = 2 * self.api.timeout + COMMIT_SECONDS_PER_MIB * size / (1024 * 1024)
            return Committed(
                info, replaced, self._stored(await self._answer(commit, timeout, meta_out))
            )
        except NotConnected as exc:
            if not self.api.in_cluster:
                raise
            raise Unanswered(info if committed else None, replaced) from exc
        finally:
            if not committed:
                await hasher.abandon()
                if count:
                    await self._abort(chunks_out, batch, count + 1)

    async def _answer(self, reply: asyncio.Future[Msg], timeout: float, subject: str) -> Msg:
        """The reply (in a cluster, NotConnected/ClusterUnavailable when none comes)."""
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.shield(reply)
        except TimeoutError:
            raise self.api.unreachable(subject) from None

    def _staged(self, reply: Msg) -> None:
        """A staged message is acknowledged with an empty reply; anything else is a refusal."""
        if reply.data or status_of(reply) is not None:
            self._stored(reply)

    def _stored(self, reply: Msg) -> int:
        status = status_of(reply)
        if status == "503":  # no stream (or, in a cluster, no leader yet): nothing was stored
            raise GoTodaysWay("no stream answered the batch")
        response = self.api.reply_json(reply, meta_subject(self.bucket, self.name))
        error = response.get("error")
        if error is None:
            return int(response["seq"])
        code = int(error.get("err_code") or 0)
        if code in (WRONG_LAST_SEQUENCE, WRONG_LAST_SEQUENCE_CONSTANT):
            raise SequenceConflict("another writer replaced it", bucket=self.bucket, name=self.name)
        if code in _GO_TODAYS_WAY:
            raise GoTodaysWay(str(error.get("description")), code)
        raise api_error(error, bucket=self.bucket, name=self.name)

    async def _abort(self, subject: str, batch: str, sequence: int) -> None:
        """Best effort: make the server drop the staged batch now rather than after its
        10 s timeout (it would hold one of the stream's 50 open batches until then)."""
        headers = {BATCH_ID: batch, BATCH_SEQUENCE: str(sequence), BATCH_COMMIT: _ABORT}
        with contextlib.suppress(Exception):
            await self.api.send(subject, b"", headers)
