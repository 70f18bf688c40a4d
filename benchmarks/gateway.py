"""The S3 gateway's figures (issue 32), on the run's nats-server.

``natsobj gateway`` runs as a user runs it, a process of its own (so its RSS is its own),
in front of the run's server; moto's S3 server (``moto_server``, what a user would try here
instead) runs beside it on loopback. One S3 client drives both, a plain aiohttp session signing
each request with SigV4 and ``UNSIGNED-PAYLOAD`` (``S3Client``): boto3 with its default
checksums hashes every body it sends, a client's cost that would be counted against the
server. natsobj's own put/get of the same file, in a process of its own, is the anchor the
gateway is held to. Measured, taking turns in every repeat:

- a file PUT and GET (256 MiB in the full mode);
- a 4 KiB range GET from the middle of that object (against natsobj's own ``open_range``);
- a Parquet one-column read through pyarrow's native ``S3FileSystem`` (against the fsspec
  ``nats://`` filesystem reading the very same object);
- a large file (1 GiB) PUT then GET once, with the server process's peak RSS growth;
- 64 clients at once, each putting then getting its own 64 KiB objects.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchmarks.archive import CREDENTIALS, _Moto
from benchmarks.before import Checkout
from benchmarks.core import make_file, run_case
from benchmarks.figures import (
    HIGHER,
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
from benchmarks.ranges import _write_parquet

ROOT = Path(__file__).resolve().parent.parent
KEY, SECRET, REGION = CREDENTIALS["AWS_ACCESS_KEY_ID"], "bench-gateway-secret", "us-east-1"
PIECE = MiB
CPU = "CPU seconds of the server process"
MD5_CPU = "the body's MD5 alone, CPU seconds in one thread"
"""Bytes the client reads from its file, or takes from a response, per step."""
COLUMNS = {
    "gateway": "natsobj gateway",
    "ours": "natsobj's own client",
    "moto": "moto_server",
}
NOTE = (
    "`natsobj gateway` in a process of its own in front of the run's nats-server, and moto's S3"
    " server (`moto_server`, in memory) on the same cores, both on loopback. One S3 client for"
    " both: a plain aiohttp session signing each request with SigV4 and `UNSIGNED-PAYLOAD`,"
    " streaming 1 MiB pieces from and to files (boto3 with its default checksums hashes every"
    " body it sends: its own cost, not the server's). *natsobj's own client* is the anchor:"
    " natsobj's `put` of the file and `get_file`, in a process of its own (the transfer"
    " section's *natsobj*); for the CPU rows, that process's CPU seconds. The"
    " range GET is 4 KiB from the middle of the transferred object, each request timed alone"
    " (natsobj: `open_range` and `read_range` on a held store). The Parquet read is"
    " `pq.read_table(columns=['c3'])` of the ranged-read section's file, through pyarrow's"
    " native `S3FileSystem` for the gateway and moto, and `fsspec.filesystem('nats')` reading"
    " the same object. RSS growth is the server process's peak resident set (the kernel's"
    " `VmHWM`, reset before the transfer) over its resident set before it, over one PUT and one"
    " GET of the large file. The 64 clients are 64 connections of one aiohttp session (natsobj:"
    " 64 tasks on one client), each putting its own 64 KiB objects, then getting them back;"
    " latency percentiles are per repeat. The large file's GET drops its body as it comes."
    " The MD5 row is the gateway PUT's work that natsobj's own put does not do (S3's ETag of"
    " a single-part upload is its body's MD5), hashed alone in the benchmark's process: with"
    " every core busy (client, gateway, nats-server), the PUT ratio's floor."
)


@dataclass(frozen=True)
class Sizes:
    """What the group moves: the transfer file, the large file, the Parquet file's row groups
    and rows per group, the concurrent clients and the requests each makes per phase."""

    transfer: int
    large: int
    parquet: tuple[int, int]
    clients: int = 64
    requests: int = 10


# -- the S3 client ------------------------------------------------------------------------------


def sign(method: str, url: str, headers: dict[str, str] | None = None) -> dict[str, str]:
    """The request's headers with a SigV4 ``Authorization`` (every header given is signed;
    the body is ``UNSIGNED-PAYLOAD``, so signing costs the same for any body size)."""
    parts = urlsplit(url)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    signed = {
        "host": parts.netloc,
        "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
        "x-amz-date": stamp,
        **{name.lower(): value for name, value in (headers or {}).items()},
    }
    names = sorted(signed)
    query = "&".join(sorted(p if "=" in p else p + "=" for p in parts.query.split("&") if p))
    canonical = "\n".join(
        [
            method,
            parts.path or "/",
            query,
            "".join(f"{name}:{signed[name].strip()}\n" for name in names),
            ";".join(names),
            "UNSIGNED-PAYLOAD",
        ]
    )
    scope = f"{stamp[:8]}/{REGION}/s3/aws4_request"
    text = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = f"AWS4{SECRET}".encode()
    for part in (stamp[:8], REGION, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
    signed["Authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={KEY}/{scope}, SignedHeaders={';'.join(names)},"
        f" Signature={signature}"
    )
    return signed


class S3Client:
    """The few S3 requests the group makes, on one aiohttp session of ``connections``."""

    def __init__(self, endpoint: str, connections: int = 8) -> None:
        import aiohttp

        self.endpoint = endpoint
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=connections),
            timeout=aiohttp.ClientTimeout(total=600),
            auto_decompress=False,
        )

    async def __aenter__(self) -> S3Client:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.session.close()

    async def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> bytes:
        url = f"{self.endpoint}/{path}"
        async with self.session.request(
            method, url, data=body, headers=sign(method, url, headers)
        ) as response:
            data = await response.read()
            if response.status >= 300:
                raise RuntimeError(f"{method} {url}: {response.status} {data[:300]!r}")
            return data

    async def create_bucket(self, bucket: str) -> None:
        """The bucket, or the one already there (the ``before`` gateway shares today's
        server, so its bucket is today's)."""
        try:
            await self.request("PUT", bucket)
        except RuntimeError as error:
            if "BucketAlreadyOwnedByYou" not in str(error):
                raise

    async def put_file(self, path: str, source: Path) -> None:
        async def pieces() -> AsyncIterator[bytes]:
            with source.open("rb") as handle:
                while piece := handle.read(PIECE):
                    yield piece

        length = {"Content-Length": str(source.stat().st_size)}
        await self.request("PUT", path, pieces(), length)

    async def get_file(self, path: str, target: Path | None) -> int:
        """The object into ``target`` (None: received and dropped); its length."""
        url = f"{self.endpoint}/{path}"
        received = 0
        async with self.session.get(url, headers=sign("GET", url)) as response:
            if response.status != 200:
                raise RuntimeError(f"GET {url}: {response.status}")
            with target.open("wb") if target else open(os.devnull, "wb") as handle:
                async for piece in response.content.iter_chunked(PIECE):
                    handle.write(piece)
                    received += len(piece)
        return received

    async def get_range(self, path: str, start: int, length: int) -> bytes:
        return await self.request(
            "GET", path, headers={"Range": f"bytes={start}-{start + length - 1}"}
        )


# -- the servers --------------------------------------------------------------------------------


class GatewayProcess:
    """``natsobj gateway`` as a user runs it, on a free port, until ``stop``; from
    ``directory``, a ``benchmarks.before`` checkout, it is the gateway of that commit.
    ``workers``: its ``--workers``; by default one process, whose CPU and RSS the figures are
    (a gateway with ``--workers`` defaults to one per core, the workers its children)."""

    def __init__(self, url: str, work: Path, directory: Path = ROOT, workers: int = 1) -> None:
        keys = work / "gateway-keys.toml"
        keys.write_text(f'[keys.{KEY}]\nsecret = "{SECRET}"\n')
        keys.chmod(0o600)
        # a checkout from before --workers serves in one process anyway
        count = (
            ("--workers", str(workers))
            if (directory / "natsobj/gateway/workers.py").exists()
            else ()
        )
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "natsobj.cli", "--url", url, "gateway"),
                *("--listen", "127.0.0.1:0", "--credentials", str(keys), *count),
            ],
            cwd=directory,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("S3 gateway on "):
            self.stop()
            raise RuntimeError(f"natsobj gateway did not start: {line!r}")
        self.endpoint = line.split()[-1]
        self.pid = self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(60)


