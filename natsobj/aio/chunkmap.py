"""Where an object version's bytes are: chunk k's stream sequence and first byte offset,
found without reading the chunks before an offset.

An object's chunks are the messages on its own subject (``$O.<bucket>.C.<nuid>``), written
before its meta record. Two ways to map them, both exact for any writer:

- **Fast path** (two direct gets, run together): the subject's first message (``next_by_subj``
  from sequence 1) and its last (``last_by_subj``). When ``last - first + 1`` equals the
  record's chunk count, the chunks fill those sequences and chunk k is at ``first + k``
  (contiguous: the usual case, a put that nothing interleaved with). When moreover the
  record declares ``max_chunk_size`` = c, has ``ceil(size / c)`` chunks, the first chunk is c
  bytes and the last is the rest, every chunk is c bytes (chunks of at most c bytes can only
  add up that way), so chunk k starts at ``k * c``. Every client writes chunks of at most its
  declared size; every chunk fetched is checked against it again. A record of one chunk
  needs only the last message (the first is the same one): it is the chunk when it holds
  the record's size, as the whole-object read of one chunk takes it.
- **Fallback** (one headers-only read of the chunk subject): the sequence and
  ``Nats-Msg-Size`` of each chunk, no payload. For chunks of uneven sizes (nats.go writes what
  each ``Read`` returned) and for puts that interleaved with others.

Maps are kept per version (bucket, name, nuid, meta sequence) in an LRU in the process,
bounded in versions and in chunks listed one by one: a version's chunks never change, and an
overwrite is a new version.
"""

from __future__ import annotations

import asyncio
import bisect
import itertools
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from natsobj.aio.stream import BucketStream, LastMsg
from natsobj.errors import DigestMismatch, ObjectChanged, ObjectNotFound
from natsobj.model import ObjectInfo
from natsobj.names import chunk_subject

MAP_CACHE_ENTRIES = 1024  # versions whose maps are kept
# Chunks listed one by one in the kept maps, at 16 bytes each (two int64 arrays): 16 MiB. A
# fast-path map lists none (its sequences and offsets are ``range`` objects).
MAP_CACHE_LISTED_CHUNKS = 1 << 20

VersionKey = tuple[str, str, str, int | None]


@dataclass(frozen=True)
class ChunkMap:
    """The chunks of one version: chunk k is the message at ``sequences[k]`` on ``subject``
    and holds bytes ``[starts[k], starts[k + 1])`` (the last one up to ``size``). Contiguous,
    uniform maps keep ``range`` objects, not lists."""

    subject: str
    size: int
    sequences: Sequence[int]
    starts: Sequence[int]
    mapped: bool  # built from the headers-only read (the fallback), not the fast path

    def __len__(self) -> int:
        return len(self.sequences)

    @property
    def listed(self) -> int:
        """How many entries it holds one by one (what it weighs in the cache)."""
        return sum(len(values) for values in (self.sequences, self.starts) if type(values) is array)

    def end(self, k: int) -> int:
        return self.starts[k + 1] if k + 1 < len(self.starts) else self.size

    def length(self, k: int) -> int:
        return self.end(k) - self.starts[k]

    def chunks_for(self, start: int, end: int) -> range:
        """The chunks holding bytes ``[start, end)`` (none for an empty range)."""
        if start >= end:
            return range(0)
        first = bisect.bisect_right(self.starts, start) - 1
        last = bisect.bisect_right(self.starts, end - 1) - 1
        return range(first, last + 1)


@dataclass(frozen=True)
class Located:
    """A version's map and the chunks its finding fetched whole (the first and last: a
    footer read then costs no further request)."""

    map: ChunkMap
    held: dict[int, bytes]


class MapCache:
    """Maps by version, least recently used dropped first, bounded in versions
    (``MAP_CACHE_ENTRIES``) and in chunks listed one by one (``MAP_CACHE_LISTED_CHUNKS``)."""

    def __init__(self) -> None:
        self._maps: OrderedDict[VersionKey, ChunkMap] = OrderedDict()
        self.listed = 0

    def __len__(self) -> int:
        return len(self._maps)

    def get(self, key: VersionKey) -> ChunkMap | None:
        found = self._maps.get(key)
        if found is not None:
            self._maps.move_to_end(key)
        return found

    def put(self, key: VersionKey, chunk_map: ChunkMap) -> None:
        self.drop(key)
        self._maps[key] = chunk_map
        self.listed += chunk_map.listed
        while len(self._maps) > 1 and (
            len(self._maps) > MAP_CACHE_ENTRIES or self.listed > MAP_CACHE_LISTED_CHUNKS
        ):
            self.drop(next(iter(self._maps)))

    def drop(self, key: VersionKey) -> None:
        dropped = self._maps.pop(key, None)
        if dropped is not None:
            self.listed -= dropped.listed


maps = MapCache()  # the process's


def version_key(info: ObjectInfo) -> VersionKey:
    return (info.bucket, info.name, info.nuid, info.sequence)


def forget(info: ObjectInfo) -> None:
    """Drop a version's map (its chunks were found gone)."""
    maps.drop(version_key(info))


