"""Chunk hashing and writing off the event loop (natsobj.aio.chunk_worker): the threaded worker and
the inline sink give the same digest and bytes, hold back a fast producer, surface a failed
write, and stop writing once abandoned; a get_file through the worker keeps the verification
rules (no destination file on a digest mismatch)."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import subprocess
import sys
import time

import pytest

import natsobj
from natsobj.aio import chunk_worker
from natsobj.aio.records import publish_record
from natsobj.model import format_digest
from natsobj.sync import run

CHUNKS = [os.urandom(100_000 + i) for i in range(40)]


async def feed(sink, chunks=CHUNKS) -> bytes:
    for chunk in chunks:
        await sink.put(chunk)
    return await sink.digest()


@pytest.mark.parametrize("chunks", [CHUNKS, CHUNKS[:3]], ids=["many", "under-a-batch"])
@pytest.mark.parametrize("threaded", [True, False], ids=["thread", "inline"])
def test_digest_and_bytes_in_order(threaded, chunks):
    """Under a batch in all, the worker hashes and writes on the loop, never starting its
    thread; either way the bytes arrive in order."""
    started = []

    async def body() -> tuple[bytes, bytes]:
        out = io.BytesIO()
        sink = (
            chunk_worker.ChunkWorker(300_000, out.write)
            if threaded
            else chunk_worker.InlineSink(out.write)
        )
        digest = await feed(sink, chunks)
        started.append(getattr(sink, "_thread", None) is not None)
        return digest, out.getvalue()

    digest, written = asyncio.run(body())
    joined = b"".join(chunks)
    assert written == joined
    assert digest == hashlib.sha256(joined).digest()
    assert started == [threaded and len(joined) >= chunk_worker.HANDOFF_BYTES]


def test_a_slow_writer_holds_the_producer_back():
    """With room for ~2 batches, the producer waits: the queue never holds much more."""
    peak = 0

    async def body() -> None:
        nonlocal peak

        def slow_write(data: bytes) -> None:
            nonlocal peak
            peak = max(peak, worker._queued)
            time.sleep(0.002)  # a slow disk

        worker = chunk_worker.ChunkWorker(2 * chunk_worker.HANDOFF_BYTES, slow_write)
        await feed(worker, [os.urandom(128 * 1024) for _ in range(160)])  # 20 MiB

    asyncio.run(body())
    assert 0 < peak <= 3 * chunk_worker.HANDOFF_BYTES


def test_a_failed_write_is_raised_on_the_loop():
    async def body() -> None:
        def full_disk(data: bytes) -> None:
            raise OSError(28, "No space left on device")

        worker = chunk_worker.ChunkWorker(chunk_worker.HANDOFF_BYTES, full_disk)
        await feed(worker, [os.urandom(512 * 1024) for _ in range(8)])

    with pytest.raises(OSError, match="No space left"):
        asyncio.run(body())


def test_abandon_stops_writing_before_it_returns():
    async def body() -> tuple[int, int]:
        out = io.BytesIO()
        worker = chunk_worker.ChunkWorker(64 * chunk_worker.HANDOFF_BYTES, out.write)
        for _ in range(32):
            await worker.put(os.urandom(512 * 1024))
        await worker.abandon()
        written = len(out.getvalue())
        await asyncio.sleep(0.05)
        return written, len(out.getvalue())

    at_return, later = asyncio.run(body())
    assert at_return == later  # nothing reaches the file after abandon() returned


@pytest.fixture(params=["thread", "inline"])
def sink_mode(request, monkeypatch):
    """Force chunk_sink's choice, whatever this machine's CPU count."""
    monkeypatch.setattr(chunk_worker, "THREAD_MIN_CPUS", 1 if request.param == "thread" else 10_000)
    return request.param


def test_put_and_get_file_through_either_sink(store, sink_mode, tmp_path):
    data = os.urandom(3 * 1024 * 1024 + 7)
    info = store.put("big", data)  # hashed through the sink as well
    assert info.digest == format_digest(hashlib.sha256(data).digest())
    target = tmp_path / "big.bin"
    assert store.get_file("big", target).digest == info.digest
    assert target.read_bytes() == data


def test_digest_mismatch_leaves_no_file_with_either_sink(store, sink_mode, tmp_path):
    info = store.put("victim", os.urandom(3 * 1024 * 1024))
    wrong = info.evolve(digest="SHA-256=" + "A" * 43 + "=")
    run(publish_record(store.aio.bucket_stream, wrong))
    with pytest.raises(natsobj.DigestMismatch, match="victim"):
        store.get_file("victim", tmp_path / "victim.bin")
    assert list(tmp_path.iterdir()) == []  # no destination file, no temporary file


PUT_GET_WITHOUT_AFFINITY = """
import io, os, sys
del os.sched_getaffinity  # as on macOS and Windows
import natsobj
data = os.urandom(3 * 1024 * 1024 + 17)
with natsobj.connect(sys.argv[1]) as client:
    store = client.create_store(sys.argv[2])
    store.put("portable.bin", io.BytesIO(data))
    assert store.get_bytes("portable.bin") == data
    store.get_file("portable.bin", sys.argv[3])
    assert open(sys.argv[3], "rb").read() == data
print("ok")
"""


def test_put_and_get_without_sched_getaffinity(nats_url, bucket_name, tmp_path):
    """os.sched_getaffinity is Linux-only: without it (macOS, Windows) the put and get paths
    still choose a chunk sink and move the bytes intact."""
    result = subprocess.run(
        [sys.executable, "-c", PUT_GET_WITHOUT_AFFINITY, nats_url, bucket_name, tmp_path / "out"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
