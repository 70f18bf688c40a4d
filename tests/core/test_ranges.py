"""Ranged reads (issue 22): ``get_range`` and ``open_range`` return exactly the local bytes
for objects written by natsobj, by nats-py's ObjectStore and by raw publishes (interleaved,
uneven), fetch only the chunks they need, and never mix two versions of an object."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import os
import random
import uuid
from collections.abc import Iterator
from typing import Any

import nats
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.nuid import NUID

import natsobj
from natsobj import aio
from natsobj.aio.chunkmap import Located, MapCache, locate
from natsobj.aio.jetstream.jsapi import JetStreamApi
from natsobj.aio.ranges import byte_range
from natsobj.errors import DigestMismatch, LinkError, ObjectChanged, ObjectNotFound
from natsobj.model import ObjectInfo, format_digest
from natsobj.names import chunk_subject, meta_subject
from natsobj.sync import run
from tests.cluster.harness import ClusterHarness
from tests.fetch_counter import FetchCounter
from tests.jetstream.test_nats_py_fallback import internals_missing  # noqa: F401 (a fixture)

PROPERTY = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
_nuid = NUID()

# Every kind of object the properties run over, and whether its chunks fill consecutive
# stream sequences (their map then lists none one by one).
KINDS = {
    "default": True,
    "chunk-1": True,
    "chunk-7": True,
    "chunk-1000": True,
    "empty": True,
    "single": True,
    "natspy": True,
    "interleaved-a": False,
    "interleaved-b": False,
    "uneven": False,
    "uneven-undeclared": False,
}


async def raw_put(
    js: JetStreamContext,
    bucket: str,
    layout: list[tuple[str, bytes]],
    declared: dict[str, int | None],
) -> None:
    """Publish the chunks in ``layout`` order ((name, chunk) pairs, so objects may
    interleave), then each name's meta record declaring ``declared[name]`` as its
    max_chunk_size: what another client may leave in a bucket."""
    nuids = {name: _nuid.next().decode() for name in declared}
    chunks: dict[str, list[bytes]] = {name: [] for name in declared}
    for name, chunk in layout:
        await js.publish(chunk_subject(bucket, nuids[name]), chunk)
        chunks[name].append(chunk)
    for name, max_chunk in declared.items():
        data = b"".join(chunks[name])
        info = ObjectInfo(
            name=name,
            bucket=bucket,
            nuid=nuids[name],
            size=len(data),
            chunks=len(chunks[name]),
            digest=format_digest(hashlib.sha256(data).digest()),
            chunk_size=max_chunk,
        )
        await js.publish(meta_subject(bucket, name), info.encode(), headers={"Nats-Rollup": "sub"})


def uneven(total: int, rng: random.Random, top: int) -> list[bytes]:
    """Chunks of random sizes up to ``top``, as nats.go writes what each Read returned."""
    pieces, left = [], total
    while left:
        size = min(left, rng.randint(1, top))
        pieces.append(os.urandom(size))
        left -= size
    return pieces


def interleave(*objects: tuple[str, list[bytes]]) -> list[tuple[str, bytes]]:
    """One chunk of each object in turn: their chunks end up non-contiguous."""
    longest = max(len(chunks) for _, chunks in objects)
    return [
        (name, chunks[index])
        for index in range(longest)
        for name, chunks in objects
        if index < len(chunks)
    ]


class Written(tuple[natsobj.ObjectStore, dict[str, bytes]]):
    """(store, local bytes by name), with a repr short enough for hypothesis' reports."""

    def __repr__(self) -> str:
        return f"Written({self[0]!r})"


