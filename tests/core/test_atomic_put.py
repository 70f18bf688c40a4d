"""Atomic puts (ADR-50 batches, natsobj.aio.atomic_put) on a real server: what they store,
when they fall back to today's put, and that conflicts stay typed errors."""

from __future__ import annotations

import asyncio
import gc
import io
import json
import os
import warnings
from pathlib import Path

import pytest

import natsobj
import natsobj.aio
from natsobj.aio.atomic_put import (
    ATOMIC_BATCH_MESSAGES,
    ATOMIC_MAX_BYTES,
    ATOMIC_MAX_BYTES_REPLICATED,
    AtomicPut,
    GoTodaysWay,
    Replayable,
    default_max_bytes,
)
from natsobj.aio.put_modes import PutMode
from natsobj.aio.sources import iter_chunks
from natsobj.model import ObjectInfo
from natsobj.sync import run
from tests.raw import RawJetStream

CHUNK = 64 * 1024
ALWAYS = 1 << 40  # atomic_max_bytes that sends every object that fits a batch atomically


@pytest.fixture
def atomic_store(store):
    store.aio.atomic_max_bytes = ALWAYS
    return store


@pytest.fixture
def raw_js(nats_url):
    raw = RawJetStream(nats_url)
    yield raw
    raw.close()


def _chunk_headers(raw: RawJetStream, bucket: str, nuid: str) -> dict[str, str]:
    return raw.last_msg(f"$O.{bucket}.C.{nuid}", bucket).headers


def _messages(raw: RawJetStream, bucket: str) -> int:
    return raw.subject_count(bucket, f"$O.{bucket}.>")


def test_new_stores_allow_atomic_and_default_threshold(store, raw_js):
    assert raw_js.stream_config(store.bucket)["allow_atomic"] is True
    assert store.aio.bucket_stream.allow_atomic is True
    assert store.aio.atomic_max_bytes is None  # the measured default for its replicas
    assert default_max_bytes(1) == ATOMIC_MAX_BYTES
    assert default_max_bytes(3) == ATOMIC_MAX_BYTES_REPLICATED
    info = store.put("one-replica", b"x" * 1000)  # the default on one replica: today's put
    assert ("Nats-Batch-Id" in _chunk_headers(raw_js, store.bucket, info.nuid)) == (
        ATOMIC_MAX_BYTES >= 1000
    )


def test_atomic_put_is_one_contiguous_batch(atomic_store, raw_js):
    data = os.urandom(5 * CHUNK + 123)
    info = atomic_store.put("obj", data, chunk_size=CHUNK, metadata={"k": "v"})
    assert info.chunks == 6 and info.size == len(data)
    assert atomic_store.get_bytes("obj") == data
    # the chunks sit right before their meta record, and came in as a batch
    assert raw_js.last_msg(f"$O.{atomic_store.bucket}.C.{info.nuid}", atomic_store.bucket).seq == (
        info.sequence - 1
    )
    assert raw_js.subject_count(atomic_store.bucket, f"$O.{atomic_store.bucket}.C.>") == 6
    assert "Nats-Batch-Id" in _chunk_headers(raw_js, atomic_store.bucket, info.nuid)
    meta = raw_js.last_msg(f"$O.{atomic_store.bucket}.M.b2Jq", atomic_store.bucket)
    assert meta.seq == info.sequence and meta.headers["Nats-Rollup"] == "sub"


def test_overwrite_purges_the_old_chunks_and_keeps_one_version(atomic_store, raw_js):
    first = atomic_store.put("obj", os.urandom(3 * CHUNK), chunk_size=CHUNK)
    second = atomic_store.put("obj", b"new", chunk_size=CHUNK)
    assert second.sequence > first.sequence
    assert atomic_store.get_bytes("obj") == b"new"
    assert (
        raw_js.subject_count(atomic_store.bucket, f"$O.{atomic_store.bucket}.C.{first.nuid}") == 0
    )
    assert _messages(raw_js, atomic_store.bucket) == 2  # one chunk, one meta record


