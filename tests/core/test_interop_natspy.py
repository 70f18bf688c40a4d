"""nats-py's built-in ObjectStore as a real peer: what each writes, the other reads."""

from __future__ import annotations

import os

import nats
import nats.js.api
import nats.js.errors
import pytest

import natsobj
import natsobj.aio
from natsobj.sync import run


@pytest.fixture(params=["unversioned", "versioned"])
def versioned(request: pytest.FixtureRequest) -> bool:
    """Every exchange runs on a bucket keeping versions too (docs/versioning.md): nats-py sees
    and writes the current versions as in one that keeps none."""
    return request.param == "versioned"


async def _peers(url: str, bucket: str, *, natspy_creates: bool, versioned: bool):
    nc = await nats.connect(url)
    js = nc.jetstream()
    ours = await natsobj.aio.connect(url)
    if natspy_creates:
        theirs = await js.create_object_store(bucket)
        store = await ours.store(bucket)
    else:
        store = await ours.create_store(bucket)
        theirs = await js.object_store(bucket)
    if versioned:
        await store.set_versioning("Enabled")
    return nc, ours, store, theirs


async def _close(nc, ours, bucket: str) -> None:
    await ours.delete_store(bucket)
    await ours.close()
    await nc.close()


def test_we_read_what_natspy_writes(nats_url, bucket_name, versioned):
    async def body() -> None:
        nc, ours, store, theirs = await _peers(
            nats_url, bucket_name, natspy_creates=True, versioned=versioned
        )
        data = os.urandom(700_000)
        meta = nats.js.api.ObjectMeta(name="from-natspy", description="written by nats-py")
        await theirs.put("from-natspy", data, meta=meta)
        await theirs.put("small", b"tiny")
        info = await store.get_info("from-natspy")
        assert info.size == len(data) and info.chunks == 6
        assert info.description == "written by nats-py"
        assert info.mtime is not None  # nats-py never fills it in; we take the server's
        assert await store.get_bytes("from-natspy") == data
        assert await store.get_bytes("small") == b"tiny"
        assert sorted(i.name for i in await store.list()) == ["from-natspy", "small"]
        await theirs.delete("small")
        assert [i.name for i in await store.list()] == ["from-natspy"]
        await _close(nc, ours, bucket_name)

    run(body())


def test_natspy_reads_an_atomic_put(nats_url, bucket_name, versioned):
    """An object written as one ADR-50 batch (natsobj.aio.atomic_put) reads as any other."""

    async def body() -> None:
        nc, ours, store, theirs = await _peers(
            nats_url, bucket_name, natspy_creates=False, versioned=versioned
        )
        store.atomic_max_bytes = 1 << 40
        data = os.urandom(1_000_000)
        written = await store.put("atomic", data, description="one batch")
        assert written.sequence == written.chunks + 1  # chunks 1..n, the record right after
        result = await theirs.get("atomic")
        assert result.data == data and result.info.digest == written.digest
        assert result.info.description == "one batch"
        await store.put("atomic", b"second")
        assert (await theirs.get("atomic")).data == b"second"
        await _close(nc, ours, bucket_name)

    run(body())


def test_natspy_reads_what_we_write(nats_url, bucket_name, versioned):
    async def body() -> None:
        nc, ours, store, theirs = await _peers(
            nats_url, bucket_name, natspy_creates=False, versioned=versioned
        )
        data = os.urandom(1_000_000)
        written = await store.put(
            "from-natsobj",
            data,
            description="ours",
            headers={"Content-Type": "application/octet-stream"},
            metadata={"owner": "pipeline"},
        )
        result = await theirs.get("from-natsobj")
        assert result.data == data
        assert result.info.digest == written.digest
        assert result.info.size == len(data) and result.info.chunks == written.chunks
        assert result.info.description == "ours"
        assert result.info.headers == {"Content-Type": ["application/octet-stream"]}
        assert result.info.options.max_chunk_size == 128 * 1024
        await store.put("empty", b"")
        assert (await theirs.get("empty")).data == b""
        await store.update_meta("from-natsobj", new_name="renamed")
        assert (await theirs.get("renamed")).data == data
        await store.add_link("link", await store.get_info("renamed"))
        assert (await theirs.get("link")).data == data
        await store.delete("renamed")
        with pytest.raises(nats.js.errors.ObjectNotFoundError):
            await theirs.get_info("renamed")
        await _close(nc, ours, bucket_name)

    run(body())


def test_natspy_delete_and_overwrite_of_our_objects(nats_url, bucket_name, versioned):
    async def body() -> None:
        nc, ours, store, theirs = await _peers(
            nats_url, bucket_name, natspy_creates=False, versioned=versioned
        )
        await store.put("shared", b"v1" * 100_000)
        await theirs.put("shared", b"v2")
        assert await store.get_bytes("shared") == b"v2"
        await theirs.delete("shared")
        with pytest.raises(natsobj.ObjectNotFound):
            await store.get_info("shared")
        assert (await store.get_info("shared", include_deleted=True)).deleted
        await _close(nc, ours, bucket_name)

    run(body())


def test_empty_bucket_lists_as_empty(nats_url, bucket_name, versioned):
    async def body() -> None:
        nc, ours, store, _theirs = await _peers(
            nats_url, bucket_name, natspy_creates=True, versioned=versioned
        )
        assert await store.list() == []
        await _close(nc, ours, bucket_name)

    run(body())
