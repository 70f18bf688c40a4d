"""The Spark source reads offloaded objects through from S3 (moto's server), like any other."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import natsobj
from natsobj.archive import Archiver, ArchiveTarget
from natsobj.archive.tiering import offload
from tests.archive.conftest import (  # noqa: F401  (fixtures)
    archive_url,
    moto,
    s3_env,
    subprocess_env,
)


def test_binary_layout_reads_offloaded_objects(options, store, archive_url, s3_env):  # noqa: F811
    blobs = {"cold/a.bin": os.urandom(150_000), "cold/b.bin": b"small and packed"}
    for name, data in blobs.items():
        store.put(name, data)

    async def archive_and_offload() -> list[str]:
        async with await natsobj.aio.connect(options["url"]) as client:
            aio_store = await client.store(store.bucket)
            target = ArchiveTarget(archive_url)
            await Archiver(aio_store, target, small_object=64 * 1024).run(once=True)
            return [i.name for i in (await offload(aio_store, target)).offloaded]

    assert asyncio.run(archive_and_offload()) == sorted(blobs)
    # A Spark application of its own, started with the S3 settings in its environment (the
    # test's session started before moto): its executors read the bytes through from S3.
    job = subprocess.run(
        [sys.executable, "-m", "tests.spark.tiering_job", json.dumps(options), "cold"],
        cwd=Path(__file__).resolve().parents[2],
        env=subprocess_env(s3_env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    read = json.loads(job.stdout.strip().splitlines()[-1])
    assert {name: bytes.fromhex(content) for name, content in read.items()} == blobs