def test_stale_expected_sequence_is_a_typed_conflict_and_stores_nothing(atomic_store, raw_js):
    first = atomic_store.put("obj", b"one")
    atomic_store.put("obj", b"two")
    before = _messages(raw_js, atomic_store.bucket)
    with pytest.raises(natsobj.errors.SequenceConflict) as caught:
        atomic_store.put(
            "obj", os.urandom(4 * CHUNK), chunk_size=CHUNK, mode=PutMode.update(first.sequence)
        )
    assert isinstance(caught.value, natsobj.errors.ObjectChanged)
    assert _messages(raw_js, atomic_store.bucket) == before
    assert atomic_store.get_bytes("obj") == b"two"
    with pytest.raises(natsobj.errors.SequenceConflict):
        atomic_store.put("new-name", b"x", mode=PutMode.update(5))
    current = atomic_store.get_info("obj").sequence
    assert atomic_store.put("obj", b"three", mode=PutMode.update(current)).sequence > current
    assert atomic_store.put("fresh", b"x", mode=PutMode.update(0)).size == 1


def test_conflict_met_at_commit_is_typed(nats_url, bucket_name, raw_js):
    """The record moves between the put's lookup and its commit: the server's check of
    Nats-Expected-Last-Subject-Sequence inside the batch refuses the whole batch; without a
    required sequence the put looks again and commits over the new version."""

    async def body() -> None:
        client = await natsobj.aio.connect(nats_url)
        store = await client.create_store(bucket_name)
        stale = await store.put("obj", b"one")
        racer = await store.put("obj", b"racer")

        async def looked_up_before_the_race():
            return stale

        async def looked_up_now():
            return await store.get_info("obj", include_deleted=True)

        template = ObjectInfo(name="obj", bucket=bucket_name, nuid="N" * 22, chunk_size=CHUNK)
        data = os.urandom(3 * CHUNK)
        put = AtomicPut(store.bucket_stream, template, window_bytes=CHUNK)
        replay = Replayable(lambda: iter_chunks(data, CHUNK))
        before = await asyncio.to_thread(_messages, raw_js, bucket_name)
        with pytest.raises(natsobj.errors.SequenceConflict):
            await put.run(replay, looked_up_before_the_race(), looked_up_now, stale.sequence)
        # not one chunk of the refused batch was stored
        assert await asyncio.to_thread(_messages, raw_js, bucket_name) == before
        done = await put.run(replay, looked_up_before_the_race(), looked_up_now, None)
        assert done.replaced.nuid == racer.nuid and done.info.size == len(data)
        assert await store.get_bytes("obj") == data
        await client.delete_store(bucket_name)
        await client.close()

    run(body())


@pytest.mark.parametrize("kind", ["bytes", "path", "handle", "iterable"])
def test_every_replayable_source_goes_atomically(atomic_store, raw_js, tmp_path: Path, kind):
    data = os.urandom(3 * CHUNK + 7)
    path = tmp_path / "src.bin"
    path.write_bytes(data)
    if kind == "bytes":
        source = data
    elif kind == "path":
        source = path
    elif kind == "handle":
        source = path.open("rb")
        source.read(0)
    else:
        source = iter([data[:1000], data[1000:]])
    info = atomic_store.put("obj", source, chunk_size=CHUNK)
    assert atomic_store.get_bytes("obj") == data and info.chunks == 4
    assert "Nats-Batch-Id" in _chunk_headers(raw_js, atomic_store.bucket, info.nuid)


def test_a_handle_is_read_from_where_it_stood(atomic_store, tmp_path: Path):
    path = tmp_path / "src.bin"
    path.write_bytes(b"skip" + b"data" * 1000)
    with path.open("rb") as handle:
        handle.read(4)
        atomic_store.put("obj", handle, chunk_size=CHUNK)
    assert atomic_store.get_bytes("obj") == b"data" * 1000


def test_too_many_chunks_for_a_batch_go_todays_way(atomic_store, raw_js):
    chunk = 1024
    data = os.urandom(ATOMIC_BATCH_MESSAGES * chunk)  # 1000 chunks + the record: one too many
    info = atomic_store.put("obj", data, chunk_size=chunk)
    assert info.chunks == ATOMIC_BATCH_MESSAGES and atomic_store.get_bytes("obj") == data
    assert "Nats-Batch-Id" not in _chunk_headers(raw_js, atomic_store.bucket, info.nuid)


