"""Read-after-write probes: a write through one node, then reads through the others.

Each probe performs one write (a new name, an overwrite or a delete) on the writer's
connection and, once it has returned, reads the result through connections to the other nodes.
A read that does not reflect the write is counted as stale, by operation.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from natsobj import aio
from natsobj.errors import ObjectChanged, ObjectNotFound

SMALL = 512
MULTI_CHUNK = 3 * 1024 + 7  # with CHUNK: four chunks, so gets go through a consumer
CHUNK = 1024


@dataclass
class ProbeResult:
    probes: int = 0
    reads: Counter[str] = field(default_factory=Counter)
    stale: Counter[str] = field(default_factory=Counter)

    @property
    def total_stale(self) -> int:
        return sum(self.stale.values())


async def run_probes(
    writer: aio.ObjectStore,
    readers: list[aio.ObjectStore],
    probes: int,
    *,
    seed: int = 10,
    list_every: int = 10,
    hand_off: bool = False,
) -> ProbeResult:
    """``probes`` writes, each followed by reads on one of the readers; listings every
    ``list_every``. With ``hand_off`` the reads are given the put's sequence, the way a
    pipeline hands an artifact to the next task."""
    rng = random.Random(seed)
    result = ProbeResult()
    live: dict[str, bytes] = {}
    counter = 0
    for index in range(probes):
        result.probes += 1
        kind = rng.choice(["new", "overwrite", "delete"]) if live else "new"
        if kind == "new":
            counter += 1
            name = f"p/{counter:06d}"
        else:
            name = rng.choice(sorted(live))
        reader = readers[index % len(readers)]
        if kind == "delete":
            tombstone = await writer.delete(name)
            del live[name]
            await _expect_missing(reader, name, result, tombstone.sequence if hand_off else None)
        else:
            size = MULTI_CHUNK if rng.random() < 0.1 else SMALL
            data = rng.randbytes(size)
            info = await writer.put(name, data, chunk_size=CHUNK)
            live[name] = data
            await _expect_current(reader, name, info.sequence, data, result, hand_off)
        if index % list_every == 0:
            await _expect_listing(reader, live, result)
            await _expect_change(reader, name, kind, result)
    return result


def _count(result: ProbeResult, operation: str, stale: bool) -> None:
    result.reads[operation] += 1
    if stale:
        result.stale[operation] += 1


async def _expect_current(
    reader: aio.ObjectStore,
    name: str,
    sequence: int,
    data: bytes,
    result: ProbeResult,
    hand_off: bool,
) -> None:
    known = sequence if hand_off else None
    try:
        info = await reader.get_info(name, min_sequence=known)
        _count(result, "get_info", info.sequence < sequence)
    except ObjectNotFound:
        _count(result, "get_info", True)
    try:
        _count(result, "get_bytes", await reader.get_bytes(name, min_sequence=known) != data)
    except (ObjectNotFound, ObjectChanged):
        _count(result, "get_bytes", True)


async def _expect_missing(
    reader: aio.ObjectStore, name: str, result: ProbeResult, known: int | None
) -> None:
    """``known``: the tombstone's sequence when deletes are handed over like puts (an eventual
    read given no sequence may see the object on a replica that has not applied the delete)."""
    try:
        await reader.get_info(name, min_sequence=known)
        _count(result, "get_info", True)
    except ObjectNotFound:
        _count(result, "get_info", False)


async def _expect_listing(
    reader: aio.ObjectStore, live: dict[str, bytes], result: ProbeResult
) -> None:
    names = {info.name for info in await reader.list()}
    _count(result, "list", names != set(live))


async def _expect_change(
    reader: aio.ObjectStore, name: str, kind: str, result: ProbeResult
) -> None:
    status = await reader.status()
    changes = await reader.changes(max(0, status.last_sequence - 1), limit=10)
    seen = [info for info in changes if info.name == name]
    _count(result, "changes", not seen or seen[-1].deleted != (kind == "delete"))
