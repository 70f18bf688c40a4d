"""Several S3 targets as one archive: the write strategies of the AutoMQ document (003).

- ``replicate``: every pack and version goes to every target; a flush (and so a version)
  counts only once every target holds it, and an offload verifies every copy.
- ``failover``: write to the first target that answers, in the order given; a target that
  fails is passed over for ``probe_seconds``, then tried first again.
- ``shard``: spread packs and versions over the targets by weight (round robin with equal
  weights). The choice is a hash of the key, so a replay after a crash rewrites the same key
  on the same target; when the chosen target fails, the next one takes the write.

The index segments and ``cursor.json`` go to every target that answers (replicate: to every
target, or the flush fails), and are read as the union of what every reachable target holds,
so the archive survives any one target's outage. Segments a target missed while it was down
are copied to it when the archive is next opened. Each index record names the target(s)
holding its bytes (``ArchiveRecord.targets``); reads go there first, then to the others.

One target is the plain case: ``url`` is its URL and nothing about the layout changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import time
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from natsobj.archive import index
from natsobj.archive.index import ArchiveRecord
from natsobj.archive.target import ArchiveTarget, ArchiveTargetError, S3Options

log = logging.getLogger("natsobj.archive")

REPLICATE = "replicate"
FAILOVER = "failover"
SHARD = "shard"
STRATEGIES = (REPLICATE, FAILOVER, SHARD)
DEFAULT_PROBE_SECONDS = 30.0
# Stream metadata, which only a stream admin may change (unlike meta records, which any writer
# of the bucket may publish): where the bucket is archived (the configuration string ``url``
# gives), and every target offloaded objects' bytes went to (URLs separated by spaces). Reads
# through to S3 trust these and the reader's own configuration, never an object's record.
TARGET_METADATA_KEY = "natsobj_archive"
OFFLOAD_METADATA_KEY = "natsobj_offloaded_to"
FAN_OUT_DEPTH = 2  # pieces queued per replica: bounds memory while one replica is slower

_WEIGHT = re.compile(r"^(?P<url>.+)=(?P<weight>\d+(\.\d+)?)$")


@dataclass
class Member:
    target: ArchiveTarget
    weight: float = 1.0
    down_until: float = 0.0  # time.monotonic() before which writes pass this target over

    @property
    def url(self) -> str:
        return self.target.url


def parse_member(text: str) -> tuple[str, float]:
    """``URL[=WEIGHT]`` -> (URL, weight); a URL's own query (``?endpoint=...``) is kept."""
    match = _WEIGHT.match(text)
    if match is None:
        return text, 1.0
    weight = float(match["weight"])
    if weight <= 0:
        raise ValueError(f"archive target {text!r}: the weight must be above 0")
    return match["url"], weight


def member_urls(spec: str) -> list[str]:
    """The target URLs of a configuration string (``url``), without strategy or weights."""
    words = spec.split()
    if words and words[0] in STRATEGIES:
        words = words[1:]
    return [parse_member(word)[0] for word in words]


def holder_urls(record: ArchiveRecord) -> list[str]:
    return record.targets.split()


