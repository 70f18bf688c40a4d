"""Issue 28, points 8 and 9: every byte a ranged read returns is a byte of the verified
object, whatever another writer left in the bucket, and what ranged reads keep (chunk maps)
belongs to one client, never to every server the process talks to.

The rule, property-tested over adversarial layouts (rollups of the chunk subject,
republished chunks and records, chunks of any size, extra chunks before and after the record,
records naming another object's chunks, wrong counts and sizes): ``get_range(a, b)`` equals
``get_bytes()[a:b]`` of the same version whenever that whole read succeeds, and raises a
natsobj error when it fails, but for the one failure a range cannot see without reading
everything (docs/random-access.md): a record whose digest alone disagrees with chunks that
match it in every other way. A range of such a version holds the bytes the record's layout
puts there; one of a version of one or two chunks is still refused."""

from __future__ import annotations

import contextlib
import hashlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import fsspec
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nats.nuid import NUID

import natsobj
from natsobj.errors import DigestMismatch, NatsObjError
from natsobj.local.embedded import NatsServerProcess
from natsobj.model import ObjectInfo, format_digest
from natsobj.names import chunk_subject, meta_subject
from natsobj.sync import run
from tests.raw import RawJetStream

ROLLUP = {"Nats-Rollup": "sub"}
_nuid = NUID()


def publish_record(raw: RawJetStream, info: ObjectInfo) -> int:
    """A meta record as every writer publishes it (a rollup of its subject); its sequence."""
    return raw.publish(meta_subject(info.bucket, info.name), info.encode(), headers=ROLLUP)


def record(bucket: str, name: str, nuid: str, pieces: list[bytes], **fields) -> ObjectInfo:
    """The record of chunks ``pieces`` as a writer would describe them; ``fields`` override
    it."""
    data = b"".join(pieces)
    described = {
        "size": len(data),
        "chunks": len(pieces),
        "digest": format_digest(hashlib.sha256(data).digest()),
        **fields,
    }
    return ObjectInfo(name=name, bucket=bucket, nuid=nuid, **described)


def raw_object(raw: RawJetStream, bucket: str, name: str, chunks: list[bytes], **fields) -> str:
    """Chunks then record, as another client may write them; the nuid."""
    nuid = _nuid.next().decode()
    for chunk in chunks:
        raw.publish(chunk_subject(bucket, nuid), chunk)
    publish_record(raw, record(bucket, name, nuid, chunks, **fields))
    return nuid


def csv_bytes(value: int, rows: int) -> bytes:
    return b"a,b\n" + "".join(f"{value},{i:06d}\n" for i in range(rows)).encode()


@pytest.fixture
def fs(nats_url: str, store) -> fsspec.AbstractFileSystem:
    return fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)


def every_face_refuses(store, fs, nats_url: str, name: str, size: int) -> None:
    """get_range, and fsspec's cat_file, cat_ranges, open/seek/read and pandas.read_csv over
    nats://, each raise DigestMismatch rather than return a byte."""
    path = f"{store.bucket}/{name}"
    middle = size // 2
    with pytest.raises(DigestMismatch):
        store.get_range(name, middle, middle + 8)
    with pytest.raises(DigestMismatch):
        fs.cat_file(path, middle, middle + 8)
    with pytest.raises(DigestMismatch):
        fs.cat_ranges([path, path], [0, middle], [8, middle + 8], on_error="raise")
    returned = fs.cat_ranges([path, path], [0, middle], [8, middle + 8])
    assert [type(item) for item in returned] == [DigestMismatch, DigestMismatch]
    with pytest.raises(DigestMismatch), fs.open(path, "rb") as file:
        file.seek(middle)
        file.read(8)
    with pytest.raises(DigestMismatch), fs.open(path, "rb") as file:
        file.read()
    with pytest.raises(DigestMismatch):
        pd.read_csv(f"nats://{path}", storage_options={"servers": nats_url})


# -- as found ------------------------------------------------------------------------------------


def test_chunks_republished_after_a_rollup_are_never_served(store, raw, fs, nats_url) -> None:
    """(a) A writer rolls up an object's chunk subject and republishes different chunks of
    the same sizes, leaving the record as it was: the whole read refuses them, and so does
    every ranged read (they were stored after the record, so they are no part of it)."""
    data = csv_bytes(1, 600)
    info = store.put("victim.csv", data, chunk_size=1_024)
    assert info.chunks > 3
    forged = csv_bytes(9, 600)
    subject = chunk_subject(store.bucket, info.nuid)
    for index in range(info.chunks):
        piece = forged[index * 1_024 : (index + 1) * 1_024]
        raw.publish(subject, piece, headers=ROLLUP if index == 0 else None)
    with pytest.raises(DigestMismatch):
        store.get_bytes("victim.csv")
    every_face_refuses(store, fs, nats_url, "victim.csv", len(data))


