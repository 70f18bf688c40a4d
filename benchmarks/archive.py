"""Archive figures for BENCHMARKS.md, all against one moto S3 server and one nats-server.

``measure(...)`` returns the section (``benchmarks.figures``). Each case runs in its own process
(``python -m benchmarks.archive CASE ...``) so its peak RSS growth is its own:

- ``archive``: one catch-up pass of a store holding one large object (multipart upload);
- ``direct``: the same bytes from a local file uploaded with the same library and part size;
- ``small``: one catch-up pass of a store of many 1 KiB objects (packed), with PUTs counted;
- ``restore``: the archive restored into a new bucket.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks.core import RssSampler, make_file
from benchmarks.figures import (
    HIGHER,
    LOWER,
    MiB,
    Section,
    add_row,
    ratio_target,
    section,
    throughput,
    timed,
    value_target,
)

ROOT = Path(__file__).resolve().parent.parent
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench-secret",
    "AWS_REGION": "us-east-1",
}


# -- cases (run in a child process) ---------------------------------------------------------------


async def case_archive(url: str, bucket: str, target_url: str) -> dict[str, float]:
    import natsobj.aio
    from natsobj.archive import Archiver, ArchiveTarget
    from natsobj.archive.index import encode_segment

    encode_segment([])  # pyarrow's one-time initialisation (seconds here) is not per object
    async with await natsobj.aio.connect(url) as client:
        store = await client.store(bucket)
        target = ArchiveTarget(target_url)
        sampler = RssSampler()
        start = time.perf_counter()
        totals = await Archiver(store, target).run(once=True)
        elapsed = time.perf_counter() - start
        return {
            "seconds": elapsed,
            "rss_growth": sampler.growth(),
            "peak_rss": sampler.peak,
            "versions": totals.versions,
            "bytes": totals.bytes,
            "puts": target.counts.puts + target.counts.multipart_puts,
        }


async def case_direct(path: str, target_url: str) -> dict[str, float]:
    from natsobj.archive import ArchiveTarget

    target = ArchiveTarget(target_url)

    async def chunks():
        with open(path, "rb") as handle:
            while chunk := handle.read(128 * 1024):
                yield chunk

    sampler = RssSampler()
    start = time.perf_counter()
    await target.put_stream("direct/object", chunks())
    return {"seconds": time.perf_counter() - start, "rss_growth": sampler.growth()}


async def case_restore(url: str, bucket: str, target_url: str) -> dict[str, float]:
    import natsobj.aio
    from natsobj.archive import ArchiveTarget, restore
    from natsobj.archive.index import decode_segment, encode_segment

    decode_segment(encode_segment([]))  # pyarrow's one-time initialisation, as above
    async with await natsobj.aio.connect(url) as client:
        sampler = RssSampler()
        start = time.perf_counter()
        result = await restore(client, ArchiveTarget(target_url), bucket)
        return {
            "seconds": time.perf_counter() - start,
            "rss_growth": sampler.growth(),
            "objects": result.objects,
            "bytes": result.bytes,
        }


def child_main(argv: list[str]) -> None:
    case, *args = argv
    runner = {"archive": case_archive, "direct": case_direct, "restore": case_restore}[case]
    print(json.dumps(asyncio.run(runner(*args))), flush=True)
    # obstore's runtime threads can abort the interpreter's finalisation (SIGABRT, no message)
    # after the figures are printed; a measuring child has nothing left to clean up
    os._exit(0)


# -- the driver -----------------------------------------------------------------------------------


def _child(env: dict[str, str], *args: str, module: str = "benchmarks.archive") -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    if done.returncode:
        raise RuntimeError(
            f"archive benchmark case {args[0]} exited {done.returncode}: {done.stderr[-2000:]}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


class _Moto:
    def __init__(self, work: Path) -> None:
        binary = shutil.which("moto_server", path=str(Path(sys.executable).parent))
        if not binary:
            raise RuntimeError("moto_server is missing: install the dev extra")
        from natsobj.local.embedded import (
            free_port,  # not at the top: a --before checkout may lack it
        )

        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [binary, "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=(work / "moto.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        import socket

        for _ in range(300):
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError("moto_server did not start")

    def new_bucket(self) -> str:
        import boto3

        name = f"bench-{uuid.uuid4().hex[:10]}"
        boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=CREDENTIALS["AWS_REGION"],
        ).create_bucket(Bucket=name)
        return name

    def delete_bucket(self, name: str) -> None:
        import boto3

        bucket = boto3.resource(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=CREDENTIALS["AWS_REGION"],
        ).Bucket(name)
        bucket.objects.all().delete()
        bucket.delete()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def _fill(url: str, bucket: str, objects: dict[str, Path | bytes]) -> None:
    import natsobj

    client = natsobj.connect(url)
    store = client.create_store(bucket)
    for name, source in objects.items():
        store.put(name, source)
    client.close()


ARCHIVE_NOTE = (
    "One nats-server and one moto S3 server (`moto_server`, in memory, on the same cores) in"
    " the same run, each case in its own process, interleaved, each repeat against a fresh S3"
    " bucket. The anchor uploads the same bytes from a local file with the same library"
    " (obstore) and part size, so the ratio is what archiving costs over the S3 upload"
    " itself; it reads its file with plain 128 KiB reads on the event loop, which is why it"
    " can come out slower than archiving. moto is the bottleneck here: against real S3 both"
    " rise. RSS growth is over the process's RSS once its libraries are loaded and pyarrow has"
    " written its first table; a large object passes through in 8 MiB multipart parts."
)


def measure(large: int, huge: int, small_count: int, repeats: int) -> list[Section]:
    """Archive and restore of one ``large`` object (``repeats`` times), one pass over
    ``small_count`` 1 KiB objects, and the peak RSS of archiving one ``huge`` object."""
    figures = section(
        "archive",
        "Archive to S3 (moto on loopback, obstore)",
        ARCHIVE_NOTE,
        {"direct": "S3 upload of the same bytes (obstore)", "ours": "natsobj"},
        [("ours", "direct")],
    )
    work = Path(tempfile.mkdtemp(prefix="natsobj-archive-bench-"))
    from natsobj.local.embedded import (
        NatsServerProcess,  # not at the top: a --before checkout may lack it
    )

    server = NatsServerProcess(work / "nats")
    server.start()
    moto = _Moto(work)
    env = {**os.environ, **CREDENTIALS, "AWS_ENDPOINT_URL": moto.endpoint}
    try:
        with timed(figures):
            runs = _large_runs(server.url, moto, env, work / "large.bin", large, repeats)
            packed = _archive_once(server.url, moto, env, "benchsmall", _small(small_count))
            make_file(work / "huge.bin", huge)
            huge_run = _archive_once(server.url, moto, env, "benchhuge", work / "huge.bin")
    finally:
        moto.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    _add_rows(figures, large, huge, small_count, runs, packed, huge_run)
    return [figures]


def _add_rows(
    figures: Section,
    large: int,
    huge: int,
    small_count: int,
    runs: dict[str, list[dict[str, float]]],
    packed: dict[str, float],
    huge_run: dict[str, float],
) -> None:
    of = f"one {large // MiB} MiB object"
    add_row(
        figures,
        f"archive {of}",
        "MiB/s",
        HIGHER,
        {
            "ours": throughput(large, runs["archive"], "seconds"),
            "direct": throughput(large, runs["direct"], "seconds"),
        },
    )
    add_row(
        figures,
        f"restore {of}",
        "MiB/s",
        HIGHER,
        {"ours": throughput(large, runs["restore"], "seconds")},
    )
    small = f"{small_count:,} x 1 KiB"
    add_row(
        figures,
        f"archive {small} objects",
        "objects/s",
        HIGHER,
        {"ours": [small_count / packed["seconds"]]},
    )
    add_row(
        figures,
        f"S3 PUTs per object, {small}",
        "PUTs",
        LOWER,
        {"ours": [packed["puts"] / small_count]},
    )
    rss = f"peak RSS growth archiving one {huge // MiB} MiB object"
    add_row(figures, rss, "MiB", LOWER, {"ours": [huge_run["rss_growth"] / MiB]})
    add_row(
        figures,
        "whole archiver process at its peak",
        "MiB",
        LOWER,
        {"ours": [huge_run["peak_rss"] / MiB]},
    )
    ratio_target(
        figures, "archive >= 0.8x direct S3 upload", f"archive {of}", "ours", "direct", 0.8
    )
    value_target(
        figures, "S3 PUTs per small object <= 0.05", f"S3 PUTs per object, {small}", "ours", 0.05
    )
    value_target(figures, f"archiving {huge // MiB} MiB: RSS growth < 64 MiB", rss, "ours", 64)


def _small(count: int) -> dict[str, Path | bytes]:
    return {f"small/{i:05d}": os.urandom(1024) for i in range(count)}


def _large_runs(
    url: str, moto: _Moto, env: dict[str, str], path: Path, size: int, repeats: int
) -> dict[str, list[dict[str, float]]]:
    """direct, archive and restore of one object, interleaved, each against a fresh S3 bucket."""
    make_file(path, size)
    _fill(url, "benchlarge", {"large.bin": path})
    runs: dict[str, list[dict[str, float]]] = {"archive": [], "direct": [], "restore": []}
    for index in range(repeats):
        s3 = moto.new_bucket()
        runs["direct"].append(_child(env, "direct", str(path), f"s3://{s3}/d"))
        runs["archive"].append(_child(env, "archive", url, "benchlarge", f"s3://{s3}/a"))
        restored = f"benchrestore{index}"
        runs["restore"].append(_child(env, "restore", url, restored, f"s3://{s3}/a"))
        moto.delete_bucket(s3)
    path.unlink()
    return runs


def _archive_once(
    url: str, moto: _Moto, env: dict[str, str], bucket: str, objects: dict | Path
) -> dict[str, float]:
    """One catch-up pass of a new store holding ``objects`` (or the one file at that path)."""
    if isinstance(objects, Path):
        _fill(url, bucket, {objects.name: objects})
        objects.unlink()
    else:
        _fill(url, bucket, objects)
    s3 = moto.new_bucket()
    try:
        return _child(env, "archive", url, bucket, f"s3://{s3}/a")
    finally:
        moto.delete_bucket(s3)


if __name__ == "__main__":
    child_main(sys.argv[1:])
