"""Ranged reads: the bytes of an object between two offsets, fetching only the chunks that
hold them (``natsobj.aio.chunkmap`` says which), and a seekable reader built on them.

A long span of chunks comes from one consumer on the object's chunk subject, started at the
span's first chunk and asked for no chunk past its last (the transport of whole-object
reads); a shorter one in runs, each from one batched direct get (ADR-31: ``seq`` of its first
chunk, ``batch`` its length, and ``next_by_subj`` the object's chunk subject when other
messages lie between its chunks), several at a time.
Every chunk is checked: its subject, its sequence and its length against the map, which was
proven against the record before any byte is served (``natsobj.aio.chunkmap``), so a range
holds the bytes a whole read of the same version puts there. A range cannot be checked
against the object's SHA-256 (like an S3 range GET; a version of one or two chunks is, when
its map is found, see ``chunkmap``); whole-object reads (``ObjectStore.get``) always are.

A chunk that is not there any more means the version was overwritten or deleted (a new
version's chunks are on another subject, and the old ones are purged): ``ObjectChanged``,
never bytes of two versions. In a cluster, a replica that is behind may lack chunks written
just before; those are asked of the stream leader before concluding anything.
"""

from __future__ import annotations

import asyncio
import io
from collections import OrderedDict
from types import TracebackType
from typing import Any, NoReturn

from natsobj.aio.chunkmap import (
    ChunkMap,
    MapCache,
    changed,
    damaged,
    locate,
    version_key,
)
from natsobj.aio.jetstream.directbatch import BatchStalled, DirectBatches, RawMsg
from natsobj.aio.jetstream.jsapi import raw_header
from natsobj.aio.offloaded import read_offloaded_range
from natsobj.aio.stream import BucketStream
from natsobj.model import ObjectInfo
from natsobj.wire import NATS_SEQUENCE, NATS_SUBJECT

_SUBJECT, _SEQUENCE = NATS_SUBJECT.encode(), NATS_SEQUENCE.encode()

HELD_CHUNKS = 4  # chunks a reader keeps after fetching them (small sequential reads reuse them)
# Fetches in flight on one connection at once, in bytes (runs of batched gets and
# consumer-read spans, each up to a read window, taking a share apiece): every ranged reader of
# the connection draws on it, so many ranges read at once (fsspec's cat_ranges) never have the
# server queue more for the client than nats-server's max_pending (64 MiB by default), past
# which it closes the connection as a slow consumer.
CONNECTION_IN_FLIGHT_BYTES = 32 * 2**20
# Spans of chunks at least this long are read by a pull consumer from their first chunk's
# sequence, shorter ones by batched direct gets. A consumer costs a create and a delete but
# asks the server less per byte than batched gets do, so it pays off only for spans longer
# than the read window (the comparison is in docs/performance.md).
STREAM_MIN_BYTES = 8 * 2**20


def byte_range(size: int, start: int | None, end: int | None) -> tuple[int, int]:
    """``[start, end)`` of an object of ``size`` bytes as fsspec reads it: None is the start
    (or the end), negative offsets count from the end, and both are clamped to the object, so
    a range past the end (or one that ends before it starts) is empty."""
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end