@pytest.fixture(scope="module")
def written(nats_url: str) -> Iterator[Written]:
    """One bucket holding an object of every kind in KINDS, and their local bytes."""
    bucket = f"r{uuid.uuid4().hex[:12]}"
    client = natsobj.connect(nats_url)
    store = client.create_store(bucket)
    local = {
        "default": os.urandom(400_000),
        "chunk-1": os.urandom(300),
        "chunk-7": os.urandom(5_000),
        "chunk-1000": os.urandom(100_003),
        "empty": b"",
        "single": b"0123456789",
    }
    tiny = {"chunk-1": 1, "chunk-7": 7}  # below what a put takes: written as another client
    for name, data in local.items():
        if name not in tiny:
            store.put(name, data, chunk_size={"chunk-1000": 1000}.get(name))
    rng = random.Random(22)
    foreign = {
        "interleaved-a": [os.urandom(1000) for _ in range(40)] + [os.urandom(123)],
        "interleaved-b": [os.urandom(1000) for _ in range(35)] + [os.urandom(999)],
        "uneven": uneven(90_000, rng, 4096),
        "uneven-undeclared": uneven(30_000, rng, 700),
    }

    async def write_foreign() -> bytes:
        nc = await nats.connect(nats_url)
        try:
            js = nc.jetstream()
            layout = interleave(*(item for item in foreign.items() if "interleaved" in item[0]))
            layout += interleave(*(item for item in foreign.items() if "uneven" in item[0]))
            declared = {"interleaved-a": 1000, "interleaved-b": 1000, "uneven": 4096}
            await raw_put(js, bucket, layout, {**declared, "uneven-undeclared": None})
            for name, size in tiny.items():
                data = local[name]
                cut = [(name, data[i : i + size]) for i in range(0, len(data), size)]
                await raw_put(js, bucket, cut, {name: size})
            data = os.urandom(700_000)
            await (await js.object_store(bucket)).put("natspy", data)
            return data
        finally:
            await nc.close()

    local["natspy"] = run(write_foreign())
    local.update({name: b"".join(chunks) for name, chunks in foreign.items()})
    assert set(local) == set(KINDS)
    yield Written((store, local))
    with contextlib.suppress(Exception):
        client.delete_store(bucket)
    client.close()


def located(store: natsobj.ObjectStore, info: ObjectInfo) -> Located:
    """The version's map as a fresh client finds it (nothing cached)."""
    return run(locate(store.aio.bucket_stream, info, MapCache()))


@pytest.mark.parametrize("name", KINDS)
def test_each_kind_maps_to_its_chunks(written, name: str) -> None:
    """Every kind's map is its chunks, in order, adding up to the object; contiguous ones
    keep their sequences as a range."""
    store, local = written
    info = store.get_info(name)
    chunk_map = located(store, info).map
    assert (type(chunk_map.sequences) is range) == KINDS[name]
    assert len(chunk_map) == info.chunks
    assert sum(chunk_map.length(k) for k in range(info.chunks)) == len(local[name])


@pytest.mark.parametrize("name", KINDS)
@PROPERTY
@given(data=st.data())
def test_random_ranges_equal_the_local_bytes(written, name: str, data: st.DataObject) -> None:
    store, local = written
    expected = local[name]
    offset = st.integers(-len(expected) - 3, len(expected) + 3)
    for _ in range(3):
        start, end = data.draw(offset), data.draw(st.none() | offset)
        # Python's slice clamps exactly as fsspec's cat_file does
        assert store.get_range(name, start, end) == expected[start:end]


@pytest.mark.parametrize("name", KINDS)
@PROPERTY
@given(data=st.data())
def test_seek_and_read_sequences_behave_as_a_local_file(
    written, name: str, data: st.DataObject
) -> None:
    store, local = written
    expected = local[name]
    size = len(expected)
    offset = st.integers(-size - 3, size + 3)
    op = st.one_of(
        st.tuples(
            st.just("seek"), offset, st.sampled_from([io.SEEK_SET, io.SEEK_CUR, io.SEEK_END])
        ),
        st.tuples(st.just("read"), st.integers(-1, size + 3), st.none()),
        st.tuples(st.just("read_range"), offset, st.none() | offset),
    )
    model = io.BytesIO(expected)
    with contextlib.closing(store.open_range(name)) as reader:
        assert reader.size == size
        for kind, a, b in data.draw(st.lists(op, min_size=1, max_size=12)):
            if kind == "seek":
                base = {io.SEEK_SET: 0, io.SEEK_CUR: model.tell(), io.SEEK_END: size}[b]
                if base + a < 0:
                    with pytest.raises(ValueError):
                        reader.seek(a, b)
                else:
                    assert reader.seek(a, b) == model.seek(base + a)
            elif kind == "read":
                assert reader.read(a) == model.read(a)
            else:
                assert reader.read_range(a, b) == expected[a:b]
            assert reader.tell() == model.tell()


