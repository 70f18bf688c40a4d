"""The local name index behind listings (natsobj.local.name_index, natsobj.aio.name_sync): results
equal a full consumer scan however the bucket changed since the index was built, by this
client or another process; a re-created bucket never reuses an old index; an unusable or
disabled index falls back to the subject-state listing with the same results."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import natsobj
from natsobj.aio import listing, name_sync
from natsobj.local.name_index import prefix_upper_bound
from natsobj.names import meta_subject, stream_name
from natsobj.sync import run
from natsobj.wire import direct_get_batch_subject, stream_api
from tests.core.test_listing import as_map, expected, scanned

REBUILT = "name index rebuilt"
NO_INDEX = "no local name index"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("NATSOBJ_CACHE_DIR", str(directory))
    monkeypatch.delenv("NATSOBJ_NAME_INDEX", raising=False)
    return directory


class IndexServing:
    """Makes every listing try to serve meta records from the index (the thresholds that
    keep small listings on fetches set to nothing), and records each proof's verdict."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.proofs: list[bool] = []
        monkeypatch.setattr(listing, "CACHED_MIN", 1)
        monkeypatch.setattr(listing, "CACHED_SHARE", 10**9)
        prove = name_sync.names_complete

        async def recorded(*args, **kwargs) -> bool:
            verdict = await prove(*args, **kwargs)
            self.proofs.append(verdict)
            return verdict

        monkeypatch.setattr(name_sync, "names_complete", recorded)


@pytest.fixture
def index_serving(monkeypatch: pytest.MonkeyPatch) -> IndexServing:
    return IndexServing(monkeypatch)


def index_files(cache: Path) -> list[Path]:
    return sorted(cache.glob("names-v*/*.sqlite3"))


def assert_equals_scan(store: natsobj.ObjectStore, prefix: str | None = None) -> None:
    for include_deleted in (False, True):
        listed = store.list(prefix=prefix, include_deleted=include_deleted)
        assert as_map(listed) == expected(scanned(store, include_deleted), prefix)


def python_with_store(nats_url: str, bucket: str, script: str) -> list[str]:
    """A command running ``script`` in a fresh interpreter, with ``store`` bound to the bucket."""
    code = textwrap.dedent(
        f"""
        import json, natsobj
        client = natsobj.connect({nats_url!r})
        store = client.store({bucket!r})
        """
    ) + textwrap.dedent(script)
    return [sys.executable, "-c", code]


def child_env(cache: Path) -> dict[str, str]:
    return {"NATSOBJ_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin"}


