"""Where an object version's bytes are: chunk k's stream sequence and first byte offset,
proven against the version's record before a byte is served, without reading the chunks.

A version's chunks are what a whole read (``natsobj.aio.reader``) takes them to be: the first
``chunks`` messages on its own subject (``$O.<bucket>.C.<nuid>``; for a record of one chunk,
the subject's last message), every one stored before the record. Every writer stores an
object's chunks before its record, so a message stored after it is no part of that version
(``stored_before``): a writer who rolls up the chunk subject and publishes other chunks under
a record left as it was is refused, by whole and ranged reads alike.

The map comes from one headers-only read of the chunk subject (each message's sequence and
``Nats-Msg-Size``, no payload), run together with two direct gets of the subject's first and
last messages (the chunks a header or footer read needs, kept by the reader). It is proven
before it is used: at least ``chunks`` messages, the first ``chunks`` of them all stored before
the record, their sizes adding up to the record's size. Chunk offsets then come from those
sizes, never from a declared ``max_chunk_size`` (a writer may break its own: the offsets of
chunks never fetched would be guesses). A map proven so places every byte where a whole read
of the same version puts it; what it cannot prove without reading everything is the digest,
so a version of one or two chunks, whose chunks the direct gets bring anyway, is also
checked against its SHA-256 (docs/random-access.md says what a range of a longer one proves).

Maps are kept per version (the stream's identity, bucket, name, nuid and meta sequence) in an
LRU held by the client (``natsobj.aio.ranges.ClientRanges``), bounded in versions and in chunks
listed one by one: a version's chunks never change, and an overwrite is a new version.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import itertools
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from natsobj.aio.stream import BucketStream, LastMsg
from natsobj.errors import DigestMismatch, ObjectChanged, ObjectNotFound
from natsobj.model import ObjectInfo, digest_bytes
from natsobj.names import chunk_subject
from natsobj.wire import MARKER_REASON

MAP_CACHE_ENTRIES = 1024  # versions whose maps are kept
# Chunks listed one by one in the kept maps, at 16 bytes each (two int64 arrays): 16 MiB. A
# map of contiguous chunks of one size lists none (its sequences and offsets are ``range``s).
MAP_CACHE_LISTED_CHUNKS = 1 << 20

# (the stream's creation time, bucket, name, nuid, meta sequence)
VersionKey = tuple[str, str, str, str, int]


@dataclass(frozen=True)
class ChunkMap:
    """The chunks of one version: chunk k is the message at ``sequences[k]`` on ``subject``
    and holds bytes ``[starts[k], starts[k + 1])`` (the last one up to ``size``). Contiguous
    chunks keep their sequences as a ``range``, chunks of one size their offsets."""

    subject: str
    size: int
    sequences: Sequence[int]
    starts: Sequence[int]

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
    header or footer read then costs no further request)."""

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

    def drop(self, key: VersionKey | None) -> None:
        dropped = self._maps.pop(key, None) if key is not None else None
        if dropped is not None:
            self.listed -= dropped.listed


def version_key(stream: BucketStream, info: ObjectInfo) -> VersionKey | None:
    """The version's key in a ``MapCache``; None (not kept) for a record whose sequence is
    unknown (one built by the caller rather than read from the stream)."""
    if info.sequence is None:
        return None
    return (stream.created, info.bucket, info.name, info.nuid, info.sequence)


async def locate(stream: BucketStream, info: ObjectInfo, maps: MapCache) -> Located:
    """The map of ``info``'s version: from ``maps``, or found and proven (see the module
    docstring). ObjectChanged when chunks are gone (overwritten or deleted since ``info`` was
    read), DigestMismatch when they disagree with the record."""
    key = version_key(stream, info)
    cached = maps.get(key) if key is not None else None
    if cached is not None:
        return Located(cached, {})
    located = await _find(stream, info)
    if key is not None:
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


def stored_before(info: ObjectInfo, sequence: int) -> None:
    """Refuse a chunk stored after the version's record (DigestMismatch): every writer stores
    an object's chunks before its record, so such a message was put there afterwards (a
    rollup of the chunk subject, say) and is no part of the version. For whole and ranged
    reads; a record of unknown sequence has nothing to hold it to."""
    if info.sequence is not None and sequence > info.sequence:
        raise damaged(
            info,
            f"a chunk at stream sequence {sequence} was stored after the meta record"
            f" (sequence {info.sequence})",
        )