@pytest.mark.parametrize("name", ["default", "chunk-7", "uneven"])
def test_a_buffered_reader_over_the_file_reads_like_a_local_one(written, name: str) -> None:
    store, local = written
    expected = local[name]
    with io.BufferedReader(store.open_range(name), buffer_size=4096) as buffered:
        buffered.seek(len(expected) // 3)
        assert buffered.read(5_000) == expected[len(expected) // 3 :][:5_000]
        buffered.seek(-10, io.SEEK_END)
        assert buffered.read() == expected[-10:]
        buffered.seek(0)
        assert buffered.read() == expected


def test_a_footer_read_fetches_only_the_last_chunk(store) -> None:
    data = os.urandom(2_000_000)
    store.put("big", data, chunk_size=65_536)
    with contextlib.closing(store.open_range("big")) as reader:
        reader.seek(-8, io.SEEK_END)
        assert reader.read() == data[-8:]
        # the fast path's two direct gets: the first chunk and the last one, which held it
        assert reader.bytes_fetched == 65_536 + len(data) % 65_536
        assert reader.read_range(1_000_000, 1_000_010) == data[1_000_000:1_000_010]
        assert reader.bytes_fetched == 2 * 65_536 + len(data) % 65_536
    with pytest.raises(ValueError):  # a closed file, as io says
        reader.read(1)


def test_a_range_of_a_single_chunk_object_fetches_the_chunk_once(store, monkeypatch) -> None:
    """A record of one chunk maps from one direct get: its first message is its last, and
    fetching both brought the chunk over the wire twice. Counted from the replies to every
    request (direct gets, leader gets, API calls), which is how the map's chunks come."""
    data = os.urandom(100_000)  # under the default 128 KiB chunk
    store.put("small.bin", data)
    assert store.get_info("small.bin").chunks == 1
    received: list[int] = []
    request = JetStreamApi.request

    async def counted(api: JetStreamApi, *args: Any, **kwargs: Any) -> Msg:
        reply = await request(api, *args, **kwargs)
        received.append(len(reply.data))
        return reply

    monkeypatch.setattr(JetStreamApi, "request", counted)
    with FetchCounter() as fetched:
        assert store.get_range("small.bin", 10, 20) == data[10:20]
    size = len(data)
    assert fetched.bytes == size
    # the chunk once, and the meta record and any API reply beside it (well under 4 KiB)
    assert size <= sum(received) < size + 4_096


def test_a_message_added_after_a_single_chunk_record_is_never_read_as_its_chunk(store, raw) -> None:
    """Another client publishes on a one-chunk object's chunk subject after its record, with
    the chunk's length: the one direct get then finds that message last. It was written
    after the record, so it is not the put's chunk; the range is refused, never served, as
    the whole read refuses it."""
    data = os.urandom(5_000)
    info = store.put("one.bin", data)
    raw.publish(chunk_subject(store.bucket, info.nuid), os.urandom(len(data)))
    with pytest.raises(DigestMismatch):
        store.get_range("one.bin", 0, 10)
    with pytest.raises(DigestMismatch):
        store.get_bytes("one.bin")


def test_pyarrow_reads_one_column_of_parquet_fetching_a_fraction(store) -> None:
    rows = 100_000
    table = pa.table({f"c{i}": pa.array(range(i, i + rows), pa.int64()) for i in range(8)})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="none", row_group_size=25_000)
    store.put("table.parquet", sink.getvalue(), chunk_size=64 * 1024)
    with store.open_range("table.parquet") as file:
        column = pq.read_table(file, columns=["c3"])
        assert column.column("c3").to_pylist() == list(range(3, 3 + rows))
        assert file.bytes_fetched < 0.3 * len(sink.getvalue())


def test_async_face_and_links(nats_url: str, bucket_name: str) -> None:
    async def body() -> None:
        client = await aio.connect(nats_url)
        try:
            store = await client.create_store(bucket_name)
            data = os.urandom(50_000)
            target = await store.put("target", data, chunk_size=999)
            link = await store.add_link("alias", target)
            assert await store.get_range("alias", 100, 200) == data[100:200]
            async with await store.open_range("alias") as reader:
                assert reader.info.name == "target" and reader.size == len(data)
                reader.seek(-5, io.SEEK_END)
                assert await reader.read() == data[-5:]
            with pytest.raises(LinkError):
                store.range_reader(link)
            with pytest.raises(ObjectNotFound):
                await store.get_range("missing", 0)
            await client.delete_store(bucket_name)
        finally:
            await client.close()

    asyncio.run(body())


def test_an_overwrite_during_a_ranged_read_raises_object_changed(store) -> None:
    data = os.urandom(50_000)
    store.put("x", data, chunk_size=1000)
    with contextlib.closing(store.open_range("x")) as reader:
        assert reader.read(10) == data[:10]
        replacement = os.urandom(50_000)
        store.put("x", replacement, chunk_size=1000)
        reader.seek(30_000)
        with pytest.raises(ObjectChanged):
            reader.read(100)
    assert store.get_range("x", 30_000, 30_100) == replacement[30_000:30_100]
    opened = store.open_range("x")
    store.delete("x")
    with pytest.raises(ObjectChanged):
        opened.read(1)


def test_reads_racing_overwrites_never_mix_versions(nats_url: str, bucket_name: str) -> None:
    """Each version is one byte value repeated; a read returns one value or ObjectChanged."""

    async def body() -> tuple[int, int]:
        writer, reader_client = await aio.connect(nats_url), await aio.connect(nats_url)
        try:
            store = await writer.create_store(bucket_name)
            readers = await reader_client.store(bucket_name)
            await store.put("v", bytes([0]) * 200_000, chunk_size=1000)
            stop = asyncio.Event()

            async def overwrite() -> None:
                version = 0
                while not stop.is_set():
                    version += 1
                    await store.put("v", bytes([version % 256]) * 200_000, chunk_size=1000)

            async def read() -> tuple[int, int]:
                rng, whole, changed = random.Random(5), 0, 0
                for _ in range(150):
                    try:
                        async with await readers.open_range("v") as reader:
                            for _ in range(3):
                                start = rng.randrange(200_000)
                                piece = await reader.read_range(start, start + 20_000)
                                assert len(set(piece)) == 1, "bytes of two versions"
                                whole += 1
                    except ObjectChanged:
                        changed += 1
                stop.set()
                return whole, changed

            writing = asyncio.ensure_future(overwrite())
            result = await read()
            await writing
            await writer.delete_store(bucket_name)
            return result
        finally:
            await writer.close()
            await reader_client.close()

    whole, changed = asyncio.run(body())
    assert whole > 0 and whole + changed > 150


def test_a_chunk_over_the_declared_size_is_mapped_at_its_true_offset(nats_url: str, store) -> None:
    """Edges that look uniform while a middle chunk breaks the declared size: offsets come
    from every chunk's size, never from the declared one."""
    chunks = [os.urandom(n) for n in (100, 150, 50, 60)]  # declared 100: 4 == ceil(360/100)

    async def write() -> None:
        nc = await nats.connect(nats_url)
        try:
            await raw_put(nc.jetstream(), store.bucket, [("odd", c) for c in chunks], {"odd": 100})
        finally:
            await nc.close()

    run(write())
    data = b"".join(chunks)
    assert store.get_range("odd", 120, 260) == data[120:260]
    info = store.get_info("odd")
    assert list(located(store, info).map.starts) == [0, 100, 250, 300]


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (0, None, (0, 10)),
        (-3, None, (7, 10)),
        (-30, 4, (0, 4)),
        (4, -2, (4, 8)),
        (8, 2, (8, 8)),
        (12, 20, (10, 10)),
        (None, 5, (0, 5)),
    ],
)
def test_byte_range_clamps_as_fsspec(start, end, expected) -> None:
    assert byte_range(10, start, end) == expected