def in_another_process(nats_url: str, bucket: str, script: str, cache: Path) -> str:
    done = subprocess.run(
        python_with_store(nats_url, bucket, script),
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(cache),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_index_is_built_once_then_caught_up(store, cache, caplog):
    caplog.set_level(logging.INFO, logger="natsobj.aio.name_sync")
    for index in range(30):
        store.put(f"dir{index % 3}/file{index}", b"x")
    assert [i.name for i in store.list(prefix="dir1/")] == sorted(
        f"dir1/file{i}" for i in range(30) if i % 3 == 1
    )
    assert caplog.text.count(REBUILT) == 1
    assert len(index_files(cache)) == 1
    store.put("dir1/late", b"y")
    store.delete("dir1/file1")
    store.put("dir1/file4", b"overwritten")
    listed = {i.name: i for i in store.list(prefix="dir1/")}
    assert "dir1/late" in listed and "dir1/file1" not in listed
    assert listed["dir1/file4"].size == len(b"overwritten")
    assert caplog.text.count(REBUILT) == 1  # caught up by sequence, not rebuilt
    assert_equals_scan(store, "dir1/")
    assert_equals_scan(store)


def test_the_first_listing_of_a_whole_bucket_reads_each_record_once(
    store, sync_client, cache, caplog
):
    """On one replica, the first listing of everything builds the index from every meta
    message, records included, and serves those: no batched direct get is sent. A prefix
    listing afterwards fetches its matches (which shows the requests would be seen)."""
    caplog.set_level(logging.INFO, logger="natsobj.aio.name_sync")
    for index in range(40):
        store.put(f"d{index % 4}/f{index}", b"x")
    store.delete("d1/f1")
    with direct_gets_seen(sync_client, store) as requests:
        assert as_map(store.list()) == expected(scanned(store))
    assert requests == []
    assert caplog.text.count("rebuilt with records") == 1
    assert_equals_scan(store)  # include_deleted too, from the kept records
    with direct_gets_seen(sync_client, store) as requests:
        assert [i.name for i in store.list(prefix="d2/")] == sorted(
            f"d2/f{i}" for i in range(40) if i % 4 == 2
        )
    assert requests, "the prefix listing's batched get was not seen"


@contextlib.contextmanager
def direct_gets_seen(
    sync_client: natsobj.Client, store: natsobj.ObjectStore
) -> Iterator[list[bytes]]:
    """The batched direct-get requests this client sends for ``store`` while the block runs
    (a subscription on the same connection receives its own requests). After the block, a
    round trip, and a moment for the subscription's callback to take what came before it."""
    api = sync_client.aio.api
    requests: list[bytes] = []

    async def seen(msg) -> None:
        requests.append(msg.data)

    subject = direct_get_batch_subject(api.prefix, stream_name(store.bucket))
    subscription = run(api.nc.subscribe(subject, cb=seen))
    try:
        yield requests
        run(api.nc.flush())
        run(asyncio.sleep(0.2))
    finally:
        run(subscription.unsubscribe())


def test_a_write_during_that_first_read_is_caught_up_not_fetched_again(
    store, sync_client, cache, monkeypatch
):
    """The proof after the first read of every record compares with the stream as it is once
    that read is done: a put that landed during it is caught up, and the records still serve
    (no batched get), the new object included."""
    for index in range(20):
        store.put(f"f{index}", b"x")
    read_every_record = name_sync.rebuild_with_records

    async def a_put_lands_meanwhile(*args, **kwargs) -> None:
        await read_every_record(*args, **kwargs)
        await store.aio.put("landed-during-the-read", b"y")

    monkeypatch.setattr(name_sync, "rebuild_with_records", a_put_lands_meanwhile)
    with direct_gets_seen(sync_client, store) as requests:
        listed = as_map(store.list())
    assert "landed-during-the-read" in listed
    assert listed == expected(scanned(store))
    assert requests == []


def test_writes_by_another_process_are_seen(store, nats_url, cache):
    for name in ("a/1", "a/2", "a/3", "b/1"):
        store.put(name, name.encode())
    assert [i.name for i in store.list(prefix="a/")] == ["a/1", "a/2", "a/3"]
    in_another_process(
        nats_url,
        store.bucket,
        """
        store.put("a/4", b"new")
        store.delete("a/1")
        store.put("a/2", b"overwritten by the other process")
        """,
        cache,
    )
    listed = {i.name: i for i in store.list(prefix="a/")}
    assert sorted(listed) == ["a/2", "a/3", "a/4"]
    assert listed["a/2"].size == len(b"overwritten by the other process")
    assert_equals_scan(store)


def test_two_processes_listing_at_once_share_the_index(store, nats_url, cache):
    names = [f"p/{i:03d}" for i in range(200)]
    for name in names:
        store.put(name, b"x")
    script = """
        for _ in range(5):
            listed = [i.name for i in store.list(prefix="p/")]
            assert listed == sorted(listed), listed
        print(json.dumps(listed))
        """
    procs = [
        subprocess.Popen(
            python_with_store(nats_url, store.bucket, script),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(cache),
        )
        for _ in range(2)
    ]
    store.put("p/zzz", b"written while they list")
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        listed = json.loads(out.strip().splitlines()[-1])
        assert set(names) <= set(listed) <= {*names, "p/zzz"}
    assert len(index_files(cache)) == 1
    assert [i.name for i in store.list(prefix="p/")] == [*names, "p/zzz"]


def test_a_recreated_bucket_does_not_reuse_the_old_index(sync_client, bucket_name, cache):
    old = sync_client.create_store(bucket_name)
    for index in range(20):
        old.put(f"old/{index}", b"x")
    assert len(old.list()) == 20
    (old_file,) = index_files(cache)
    # deleted by another machine's client: this machine's file stays behind
    delete = stream_api("DELETE", stream_name(bucket_name))
    run(sync_client.aio.api.call(delete, bucket=bucket_name))
    new = sync_client.create_store(bucket_name)
    try:
        # far fewer messages than the old index was complete up to: reused, it would catch up
        # nothing and list no object at all
        new.put("fresh", b"y")
        assert [i.name for i in new.list()] == ["fresh"]
        (new_file,) = index_files(cache)  # the new index removed the old incarnation's file
        assert new_file != old_file
    finally:
        sync_client.delete_store(bucket_name)


def test_deleting_a_bucket_removes_its_index_files(sync_client, bucket_name, cache):
    kept = sync_client.create_store(f"{bucket_name}k")
    gone = sync_client.create_store(bucket_name)
    try:
        for store in (kept, gone):
            store.put("a", b"x")
            assert [i.name for i in store.list()] == ["a"]
        kept_file = [f for f in index_files(cache) if f.name.startswith(f"OBJ_{kept.bucket}-")]
        assert len(index_files(cache)) == 2 and len(kept_file) == 1
        sync_client.delete_store(gone.bucket)
        assert index_files(cache) == kept_file
        assert not list(kept_file[0].parent.glob(f"OBJ_{gone.bucket}-*"))  # -wal, -shm too
    finally:
        sync_client.delete_store(kept.bucket)


def test_a_purged_stream_is_rebuilt(store, sync_client, cache, caplog):
    caplog.set_level(logging.INFO, logger="natsobj.aio.name_sync")
    for index in range(10):
        store.put(f"gone/{index}", b"x")
    assert len(store.list()) == 10
    run(sync_client.aio.api.call(stream_api("PURGE", stream_name(store.bucket)), {}))
    store.put("kept", b"y")
    assert [i.name for i in store.list()] == ["kept"]
    assert caplog.text.count(REBUILT) == 2
    assert_equals_scan(store)


def test_an_unusable_cache_dir_falls_back(store, tmp_path, monkeypatch, caplog):
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("")
    monkeypatch.setenv("NATSOBJ_CACHE_DIR", str(not_a_dir))
    caplog.set_level(logging.INFO)
    for name in ("x/1", "x/2", "y/1"):
        store.put(name, b"z")
    assert [i.name for i in store.list(prefix="x/")] == ["x/1", "x/2"]
    assert_equals_scan(store)
    assert caplog.text.count(NO_INDEX) == 1  # said once, not per listing
    assert "listing by consumer scan" not in caplog.text  # still the subject-state listing


@pytest.mark.parametrize("how", ["env", "setting", "url"])
def test_the_index_can_be_turned_off(nats_url, bucket_name, cache, monkeypatch, how):
    if how == "env":
        monkeypatch.setenv("NATSOBJ_NAME_INDEX", "off")
        client = natsobj.connect(nats_url)
    elif how == "setting":
        client = natsobj.connect(natsobj.ConnectionSettings(servers=[nats_url], name_index=False))
    else:
        client = natsobj.connect(f"{nats_url}?name_index=off")
    try:
        store = client.create_store(bucket_name)
        for name in ("k/1", "k/2", "l/1"):
            store.put(name, b"v")
        assert [i.name for i in store.list(prefix="k/")] == ["k/1", "k/2"]
        assert_equals_scan(store)
        assert index_files(cache) == []
    finally:
        client.delete_store(bucket_name)
        client.close()


def test_a_cache_dir_setting_wins_over_the_environment(nats_url, bucket_name, cache, tmp_path):
    chosen = tmp_path / "chosen"
    client = natsobj.connect(natsobj.ConnectionSettings(servers=[nats_url], cache_dir=str(chosen)))
    try:
        store = client.create_store(bucket_name)
        store.put("one", b"1")
        assert [i.name for i in store.list()] == ["one"]
        assert len(index_files(chosen)) == 1 and index_files(cache) == []
    finally:
        client.delete_store(bucket_name)
        client.close()


# -- property: random puts, overwrites, deletes and renames between listings reusing the index --

OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "delete", "rename", "list"]),
        st.sampled_from(["a/1", "a/2", "a/b/3", "ab", "b/é", "b/漢/4", "c"]),
    ),
    min_size=1,
    max_size=25,
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ops=OPS,
    prefix=st.sampled_from([None, "a", "a/", "b/", "zz"]),
    from_index=st.booleans(),
)
def test_indexed_listings_equal_a_full_scan_after_any_changes(
    sync_client, cache, ops, prefix, from_index
):
    """With ``from_index``, listings take the meta records the index kept whenever the proof
    holds; the result must not differ from the server's."""
    store = sync_client.create_store(f"h{uuid.uuid4().hex[:12]}")
    with pytest.MonkeyPatch.context() as monkeypatch:
        serving = IndexServing(monkeypatch) if from_index else None
        try:
            for op, name in ops:
                live = {i.name for i in scanned(store)}
                if op == "put":
                    store.put(name, uuid.uuid4().bytes)
                elif op == "delete" and name in live:
                    store.delete(name)
                elif op == "rename" and name in live and f"{name}~" not in live:
                    rename_as_the_go_client_does(sync_client, store, name, f"{name}~")
                else:
                    assert_equals_scan(store, prefix)
            assert_equals_scan(store, prefix)
            if serving is not None and store.list(include_deleted=True):
                # a listing after a rename fetches everything and drops the old name; the
                # one after it is served from the index (the path under test), and exact
                assert as_map(store.list()) == expected(scanned(store))
                assert serving.proofs[-1] is True
        finally:
            sync_client.delete_store(store.bucket)


