"""One benchmark case per process, so peak RSS is the case's own, and the transfer section.

``python -m benchmarks.core CASE URL SIZE FILE`` prints one JSON line; ``run_case`` runs it
from the parent. Cases:
raw (publish_async + ordered consumer, the practical limit), raw-push (the same, read by a
callback-driven ordered push consumer writing to a file: issue 13's get baseline;
raw-push-stock without natsobj's larger socket reads; raw-push-msg-id with a Nats-Msg-Id on each
chunk, as natsobj's put sends), natspy
(nats-py's built-in ObjectStore, get through ``writeinto``), ours (natsobj), ours-no-digest
(natsobj with SHA-256 skipped: a diagnostic of what the hash costs, never a product mode), and
the ``*-ops`` small-object cases.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import resource
import subprocess
import sys
import threading
import time
import types
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

import nats

import natsobj.aio
from benchmarks.before import Checkout
from benchmarks.figures import (
    HIGHER,
    LOWER,
    MiB,
    Section,
    add_row,
    ratio_target,
    section,
    timed,
    value_target,
)
from benchmarks.figures import throughput as mib_s

CHUNK = 128 * 1024
ROOT = Path(__file__).resolve().parent.parent


class RssSampler:
    """Samples this process's current RSS every few milliseconds; ``growth`` is the peak over
    the RSS at start (ru_maxrss would hide growth below the import-time peak)."""

    def __init__(self) -> None:
        self.base = self.peak = self._current()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _current() -> int:
        return int(Path("/proc/self/statm").read_text().split()[1]) * resource.getpagesize()

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self._current())

    def growth(self) -> int:
        self._stop.set()
        self._thread.join()
        return max(self.peak, self._current()) - self.base


def file_chunks(path: Path):
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk


async def raw(url: str, size: int, path: Path) -> dict[str, float]:
    nc = await nats.connect(url)
    js = nc.jetstream(publish_async_max_pending=64)
    stream = f"RAW{os.getpid()}"
    await js.add_stream(name=stream, subjects=[f"{stream}.>"])
    rss = RssSampler()
    start = time.perf_counter()
    for chunk in file_chunks(path):
        await js.publish_async(f"{stream}.data", chunk)
    await js.publish_async_completed()
    put = time.perf_counter() - start
    start = time.perf_counter()
    out = path.with_suffix(".raw-out")
    expected = (size + CHUNK - 1) // CHUNK
    with out.open("wb") as handle:
        sub = await js.subscribe(f"{stream}.data", ordered_consumer=True)
        for _ in range(expected):
            msg = await sub.next_msg(timeout=30)
            handle.write(msg.data)
        await sub.unsubscribe()
    get = time.perf_counter() - start
    out.unlink()
    await js.delete_stream(stream)
    await nc.close()
    return {"put_s": put, "get_s": get, "rss_growth": rss.growth()}


async def raw_push(
    url: str, size: int, path: Path, *, larger_reads: bool = True, msg_ids: bool = False
) -> dict[str, float]:
    """The baseline of issue 13: nats-py's ordered push consumer with a callback that writes
    each message to a file, the fastest nats-py reader found (no per-message future, as
    ``next_msg`` has; the file's own buffer batches the writes; a pull consumer's ``fetch``
    was slower). Its connection reads as natsobj's does (``natsobj.aio.jetstream.socket_reads``: 1
    MiB per pass, three copies of each byte instead of six): each step cut its CPU time, so
    natsobj is measured against it; ``raw-push-stock`` is the same with nats-py's own reads.
    ``msg_ids`` (``raw-push-msg-id``, a diagnostic of put) gives each chunk a ``Nats-Msg-Id``
    as natsobj's put does, so the server deduplicates every chunk as it does natsobj's."""
    nc = await nats.connect(url)
    if larger_reads:
        from natsobj.aio.jetstream.socket_reads import (
            enlarge_reads,  # not at the top: a --before checkout may lack it
        )

        enlarge_reads(nc)
    js = nc.jetstream(publish_async_max_pending=64)
    stream = f"RAWP{os.getpid()}"
    await js.add_stream(name=stream, subjects=[f"{stream}.>"])
    rss = RssSampler()
    start, cpu = time.perf_counter(), time.process_time()
    for index, chunk in enumerate(file_chunks(path)):
        ids = {"Nats-Msg-Id": f"{stream}.{index}"} if msg_ids else None
        await js.publish_async(f"{stream}.data", chunk, headers=ids)
    await js.publish_async_completed()
    put, put_cpu = time.perf_counter() - start, time.process_time() - cpu
    out = path.with_suffix(".rawp-out")
    expected = (size + CHUNK - 1) // CHUNK
    done = asyncio.Event()
    with out.open("wb", buffering=1024 * 1024) as handle:
        received = 0
        write = handle.write

        async def on_message(msg) -> None:
            nonlocal received
            write(msg.data)
            received += 1
            if received == expected:
                done.set()

        start, cpu = time.perf_counter(), time.process_time()
        sub = await js.subscribe(f"{stream}.data", cb=on_message, ordered_consumer=True)
        await asyncio.wait_for(done.wait(), 120)
    get, get_cpu = time.perf_counter() - start, time.process_time() - cpu
    await sub.unsubscribe()
    assert out.stat().st_size == size
    out.unlink()
    await js.delete_stream(stream)
    await nc.close()
    return {
        "put_s": put,
        "get_s": get,
        "put_cpu_s": put_cpu,
        "get_cpu_s": get_cpu,
        "rss_growth": rss.growth(),
    }


async def natspy(url: str, size: int, path: Path) -> dict[str, float]:
    nc = await nats.connect(url)
    js = nc.jetstream()
    bucket = f"np{os.getpid()}"
    store = await js.create_object_store(bucket)
    rss = RssSampler()
    start = time.perf_counter()
    with path.open("rb") as handle:
        await store.put("obj", handle)
    put = time.perf_counter() - start
    out = path.with_suffix(".np-out")
    start = time.perf_counter()
    with out.open("wb") as handle:
        await store.get("obj", writeinto=handle)
    get = time.perf_counter() - start
    assert out.stat().st_size == size
    out.unlink()
    await js.delete_object_store(bucket)
    await nc.close()
    return {"put_s": put, "get_s": get, "rss_growth": rss.growth()}


async def ours(url: str, size: int, path: Path) -> dict[str, float]:
    client = await natsobj.aio.connect(url)
    bucket = f"no{os.getpid()}"
    store = await client.create_store(bucket)
    rss = RssSampler()
    start, cpu = time.perf_counter(), time.process_time()
    await store.put("obj", path)
    put, put_cpu = time.perf_counter() - start, time.process_time() - cpu
    out = path.with_suffix(".no-out")
    start, cpu = time.perf_counter(), time.process_time()
    await store.get_file("obj", out)
    get, get_cpu = time.perf_counter() - start, time.process_time() - cpu
    assert out.stat().st_size == size
    out.unlink()
    await client.delete_store(bucket)
    await client.close()
    return {
        "put_s": put,
        "get_s": get,
        "put_cpu_s": put_cpu,
        "get_cpu_s": get_cpu,
        "rss_growth": rss.growth(),
    }


class _NoDigest:
    """Stands in for ``hashlib.sha256`` in ``ours-no-digest``: hashes nothing, and reports the
    same fixed digest for what put records and for what get checks against it."""

    def __init__(self, data: bytes = b"") -> None:
        del data

    def update(self, data: bytes) -> None:
        del data

    def digest(self) -> bytes:
        return bytes(32)


async def ours_no_digest(url: str, size: int, path: Path) -> dict[str, float]:
    """``ours`` with SHA-256 taken out of natsobj's chunk hashing (``natsobj.aio.chunk_worker``),
    in this process only. The difference to ``ours`` is what the digest ADR-20 requires costs
    here; the difference to ``raw-push`` is natsobj's own transport against nats-py's."""
    import natsobj.aio.chunk_worker

    natsobj.aio.chunk_worker.hashlib = types.SimpleNamespace(sha256=_NoDigest)  # type: ignore[assignment]
    return await ours(url, size, path)


async def _timed_ops(count: int, op) -> float:
    start = time.perf_counter()
    for i in range(count):
        await op(i)
    return count / (time.perf_counter() - start)


async def natspy_ops(url: str, count: int, _: Path) -> dict[str, float]:
    nc = await nats.connect(url)
    js = nc.jetstream()
    bucket = f"npo{os.getpid()}"
    store = await js.create_object_store(bucket)
    payload = os.urandom(1024)
    result = {
        "put_ops": await _timed_ops(count, lambda i: store.put(f"o{i}", payload)),
        "get_ops": await _timed_ops(count, lambda i: store.get(f"o{i}")),
        "get_info_ops": await _timed_ops(count, lambda i: store.get_info(f"o{i}")),
    }
    await js.delete_object_store(bucket)
    await nc.close()
    return result


async def ours_ops(url: str, count: int, _: Path) -> dict[str, float]:
    client = await natsobj.aio.connect(url)
    bucket = f"noo{os.getpid()}"
    store = await client.create_store(bucket)
    payload = os.urandom(1024)
    result = {
        "put_ops": await _timed_ops(count, lambda i: store.put(f"o{i}", payload)),
        "get_ops": await _timed_ops(count, lambda i: store.get_bytes(f"o{i}")),
        "get_info_ops": await _timed_ops(count, lambda i: store.get_info(f"o{i}")),
    }
    await client.delete_store(bucket)
    await client.close()
    return result


CASES = {
    "raw": raw,
    "raw-push": raw_push,
    "raw-push-stock": functools.partial(raw_push, larger_reads=False),
    "raw-push-msg-id": functools.partial(raw_push, msg_ids=True),
    "natspy": natspy,
    "ours": ours,
    "ours-no-digest": ours_no_digest,
    "natspy-ops": natspy_ops,
    "ours-ops": ours_ops,
}


# -- the parent's side: one process per case, cases interleaved across repeats ------------------


def run_case(
    case: str, url: str, size: int, path: Path, *, before: Checkout | None = None
) -> dict[str, float]:
    """``case`` in a fresh process (its RSS its own); its figures. With ``before``, natsobj's
    case runs the package of that earlier commit (``benchmarks.before``)."""
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.core", case, url, str(size), str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=before.directory if before else ROOT,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def make_file(path: Path, size: int) -> None:
    """``size`` random bytes (incompressible, as most artifacts are), written 64 MiB at a time."""
    with path.open("wb") as handle:
        remaining = size
        while remaining:
            step = min(remaining, 64 * MiB)
            handle.write(os.urandom(step))
            remaining -= step


BEFORE = "before"  # the column of natsobj at an earlier commit (``--before REF``)
TRANSFER_CLIENTS = {"raw": "raw JetStream", "natspy": "nats-py ObjectStore", "ours": "natsobj"}
TRANSFER_NOTE = (
    "A file put into the store and read back into a file. *raw JetStream* is nats-py's"
    " `publish_async` of 128 KiB messages (64 acks pending) and an ordered consumer read, with"
    " the same file I/O: the practical limit of a Python client here. *nats-py ObjectStore* is"
    " nats-py's built-in object store (get through its `writeinto` path). Peak RSS growth is"
    " over the process's RSS once its libraries are loaded, sampled every 5 ms."
)


def measure_transfer(
    url: str,
    work: Path,
    sizes: Mapping[str, int],
    repeats: int,
    small_extra: int = 2,
    *,
    before: Checkout | None = None,
) -> list[Section]:
    """Put and get of each size by the three clients (and natsobj at ``before``), and their
    peak RSS growth; sizes below 64 MiB, the noisiest, get ``small_extra`` more repeats."""
    clients = {**TRANSFER_CLIENTS, **({BEFORE: before.label} if before else {})}
    ratios = [("ours", "raw"), ("ours", "natspy"), *([("ours", BEFORE)] if before else [])]
    speed = section(
        "transfer", "Throughput: put and get of one file", TRANSFER_NOTE, clients, ratios
    )
    memory = section(
        "memory",
        "Memory: peak RSS growth during put and get",
        "The same runs as the throughput table.",
        clients,
        ratios,
    )
    with timed(speed, memory):
        for label, size in sizes.items():
            extra = small_extra if size < 64 * MiB else 0
            runs = _transfer_runs(url, work, size, repeats + extra, before)
            for op in ("put", "get"):
                samples = {impl: mib_s(size, runs[impl], f"{op}_s") for impl in runs}
                add_row(speed, f"{label} {op}", "MiB/s", HIGHER, samples)
            rss = {impl: [r["rss_growth"] / MiB for r in runs[impl]] for impl in runs}
            add_row(memory, label, "MiB", LOWER, rss)
    for op, floor in (("put", 0.9), ("get", 0.9)):
        ratio_target(speed, f"256 MiB {op} >= {floor}x raw", f"256 MiB {op}", "ours", "raw", floor)
    ratio_target(speed, "256 MiB put >= 2x nats-py", "256 MiB put", "ours", "natspy", 2)
    ratio_target(speed, "256 MiB get >= 5x nats-py", "256 MiB get", "ours", "natspy", 5)
    value_target(memory, "1 GiB file -> store -> file: RSS growth < 64 MiB", "1 GiB", "ours", 64)
    return [speed, memory]


def _transfer_runs(
    url: str, work: Path, size: int, repeats: int, before: Checkout | None
) -> dict[str, list]:
    path = work / f"{size}.bin"
    make_file(path, size)
    runs: dict[str, list[dict[str, float]]] = defaultdict(list)
    try:
        for _ in range(repeats):
            for impl in TRANSFER_CLIENTS:
                runs[impl].append(run_case(impl, url, size, path))
            if before:
                runs[BEFORE].append(run_case("ours", url, size, path, before=before))
    finally:
        path.unlink()
    return runs


def main() -> None:
    case, url, size, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
    print(json.dumps(asyncio.run(CASES[case](url, size, path))))


if __name__ == "__main__":
    main()