def test_a_range_read_on_another_node_sees_the_write(
    cluster: ClusterHarness, r3_bucket: str
) -> None:
    """docs/production.md's read-after-write: a put that returned on node 0 is what a ranged
    read on nodes 1 and 2 returns at once, chunk map included (no stale map, no missing
    chunk from a replica that is behind)."""

    async def body() -> int:
        clients = [await aio.connect(url) for url in cluster.urls]
        eventual = await aio.connect(cluster.urls[2], consistency="eventual")
        try:
            stores = [await client.store(r3_bucket) for client in clients]
            nearest = await eventual.store(r3_bucket)
            rng, checked = random.Random(3), 0
            for round_ in range(40):
                size = rng.randrange(1, 40_000)
                data = os.urandom(size)
                put = await stores[0].put("obj", data, chunk_size=rng.choice([512, 1000, 4096]))
                # any replica, holding at least the handed-over sequence (docs/production.md)
                got = await nearest.get_range("obj", -3_000, min_sequence=put.sequence)
                assert got == data[-3_000:], round_
                for store in stores[1:]:
                    start = rng.randrange(size)
                    assert (
                        await store.get_range("obj", start, start + 5_000)
                        == data[start : start + 5_000]
                    ), round_
                    async with await store.open_range("obj") as reader:
                        reader.seek(-100, io.SEEK_END)
                        assert await reader.read() == data[-100:]
                    checked += 1
            return checked
        finally:
            for client in [*clients, eventual]:
                await client.close()

    assert asyncio.run(body()) == 80