class PeakGrowth:
    """A process's peak RSS growth over a block: the kernel's high-water mark (``VmHWM``,
    reset through ``clear_refs``) over the RSS at the start; where the reset is refused, the
    peak of RSS samples every 5 ms (psutil)."""

    def __init__(self, pid: int) -> None:
        self.status = Path(f"/proc/{pid}/status")
        self.pid = pid
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        try:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
        except OSError:
            import psutil

            process = psutil.Process(pid)
            self.peak = process.memory_info().rss

            def sample() -> None:
                while not self._stop.wait(0.005):
                    self.peak = max(self.peak, process.memory_info().rss)

            self._sampler = threading.Thread(target=sample, daemon=True)
            self._sampler.start()
        self.base = self._field("VmRSS")

    def _field(self, name: str) -> int:
        for line in self.status.read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1]) * KiB
        raise RuntimeError(f"{self.status} has no {name}")

    def growth(self) -> int:
        if self._sampler is None:
            return self._field("VmHWM") - self.base
        self._stop.set()
        self._sampler.join()
        return self.peak - self.base


# -- measuring ----------------------------------------------------------------------------------


def measure(
    url: str, work: Path, repeats: int, sizes: Sizes, *, before: Checkout | None = None
) -> list[Section]:
    """The section; with ``before``, the gateway of that commit in a process of its own is
    measured beside today's in every case (the ``before`` column), if that commit has one."""
    if before and not (before.directory / "natsobj" / "gateway").is_dir():
        before = None
    figures = section(
        "gateway",
        "S3 gateway: natsobj gateway against natsobj's own put/get and moto",
        NOTE,
        {**COLUMNS, **({"before": f"gateway, {before.label}"} if before else {})},
        [("gateway", "ours"), ("gateway", "moto"), *([("gateway", "before")] if before else [])],
    )
    started: list[GatewayProcess | _Moto] = []
    try:
        gateway = GatewayProcess(url, work)
        started.append(gateway)
        moto = _Moto(work)
        started.append(moto)
        servers = {
            "gateway": (gateway.endpoint, gateway.pid),
            "moto": (moto.endpoint, moto.process.pid),
        }
        if before:
            earlier = GatewayProcess(url, work, before.directory)
            started.append(earlier)
            servers["before"] = (earlier.endpoint, earlier.pid)
        with timed(figures):
            samples = asyncio.run(_measure(url, work, repeats, sizes, servers))
    finally:
        for server in started:
            server.stop()
    transfer, large = _label(sizes.transfer), _label(sizes.large)
    rows = {
        f"{transfer} PUT": ("MiB/s", HIGHER),
        f"{transfer} GET": ("MiB/s", HIGHER),
        f"{transfer} PUT: {CPU}": ("s", LOWER),
        f"{transfer} GET: {CPU}": ("s", LOWER),
        f"{transfer} PUT: {MD5_CPU}": ("s", LOWER),
        "4 KiB range GET": ("ms", LOWER),
        "Parquet: one column of ten": ("ms", LOWER),
        f"{large} PUT then GET: server's peak RSS growth": ("MiB", LOWER),
        f"{sizes.clients} clients: 64 KiB PUT": ("requests/s", HIGHER),
        f"{sizes.clients} clients: 64 KiB PUT, p50": ("ms", LOWER),
        f"{sizes.clients} clients: 64 KiB PUT, p99": ("ms", LOWER),
        f"{sizes.clients} clients: 64 KiB GET": ("requests/s", HIGHER),
        f"{sizes.clients} clients: 64 KiB GET, p50": ("ms", LOWER),
        f"{sizes.clients} clients: 64 KiB GET, p99": ("ms", LOWER),
    }
    for label, (unit, better) in rows.items():
        add_row(figures, label, unit, better, samples[label])
    for op in ("PUT", "GET"):
        row = f"{transfer} {op}"
        ratio_target(figures, f"gateway {row} >= 0.8x natsobj's own", row, "gateway", "ours", 0.8)
    value_target(
        figures,
        f"gateway {large} PUT then GET: RSS growth < 64 MiB",
        f"{large} PUT then GET: server's peak RSS growth",
        "gateway",
        64,
    )
    return [figures]