class ClientRanges:
    """What the ranged reads of one client share (``Client.ranges``), never the whole
    process: the chunk maps found, keyed by the stream's identity and the version (two
    servers' buckets of one name never meet), and its connection's fetch slots
    (CONNECTION_IN_FLIGHT_BYTES in read windows, at least one)."""

    def __init__(self, read_window_bytes: int) -> None:
        self.maps = MapCache()
        slots = max(1, CONNECTION_IN_FLIGHT_BYTES // max(1, read_window_bytes))
        self.in_flight = asyncio.Semaphore(slots)


class RangeReader:
    """A seekable reader of one version of an object (``ObjectStore.open_range``): ``size``,
    ``read(n)``, ``seek``, ``tell`` and ``read_range(start, end)``, each fetching only the
    chunks that hold the bytes asked for. ``bytes_fetched`` counts what came over the wire.
    Bytes are never checked against the object's digest (see the module docstring).
    ``shared``: its client's ``ClientRanges``."""

    def __init__(
        self,
        stream: BucketStream,
        info: ObjectInfo,
        *,
        read_window_bytes: int,
        shared: ClientRanges,
    ) -> None:
        self.stream = stream
        self.info = info
        self.size = info.size
        self.bytes_fetched = 0
        self.read_window_bytes = read_window_bytes
        self.shared = shared
        self._position = 0
        self._map: ChunkMap | None = None
        self._held: OrderedDict[int, bytes] = OrderedDict()
        self._locating = asyncio.Lock()

    def __repr__(self) -> str:
        return f"RangeReader(bucket={self.info.bucket!r}, name={self.info.name!r})"

    async def __aenter__(self) -> RangeReader:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        """Move the position as a binary file does (past the end is allowed: reads there
        return b""); returns the new position. Nothing is fetched."""
        if whence == io.SEEK_SET:
            position = offset
        elif whence == io.SEEK_CUR:
            position = self._position + offset
        elif whence == io.SEEK_END:
            position = self.size + offset
        else:
            raise ValueError(f"invalid whence ({whence!r}, should be 0, 1 or 2)")
        if position < 0:
            raise ValueError(f"negative seek position {position}")
        self._position = position
        return position

    def tell(self) -> int:
        """The position the next ``read`` starts at."""
        return self._position

    async def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes from the position (all that remains when n < 0); b"" at the end."""
        start = self._position
        if start >= self.size:
            return b""  # past the end, the position stays where the seek put it
        end = self.size if n < 0 else min(self.size, start + n)
        data = await self.read_range(start, end)
        self._position = start + len(data)
        return data

    async def read_range(self, start: int | None, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` (``byte_range``'s convention), without moving the position."""
        start, end = byte_range(self.size, start, end)
        if start == end:
            return b""
        if self.info.offloaded:
            data = await read_offloaded_range(self.stream, self.info, start, end)
            self.bytes_fetched += len(data)
            return data
        chunk_map = await self._chunk_map()
        indexes = chunk_map.chunks_for(start, end)
        chunks = await self._chunks(chunk_map, indexes)
        skip = start - chunk_map.starts[indexes[0]]
        keep = end - chunk_map.starts[indexes[-1]]
        if len(chunks) == 1:
            return chunks[0][skip:keep]
        # only the end chunks are cut (a whole chunk's slice is the chunk itself): one copy
        return b"".join([chunks[0][skip:], *chunks[1:-1], chunks[-1][:keep]])

    async def close(self) -> None:
        """Let go of the chunks kept; the reader holds nothing on the server."""
        self._held.clear()

    async def _chunk_map(self) -> ChunkMap:
        async with self._locating:  # reads started together find the map once
            if self._map is None:
                located = await locate(self.stream, self.info, self.shared.maps)
                self._map = located.map
                for index, data in located.held.items():
                    self._check_length(located.map, index, data)
                    self._hold(index, data)
                    self.bytes_fetched += len(data)
            return self._map

    def _hold(self, index: int, data: bytes) -> None:
        self._held[index] = data
        self._held.move_to_end(index)
        while len(self._held) > HELD_CHUNKS:
            self._held.popitem(last=False)

    async def _chunks(self, chunk_map: ChunkMap, indexes: range) -> list[bytes]:
        """The data of chunks ``indexes``: held ones as they are; of the others, each span of
        at least STREAM_MIN_BYTES read by one consumer, shorter ones in runs of batched gets,
        as many at once as the connection's share of CONNECTION_IN_FLIGHT_BYTES allows."""
        # taken now: a read running beside this one may let go of them meanwhile
        by_index = {k: self._held[k] for k in indexes if k in self._held}
        spans = _missing(indexes, by_index)
        streamed = [span for span in spans if _span_bytes(chunk_map, span) >= STREAM_MIN_BYTES]
        runs = [
            run for span in spans if span not in streamed for run in self._runs(chunk_map, span)
        ]
        if spans:
            gets = DirectBatches(self.stream.api, self.stream.stream, bucket=self.info.bucket)
            if runs and self._batched_gets():
                await gets.open()
            try:
                limit = self.shared.in_flight

                async def fetch(run: range) -> None:
                    async with limit:
                        datas = await self._fetch_run(gets, chunk_map, run)
                    by_index.update(zip(run, datas, strict=True))

                async def stream(span: range) -> None:
                    async with limit:
                        datas = await self._stream_span(chunk_map, span)
                    by_index.update(zip(span, datas, strict=True))

                tasks = [asyncio.ensure_future(stream(span)) for span in streamed]
                tasks += [asyncio.ensure_future(fetch(run)) for run in runs]
                try:
                    await asyncio.gather(*tasks)
                except BaseException:  # the first error is the read's; stop the rest
                    for task in tasks:
                        task.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                    raise
            finally:
                await gets.close()
        chunks = [by_index[k] for k in indexes]
        self._hold(indexes[-1], chunks[-1])
        return chunks

    def _batched_gets(self) -> bool:
        """Whether runs can come from batched direct gets: the stream allows direct gets, and
        no earlier batched get came back cut to one message (an API imported from another
        account without ``response_type: stream``; see the listing)."""
        return self.stream.allow_direct and not self.stream.api.batched_gets_cut_off

    def _runs(self, chunk_map: ChunkMap, span: range) -> list[range]:
        """A span of chunks cut into runs of about half a read window each (one batched get
        apiece)."""
        per_run = max(1, self.read_window_bytes // 2)
        runs: list[range] = []
        run_start, run_bytes = span.start, 0
        for k in span:
            run_bytes += chunk_map.length(k)
            if run_bytes >= per_run:
                runs.append(range(run_start, k + 1))
                run_start, run_bytes = k + 1, 0
        if run_start < span.stop:
            runs.append(range(run_start, span.stop))
        return runs

    async def _stream_span(self, chunk_map: ChunkMap, span: range) -> list[bytes]:
        """A span of chunks read in order by one consumer on the chunk subject, starting at the
        span's first chunk and asking for none past its last: pulls of up to a read window,
        the next asked for once the previous one has come (so the sum asked is the span)."""
        # chunks per pull: a read window's worth at the span's mean chunk size
        window = max(1, self.read_window_bytes * len(span) // _span_bytes(chunk_map, span))
        consumer, available = await self.stream.started_consumer(
            chunk_map.subject,
            len(span),
            what="the object's chunks",
            name=self.info.name,
            deliver_policy="by_start_sequence",
            start_sequence=chunk_map.sequences[span.start],
            batch=min(window, len(span)),
            pulls_ahead=1,
        )
        chunks: list[bytes] = []
        try:
            if available < len(span):
                self._gone()
            for k in span:
                # one pull open at a time: when the next is asked for, all before it came
                consumer.batch = min(window, span.stop - k)
                msg = await consumer.next()
                if (
                    msg is None
                    or msg.sequence != chunk_map.sequences[k]
                    or msg.subject != chunk_map.subject
                ):
                    self._gone()
                self._check_length(chunk_map, k, msg.data)
                chunks.append(msg.data)
        finally:
            await consumer.close()
        self.bytes_fetched += sum(len(chunk) for chunk in chunks)
        return chunks

    async def _fetch_run(self, gets: DirectBatches, chunk_map: ChunkMap, run: range) -> list[bytes]:
        """One run of chunks, each checked; those a replica did not have (behind, or purged)
        are asked for one by one, of the leader in a cluster."""
        messages: list[RawMsg] = []
        if self._batched_gets():
            first = chunk_map.sequences[run[0]]
            body: dict[str, Any] = {"seq": first, "batch": len(run)}
            if chunk_map.sequences[run[-1]] - first != len(run) - 1:
                # other messages lie between the run's chunks: the server skips them. Without
                # them it steps through sequences unfiltered, which costs it less per byte.
                body["next_by_subj"] = chunk_map.subject
            try:
                messages = await gets.get(body)
            except BatchStalled as exc:
                if exc.received != 1:
                    raise
                self.stream.api.batched_gets_cut_off = True  # one chunk at a time from now on
        chunks: list[bytes] = []
        for k, (headers, data) in zip(run, messages, strict=False):
            self._check(chunk_map, k, headers, data)
            chunks.append(data)
        for k in run[len(chunks) :]:
            found = await self.stream.first(
                chunk_map.subject, after=chunk_map.sequences[k] - 1, name=self.info.name
            )
            if found is None or found.sequence != chunk_map.sequences[k]:
                self._gone()
            self._check_length(chunk_map, k, found.data)
            chunks.append(found.data)
        self.bytes_fetched += sum(len(chunk) for chunk in chunks)
        return chunks

    def _check(self, chunk_map: ChunkMap, k: int, headers: bytes, data: bytes) -> None:
        subject = raw_header(headers, _SUBJECT)
        sequence = raw_header(headers, _SEQUENCE)
        if subject != chunk_map.subject or sequence != str(chunk_map.sequences[k]):
            self._gone()
        self._check_length(chunk_map, k, data)

    def _check_length(self, chunk_map: ChunkMap, k: int, data: bytes) -> None:
        """A message at a proven sequence is the chunk the map sized (stored messages do not
        change): another length is a damaged store."""
        if len(data) != chunk_map.length(k):
            self._forget()
            raise damaged(
                self.info,
                f"chunk {k} holds {len(data)} bytes where its map has {chunk_map.length(k)}",
            )

    def _gone(self) -> NoReturn:
        self._forget()
        raise changed(self.info)

    def _forget(self) -> None:
        """Drop the version's map (its chunks were found gone or changed)."""
        self.shared.maps.drop(version_key(self.stream, self.info))


def _missing(indexes: range, held: dict[int, bytes]) -> list[range]:
    """The spans of consecutive chunks of ``indexes`` not in ``held``."""
    spans: list[range] = []
    span_start: int | None = None
    for k in indexes:
        if k in held:
            if span_start is not None:
                spans.append(range(span_start, k))
            span_start = None
        elif span_start is None:
            span_start = k
    if span_start is not None:
        spans.append(range(span_start, indexes.stop))
    return spans


def _span_bytes(chunk_map: ChunkMap, span: range) -> int:
    return chunk_map.end(span[-1]) - chunk_map.starts[span.start]