class ArchiveTargets:
    """One or several ``ArchiveTarget``s and the strategy that spreads writes over them."""

    def __init__(
        self,
        targets: Sequence[ArchiveTarget | tuple[ArchiveTarget, float]],
        strategy: str | None = None,
        *,
        probe_seconds: float = DEFAULT_PROBE_SECONDS,
    ) -> None:
        if not targets:
            raise ValueError("an archive needs at least one target")
        self.members = [Member(*t) if isinstance(t, tuple) else Member(t) for t in targets]
        if len(self.members) > 1 and strategy not in STRATEGIES:
            raise ValueError(
                f"several archive targets need a strategy ({', '.join(STRATEGIES)}), "
                f"not {strategy!r}"
            )
        urls = [m.url for m in self.members]
        if len(set(urls)) != len(urls):
            raise ValueError(f"an archive target is named twice: {' '.join(urls)}")
        self.strategy = strategy if len(self.members) > 1 else None
        self.probe_seconds = probe_seconds

    @classmethod
    def of(cls, target: ArchiveTarget | ArchiveTargets) -> ArchiveTargets:
        return target if isinstance(target, ArchiveTargets) else cls([target])

    @classmethod
    def parse(
        cls,
        spec: str | Sequence[str],
        strategy: str | None = None,
        options: S3Options | None = None,
        **kwargs: Any,
    ) -> ArchiveTargets:
        """From ``url`` (what ``ArchiveTargets.url`` gives: ``"failover s3://a/p s3://b/p"``)
        or from a list of ``URL[=WEIGHT]`` and a strategy (the CLI's repeated ``--to``)."""
        words = spec.split() if isinstance(spec, str) else list(spec)
        if words and words[0] in STRATEGIES:
            strategy, words = words[0], words[1:]
        members = []
        for word in words:
            url, weight = parse_member(word)
            member_options = replace(options) if options is not None else None
            members.append((ArchiveTarget(url, member_options), weight))
        return cls(members, strategy, **kwargs)

    @property
    def url(self) -> str:
        """The configuration as one string, what ``parse`` reads back: the target's URL
        alone for one target (as before there were several)."""
        if self.strategy is None:
            return self.members[0].url
        words = [
            m.url if self.strategy != SHARD or m.weight == 1 else f"{m.url}={m.weight:g}"
            for m in self.members
        ]
        return " ".join([self.strategy, *words])

    def __repr__(self) -> str:
        return f"ArchiveTargets({self.url!r})"

    # -- health -----------------------------------------------------------------------------------

    def _up(self, member: Member) -> bool:
        return time.monotonic() >= member.down_until

    def _failed(self, member: Member, exc: Exception) -> None:
        if self.strategy is None:
            return
        member.down_until = time.monotonic() + self.probe_seconds
        log.warning(
            "archive target %s failed, passed over for %.0f s: %s",
            member.url,
            self.probe_seconds,
            exc,
        )

    def _answered(self, member: Member) -> None:
        member.down_until = 0.0

    def _preferred(self, key: str) -> list[Member]:
        """Where a write of ``key`` goes, best first: answering targets before failed ones."""
        order = list(self.members)
        if self.strategy == SHARD:
            chosen = self._shard_of(key)
            order.remove(chosen)
            order.insert(0, chosen)
        return sorted(order, key=lambda m: not self._up(m))  # stable: keeps the order

    def _shard_of(self, key: str) -> Member:
        total = sum(m.weight for m in self.members)
        point = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8]) / 2**64 * total
        for member in self.members:
            point -= member.weight
            if point < 0:
                return member
        return self.members[-1]

    # -- writing ----------------------------------------------------------------------------------

    async def write(self, key: str, data: bytes) -> list[str]:
        """Upload a pack (or any whole object) per the strategy; the URLs now holding it."""
        if self.strategy in (None, REPLICATE):
            await asyncio.gather(*(m.target.put_bytes(key, data) for m in self.members))
            return [m.url for m in self.members]
        last: ArchiveTargetError | None = None
        for member in self._preferred(key):
            try:
                await member.target.put_bytes(key, data)
            except ArchiveTargetError as exc:
                self._failed(member, exc)
                last = exc
                continue
            self._answered(member)
            return [member.url]
        assert last is not None
        raise last

    async def write_stream(self, key: str, chunks: AsyncIterable[bytes]) -> list[str]:
        """A multipart upload per the strategy; the URLs now holding it. The source is read
        once: replicas are fed from it side by side, and a failed single-target upload marks
        its target down and raises, so the archiver's retry (from the durable cursor) reads
        the version again and sends it to the next target."""
        if self.strategy is None:
            await self.members[0].target.put_stream(key, chunks)
            return [self.members[0].url]
        if self.strategy == REPLICATE:
            await _fan_out(chunks, [m.target for m in self.members], key)
            return [m.url for m in self.members]
        member = self._preferred(key)[0]
        try:
            await member.target.put_stream(key, chunks)
        except ArchiveTargetError as exc:
            self._failed(member, exc)
            raise
        self._answered(member)
        return [member.url]

    async def write_everywhere(self, key: str, data: bytes) -> None:
        """Index segments and the cursor: every target (replicate), or every one not passed
        over (at least one must take it). A target that was down gets what it missed copied
        when the archive is next opened (``load_index``)."""
        if self.strategy in (None, REPLICATE):
            await self.write(key, data)
            return
        members = [m for m in self.members if self._up(m)] or self.members
        results = await asyncio.gather(
            *(m.target.put_bytes(key, data) for m in members), return_exceptions=True
        )
        errors = []
        for member, result in zip(members, results, strict=True):
            if isinstance(result, ArchiveTargetError):
                self._failed(member, result)
                errors.append(result)
            elif isinstance(result, BaseException):
                raise result
            else:
                self._answered(member)
        if len(errors) == len(members):
            raise errors[0]

    # -- the index --------------------------------------------------------------------------------

    async def _reachable(self) -> list[tuple[Member, list[str]]]:
        """Each target's index segment keys, for the targets that answer a LIST."""
        if self.strategy in (None, REPLICATE):  # every target must hold the whole index
            keys = await asyncio.gather(*(index.segment_keys(m.target) for m in self.members))
            return list(zip(self.members, keys, strict=True))
        listed = await asyncio.gather(
            *(index.segment_keys(m.target) for m in self.members), return_exceptions=True
        )
        reachable = []
        for member, result in zip(self.members, listed, strict=True):
            if isinstance(result, ArchiveTargetError):
                self._failed(member, result)
            elif isinstance(result, BaseException):
                raise result
            else:
                reachable.append((member, result))
        if not reachable:
            raise ArchiveTargetError(
                f"no archive target answers: {' '.join(m.url for m in self.members)}"
            )
        return reachable

    async def load_index(self) -> list[ArchiveRecord]:
        """Every record, in sequence order, each sequence once, from the union of the
        reachable targets' segments. A record without ``targets`` (written by a one-target
        archive) is held by the target whose index it came from. Segments a reachable target
        lacks are copied to it, so the index survives the loss of any one target later."""
        reachable = await self._reachable()
        everywhere = sorted({key for _, keys in reachable for key in keys})
        seen: dict[int, ArchiveRecord] = {}
        for key in everywhere:
            holders = [m for m, keys in reachable if key in keys]
            records = await self._read_segment(holders[0], key)
            if records is None:
                continue
            for record in records:
                seen.setdefault(record.sequence, record)
            if self.strategy is not None:
                for member, keys in reachable:
                    if key not in keys:
                        await member.target.put_bytes(key, index.encode_segment(records))
        return [seen[s] for s in sorted(seen)]

    async def _read_segment(self, member: Member, key: str) -> list[ArchiveRecord] | None:
        data = await member.target.get_bytes(key)
        if data is None:
            return None
        records = index.decode_segment(data)
        if self.strategy is not None:
            for record in records:
                if record.key and not record.targets:
                    record.targets = member.url
        return records

    async def indexed_through(self) -> int:
        """The highest sequence any reachable target's segments cover: where to resume."""
        reachable = await self._reachable()
        return max((index.segment_range(k)[1] for _, keys in reachable for k in keys), default=0)

    async def write_cursor(self, bucket: str, sequence: int, **stats: Any) -> None:
        doc = {
            "bucket": bucket,
            "sequence": sequence,
            "updated_at": datetime.now(UTC).isoformat(),
            **stats,
        }
        await self.write_everywhere(index.CURSOR_KEY, json.dumps(doc, indent=1).encode())

    async def read_cursor(self) -> dict[str, Any]:
        """The newest ``cursor.json`` among the reachable targets (highest sequence)."""
        newest: dict[str, Any] = {}
        for member, _ in await self._reachable():
            data = await member.target.get_bytes(index.CURSOR_KEY)
            doc = json.loads(data) if data else {}
            if doc and int(doc.get("sequence", 0)) >= int(newest.get("sequence", -1)):
                newest = doc
        return newest

    # -- reading ----------------------------------------------------------------------------------

    def holders(self, record: ArchiveRecord) -> list[ArchiveTarget]:
        """The targets the record names as holding its bytes; all of them when it names none
        (or none of this configuration's)."""
        named = holder_urls(record)
        found = [m.target for m in self.members if m.url in named]
        return found or [m.target for m in self.members]

    async def stream(self, record: ArchiveRecord) -> AsyncGenerator[bytes]:
        """The record's bytes from the first holder that answers (then from the other
        targets). A target failing after its first piece raises: the bytes already handed
        out cannot be taken back."""
        order = self.holders(record)
        order += [m.target for m in self.members if m.target not in order]
        for position, target in enumerate(order):
            pieces = target.stream(record.key, record.offset, record.offset + record.length)
            try:
                first = await anext(pieces, None)
            except ArchiveTargetError as exc:
                await pieces.aclose()
                if position == len(order) - 1:
                    raise
                log.warning(
                    "reading %s from %s failed, trying the next: %s", record.key, target.url, exc
                )
                continue
            try:
                if first is not None:
                    yield first
                async for piece in pieces:
                    yield piece
            finally:
                await pieces.aclose()
            return


async def _fan_out(chunks: AsyncIterable[bytes], targets: list[ArchiveTarget], key: str) -> None:
    """Feed one source to a multipart upload on every target, each a few pieces behind at
    most. Any failure (of the source or of one upload) cancels the rest and raises, so the
    version is not indexed; the archiver's retry uploads it again to the same key."""
    queues: list[asyncio.Queue[bytes | None]] = [asyncio.Queue(FAN_OUT_DEPTH) for _ in targets]

    async def drain(queue: asyncio.Queue[bytes | None]) -> AsyncIterator[bytes]:
        while (piece := await queue.get()) is not None:
            yield piece

    async def pump() -> None:
        async for piece in chunks:
            for queue in queues:
                await queue.put(piece)
        for queue in queues:
            await queue.put(None)

    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(pump())
            for target, queue in zip(targets, queues, strict=True):
                group.create_task(target.put_stream(key, drain(queue)))
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None  # the cause, as a one-target upload raises it


async def load_index(target: ArchiveTarget | ArchiveTargets) -> list[ArchiveRecord]:
    """Every record of the archive, in sequence order, each sequence once."""
    return await ArchiveTargets.of(target).load_index()
