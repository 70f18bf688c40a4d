"""The Spark source reads offloaded objects through from S3 (moto's server), like any other."""

from __future__ import annotations

import asyncio
import os

import natsobj
from natsobj.archive import Archiver, ArchiveTarget
from natsobj.archive.tiering import offload
from natsobj.spark.frames import register
from tests.archive.conftest import archive_url, moto, s3_env  # noqa: F401  (fixtures)


def test_binary_layout_reads_offloaded_objects(spark, options, store, archive_url, s3_env):  # noqa: F811
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
    # the Python workers take the S3 settings from the job's environment, as executors on a
    # cluster would (spark.executorEnv.*); a source registered now carries it to them
    spark.sparkContext.environment.update(s3_env)
    register(spark)
    df = spark.read.format("natsobj").options(**options, layout="binary").load("cold")
    rows = {row.name: row.content for row in df.collect()}
    assert rows == blobs