def test_middle_chunks_that_break_the_declared_size_are_read_where_they_are(store, raw, fs) -> None:
    """(b) A writer declares max_chunk_size 8 and keeps it at both ends only: the whole read
    verifies, and every ranged read returns the object's bytes (JJJJJJJJ), not those of the
    chunk a declared size would put there (KKKKKKKK)."""
    chunks = [b"AAAAAAAA", b"", b"KKKKKKKK", b"J" * 16, b"ZZZZZZZZ"]
    raw_object(raw, store.bucket, "odd.bin", chunks, chunk_size=8)
    data = store.get_bytes("odd.bin")
    assert data == b"".join(chunks) and data[16:24] == b"JJJJJJJJ"
    path = f"{store.bucket}/odd.bin"
    assert store.get_range("odd.bin", 16, 24) == b"JJJJJJJJ"
    assert fs.cat_file(path, 16, 24) == b"JJJJJJJJ"
    assert fs.cat_ranges([path, path], [16, 30], [24, 40]) == [data[16:24], data[30:40]]
    with fs.open(path, "rb") as file:
        file.seek(16)
        assert file.read(8) == b"JJJJJJJJ"
    with store.open_range("odd.bin") as reader:
        reader.seek(16)
        assert reader.read(8) == b"JJJJJJJJ"


@pytest.mark.parametrize("chunk_size", [None, 2_048])  # one chunk, two chunks
def test_a_record_naming_another_objects_chunks_is_not_served_their_bytes(
    store, raw, fs, nats_url, chunk_size: int | None
) -> None:
    """(c) A record names another object's nuid (its count and size, another digest): the
    whole read refuses it, and so does every ranged read of an object of one or two chunks
    (the chunks in hand are checked against the digest when the map is found)."""
    payroll = store.put("payroll.csv", csv_bytes(7, 300), chunk_size=chunk_size)
    assert payroll.chunks == (1 if chunk_size is None else 2)
    claimed = format_digest(hashlib.sha256(csv_bytes(3, 300)).digest())
    publish_record(raw, payroll.evolve(name="public.csv", digest=claimed))
    with pytest.raises(DigestMismatch):
        store.get_bytes("public.csv")
    every_face_refuses(store, fs, nats_url, "public.csv", payroll.size)


def test_extra_chunks_after_the_record_leave_the_version_readable(store, raw) -> None:
    """Messages another writer adds to a chunk subject after the record are no part of the
    version: the whole read takes the first ``chunks`` messages, and so do ranged reads."""
    data = os.urandom(5_000)
    info = store.put("x.bin", data, chunk_size=1_000)
    raw.publish(chunk_subject(store.bucket, info.nuid), os.urandom(1_000))
    assert store.get_bytes("x.bin") == data
    assert store.get_range("x.bin", 4_500) == data[4_500:]
    assert store.get_range("x.bin", 1_500, 2_500) == data[1_500:2_500]


def test_a_flood_after_the_record_is_not_listed(store, raw) -> None:
    """Thousands of messages another writer appends to a chunk subject after the record are
    no part of the version, and the map lists only the version's own chunks' sizes."""
    data = os.urandom(3_000)
    info = store.put("x.bin", data, chunk_size=1_000)
    subject = chunk_subject(store.bucket, info.nuid)

    async def flood() -> None:
        for _ in range(5_000):
            await raw.js.publish(subject, b"")

    run(flood())
    sizes = run(store.aio.bucket_stream.message_sizes(subject, info.chunks))
    assert [size for _, size in sizes] == [1_000] * 3
    assert store.get_range("x.bin", 500, 2_500) == data[500:2_500]


# -- the rule, over adversarial layouts ------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """What a writer with publish rights on ``$O.<bucket>.>`` leaves for one object."""

    sizes: tuple[int, ...]  # the chunks it writes
    declared: int | None  # the record's max_chunk_size
    noise: bool  # another object's chunks between them
    before: tuple[int, ...]  # more chunks on the subject before the record
    count_delta: int
    size_delta: int
    wrong_digest: bool
    borrow: bool  # the record names an earlier object's nuid instead
    lies: bool  # chunks carry headers the server sets (the publisher's come first)
    after: tuple[str, ...]  # moves after the record