def test_an_iterable_longer_than_the_window_goes_todays_way(nats_url, bucket_name, raw_js):
    with natsobj.connect(nats_url, put_window_bytes=2 * CHUNK) as client:
        store = client.create_store(bucket_name)
        store.aio.atomic_max_bytes = ALWAYS
        data = os.urandom(5 * CHUNK)
        info = store.put(
            "obj", (data[i : i + 5000] for i in range(0, len(data), 5000)), chunk_size=CHUNK
        )
        assert store.get_bytes("obj") == data and info.chunks == 5
        assert "Nats-Batch-Id" not in _chunk_headers(raw_js, bucket_name, info.nuid)
        client.delete_store(bucket_name)


def test_a_stream_without_allow_atomic_is_put_todays_way(atomic_store, raw_js):
    """The store was bound while the stream allowed atomic publishes; since then it does not:
    the server refuses the batch, the put goes today's way and the store remembers."""
    assert atomic_store.aio.bucket_stream.allow_atomic is True
    _update_stream(raw_js, atomic_store.bucket, allow_atomic=False)
    data = io.BytesIO(os.urandom(2 * CHUNK))
    info = atomic_store.put("obj", data, chunk_size=CHUNK)
    assert atomic_store.get_bytes("obj") == data.getvalue()
    assert "Nats-Batch-Id" not in _chunk_headers(raw_js, atomic_store.bucket, info.nuid)
    assert atomic_store.aio.bucket_stream.allow_atomic is False
    assert _messages(raw_js, atomic_store.bucket) == 3


def _update_stream(raw: RawJetStream, bucket: str, **changes) -> None:
    config = dict(raw.stream_config(bucket), **changes)

    async def go() -> dict:
        reply = await raw.nc.request(
            f"$JS.API.STREAM.UPDATE.OBJ_{bucket}", json.dumps(config).encode()
        )
        return json.loads(reply.data)

    assert "error" not in run(go())


def test_default_store_puts_today_way(store, raw_js):
    store.aio.atomic_max_bytes = 0
    info = store.put("obj", b"x" * 1000)
    assert "Nats-Batch-Id" not in _chunk_headers(raw_js, store.bucket, info.nuid)


def test_a_put_that_keeps_meeting_conflicts_leaves_no_lookup_unawaited(nats_url, bucket_name):
    """Issue 28: after its last conflict the put started one more lookup of the current
    version and gave up without awaiting it ("coroutine ... was never awaited")."""

    async def body() -> None:
        client = await natsobj.aio.connect(nats_url)
        store = await client.create_store(bucket_name)
        stale = await store.put("obj", b"one")
        await store.put("obj", b"racer")

        async def always_stale():
            return stale

        template = ObjectInfo(name="obj", bucket=bucket_name, nuid="N" * 22, chunk_size=CHUNK)
        put = AtomicPut(store.bucket_stream, template, window_bytes=CHUNK)
        replay = Replayable(lambda: iter_chunks(b"data", CHUNK))
        with pytest.raises(GoTodaysWay, match="kept replacing"):
            await put.run(replay, always_stale(), always_stale, None)
        await client.delete_store(bucket_name)
        await client.close()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(body())
        gc.collect()
    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


@pytest.mark.parametrize("atomic_max_bytes", [ALWAYS, 0], ids=["atomic", "todays-way"])
def test_digest_headers_are_bound_to_the_digest_the_record_gets(store, atomic_max_bytes):
    store.aio.atomic_max_bytes = atomic_max_bytes
    seen: list[str] = []

    def bound(digest: str) -> dict[str, list[str]]:
        seen.append(digest)
        return {"X-Bound": [f"for {digest}"]}

    data = os.urandom(3 * CHUNK + 5)
    put = run(
        store.aio.put("o", data, headers={"Kept": "yes"}, digest_headers=bound, chunk_size=CHUNK)
    )
    info = store.get_info("o")
    assert seen == [info.digest] and info.digest == put.digest
    assert info.headers == {"Kept": ["yes"], "X-Bound": [f"for {info.digest}"]}
    assert store.get_bytes("o") == data