async def locate(stream: BucketStream, info: ObjectInfo, *, exhaustive: bool = False) -> Located:
    """The map of ``info``'s version: from the cache, or found (see the module docstring).
    ObjectChanged when the chunks are gone (overwritten or deleted since ``info`` was read),
    DigestMismatch when they disagree with the record. ``exhaustive``: from every chunk's
    size (the fallback) even where the fast path would do, for a fast-path map that a chunk
    of another length disproved."""
    key = version_key(info)
    cached = maps.get(key)
    if cached is not None and (cached.mapped or not exhaustive):
        return Located(cached, {})
    if exhaustive:
        located = Located(await _mapped(stream, info, chunk_subject(info.bucket, info.nuid)), {})
    else:
        located = await _find(stream, info)
    maps.put(key, located.map)
    return located


def changed(info: ObjectInfo, what: str = "its chunks are gone") -> ObjectChanged | ObjectNotFound:
    """Chunks of a version vanished: it expired (past its ``expires``: there is nothing to
    read again), or it was overwritten or deleted meanwhile. For whole and ranged reads."""
    if info.expires is not None and info.expires <= datetime.now(UTC):
        return ObjectNotFound("object expired while being read", bucket=info.bucket, name=info.name)
    return ObjectChanged(
        f"{what} (overwritten or deleted since it was opened)",
        bucket=info.bucket,
        name=info.name,
        hint="Open it again to read the current version.",
    )


async def _find(stream: BucketStream, info: ObjectInfo) -> Located:
    subject = chunk_subject(info.bucket, info.nuid)
    count, size = info.chunks, info.size
    if count == 0:
        if size:
            raise _damaged(info, f"the record has {size} bytes in no chunks")
        return Located(ChunkMap(subject, 0, range(0), range(0), mapped=False), {})
    if count == 1:  # its first message would be the last one: fetched once
        only = await _last(stream, info, subject)
        if only is None:
            raise changed(info)
        # every writer stores an object's chunks before its record: a message after the
        # record is not the put's chunk (the headers-only map then says what is there)
        written_before = info.sequence is None or only.sequence < info.sequence
        if len(only.data) == size and written_before:
            sequences = range(only.sequence, only.sequence + 1)
            chunk_map = ChunkMap(subject, size, sequences, range(0, 1), mapped=False)
            return Located(chunk_map, {0: only.data})
        return Located(await _mapped(stream, info, subject), {})
    first, last = await asyncio.gather(
        stream.first(subject, name=info.name), _last(stream, info, subject)
    )
    if first is None or last is None:
        raise changed(info)
    if last.sequence - first.sequence + 1 == count:
        starts = _uniform_starts(info, first, last)
        if starts is not None:
            sequences = range(first.sequence, first.sequence + count)
            chunk_map = ChunkMap(subject, size, sequences, starts, mapped=False)
            return Located(chunk_map, {0: first.data, count - 1: last.data})
    return Located(await _mapped(stream, info, subject), {})


async def _last(stream: BucketStream, info: ObjectInfo, subject: str) -> LastMsg | None:
    """The chunk subject's last message; with replicas, the leader's when a replica had none
    (it may be behind, or the chunks are gone indeed)."""
    last = await stream.last(subject, name=info.name)
    if last is None and stream.replicas > 1:
        last = await stream.leader_last(subject, name=info.name)
    return last


def _uniform_starts(info: ObjectInfo, first: LastMsg, last: LastMsg) -> range | None:
    """The chunk offsets of two or more chunks when the edges prove every chunk but the last
    is the declared size (see the module docstring); None when they do not."""
    count, size = info.chunks, info.size
    chunk = info.chunk_size
    if not chunk or count != -(-size // chunk) or len(first.data) != chunk:
        return None
    if len(last.data) != size - (count - 1) * chunk:
        return None
    return range(0, count * chunk, chunk)


async def _mapped(stream: BucketStream, info: ObjectInfo, subject: str) -> ChunkMap:
    """The fallback: every chunk's sequence and size from one headers-only read."""
    sizes = await stream.message_sizes(subject, info.chunks, name=info.name)
    if len(sizes) < info.chunks:
        raise changed(info)
    if len(sizes) > info.chunks:
        raise _damaged(info, f"{len(sizes)} chunks are stored, the record names {info.chunks}")
    total = sum(length for _, length in sizes)
    if total != info.size:
        raise _damaged(info, f"the chunks hold {total} bytes, the record says {info.size}")
    first = sizes[0][0]
    sequences: Sequence[int] = array("q", (sequence for sequence, _ in sizes))
    if sequences[-1] - first + 1 == len(sequences):
        sequences = range(first, first + len(sequences))
    starts = array("q", [0, *itertools.accumulate(length for _, length in sizes[:-1])])
    return ChunkMap(subject, info.size, sequences, starts, mapped=True)


def _damaged(info: ObjectInfo, what: str) -> DigestMismatch:
    return DigestMismatch(
        f"{what}: the object is damaged",
        bucket=info.bucket,
        name=info.name,
        hint="Re-upload the object.",
    )