def rename_as_the_go_client_does(
    sync_client: natsobj.Client, store: natsobj.ObjectStore, old: str, new: str
) -> None:
    """``UpdateMeta`` with a new name: the new name's record, then a purge of the old subject,
    which removes a name without any message telling the index."""
    renamed = store.get_info(old).evolve(name=new)
    nc = sync_client.aio.api.nc
    publish = nc.jetstream().publish(
        meta_subject(store.bucket, new), renamed.encode(), headers={"Nats-Rollup": "sub"}
    )
    run(publish)
    purge = {"filter": meta_subject(store.bucket, old)}
    run(sync_client.aio.api.call(stream_api("PURGE", stream_name(store.bucket)), purge))


def test_prefix_upper_bound():
    assert prefix_upper_bound("") is None
    assert prefix_upper_bound("a/") == "a0"
    assert prefix_upper_bound("a\U0010ffff") == "b"
    assert prefix_upper_bound("\ud7ff") == "\ue000"  # skips the surrogates
    for prefix in ("a/", "é", "漢字/"):
        bound = prefix_upper_bound(prefix)
        assert bound is not None and prefix + "\U0010ffff" < bound
        assert bound.encode() > (prefix + "\U0010ffff").encode()


def test_a_meta_subject_that_is_no_name_encoding_is_left_to_its_record(store, raw, cache):
    """Another client's subject token that does not decode: indexed without a name, so every
    lookup fetches it, and its record, whose name is not the one its subject encodes, is
    left out as any such record is (it could shadow the object of that name)."""
    store.put("odd/first", b"1")
    assert [i.name for i in store.list(prefix="odd/")] == ["odd/first"]  # index built
    info = natsobj.ObjectInfo(name="odd/second", bucket=store.bucket, nuid="N" * 22)
    raw.publish(f"$O.{store.bucket}.M.not-base64!", info.encode())
    assert [i.name for i in store.list(prefix="odd/")] == ["odd/first"]
    assert [i.name for i in store.list(prefix="other/")] == []
    assert_equals_scan(store, "odd/")


