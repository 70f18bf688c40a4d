"""Issue 22's figures for BENCHMARKS.md, on the run's nats-server:

- atomic puts: one ADR-50 batch (``natsobj.aio.atomic_put``) against today's put, per size
  class, in one process taking turns (``ObjectStore.atomic_max_bytes`` forces either way), on
  one replica and on a 3-node cluster (R3); the default thresholds ``ATOMIC_MAX_BYTES`` and
  ``ATOMIC_MAX_BYTES_REPLICATED`` are read off these tables;
- Parquet: a ten-float-column file read through ``fsspec.filesystem("nats")`` (footer, one
  column, the whole table) against the same file on local disk and through s3fs from a moto
  server on loopback, counting the bytes the NATS connection received;
- put with a per-object ``ttl=`` (issue 23) against without, when ``put`` takes one.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchmarks.archive import CREDENTIALS, _Moto
from benchmarks.before import Checkout
from benchmarks.figures import (
    LOWER,
    KiB,
    MiB,
    Section,
    add_row,
    ratio_target,
    section,
    timed,
    value_target,
)
from benchmarks.parquet_reads import ReaderProcess, cases
from natsobj import aio
from natsobj.sync import run

ATOMIC = {"today": "today's put", "atomic": "one atomic batch"}
PARQUET = {
    "nats": "natsobj (fsspec)",
    "local": "local disk",
    "s3fs": "s3fs, moto on loopback",
    "floor": "raw batched direct gets of the same chunks",
    "serial": "the same, one range at a time",
}
TTL = {"plain": "put", "ttl": "put with ttl="}
COLUMNS = 10
# The largest chunk a server with the default max_payload (1 MiB) takes with natsobj's headers:
# 256 MiB in 1,000,000-byte chunks is 269 chunks, one batch; in the default 128 KiB ones, 2,048.
LARGE_CHUNK = 1_000_000


def measure(
    url: str,
    work: Path,
    repeats: int,
    put_sizes: dict[str, int],
    parquet_rows: tuple[int, int],
    before: Checkout | None = None,
) -> list[Section]:
    """The sections; ``parquet_rows`` is (row groups, rows per group). The replicated
    atomic puts stop at 16 MiB (a 256 MiB R3 put is the cluster group's matter)."""
    replicated = {label: size for label, size in put_sizes.items() if size <= 16 * MiB}
    return [
        atomic_puts(url, repeats, put_sizes),
        atomic_puts_replicated(work, repeats, replicated),
        parquet_reads(url, work, repeats, *parquet_rows, before=before),
        ttl_puts(url, repeats),
    ]


def _ops(size: int) -> int:
    """Puts per sample: about 64 MiB of data, between 1 and 50 puts."""
    return max(1, min(50, (64 * MiB) // size))


def atomic_puts(url: str, repeats: int, sizes: dict[str, int]) -> Section:
    figures = section(
        "atomic-puts",
        "Atomic puts: one ADR-50 batch against today's put, one replica",
        "The same object put over the same name again and again, atomically and today's way"
        " taking turns in one process, one file-backed bucket on one replica; puts of up to"
        " 64 MiB in all per sample. Objects of 16 MiB and more go in 1,000,000-byte chunks both"
        " ways, so 256 MiB fits one batch (1,000 messages); smaller ones in the default 128 KiB."
        " `ATOMIC_MAX_BYTES` in natsobj/aio/atomic_put.py is the largest size class where the"
        " batch is the faster.",
        ATOMIC,
        [("atomic", "today")],
    )
    with timed(figures):
        samples = run(_put_turns(url, repeats, sizes, replicas=1))
    for label, by_way in samples.items():
        add_row(figures, f"put {label}", "ms", LOWER, by_way)
    return figures


def atomic_puts_replicated(work: Path, repeats: int, sizes: dict[str, int]) -> Section:
    """The same comparison on a 3-node loopback cluster and an R3 bucket, where the server
    stages a batch in memory and proposes it once."""
    figures = section(
        "atomic-puts-r3",
        "Atomic puts: one ADR-50 batch against today's put, three replicas",
        "As above, on three `nats-server` processes clustered on loopback"
        " (`natsobj.local.embedded.NatsCluster`) and a file-backed R3 bucket."
        " `ATOMIC_MAX_BYTES_REPLICATED` in natsobj/aio/atomic_put.py is the largest size class"
        " where the batch is the faster.",
        ATOMIC,
        [("atomic", "today")],
    )
    from natsobj.local.embedded import (
        NatsCluster,  # not at the top: a --before checkout may lack it
    )

    cluster = NatsCluster(work / "atomic-cluster", size=3)
    cluster.start()
    try:
        with timed(figures):
            samples = run(_put_turns(cluster.url, repeats, sizes, replicas=3))
    finally:
        cluster.stop()
    for label, by_way in samples.items():
        add_row(figures, f"put {label}", "ms", LOWER, by_way)
    return figures


async def _put_turns(
    url: str, repeats: int, sizes: dict[str, int], *, replicas: int
) -> dict[str, dict[str, list[float]]]:
    """Milliseconds per put of each size, today's way and atomically, taking turns."""
    client = await aio.connect(url)
    store = await client.create_store(f"bench-atomic-{os.getpid()}", replicas=replicas)
    samples: dict[str, dict[str, list[float]]] = {}
    try:
        for label, size in sizes.items():
            data = os.urandom(size)
            chunk = LARGE_CHUNK if size >= 16 * MiB else None
            ops = _ops(size)
            samples[label] = {"today": [], "atomic": []}
            for _ in range(repeats):
                for way, limit in (("today", 0), ("atomic", 1 << 40)):
                    store.atomic_max_bytes = limit
                    start = time.perf_counter()
                    for _ in range(ops):
                        await store.put(label, data, chunk_size=chunk)
                    samples[label][way].append((time.perf_counter() - start) / ops * 1000)
    finally:
        await client.delete_store(store.bucket)
        await client.close()
    return samples


def ttl_puts(url: str, repeats: int) -> Section:
    figures = section(
        "ttl-puts",
        "Per-object TTL: put with and without `ttl=`",
        "1 KiB and 1 MiB puts over one name, taking turns in one process.",
        TTL,
        [("ttl", "plain")],
    )
    if "ttl" not in inspect.signature(aio.ObjectStore.put).parameters:
        figures["note"] += " Not measured: this natsobj's put takes no `ttl=` (issue 23)."
        return figures

    async def body() -> dict[str, dict[str, list[float]]]:
        client = await aio.connect(url)
        store = await client.create_store(f"bench-ttl-{os.getpid()}")
        samples: dict[str, dict[str, list[float]]] = {}
        try:
            for label, size in (("1 KiB", KiB), ("1 MiB", MiB)):
                data, ops = os.urandom(size), 50
                samples[label] = {"plain": [], "ttl": []}
                for _ in range(repeats):
                    for way, extra in (("plain", {}), ("ttl", {"ttl": 3600})):
                        start = time.perf_counter()
                        for _ in range(ops):
                            await store.put(label, data, **extra)
                        samples[label][way].append((time.perf_counter() - start) / ops * 1000)
        finally:
            await client.delete_store(store.bucket)
            await client.close()
        return samples

    with timed(figures):
        try:
            samples = run(body())
        except Exception as error:  # the ttl put may need a store setting: say so, not fail
            figures["note"] += f" Not measured: put(ttl=...) raised {type(error).__name__}."
            return figures
    for label, by_way in samples.items():
        add_row(figures, f"put {label}", "ms", LOWER, by_way)
    return figures


def parquet_reads(
    url: str, work: Path, repeats: int, groups: int, rows: int, before: Checkout | None = None
) -> Section:
    import fsspec
    import pyarrow.parquet as pq

    path = work / "ten-columns.parquet"
    _write_parquet(path, groups, rows)
    size = path.stat().st_size
    figures = section(
        "parquet-ranges",
        f"Parquet: reading a {size / MiB:.0f} MiB ten-column file",
        f"{COLUMNS} float64 columns, {groups} row groups of {rows:,} rows, uncompressed. Footer:"
        " `pq.ParquetFile(f).metadata`; one column and the whole table: `pq.read_table` with"
        ' the filesystem. natsobj reads through `fsspec.filesystem("nats")` from the run\'s'
        " server; s3fs from a moto server on loopback; local disk from the page cache. Bytes from"
        " NATS: what one more read of each kind received on the wire (through a counting proxy,"
        " untimed), over the object's size. *Raw batched direct gets* is the transport's floor"
        " here: nats-py alone (with natsobj's socket reads) fetching the chunks that hold the"
        " bytes each read needs (the footer, the column's chunks from the file's metadata, or"
        " every chunk), as batched"
        " direct gets of up to 4 MiB, four in flight, with no checks, no joining and no Parquet"
        " decoding: what nats-server and a Python client on this machine take to move those"
        " bytes at all. *One range at a time* is that floor fetching each range only when the"
        " one before has come, as pyarrow reads through any fsspec filesystem (a `PythonFile`"
        " serves one read at a time), while for fsspec's local filesystem pyarrow swaps in its"
        " own native one. With `--before`, natsobj of that commit makes the same reads in a"
        " process of its own, taking turns with today's in every repeat.",
        {**PARQUET, **({"before": before.label} if before else {})},
        [
            ("nats", "local"),
            ("nats", "s3fs"),
            ("nats", "floor"),
            ("nats", "serial"),
            *([("nats", "before")] if before else []),
        ],
    )
    moto = _Moto(work)
    proxy = CountingProxy(url)
    floor: RawChunkReads | None = None
    earlier: ReaderProcess | None = None
    try:
        with timed(figures):
            readers = _readers(url, moto, path)
            floor = RawChunkReads(url, readers["nats"][1], _case_ranges(path, pq))
            if before:
                earlier = ReaderProcess(str(before.directory), url, readers["nats"][1])
            samples = _read_turns(readers, repeats, pq, floor, earlier)
            counted = fsspec.filesystem("nats", url=proxy.url, skip_instance_cache=True)
            fetched = _bytes_per_case(counted, readers["nats"][1], proxy, pq)
    finally:
        if earlier is not None:
            earlier.stop()
        if floor is not None:
            floor.stop()
        proxy.stop()
        moto.stop()
    units = {"footer": "ms", "column": "ms", "table": "ms"}
    labels = {"footer": "footer (metadata)", "column": "one column of ten", "table": "whole table"}
    for case, label in labels.items():
        add_row(figures, label, units[case], LOWER, samples[case])
    for case, label in labels.items():
        ratio = [fetched[case] / size]
        add_row(figures, f"{label}: bytes from NATS / object size", "x", LOWER, {"nats": ratio})
    # issue 22's targets
    value_target(figures, "footer in under 20 ms", labels["footer"], "nats", 20)
    ratio_target(figures, "one column <= 3x local", labels["column"], "nats", "local", 1 / 3)
    ratio_target(figures, "whole table <= 1.5x local", labels["table"], "nats", "local", 1 / 1.5)
    whole = f"{labels['table']}: bytes from NATS / object size"
    value_target(figures, "whole table fetches <= 1.05x the object", whole, "nats", 1.05)
    return figures


def _write_parquet(path: Path, groups: int, rows: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    generator = np.random.default_rng(22)
    schema = pa.schema([(f"c{i}", pa.float64()) for i in range(COLUMNS)])
    with pq.ParquetWriter(path, schema, compression="none", use_dictionary=False) as writer:
        for _ in range(groups):
            arrays = [pa.array(generator.random(rows)) for _ in range(COLUMNS)]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema), row_group_size=rows)


def _readers(url: str, moto: _Moto, path: Path) -> dict[str, tuple[Any, str]]:
    """(filesystem, path) per column; the object is stored in NATS and S3 first."""
    import fsspec
    import s3fs

    nats_fs = fsspec.filesystem("nats", url=url, skip_instance_cache=True)
    bucket = f"bench-parquet-{os.getpid()}"
    if not nats_fs.exists(bucket):
        nats_fs.mkdir(bucket)
    nats_fs.put_file(str(path), f"{bucket}/{path.name}")
    s3_bucket = moto.new_bucket()
    s3 = s3fs.S3FileSystem(
        key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        endpoint_url=moto.endpoint,
        client_kwargs={"region_name": CREDENTIALS["AWS_REGION"]},
        skip_instance_cache=True,
    )
    s3.put_file(str(path), f"{s3_bucket}/{path.name}")
    local = fsspec.filesystem("file")
    return {
        "nats": (nats_fs, f"{bucket}/{path.name}"),
        "local": (local, str(path)),
        "s3fs": (s3, f"{s3_bucket}/{path.name}"),
    }


def _read_turns(
    readers: dict[str, tuple[Any, str]],
    repeats: int,
    pq: Any,
    floor: RawChunkReads,
    earlier: ReaderProcess | None,
) -> dict[str, Any]:
    reads = cases(pq)
    columns = [*readers, "floor", "serial", *(["before"] if earlier else [])]
    samples: dict[str, dict[str, list[float]]] = {
        case: {column: [] for column in columns} for case in reads
    }
    for _ in range(repeats):
        for case, read in reads.items():
            for column, (fs, path) in readers.items():
                start = time.perf_counter()
                read(fs, path)
                samples[case][column].append((time.perf_counter() - start) * 1000)
            for column, one_at_a_time in (("floor", False), ("serial", True)):
                start = time.perf_counter()
                floor.read(case, one_range_at_a_time=one_at_a_time)
                samples[case][column].append((time.perf_counter() - start) * 1000)
            if earlier is not None:
                samples[case]["before"].append(earlier.read(case))
    return samples


def _case_ranges(path: Path, pq: Any) -> dict[str, list[tuple[int, int]]]:
    """The byte ranges ``[start, end)`` each read case needs, from the file's own metadata:
    the footer (the last 64 KiB, as pyarrow first reads it), one column's chunk in every row
    group, or every row group whole (then the footer)."""
    size = path.stat().st_size
    metadata = pq.ParquetFile(path).metadata
    column, groups = [], []
    for group in range(metadata.num_row_groups):
        chunks = [metadata.row_group(group).column(i) for i in range(COLUMNS)]
        spans = [
            (c.dictionary_page_offset or c.data_page_offset, c.total_compressed_size)
            for c in chunks
        ]
        column.append((spans[3][0], sum(spans[3])))  # c3, as the "column" case reads
        groups.append((spans[0][0], sum(spans[-1])))
    footer = (max(0, size - 64 * KiB), size)
    return {"footer": [footer], "column": column, "table": [*groups, footer]}


def _bytes_per_case(fs: Any, path: str, proxy: CountingProxy, pq: Any) -> dict[str, int]:
    """What each read received from the server, counted on the wire (protocol and the meta
    lookup included) by reading once more through the counting proxy, untimed."""
    fs.info(path)  # connect and look the bucket up first: not part of any read
    counts = {}
    for case, read in cases(pq).items():
        before = proxy.received
        read(fs, path)
        counts[case] = proxy.received - before
    return counts


class RawChunkReads:
    """The transport's floor for each read case: nats-py alone (reading its socket as
    natsobj's connections do, ``natsobj.aio.jetstream.socket_reads``), on a loop thread of its own,
    fetching the chunks that hold the case's byte ranges by batched direct gets (ADR-31) of
    up to ``RUN_BYTES``, ``IN_FLIGHT`` at once, and keeping nothing. The object's layout (its
    first chunk's sequence; natsobj's fsspec put writes contiguous chunks of one size) is
    looked up once, untimed."""

    RUN_BYTES = 4 * MiB
    IN_FLIGHT = 4

    def __init__(self, url: str, path: str, ranges: dict[str, list[tuple[int, int]]]) -> None:
        import nats

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.nc = self._call(nats.connect(url))
        from natsobj.aio.jetstream.socket_reads import (
            enlarge_reads,  # not at the top: a --before checkout may lack it
        )

        enlarge_reads(self.nc)  # natsobj's socket reads: its connection's floor, not nats-py's
        bucket, name = path.split("/", 1)
        info = self._call(self._info(url, bucket, name))
        self.stream = f"OBJ_{bucket}"
        first = self._call(self._first_sequence(f"$O.{bucket}.C.{info.nuid}"))
        chunk = info.chunk_size or 128 * KiB
        self.runs = {  # per case, per range: its runs
            case: [
                _chunk_runs(first, chunk, start, end, self.RUN_BYTES // chunk)
                for start, end in spans
            ]
            for case, spans in ranges.items()
        }

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=120)

    async def _info(self, url: str, bucket: str, name: str) -> Any:
        async with await aio.connect(url) as client:
            return await (await client.store(bucket)).get_info(name)

    async def _first_sequence(self, subject: str) -> int:
        reply = await self.nc.request(
            f"$JS.API.DIRECT.GET.{self.stream}",
            f'{{"seq": 1, "next_by_subj": "{subject}"}}'.encode(),
            timeout=10,
        )
        return int(reply.headers["Nats-Sequence"])

    def read(self, case: str, *, one_range_at_a_time: bool = False) -> None:
        """Every range's runs, ``IN_FLIGHT`` at once; or each range's runs only when the range
        before has come."""
        ranges = self.runs[case]
        if one_range_at_a_time:
            for runs in ranges:
                self._call(self._read_runs(runs))
        else:
            self._call(self._read_runs([run for runs in ranges for run in runs]))

    async def _read_runs(self, runs: list[tuple[int, int]]) -> None:
        limit = asyncio.Semaphore(self.IN_FLIGHT)
        await asyncio.gather(*(self._read_run(limit, *run) for run in runs))

    async def _read_run(self, limit: asyncio.Semaphore, sequence: int, count: int) -> None:
        async with limit:
            done = self.loop.create_future()
            inbox = self.nc.new_inbox()

            async def on_message(msg: Any) -> None:
                status = (msg.headers or {}).get("Status")
                if status is not None and not done.done():
                    done.set_result(status)

            subscription = await self.nc.subscribe(inbox, cb=on_message)
            request = f'{{"seq": {sequence}, "batch": {count}}}'.encode()
            await self.nc.publish(f"$JS.API.DIRECT.GET.{self.stream}", request, reply=inbox)
            status = await asyncio.wait_for(done, 30)
            await subscription.unsubscribe()
            if status != "204":
                raise RuntimeError(f"batched direct get answered {status}")

    def stop(self) -> None:
        self._call(self.nc.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()


def _chunk_runs(
    first: int, chunk: int, start: int, end: int, per_run: int
) -> list[tuple[int, int]]:
    """(first sequence, chunk count) of runs of at most ``per_run`` chunks covering the chunks
    that hold ``[start, end)`` of an object whose chunks are ``chunk`` bytes from ``first``."""
    low, high = start // chunk, (end - 1) // chunk
    return [(first + k, min(per_run, high + 1 - k)) for k in range(low, high + 1, per_run)]


class CountingProxy:
    """A TCP forwarder on loopback in front of the NATS server that counts the bytes the
    server sends: what a read really fetched, whatever the client library counts."""

    def __init__(self, url: str) -> None:
        target = urlsplit(url)
        self.target = (target.hostname or "127.0.0.1", target.port or 4222)
        self.received = 0
        self.writers: list[Any] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(self._listen(), self.loop).result()
        port = self.server.sockets[0].getsockname()[1]
        self.url = f"nats://127.0.0.1:{port}"

    async def _listen(self) -> asyncio.Server:
        return await asyncio.start_server(self._forward, "127.0.0.1", 0)

    async def _forward(self, client_in: Any, client_out: Any) -> None:
        server_in, server_out = await asyncio.open_connection(*self.target)
        self.writers += [client_out, server_out]
        await asyncio.gather(
            self._pipe(client_in, server_out, count=False),
            self._pipe(server_in, client_out, count=True),
            return_exceptions=True,
        )

    async def _pipe(self, source: Any, sink: Any, *, count: bool) -> None:
        try:
            while data := await source.read(256 * KiB):
                if count:
                    self.received += len(data)
                sink.write(data)
                await sink.drain()
        except OSError:
            pass  # the other side hung up
        finally:
            sink.close()

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()

    async def _close(self) -> None:
        """Stop listening and hang up every forwarded connection (their pipes then end on
        their own), on the proxy's own loop."""
        self.server.close()
        for writer in self.writers:
            writer.close()
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        if tasks:
            await asyncio.wait(tasks, timeout=5)


def main() -> None:
    """``python -m benchmarks.ranges [URL]``: the quick sizes, printed as JSON."""
    import json
    import sys

    work = Path(tempfile.mkdtemp(prefix="natsobj-ranges-bench-"))
    try:
        from natsobj.local.embedded import (
            NatsServerProcess,  # not at the top: a --before checkout may lack it
        )

        with NatsServerProcess(work / "nats") as server:
            url = sys.argv[1] if len(sys.argv) > 1 else server.url
            sections = measure(url, work, 1, {"1 KiB": KiB, "1 MiB": MiB}, (2, 20_000))
        print(json.dumps(sections, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