def _label(size: int) -> str:
    return f"{size // MiB} MiB" if size < 1024 * MiB else f"{size // (1024 * MiB)} GiB"


Samples = dict[str, dict[str, list[float]]]


async def _measure(
    url: str, work: Path, repeats: int, sizes: Sizes, servers: dict[str, tuple[str, int]]
) -> Samples:
    import natsobj.aio

    samples: Samples = {}

    def add(row: str, column: str, value: float) -> None:
        samples.setdefault(row, {}).setdefault(column, []).append(value)

    bucket = f"bench-gateway-{os.getpid()}"
    clients = {name: S3Client(endpoint, sizes.clients) for name, (endpoint, _) in servers.items()}
    async with await natsobj.aio.connect(url) as nats_client:
        for client in clients.values():
            await client.create_bucket(bucket)
        store = await nats_client.store(bucket)
        try:
            await _large(work, bucket, sizes.large, clients, servers, add)
            pids = {name: pid for name, (_, pid) in servers.items()}
            await _transfers(url, work, bucket, repeats, sizes.transfer, clients, pids, add)
            await _ranges(bucket, repeats, sizes.transfer, clients, store, add)
            await _parquet(url, work, bucket, repeats, sizes.parquet, clients, servers, add)
            await _concurrent(bucket, repeats, sizes, clients, store, add)
        finally:
            for client in clients.values():
                await client.__aexit__()
            await nats_client.delete_store(bucket)
    return samples