def test_names_whose_subject_was_purged_are_forgotten(store, sync_client, cache):
    """A subject purged without a new meta message (an admin's subject purge) stays in the
    index until a listing finds it gone; then it is dropped, not fetched forever."""
    for name in ("keep/1", "keep/2", "drop/1"):
        store.put(name, b"x")
    assert len(store.list()) == 3
    (path,) = index_files(cache)
    purge = {"filter": meta_subject(store.bucket, "drop/1")}
    run(sync_client.aio.api.call(stream_api("PURGE", stream_name(store.bucket)), purge))
    assert [i.name for i in store.list()] == ["keep/1", "keep/2"]
    with sqlite3.connect(path) as db:
        assert sorted(n for (n,) in db.execute("SELECT name FROM names")) == ["keep/1", "keep/2"]
    assert_equals_scan(store)


def test_a_name_removed_without_a_message_is_not_served_from_the_index(
    store, sync_client, cache, index_serving
):
    """The Go client renames by writing the new name's record and purging the old subject:
    no message tells the index the old name is gone. The proof sees the count differ, so that
    listing fetches every record (and drops the old name); the next one is served again."""
    for name in ("a/1", "a/2", "b/1"):
        store.put(name, name.encode())
    assert [i.name for i in store.list()] == ["a/1", "a/2", "b/1"]  # builds, keeps records
    assert [i.name for i in store.list()] == ["a/1", "a/2", "b/1"]
    assert index_serving.proofs[-1] is True
    rename_as_the_go_client_does(sync_client, store, "a/1", "c/renamed")
    listed = store.list()
    assert [i.name for i in listed] == ["a/2", "b/1", "c/renamed"]
    assert index_serving.proofs[-1] is False
    assert as_map(listed) == expected(scanned(store))
    assert [i.name for i in store.list()] == ["a/2", "b/1", "c/renamed"]
    assert index_serving.proofs[-1] is True  # the gone name was pruned: exact again


def test_the_proof_fails_when_anything_was_written_after_the_catch_up(store, cache):
    """A write between the catch-up and the count may add a subject the index lacks while
    another vanished: same count, different names. Sequences tell, so the proof refuses."""
    for name in ("x/1", "x/2"):
        store.put(name, b"x")
    store.list()
    inner = store.aio
    stream = inner.bucket_stream

    async def prove() -> tuple[bool, bool]:
        info = await stream.info()
        index = name_sync.open_index(stream, info)
        assert index is not None
        try:
            await name_sync.catch_up(stream, index, info)
            before = await name_sync.names_complete(stream, index, info)
            await inner.put("x/3", b"late")
            after = await name_sync.names_complete(stream, index, info)
            return before, after
        finally:
            index.close()

    assert run(prove()) == (True, False)
