"""Hashing (and writing) an object's chunks, on a worker thread while the event loop receives
the next ones where a core is free for it.

SHA-256 and file writes release the GIL, so a thread fed in order overlaps them with the
socket reads and message parsing that must stay on the loop: a get runs at the speed of the
slower of the two instead of their sum. The queue is bounded in bytes, so a slow disk holds
back the reader (and, through flow control, the server) instead of filling memory.

The thread needs a core of its own, beside the event loop's and nats-server's. Without one it only
competes for the GIL and the cores (each hashed or written chunk gives up the GIL and takes it back,
and the loop waits for it after every socket read), and hashing and writing inline does no worse
(docs/performance.md), so the thread is used from three CPUs on: ``chunk_sink`` chooses by the CPUs
this process may use. A small object, under one batch in all, never starts the thread: starting one
costs more than hashing it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import queue
import threading
from collections.abc import Callable

HANDOFF_BYTES = 1024 * 1024
THREAD_MIN_CPUS = 3  # the event loop, nats-server (often local), and this thread


def chunk_sink(
    max_bytes: int, write: Callable[[bytes], object] | None = None
) -> ChunkWorker | InlineSink:
    """The chunk consumer for this machine: threaded with a core to spare, inline otherwise."""
    if usable_cpus() >= THREAD_MIN_CPUS:
        return ChunkWorker(max_bytes, write)
    return InlineSink(write)


def usable_cpus() -> int:
    """The CPUs this process may run on. ``os.sched_getaffinity`` exists only on Linux (and
    some BSDs); elsewhere (macOS, Windows) every CPU of the machine counts."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        return len(affinity(0))
    return os.cpu_count() or 1


class InlineSink:
    """ChunkWorker's interface, doing the work on the caller's thread."""

    def __init__(self, write: Callable[[bytes], object] | None = None) -> None:
        self._sha = hashlib.sha256()
        self._write = write

    async def put(self, chunk: bytes) -> None:
        self._sha.update(chunk)
        if self._write is not None:
            self._write(chunk)

    async def digest(self) -> bytes:
        return self._sha.digest()

    async def abandon(self) -> None:
        """Nothing is queued: there is nothing to stop."""


class ChunkWorker:
    """Feeds chunks, in order, to SHA-256 and an optional ``write`` on one thread."""

    def __init__(self, max_bytes: int, write: Callable[[bytes], object] | None = None) -> None:
        self.max_bytes = max(1, max_bytes)
        self._sha = hashlib.sha256()
        self._write = write
        self._loop = asyncio.get_running_loop()
        self._queue: queue.SimpleQueue[list[bytes] | None] = queue.SimpleQueue()
        self._batch: list[bytes] = []  # chunks not yet handed to the thread
        self._batch_bytes = 0
        self._lock = threading.Lock()
        self._queued = 0  # bytes handed over and not yet processed
        self._room: asyncio.Future[None] | None = None  # waited on while the queue is full
        self._done: asyncio.Future[None] = self._loop.create_future()
        self._error: BaseException | None = None
        self._abandoned = False
        self._thread: threading.Thread | None = None  # started by the first full batch

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="natsobj-chunks", daemon=True)
        self._thread.start()

    async def put(self, chunk: bytes) -> None:
        """Hand a chunk over; waits only while ``max_bytes`` are already queued. Chunks go to
        the thread in batches of ``HANDOFF_BYTES``: one wake-up per batch, not per chunk."""
        if self._error is not None:
            raise self._error
        self._batch.append(chunk)
        self._batch_bytes += len(chunk)
        if self._batch_bytes >= HANDOFF_BYTES:
            await self._hand_off()

    async def _hand_off(self) -> None:
        batch, size = self._batch, self._batch_bytes
        self._batch, self._batch_bytes = [], 0
        if self._thread is None:
            self._start()
        with self._lock:
            self._queued += size
            full = self._queued > self.max_bytes
            if full:
                self._room = self._loop.create_future()
            room = self._room
        self._queue.put(batch)
        if full and room is not None:
            await room

    async def digest(self) -> bytes:
        """The SHA-256 of every chunk, once the thread has processed (and written) them all.
        Less than a batch in all (a small object) never starts the thread: it is hashed and
        written here, which is quicker than starting one."""
        if self._thread is None:
            for chunk in self._batch:
                self._sha.update(chunk)
                if self._write is not None:
                    self._write(chunk)
            self._batch.clear()
            return self._sha.digest()
        if self._batch:
            await self._hand_off()
        self._queue.put(None)
        await self._done
        if self._error is not None:
            raise self._error
        return self._sha.digest()

    async def abandon(self) -> None:
        """Stop early (the read failed or was closed): skip what is queued, wait for the thread
        so nothing is written after the caller closes or removes its file."""
        self._abandoned = True
        if self._thread is None:
            return
        self._queue.put(None)
        await asyncio.shield(self._done)

    def _run(self) -> None:
        try:
            while (batch := self._queue.get()) is not None:
                if not self._abandoned and self._error is None:
                    try:
                        for chunk in batch:
                            self._sha.update(chunk)
                            if self._write is not None:
                                self._write(chunk)
                    except BaseException as exc:  # surfaced on the loop by put() / digest()
                        self._error = exc
                self._processed(sum(map(len, batch)))
        finally:
            self._loop.call_soon_threadsafe(_resolve, self._done)

    def _processed(self, size: int) -> None:
        with self._lock:
            self._queued -= size
            room = self._room
            if room is None or (self._queued > self.max_bytes // 2 and self._error is None):
                return
            self._room = None
        self._loop.call_soon_threadsafe(_resolve, room)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