async def _large(
    work: Path,
    bucket: str,
    size: int,
    clients: dict[str, S3Client],
    servers: dict[str, tuple[str, int]],
    add: Callable[[str, str, float], None],
) -> None:
    """One PUT then GET of ``size`` per server, first in the group (the server has served only
    its bucket's creation), its peak RSS growth over them. The GET's body is dropped as it
    comes: only the server's memory is measured here, and disk is short."""
    path = work / "gateway-large.bin"
    make_file(path, size)
    try:
        for name, client in clients.items():
            memory = PeakGrowth(servers[name][1])
            await client.put_file(f"{bucket}/large", path)
            assert await client.get_file(f"{bucket}/large", None) == size
            add(
                f"{_label(size)} PUT then GET: server's peak RSS growth",
                name,
                memory.growth() / MiB,
            )
            await client.request("DELETE", f"{bucket}/large")
    finally:
        path.unlink()


async def _transfers(
    url: str,
    work: Path,
    bucket: str,
    repeats: int,
    size: int,
    clients: dict[str, S3Client],
    pids: dict[str, int],
    add: Callable[[str, str, float], None],
) -> None:
    """The file PUT then GET by each server and by natsobj itself, taking turns; the CPU
    seconds of the server process over each (natsobj: its own process's)."""
    import psutil

    path, back = work / "gateway-transfer.bin", work / "gateway-transfer.out"
    make_file(path, size)
    label = _label(size)
    try:
        for _ in range(repeats):
            add(f"{label} PUT: {MD5_CPU}", "gateway", _md5_seconds(path))
            own = await asyncio.to_thread(run_case, "ours", url, size, path)
            for op in ("PUT", "GET"):
                add(f"{label} {op}", "ours", size / MiB / own[f"{op.lower()}_s"])
                add(f"{label} {op}: {CPU}", "ours", own[f"{op.lower()}_cpu_s"])
            for name, client in clients.items():
                server = psutil.Process(pids[name])
                for op in ("PUT", "GET"):
                    cpu, start = sum(server.cpu_times()[:2]), time.perf_counter()
                    if op == "PUT":
                        await client.put_file(f"{bucket}/transfer", path)
                    else:
                        assert await client.get_file(f"{bucket}/transfer", back) == size
                    add(f"{label} {op}", name, size / MiB / (time.perf_counter() - start))
                    add(f"{label} {op}: {CPU}", name, sum(server.cpu_times()[:2]) - cpu)
    finally:
        path.unlink()
        back.unlink(missing_ok=True)


def _md5_seconds(path: Path) -> float:
    """CPU seconds of the MD5 of ``path`` alone, in 1 MiB pieces: the work a gateway PUT does
    that natsobj's own put does not (S3's ETag of a single-part upload is its body's MD5),
    so the floor under the PUT ratio on a machine whose cores are all busy."""
    md5, spent = hashlib.md5(usedforsecurity=False), 0.0
    with path.open("rb") as source:
        while piece := source.read(MiB):
            start = time.process_time()
            md5.update(piece)
            spent += time.process_time() - start
    return spent


async def _ranges(
    bucket: str,
    repeats: int,
    size: int,
    clients: dict[str, S3Client],
    store: Any,
    add: Callable[[str, str, float], None],
) -> None:
    """4 KiB from the middle of the transferred object, ten per repeat per column."""
    start = size // 2 + 12345
    for _ in range(repeats * 10):
        for name, client in clients.items():
            began = time.perf_counter()
            got = await client.get_range(f"{bucket}/transfer", start, 4 * KiB)
            add("4 KiB range GET", name, (time.perf_counter() - began) * 1000)
            assert len(got) == 4 * KiB
        began = time.perf_counter()
        reader = await store.open_range("transfer")
        try:
            got = await reader.read_range(start, start + 4 * KiB)
        finally:
            await reader.close()
        add("4 KiB range GET", "ours", (time.perf_counter() - began) * 1000)
        assert len(got) == 4 * KiB


