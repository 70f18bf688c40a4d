"""Turn whatever a caller hands to ``put`` into fixed-size chunks, reading lazily."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from pathlib import Path
from typing import Any, Protocol, cast


class Readable(Protocol):
    """A binary file as ``put`` reads it: ``read(n)`` returning bytes (``fileno``, when there
    is one, tells a disk file from a pipe). Open files and wrappers such as a progress
    counter both qualify."""

    def read(self, size: int = -1, /) -> bytes: ...


# What an iterable source may yield: any bytes-like block, sliced into chunks as it comes.
Block = bytes | bytearray | memoryview
PutSource = (
    bytes
    | bytearray
    | memoryview
    | str
    | os.PathLike[str]
    | Readable
    | Iterable[Block]
    | AsyncIterable[Block]
)


def known_size(source: Any) -> int | None:
    """How many bytes a put of ``source`` will send, when that is known without reading it:
    bytes, a path to a regular file, a handle on one that tells its position (from there); None
    for text, pipes and iterables."""
    if isinstance(source, bytes | bytearray | memoryview):
        return memoryview(source).nbytes
    if isinstance(source, os.PathLike):
        try:
            status = os.stat(source)
        except OSError:
            return None  # the put itself says what is wrong with the path
        return status.st_size if stat.S_ISREG(status.st_mode) else None
    if not (hasattr(source, "read") and hasattr(source, "tell")):
        return None
    try:
        status = os.fstat(source.fileno())
        return max(status.st_size - source.tell(), 0) if stat.S_ISREG(status.st_mode) else None
    except (AttributeError, OSError, ValueError):
        return None


async def iter_chunks(source: Any, chunk_size: int) -> AsyncIterator[bytes]:
    """Yield chunks of exactly ``chunk_size`` bytes (the last may be shorter)."""
    if isinstance(source, str):
        source = source.encode("utf-8")
    if isinstance(source, bytes | bytearray | memoryview):
        view = memoryview(source)
        for start in range(0, len(view), chunk_size):
            yield bytes(view[start : start + chunk_size])
        return
    if isinstance(source, os.PathLike):
        with Path(source).open("rb") as handle:
            async for chunk in _from_file(handle, chunk_size):
                yield chunk
        return
    if hasattr(source, "read"):
        async for chunk in _from_file(source, chunk_size):
            yield chunk
        return
    if isinstance(source, AsyncIterable):
        async for chunk in _rechunk(source, chunk_size):
            yield chunk
        return
    if isinstance(source, Iterable):
        async for chunk in _rechunk(_aiter(source), chunk_size):
            yield chunk
        return
    raise TypeError(
        f"cannot put a {type(source).__name__}: pass bytes, str, a path, a binary file "
        "or an (async) iterable of bytes"
    )


async def _aiter(items: Iterable[Block]) -> AsyncIterator[Block]:
    # A generator may block (it may be reading a socket or waiting on another task): advance
    # it in a worker thread so the event loop, shared by the whole process, keeps running.
    iterator = iter(items)
    done = object()
    while (item := await asyncio.to_thread(next, iterator, done)) is not done:
        yield cast(Block, item)  # the sentinel aside, what the iterable yields


def _is_regular_file(handle: Any) -> bool:
    try:
        return stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):
        return False


async def _from_file(handle: Readable, chunk_size: int) -> AsyncIterator[bytes]:
    # Disk reads are quick enough to do inline; pipes and sockets may block, so use a thread.
    inline = _is_regular_file(handle)
    while True:
        data = (
            handle.read(chunk_size) if inline else await asyncio.to_thread(handle.read, chunk_size)
        )
        if isinstance(data, str):
            raise TypeError("put needs a binary file; open it with 'rb'")
        if not data:
            return
        if len(data) < chunk_size and not inline:
            # a short read from a pipe is not the end: fill the chunk so sizes stay uniform
            buffer = bytearray(data)
            while len(buffer) < chunk_size:
                more = await asyncio.to_thread(handle.read, chunk_size - len(buffer))
                if not more:
                    break
                buffer += more
            data = bytes(buffer)
        yield data
        if len(data) < chunk_size:
            return


async def _rechunk(items: AsyncIterable[Block], chunk_size: int) -> AsyncIterator[bytes]:
    pending = bytearray()  # never more than one chunk: large blocks are sliced, not shifted
    async for item in items:
        if not isinstance(item, bytes | bytearray | memoryview):
            raise TypeError(f"iterable sources must yield bytes, got {type(item).__name__}")
        view = memoryview(item)
        if pending:
            take = chunk_size - len(pending)
            pending += view[:take]
            view = view[take:]
            if len(pending) < chunk_size:
                continue
            yield bytes(pending)
            pending.clear()
        while len(view) >= chunk_size:
            yield bytes(view[:chunk_size])
            view = view[chunk_size:]
        pending += view
    if pending:
        yield bytes(pending)
