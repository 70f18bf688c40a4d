"""Each ADR-20 rule (and each rule the seeds README makes explicit) checked on the wire."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import natsobj
from natsobj import names
from natsobj.aio.put_modes import PutMode
from natsobj.model import ObjectInfo


def encoded(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode()).decode()


def test_stream_config_follows_adr20(sync_client, bucket_name, raw):
    sync_client.create_store(
        bucket_name,
        description="artifacts",
        metadata={"owner": "infra"},
        ttl=3600,
        compression=True,
    )
    config = raw.stream_config(bucket_name)
    assert config["name"] == f"OBJ_{bucket_name}"
    assert config["subjects"] == [f"$O.{bucket_name}.C.>", f"$O.{bucket_name}.M.>"]
    assert config["allow_rollup_hdrs"] is True
    assert config["allow_direct"] is True
    assert config["discard"] == "new"
    assert config["max_bytes"] == -1
    assert config["storage"] == "file"
    assert config["num_replicas"] == 1
    assert config["compression"] == "s2"
    assert config["description"] == "artifacts"
    assert config["metadata"]["owner"] == "infra"
    assert config["max_age"] == 3600 * 10**9
    sync_client.delete_store(bucket_name)


def test_put_writes_chunks_and_rolled_up_meta(store, raw):
    data = bytes(range(256)) * 1000  # 256,000 bytes
    info = store.put("dir/file.bin", data, chunk_size=100_000)
    assert info.chunks == 3 and info.size == len(data)
    chunk_subject = f"$O.{store.bucket}.C.{info.nuid}"
    assert raw.subject_count(store.bucket, chunk_subject) == 3
    meta = raw.last_msg(f"$O.{store.bucket}.M.{encoded('dir/file.bin')}", store.bucket)
    assert meta.headers["Nats-Rollup"] == "sub"
    doc = json.loads(meta.data)
    assert "mtime" not in doc
    assert doc["name"] == "dir/file.bin"
    assert doc["bucket"] == store.bucket
    assert doc["nuid"] == info.nuid
    assert doc["size"] == len(data) and doc["chunks"] == 3
    assert doc["options"] == {"max_chunk_size": 100_000}


def test_name_encoding_is_padded_url_safe_base64():
    # bytes 0xfb 0xff make '-' and '_' in URL-safe base64; a 1-byte name needs '==' padding
    assert (
        names.encode_name("\u00fb\u00ff")
        == base64.urlsafe_b64encode("\u00fb\u00ff".encode()).decode()
    )
    assert names.encode_name("a") == "YQ=="
    assert names.meta_subject("b", "a") == "$O.b.M.YQ=="
    assert "+" not in names.encode_name("~~~???>>>") and "/" not in names.encode_name("~~~???>>>")


def test_digest_is_sha256_url_safe_base64(store):
    data = b"\xfb\xff" * 5000
    info = store.put("digest", data)
    expected = "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()
    assert info.digest == expected
    assert store.get_info("digest").digest == expected


def test_modtime_comes_from_the_server(store, raw):
    store.put("timed", b"x")
    meta = raw.last_msg(f"$O.{store.bucket}.M.{encoded('timed')}", store.bucket)
    info = store.get_info("timed")
    assert info.mtime is not None and info.mtime.tzinfo is not None
    assert info.mtime == natsobj.model.parse_server_time(meta.time)
    assert abs(info.mtime - datetime.now(UTC)) < timedelta(minutes=1)
    assert info.sequence == meta.seq
    listed = store.list()[0]
    assert listed.mtime == info.mtime and listed.sequence == info.sequence


def test_overwrite_replaces_meta_and_purges_old_chunks(store, raw):
    first = store.put("same", b"a" * 300_000)
    second = store.put("same", b"b" * 10)
    assert first.nuid != second.nuid
    assert raw.subject_count(store.bucket, f"$O.{store.bucket}.C.{first.nuid}") == 0
    assert raw.subject_count(store.bucket, f"$O.{store.bucket}.M.{encoded('same')}") == 1
    assert store.get_bytes("same") == b"b" * 10


def test_delete_leaves_tombstone_and_purges_chunks(store, raw):
    info = store.put("gone", b"z" * 200_000)
    tombstone = store.delete("gone")
    assert tombstone.deleted
    doc = json.loads(raw.last_msg(f"$O.{store.bucket}.M.{encoded('gone')}", store.bucket).data)
    assert doc["deleted"] is True and doc["size"] == 0 and doc["chunks"] == 0
    assert doc.get("digest", "") == "" and doc["nuid"] == info.nuid
    assert raw.subject_count(store.bucket, f"$O.{store.bucket}.C.{info.nuid}") == 0
    with pytest.raises(natsobj.ObjectNotFound, match="gone"):
        store.get_info("gone")
    with pytest.raises(natsobj.ObjectNotFound):
        store.get_bytes("gone")
    assert store.get_info("gone", include_deleted=True).deleted
    assert store.delete("gone").deleted  # deleting again is a no-op
    with pytest.raises(natsobj.ObjectNotFound, match="never-existed"):
        store.delete("never-existed")


def test_list_filters_deleted_and_is_empty_list_for_empty_bucket(store):
    assert store.list() == []
    store.put("keep", b"1")
    store.put("drop", b"2")
    store.delete("drop")
    assert [i.name for i in store.list()] == ["keep"]
    assert sorted(i.name for i in store.list(include_deleted=True)) == ["drop", "keep"]


def test_update_meta_changes_description_headers_metadata(store):
    store.put("doc", b"content", description="old", headers={"A": ["1"]}, metadata={"k": "v"})
    updated = store.update_meta("doc", description="new", headers={"B": "2"}, metadata={"x": "y"})
    info = store.get_info("doc")
    assert (info.description, info.headers, info.metadata) == ("new", {"B": ["2"]}, {"x": "y"})
    assert updated.sequence == info.sequence
    store.update_meta("doc", description="newer")
    assert store.get_info("doc").metadata == {"x": "y"}  # fields not given are kept


def test_rename_keeps_the_object(store, raw):
    data = b"r" * 400_000
    original = store.put("old-name", data)
    store.update_meta("old-name", new_name="new-name")
    assert store.get_bytes("new-name") == data
    assert store.get_info("new-name").nuid == original.nuid
    assert raw.subject_count(store.bucket, f"$O.{store.bucket}.M.{encoded('old-name')}") == 0
    with pytest.raises(natsobj.ObjectNotFound):
        store.get_info("old-name")


def test_rename_onto_existing_object_is_an_error_but_onto_deleted_is_fine(store):
    store.put("a", b"a")
    store.put("b", b"b")
    with pytest.raises(natsobj.ObjectExists, match="'b'"):
        store.update_meta("a", new_name="b")
    store.delete("b")
    store.update_meta("a", new_name="b")
    assert store.get_bytes("b") == b"a"


def test_update_meta_of_deleted_object_is_an_error(store):
    store.put("d", b"d")
    store.delete("d")
    with pytest.raises(natsobj.ObjectNotFound):
        store.update_meta("d", description="x")


def test_object_link_rules(sync_client, store, bucket_name):
    other = sync_client.create_store(bucket_name + "o")
    try:
        target = other.put("target", b"linked data")
        link = store.add_link("ln", target)
        assert link.link == natsobj.ObjectLink(other.bucket, "target")
        assert link.nuid and link.nuid != target.nuid  # a link carries its own nuid
        # a link into another bucket is read only when the caller asks (natsobj.aio.links)
        with pytest.raises(natsobj.LinkError, match=f"link to {other.bucket}/target"):
            store.get_bytes("ln")
        assert store.get_bytes("ln", follow_links=True) == b"linked data"
        with pytest.raises(natsobj.LinkError, match="link to a link"):
            store.add_link("ln2", store.get_info("ln"))
        store.put("regular", b"r")
        with pytest.raises(natsobj.ObjectExists):
            store.add_link("regular", target)
        store.delete("regular")
        store.add_link("regular", target)  # over a deleted object is fine
        store.add_link("ln", target)  # over another link is fine (overwrite)
        other.delete("target")
        with pytest.raises(natsobj.LinkError, match="deleted"):
            store.add_link("ln3", other.get_info("target", include_deleted=True))
        store.update_meta("ln", description="links can be updated")
        assert store.get_info("ln").description == "links can be updated"
    finally:
        sync_client.delete_store(other.bucket)


def test_bucket_link(sync_client, store, raw, bucket_name):
    other = sync_client.create_store(bucket_name + "b")
    try:
        link = store.add_bucket_link("everything", other.bucket)
        doc = json.loads(
            raw.last_msg(f"$O.{store.bucket}.M.{encoded('everything')}", store.bucket).data
        )
        assert doc["options"]["link"]["bucket"] == other.bucket
        assert doc["options"]["link"].get("name", "") == ""
        assert link.link is not None and link.link.is_bucket_link
        with pytest.raises(natsobj.LinkError, match="bucket"):
            store.get_bytes("everything")
        with pytest.raises(natsobj.BucketNotFound):
            store.add_bucket_link("nowhere", "no-such-bucket")
    finally:
        sync_client.delete_store(other.bucket)


def test_watch_default_gives_current_values_then_updates(store):
    store.put("one", b"1")
    store.put("one", b"11")
    store.put("two", b"2")
    with store.watch() as watcher:
        initial = [watcher.next(5), watcher.next(5)]
        assert [i.name for i in initial] == ["one", "two"]
        assert initial[0].size == 2  # only the latest value per object
        assert watcher.initial_done
        store.put("three", b"3")
        assert watcher.next(5).name == "three"
        store.delete("three")
        update = watcher.next(5)
        assert update.name == "three" and update.deleted


def test_watch_history_updates_only_and_ignore_deletes(store):
    store.put("h", b"1")
    store.put("h", b"22")
    store.put("i", b"333")
    with store.watch(start="earliest") as watcher:
        # the meta rollup keeps one record per name, so history is every name's latest record
        assert [(i.name, i.size) for i in (watcher.next(5), watcher.next(5))] == [
            ("h", 2),
            ("i", 3),
        ]
        assert watcher.next(0.3) is None
    with store.watch(start="latest") as watcher:
        assert watcher.initial_done
        assert watcher.next(0.3) is None
        store.put("new", b"n")
        assert watcher.next(5).name == "new"
    with store.watch(start="latest", include_deletes=False) as watcher:
        store.delete("new")
        store.put("after", b"a")
        assert watcher.next(5).name == "after"


def test_watch_takes_the_table_spellings_and_the_old_ones_with_a_warning(store):
    """follow.start and follow.include_deletes read as on every face (a sequence, synonyms,
    "off"); the ADR-20 spellings still work for a release, with a DeprecationWarning."""
    store.put("a", b"1")
    second = store.put("b", b"2")
    store.delete("a")
    with store.watch(start=second.sequence, include_deletes="off") as watcher:
        assert watcher.next(5).name == "b"
        assert watcher.next(0.3) is None  # the delete of "a" is not reported
    with store.watch(start="history") as watcher:
        assert watcher.next(5).name == "b"
        assert watcher.next(5).deleted
    with pytest.warns(DeprecationWarning, match="start="):
        old = store.watch(updates_only=True)
    with old as watcher:
        assert watcher.initial_done
    with pytest.warns(DeprecationWarning, match="include_deletes=False"):
        old = store.watch(ignore_deletes=True, start="earliest")
    with old as watcher:
        assert watcher.next(5).name == "b"
        assert watcher.next(0.3) is None
    with pytest.raises(ValueError, match="start"):
        store.watch(start="soon")


def test_watch_on_empty_bucket_is_initially_done(store):
    with store.watch() as watcher:
        assert watcher.initial_done
        assert watcher.next(0.2) is None


def test_changes_resume_after_sequence(store):
    first = store.put("c1", b"1")
    store.put("c2", b"2")
    store.delete("c1")
    batch = store.changes(first.sequence)
    assert [(i.name, i.deleted) for i in batch] == [("c2", False), ("c1", True)]
    assert store.changes(batch.last_sequence) == []
    only_puts = store.changes(0, include_deletes=False)
    # c1's put record was rolled up by its tombstone: each name keeps only its latest record
    assert [i.name for i in only_puts] == ["c2"]
    assert only_puts.last_sequence == batch.last_sequence  # skipped deletes still advance it
    assert len(store.changes(0, limit=1)) == 1


def test_seal_and_status(store):
    store.put("s", b"data")
    status = store.status()
    assert status.bucket == store.bucket and not status.sealed
    assert status.backing_store == "JetStream" and status.storage == "file"
    assert status.size > 4 and status.replicas == 1 and not status.is_compressed
    sealed = store.seal()
    assert sealed.sealed and store.status().sealed
    with pytest.raises(natsobj.StoreSealed, match=store.bucket):
        store.put("more", b"x")
    assert store.get_bytes("s") == b"data"  # still readable


@pytest.mark.parametrize("bad", ["", "a.b", "a b", "a*", "a>", "ü", "a/b"])
def test_invalid_bucket_names_are_rejected_before_sending(sync_client, bad):
    with pytest.raises(natsobj.BadBucketName, match="A-Z"):
        sync_client.create_store(bad)
    with pytest.raises(natsobj.BadBucketName):
        sync_client.store(bad)


def test_invalid_object_names(store):
    with pytest.raises(natsobj.BadObjectName):
        store.put("", b"x")
    with pytest.raises(natsobj.BadObjectName, match="UTF-8"):
        store.put("bad\udcff", b"x")


def test_missing_bucket(sync_client):
    with pytest.raises(natsobj.BucketNotFound, match="no-such"):
        sync_client.store("no-such")


def test_every_source_kind(store, tmp_path):
    data = bytes(range(256)) * 2000
    path = tmp_path / "src.bin"
    path.write_bytes(data)

    async def agen():
        for i in range(0, len(data), 7777):
            yield data[i : i + 7777]

    sources = {
        "bytes": data,
        "path": path,
        "file": io.BytesIO(data),
        "iterable": (data[i : i + 1000] for i in range(0, len(data), 1000)),
        "async": agen(),
    }
    for kind, source in sources.items():
        info = store.put(kind, source, chunk_size=50_000)
        assert info.size == len(data) and info.chunks == 11, kind
        assert store.get_bytes(kind) == data, kind
    assert store.get_bytes(store.put("text", "héllo").name) == "héllo".encode()
    with pytest.raises(TypeError, match="cannot put"):
        store.put("bad", 12345)


def test_empty_object(store):
    info = store.put("empty", b"")
    assert (info.size, info.chunks) == (0, 0)
    assert store.get_bytes("empty") == b""


def test_streaming_reader(store):
    data = bytes(range(256)) * 4096
    store.put("stream", data, chunk_size=64 * 1024)
    with store.get("stream") as reader:
        assert reader.info.size == len(data)
        head = reader.read(10)
        rest = b"".join(reader)
    assert head + rest == data


def test_get_file_is_atomic_and_verified(store, tmp_path: Path):
    data = b"q" * 500_000
    store.put("f", data)
    target = tmp_path / "out" / "f.bin"
    info = store.get_file("f", target)
    assert target.read_bytes() == data and info.size == len(data)
    assert [p.name for p in target.parent.iterdir()] == ["f.bin"]


def test_object_info_json_round_trip():
    info = ObjectInfo(
        name="n",
        bucket="b",
        nuid="N",
        size=3,
        chunks=1,
        digest="SHA-256=x",
        description="d",
        headers={"h": ["1", "2"]},
        metadata={"m": "v"},
        chunk_size=8196,
        link=natsobj.ObjectLink("other", "x"),
    )
    assert ObjectInfo.from_json(info.encode()) == info
    assert ObjectInfo.from_dict(info.as_dict()) == info
    legacy = ObjectInfo.from_json(json.dumps({"name": "n", "metadata": [{"owner": "infra"}]}))
    assert legacy.metadata == {"owner": "infra"}
    with pytest.raises(natsobj.BadObjectMeta):
        ObjectInfo.from_json(b"{not json")


def test_conditional_put_is_a_compare_and_swap(store, raw):
    first = store.put("cas", b"v1", mode=PutMode.update(0))
    with pytest.raises(natsobj.ObjectChanged):
        store.put("cas", b"never", mode=PutMode.update(0))
    second = store.put("cas", b"v2", mode=PutMode.update(first.sequence))
    with pytest.raises(natsobj.ObjectChanged, match="sequence"):
        store.put("cas", b"stale", mode=PutMode.update(first.sequence))
    assert store.get_bytes("cas") == b"v2"
    assert raw.subject_count(store.bucket, f"$O.{store.bucket}.C.>") == second.chunks


def test_server_lists_in_both_url_forms():
    settings = natsobj.ConnectionSettings
    expected = ["nats://h1:4222", "nats://h2:4222"]
    assert settings.from_url("nats://h1:4222,h2:4222").servers == expected
    assert settings.from_url("nats://h1:4222,nats://h2:4222").servers == expected


def test_large_blocks_are_rechunked_exactly(store):
    blocks = [os.urandom(5 * 1024 * 1024), b"x", os.urandom(300_001)]
    info = store.put("blocks", iter(blocks), chunk_size=100_000)
    assert info.size == sum(map(len, blocks)) and info.chunks == -(-info.size // 100_000)
    assert store.get_bytes("blocks") == b"".join(blocks)


@pytest.mark.parametrize("url", ["http://example.invalid", "postgres://db:5432", "ftp://h:21"])
def test_urls_that_are_not_nats_are_refused_at_once(url):
    with pytest.raises(ValueError, match="must look like nats://host:4222"):
        natsobj.ConnectionSettings.from_url(url)


def test_a_streamed_read_of_a_forged_object_withholds_the_last_chunk(store, raw):
    """The whole-object digest is known only after the last chunk, so the reader yields that
    chunk only once it matched: a consumer forwarding chunks as they come (the gateway's GET,
    ``natsobj get -``) never hands on every byte of a forged object. It yielded the last chunk
    first, then raised."""
    from natsobj.errors import NatsObjError
    from tests.raw import FORGED_DIGEST, rewrite_record

    body = os.urandom(5 * 128 * 1024 + 7)  # six chunks
    store.put("forged", body)
    rewrite_record(raw, store.bucket, "forged", digest=FORGED_DIGEST)
    received = b""
    with pytest.raises(NatsObjError), store.get("forged") as reader:
        for chunk in reader:
            received += chunk
    assert body.startswith(received) and len(received) == 5 * 128 * 1024