LAYOUTS = st.builds(
    Layout,
    sizes=st.lists(st.integers(0, 24), max_size=6).map(tuple),
    declared=st.none() | st.integers(1, 24),
    noise=st.booleans(),
    before=st.lists(st.integers(0, 24), max_size=2).map(tuple),
    count_delta=st.sampled_from([0, 0, 0, -1, 1]),
    size_delta=st.sampled_from([0, 0, 0, -1, 1]),
    wrong_digest=st.booleans(),
    borrow=st.booleans(),
    lies=st.booleans(),
    after=st.lists(
        st.sampled_from(["extra", "rollup-same", "rollup-forged", "record-again"]), max_size=3
    ).map(tuple),
)
OFFSETS = st.integers(-40, 200)
PROPERTY = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class Adversary:
    """One bucket; each layout is written as a new object."""

    def __init__(self, store: natsobj.ObjectStore, raw: RawJetStream) -> None:
        self.store, self.raw = store, raw
        self.count = 0

    def write(self, layout: Layout) -> str:
        self.count += 1
        name, bucket = f"o{self.count}", self.store.bucket
        chunks = [os.urandom(size) for size in layout.sizes]
        nuid = _nuid.next().decode()
        if layout.borrow:  # another object's chunks, whole and verified, in 24-byte pieces
            data = b"".join(chunks)
            chunks = [data[at : at + 24] for at in range(0, len(data), 24)]
            raw_object(self.raw, bucket, f"d{self.count}", chunks, chunk_size=24)
            nuid = self.store.get_info(f"d{self.count}").nuid
        subject = chunk_subject(bucket, nuid)
        other = chunk_subject(bucket, _nuid.next().decode())
        lies = {"Nats-Msg-Size": "8", "Nats-Sequence": "1"} if layout.lies else None
        if not layout.borrow:
            for chunk in chunks:
                self.raw.publish(subject, chunk, headers=lies)
                if layout.noise:
                    self.raw.publish(other, b"noise")
        for size in layout.before:
            self.raw.publish(subject, os.urandom(size))
        data = b"".join(chunks)
        claimed = b"!" + data if layout.wrong_digest else data
        meta = record(
            bucket,
            name,
            nuid,
            chunks,
            size=max(0, len(data) + layout.size_delta),
            chunks=max(0, len(chunks) + layout.count_delta),
            digest=format_digest(hashlib.sha256(claimed).digest()),
            chunk_size=layout.declared,
        )
        publish_record(self.raw, meta)
        for move in layout.after:
            if move == "extra":
                self.raw.publish(subject, os.urandom(8))
            elif move == "record-again":
                publish_record(self.raw, meta)
            else:
                again = chunks if move == "rollup-same" else [os.urandom(len(c)) for c in chunks]
                for index, chunk in enumerate(again or [b""]):
                    self.raw.publish(subject, chunk, headers=ROLLUP if index == 0 else None)
        return name


@pytest.fixture(scope="module")
def adversary(nats_url: str) -> Iterator[Adversary]:
    client = natsobj.connect(nats_url)
    store = client.create_store(f"adv{uuid.uuid4().hex[:10]}")
    raw = RawJetStream(nats_url)
    try:
        yield Adversary(store, raw)
    finally:
        raw.close()
        with contextlib.suppress(Exception):
            client.delete_store(store.bucket)
        client.close()


def outcome(read) -> bytes | NatsObjError:
    """What a read returned, or the natsobj error it raised (any other error fails the test)."""
    try:
        return read()
    except NatsObjError as exc:
        return exc


@PROPERTY
@given(layout=LAYOUTS, ranges=st.lists(st.tuples(OFFSETS, st.none() | OFFSETS), max_size=4))
def test_a_range_is_the_whole_reads_bytes_or_an_error(
    adversary: Adversary, layout: Layout, ranges: list[tuple[int, int | None]]
) -> None:
    store = adversary.store
    name = adversary.write(layout)
    info = store.get_info(name)
    whole = outcome(lambda: store.get_bytes(name))
    # the same version read whole with its digest left out: its layout's bytes, when the
    # digest is the only thing wrong with it
    laid_out = outcome(lambda: run(store.aio.reader(info.evolve(digest="")).read()))
    for start, end in ranges:
        got = outcome(lambda start=start, end=end: store.get_range(name, start, end))
        if isinstance(whole, bytes):
            assert got == whole[start:end], (layout, start, end, got)
        elif isinstance(got, bytes) and got:
            # the one failure a range cannot see: the digest alone, on three chunks or more
            assert isinstance(whole, DigestMismatch) and isinstance(laid_out, bytes), layout
            assert info.chunks > 2 and got == laid_out[start:end], (layout, start, end)

    # seek and read on the version, in pieces, from the start: the same rule
    def through() -> bytes:
        with store.range_reader(info) as reader:
            return b"".join(iter(lambda: reader.read(7), b""))

    read_through = outcome(through)
    if isinstance(whole, bytes):
        assert read_through == whole, layout
    elif isinstance(read_through, bytes) and read_through:
        assert isinstance(whole, DigestMismatch) and read_through == laid_out, layout
        assert info.chunks > 2, layout