def test_without_batched_gets_chunks_come_one_by_one(nats_url: str, written) -> None:
    """An API whose multi-message replies are cut to one (an account import without
    ``response_type: stream``, remembered by the connection) still reads exact ranges."""
    store, local = written
    client = natsobj.connect(nats_url)
    try:
        other = client.store(store.bucket)
        other.aio.api.batched_gets_cut_off = True
        for name in ("chunk-1000", "uneven", "natspy"):
            expected = local[name]
            with other.open_range(name) as reader:
                assert reader.read_range(1_234, 20_000) == expected[1_234:20_000]
                assert reader.bytes_fetched >= 20_000 - 1_234
    finally:
        client.close()


def test_concurrent_reads_on_one_reader(nats_url: str, written) -> None:
    """fsspec's cat_ranges may read many ranges of one file at once."""
    _, local = written
    bucket = written[0].bucket
    expected = local["chunk-1000"]
    rng = random.Random(9)
    ranges = [(start, start + rng.randrange(1, 5_000)) for start in rng.sample(range(100_000), 40)]

    async def body() -> list[bytes]:
        client = await aio.connect(nats_url)
        try:
            store = await client.store(bucket)
            async with await store.open_range("chunk-1000") as reader:
                return await asyncio.gather(*(reader.read_range(a, b) for a, b in ranges))
        finally:
            await client.close()

    assert asyncio.run(body()) == [expected[a:b] for a, b in ranges]