def verify_digest(info: ObjectInfo, digest: bytes) -> None:
    """DigestMismatch unless ``digest`` (SHA-256 of all of the version's bytes) is the
    record's; a record without one has nothing to check. For whole and ranged reads."""
    if info.digest and digest_bytes(info.digest) != digest:
        raise DigestMismatch(
            f"SHA-256 of the data does not match {info.digest}",
            bucket=info.bucket,
            name=info.name,
        )


async def _find(stream: BucketStream, info: ObjectInfo) -> Located:
    subject = chunk_subject(info.bucket, info.nuid)
    count, size = info.chunks, info.size
    if count == 0:
        if size:
            raise damaged(info, f"the record has {size} bytes in no chunks")
        return Located(ChunkMap(subject, 0, range(0), range(0)), {})
    if count == 1:  # the subject's last message, as the whole read takes it
        only = await _last(stream, info, subject)
        if only is None or MARKER_REASON in only.headers:
            raise changed(info)
        chunk_map = _proven(info, subject, [(only.sequence, len(only.data))])
        verify_digest(info, hashlib.sha256(only.data).digest())
        return Located(chunk_map, {0: only.data})
    sizes, first, last = await asyncio.gather(
        stream.message_sizes(subject, count, name=info.name),
        stream.first(subject, name=info.name),
        _last(stream, info, subject),
    )
    chunk_map = _proven(info, subject, sizes)
    held = {
        k: found.data
        for k, found in ((0, first), (count - 1, last))
        if found is not None and found.sequence == chunk_map.sequences[k]
    }
    if count == 2:  # both chunks in hand (the second fetched when more follow it): checked
        if 1 not in held:
            held[1] = await _chunk(stream, info, chunk_map, 1)
        verify_digest(info, _sha256(held[k] for k in range(count)))
    return Located(chunk_map, held)


async def _chunk(stream: BucketStream, info: ObjectInfo, chunk_map: ChunkMap, k: int) -> bytes:
    """Chunk ``k`` of a proven map, fetched on its own."""
    sequence = chunk_map.sequences[k]
    found = await stream.first(chunk_map.subject, after=sequence - 1, name=info.name)
    if found is None or found.sequence != sequence:
        raise changed(info)
    if len(found.data) != chunk_map.length(k):
        raise damaged(info, f"chunk {k} holds {len(found.data)} bytes, not {chunk_map.length(k)}")
    return found.data


async def _last(stream: BucketStream, info: ObjectInfo, subject: str) -> LastMsg | None:
    """The chunk subject's last message; with replicas, the leader's when a replica had none
    (it may be behind, or the chunks are gone indeed)."""
    last = await stream.last(subject, name=info.name)
    if last is None and stream.replicas > 1:
        last = await stream.leader_last(subject, name=info.name)
    return last


def _proven(info: ObjectInfo, subject: str, sizes: Sequence[tuple[int, int]]) -> ChunkMap:
    """The map of the version's chunks from (sequence, size) of the messages on its chunk
    subject in stream order, held to the record: its first ``chunks`` messages, all stored
    before the record, holding the record's size between them."""
    count = info.chunks
    if len(sizes) < count:
        raise changed(info)
    chunks = sizes[:count]
    stored_before(info, chunks[-1][0])  # stream order: the last of them is the latest
    lengths = [length for _, length in chunks]
    total = sum(lengths)
    if total != info.size:
        raise damaged(info, f"its chunks hold {total} bytes, the record says {info.size}")
    first = chunks[0][0]
    sequences: Sequence[int] = array("q", (sequence for sequence, _ in chunks))
    if sequences[-1] - first + 1 == count:
        sequences = range(first, first + count)
    step = lengths[0]
    starts: Sequence[int]
    if step and all(length == step for length in lengths[:-1]):
        starts = range(0, count * step, step)
    else:
        starts = array("q", [0, *itertools.accumulate(lengths[:-1])])
    return ChunkMap(subject, info.size, sequences, starts)


def _sha256(chunks: Iterable[bytes]) -> bytes:
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.digest()


def damaged(info: ObjectInfo, what: str) -> DigestMismatch:
    """The version's chunks disagree with its record (``what``): DigestMismatch."""
    return DigestMismatch(
        f"{what}: the object is damaged",
        bucket=info.bucket,
        name=info.name,
        hint="Re-upload the object.",
    )