# -- point 9: what ranged reads keep belongs to one client -----------------------------------


def test_two_servers_in_one_process_never_share_a_chunk_map(tmp_path: Path) -> None:
    """Two servers, each with a bucket of the same name holding an object of the same name,
    nuid and meta sequence but other chunks: each client reads its own server's bytes, in
    either order (as found: the map of two chunks read first gave 8,192 of the other's
    12,288 bytes, and b"" for a range inside it); and a bucket deleted and made again under
    its name (a new stream, whose sequences start over) is not read through the old map."""
    bucket, nuid = "same", _nuid.next().decode()
    layouts = {"a": [b"a" * 4096, b"A" * 4096, b"a" * 4096], "b": [b"b" * 4096] * 2}

    def write(raw: RawJetStream, chunks: list[bytes]) -> int:
        for chunk in chunks:
            raw.publish(chunk_subject(bucket, nuid), chunk)
        if len(chunks) == 2:  # the record lands on the same sequence either way
            raw.publish(chunk_subject(bucket, "filler"), b"")
        return publish_record(raw, record(bucket, "obj", nuid, chunks, chunk_size=4096))

    with NatsServerProcess(tmp_path / "a") as one, NatsServerProcess(tmp_path / "b") as two:
        servers = {"a": one.url, "b": two.url}
        clients = {key: natsobj.connect(url) for key, url in servers.items()}
        raws = {key: RawJetStream(url) for key, url in servers.items()}
        try:
            sequences = {}
            for key, chunks in layouts.items():
                clients[key].create_store(bucket)
                sequences[key] = write(raws[key], chunks)
            assert sequences["a"] == sequences["b"]
            for key in "bab":
                store = clients[key].store(bucket)
                expected = b"".join(layouts[key])
                assert store.get_range("obj", 0) == expected
                assert store.get_range("obj", 9_000, 10_000) == expected[9_000:10_000]
            # made again on server a: same name, nuid and sequence, other chunks
            clients["a"].delete_store(bucket)
            store = clients["a"].create_store(bucket)
            chunks = [b"x" * 1_000, b"y" * 7_192]
            assert write(raws["a"], chunks) == sequences["a"]
            assert store.get_range("obj", 500, 1_500) == b"x" * 500 + b"y" * 500
        finally:
            for raw in raws.values():
                raw.close()
            for client in clients.values():
                client.close()


def test_a_clients_ranged_reads_share_its_fetch_slots_only(nats_url: str, store) -> None:
    """The in-flight bound is the connection's: each client has its own, of its own read
    window, and every ranged reader on a client draws on that one."""
    data = os.urandom(20_000)
    store.put("x", data, chunk_size=1_000)
    first = natsobj.connect(nats_url)
    second = natsobj.connect(nats_url)
    try:
        readers = [client.store(store.bucket).open_range("x") for client in (first, second)]
        for reader in readers:
            assert reader.read_range(3_000, 7_000) == data[3_000:7_000]
        shared = [reader._reader.shared for reader in readers]  # the aio reader's
        assert shared[0] is first.aio.ranges and shared[1] is second.aio.ranges
        assert shared[0] is not shared[1] and len(shared[0].maps) == len(shared[1].maps) == 1
    finally:
        first.close()
        second.close()


def test_a_chunks_own_size_header_is_not_its_size(store, raw) -> None:
    """A writer's chunk carrying its own ``Nats-Msg-Size`` (and ``Nats-Sequence``) header:
    the server adds its own after them, and that one is the chunk's size, so the chunks
    after it are read where they are."""
    chunks = [b"a" * 8, b"b" * 12, b"c" * 8, b"d" * 8]
    nuid = _nuid.next().decode()
    for chunk in chunks:
        headers = {"Nats-Msg-Size": "8", "Nats-Sequence": "1"}
        raw.publish(chunk_subject(store.bucket, nuid), chunk, headers=headers)
    publish_record(raw, record(store.bucket, "lies.bin", nuid, chunks, chunk_size=12))
    data = store.get_bytes("lies.bin")
    assert store.get_range("lies.bin", 20, 28) == data[20:28] == b"c" * 8
    assert store.get_range("lies.bin", 0) == data