async def _parquet(
    url: str,
    work: Path,
    bucket: str,
    repeats: int,
    shape: tuple[int, int],
    clients: dict[str, S3Client],
    servers: dict[str, tuple[str, int]],
    add: Callable[[str, str, float], None],
) -> None:
    """The ranged-read section's file, put through each server; the one-column read through
    pyarrow's own S3 filesystem, and through fsspec's ``nats`` one of the gateway's object."""
    import fsspec
    import pyarrow.parquet as pq
    from pyarrow import fs as pafs

    path = work / "gateway-ten-columns.parquet"
    await asyncio.to_thread(_write_parquet, path, *shape)
    try:
        for client in clients.values():
            await client.put_file(f"{bucket}/ten.parquet", path)
    finally:
        path.unlink()
    readers: dict[str, Any] = {
        name: pafs.S3FileSystem(
            access_key=KEY,
            secret_key=SECRET,
            region=REGION,
            scheme="http",
            endpoint_override=urlsplit(endpoint).netloc,
        )
        for name, (endpoint, _) in servers.items()
    }
    readers["ours"] = fsspec.filesystem("nats", url=url, skip_instance_cache=True)

    def read(filesystem: Any) -> int:
        return pq.read_table(
            f"{bucket}/ten.parquet", filesystem=filesystem, columns=["c3"]
        ).num_rows

    expected = shape[0] * shape[1]
    for _ in range(repeats):
        for name, filesystem in readers.items():
            began = time.perf_counter()
            rows = await asyncio.to_thread(read, filesystem)
            add("Parquet: one column of ten", name, (time.perf_counter() - began) * 1000)
            assert rows == expected


async def _concurrent(
    bucket: str,
    repeats: int,
    sizes: Sizes,
    clients: dict[str, S3Client],
    store: Any,
    add: Callable[[str, str, float], None],
) -> None:
    """``sizes.clients`` at once, each putting ``sizes.requests`` objects of its own, then
    getting them back; requests per second of each phase and its latency percentiles."""
    body = os.urandom(64 * KiB)
    prefix = f"{sizes.clients} clients: 64 KiB"

    def requests(name: str, op: str) -> Callable[[str], Any]:
        if name == "ours":
            return (lambda key: store.put(key, body)) if op == "PUT" else store.get_bytes
        client = clients[name]
        if op == "PUT":
            return lambda key: client.request("PUT", f"{bucket}/{key}", body)
        return lambda key: client.request("GET", f"{bucket}/{key}")

    for _ in range(repeats):
        for name in (*clients, "ours"):
            for op in ("PUT", "GET"):
                rate, latencies = await _storm(requests(name, op), sizes.clients, sizes.requests)
                add(prefix + f" {op}", name, rate)
                add(prefix + f" {op}, p50", name, statistics.median(latencies) * 1000)
                add(prefix + f" {op}, p99", name, statistics.quantiles(latencies, n=100)[98] * 1000)


async def _storm(
    call: Callable[[str], Any], clients: int, requests: int
) -> tuple[float, list[float]]:
    """``clients`` at once making ``requests`` calls each, one after another: the calls per
    second of all of them, and the seconds each call took."""
    latencies: list[float] = []

    async def one_client(index: int) -> None:
        for request in range(requests):
            began = time.perf_counter()
            await call(f"small/{index}/{request}")
            latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(one_client(i) for i in range(clients)))
    return len(latencies) / (time.perf_counter() - began), latencies


def main() -> None:
    """``python -m benchmarks.gateway [--quick]``: this group alone, with the sizes of
    ``make bench`` (or ``--quick``'s), on a server of its own, printed as BENCHMARKS.md would
    show it."""
    from benchmarks import report
    from benchmarks.run import FULL, QUICK, _gateway
    from natsobj.local.embedded import NatsServerProcess

    plan = QUICK if "--quick" in sys.argv else FULL
    work = Path(tempfile.mkdtemp(prefix="natsobj-gateway-bench-"))
    try:
        with NatsServerProcess(work / "nats") as server:
            sections = _gateway(plan, server.url, work, None)
        for each in sections:
            print(report.render_section(each))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