@PROPERTY
@given(data=st.data())
def test_ranges_of_what_javascript_writes(written_by_js, data: st.DataObject) -> None:
    store, expected = written_by_js
    offset = st.integers(-len(expected) - 3, len(expected) + 3)
    start, end = data.draw(offset), data.draw(st.none() | offset)
    assert store.get_range("from-js", start, end) == expected[start:end]


@pytest.fixture(scope="module")
def written_by_js(nats_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Written]:
    """An object the official JavaScript client (@nats-io/obj) wrote."""
    from tests.core.test_interop_js import js

    client = natsobj.connect(nats_url)
    store = client.create_store(f"j{uuid.uuid4().hex[:12]}")
    data = os.urandom(700_000)
    source = tmp_path_factory.mktemp("js") / "source.bin"
    source.write_bytes(data)
    js("put", nats_url, store.bucket, "from-js", str(source))
    yield Written((store, data))
    with contextlib.suppress(Exception):
        client.delete_store(store.bucket)
    client.close()


def test_javascript_chunks_map_as_ranges(written_by_js) -> None:
    store, data = written_by_js
    info = store.get_info("from-js")
    chunk_map = located(store, info).map
    assert (type(chunk_map.sequences), type(chunk_map.starts)) == (range, range)
    assert info.chunks == 6 and info.size == len(data)


def test_the_map_cache_is_bounded_in_versions_and_listed_chunks(monkeypatch) -> None:
    from array import array

    from natsobj.aio import chunkmap

    monkeypatch.setattr(chunkmap, "MAP_CACHE_LISTED_CHUNKS", 100)
    monkeypatch.setattr(chunkmap, "MAP_CACHE_ENTRIES", 5)
    cache = chunkmap.MapCache()
    listed = chunkmap.ChunkMap("s", 30, array("q", range(30)), array("q", range(30)))
    fast = chunkmap.ChunkMap("s", 10, range(1, 11), range(10))
    for n in range(3):
        cache.put(("t", "b", "n", f"mapped{n}", n), listed)
    assert (len(cache), cache.listed) == (1, 60)  # a second one would make 120
    assert cache.get(("t", "b", "n", "mapped2", 2)) is listed
    for n in range(10):
        cache.put(("t", "b", "n", f"fast{n}", n), fast)
    assert len(cache) == 5 and cache.listed == 0
    assert cache.get(("t", "b", "n", "fast9", 9)) is fast
    assert cache.get(("t", "b", "n", "fast0", 0)) is None


@pytest.mark.usefixtures("internals_missing")
def test_ranges_through_nats_pys_stock_delivery(nats_url, bucket_name) -> None:
    """Without the raw-delivery route (a nats-py missing an internal it needs), batched gets
    come through nats-py's own subscription callbacks, and ranges stay exact."""

    async def body() -> None:
        client = await aio.connect(nats_url)
        try:
            assert "_process_msg" not in vars(client.api.nc)  # nats-py's own delivery
            store = await client.create_store(bucket_name)
            data = os.urandom(3_000_000)
            await store.put("big", data, chunk_size=10_000)
            rng = random.Random(1)
            for _ in range(20):
                start = rng.randrange(len(data))
                end = start + rng.choice([1, 9_999, 10_001, 2_500_000])
                assert await store.get_range("big", start, end) == data[start:end]
            await client.delete_store(bucket_name)
        finally:
            await client.close()

    asyncio.run(body())


def test_a_stream_without_direct_gets_is_read_from_the_leader(store) -> None:
    """Every read then goes through STREAM.MSG.GET (next_by_subj from a chunk's sequence)."""
    data = os.urandom(30_000)
    store.put("x", data, chunk_size=1_000)
    stream = store.aio.bucket_stream
    run(stream.update(allow_direct=False))
    run(stream.info())
    assert not stream.allow_direct
    assert store.get_range("x", 2_500, 7_001) == data[2_500:7_001]
    with store.open_range("x") as reader:
        reader.seek(-1_500, io.SEEK_END)
        assert reader.read() == data[-1_500:]
