"""Versioned buckets in the core (``natsobj.versioning``, ``natsobj.aio.versions``): a put keeps
the version it replaces, a delete leaves a marker, any version can be read or removed for
good, an unversioned bucket is left exactly as ADR-20 has it, and a version another client
purged is listed as lost and never served."""

from __future__ import annotations

from pathlib import Path

import nats
import pytest

import natsobj
from natsobj.names import (
    all_chunks_subject,
    all_versions_subject,
    chunk_subject,
    version_subject,
)
from natsobj.sync import run
from natsobj.versioning import VERSION_REMOVED, Versioning


def _subjects(raw, bucket: str, subject: str) -> int:
    return raw.subject_count(bucket, subject)


def _versioned(store) -> None:
    assert store.set_versioning("Enabled") is Versioning.ENABLED


def test_a_put_keeps_the_version_it_replaces_and_every_version_reads_back(store) -> None:
    _versioned(store)
    ids = [store.put("report.csv", body).nuid for body in (b"one", b"two!", b"three")]
    listed = store.versions()
    assert [v.version_id for v in listed] == ids[::-1]  # newest first
    assert [v.is_latest for v in listed] == [True, False, False]
    assert [v.info.size for v in listed] == [5, 4, 3]
    assert listed[1].mtime is not None and listed[1].mtime < listed[0].mtime  # type: ignore[operator]
    for version_id, body in zip(ids, (b"one", b"two!", b"three"), strict=True):
        info = store.get_info("report.csv", version=version_id)
        assert info.size == len(body)

        with store.get("report.csv", version=version_id) as reader:
            assert reader.read() == body
    assert store.get_bytes("report.csv") == b"three"  # the current one, as before


def test_a_delete_leaves_a_marker_and_the_next_put_keeps_it(store) -> None:
    _versioned(store)
    first = store.put("model.pkl", b"weights")
    marker = store.delete("model.pkl")
    assert marker.deleted and marker.nuid != first.nuid
    with pytest.raises(natsobj.ObjectNotFound):
        store.get_bytes("model.pkl")
    assert store.list() == []
    listed = store.versions()
    assert [(v.version_id, v.delete_marker, v.is_latest) for v in listed] == [
        (marker.nuid, True, True),
        (first.nuid, False, False),
    ]
    with pytest.raises(natsobj.ObjectNotFound, match="delete marker"):
        store.get_info("model.pkl", version=marker.nuid)
    second = store.put("model.pkl", b"weights v2")
    ids = [(v.version_id, v.delete_marker) for v in store.versions()]
    assert ids == [(second.nuid, False), (marker.nuid, True), (first.nuid, False)]


def test_restoring_is_removing_the_versions_above(store) -> None:
    """Deleting the current version by id makes the one before it current again; deleting a
    noncurrent one removes exactly it, its chunks with it."""
    _versioned(store)
    one, two, three = (store.put("a", body) for body in (b"1", b"22", b"333"))
    removed = store.delete("a", version=two.nuid)
    assert removed.nuid == two.nuid
    assert store.get_bytes("a") == b"333"
    store.delete("a", version=three.nuid)
    assert store.get_bytes("a") == b"1"
    assert [v.version_id for v in store.versions()] == [one.nuid]
    store.delete("a", version=one.nuid)
    with pytest.raises(natsobj.ObjectNotFound):
        store.get_bytes("a")
    assert store.versions() == []


def test_removed_versions_take_their_chunks_and_records(store, raw) -> None:
    _versioned(store)
    old = store.put("x", b"old")
    store.put("x", b"new")
    assert _subjects(raw, store.bucket, chunk_subject(store.bucket, old.nuid)) == 1
    store.delete("x", version=old.nuid)
    assert _subjects(raw, store.bucket, chunk_subject(store.bucket, old.nuid)) == 0
    # the record is replaced by the marker of its removal, the change feed's trace of it
    assert _subjects(raw, store.bucket, all_versions_subject(store.bucket)) == 1
    marker = raw.last_msg(version_subject(store.bucket, "x", old.nuid), store.bucket)
    assert (marker.data, marker.headers.get(VERSION_REMOVED)) == (b"", "true")
    with pytest.raises(natsobj.ObjectNotFound, match="no version"):
        store.get_info("x", version=old.nuid)
    assert [v.version_id for v in store.versions()] == [store.get_info("x").nuid]


def test_an_unversioned_bucket_keeps_nothing(store, raw) -> None:
    """ADR-20's behaviour, unchanged: the replaced version's chunks are purged and no record
    is written beside the meta subject."""
    first = store.put("plain", b"first")
    store.put("plain", b"second")
    store.delete("plain")
    assert store.versioning() is Versioning.UNVERSIONED
    assert _subjects(raw, store.bucket, chunk_subject(store.bucket, first.nuid)) == 0
    assert _subjects(raw, store.bucket, all_chunks_subject(store.bucket)) == 0
    assert store.versions() == []


def test_suspending_keeps_what_was_kept_and_nothing_new(store, raw) -> None:
    _versioned(store)
    kept = store.put("s", b"kept")
    between = store.put("s", b"between")
    assert store.set_versioning("suspended") is Versioning.SUSPENDED
    store.put("s", b"after")  # replaces `between`, a kept version: it stays
    latest = store.put("s", b"latest")  # replaces `after`, never kept: purged
    ids = [v.version_id for v in store.versions()]
    assert ids == [latest.nuid, between.nuid, kept.nuid]
    assert _subjects(raw, store.bucket, chunk_subject(store.bucket, between.nuid)) == 1
    with pytest.raises(ValueError, match="suspended, not turned off"):
        store.set_versioning(Versioning.UNVERSIONED)


def test_compaction_keeps_kept_versions(store) -> None:
    _versioned(store)
    old = store.put("c", b"old bytes")
    store.put("c", b"new bytes")
    result = store.compact(min_age=0)
    assert result.purged_subjects == []

    with store.get("c", version=old.nuid) as reader:
        assert reader.read() == b"old bytes"


def test_a_version_another_client_purged_is_lost_never_served(store, nats_url) -> None:
    """An ADR-20 client's overwrite purges the chunks of the version it replaces; a version
    natsobj kept there is reported lost, and reading it is ObjectNotFound saying so."""
    _versioned(store)
    first = store.put("shared", b"first")
    second = store.put("shared", b"second")  # keeps `first`, and `second` becomes current

    async def natspy_overwrites() -> None:
        nc = await nats.connect(nats_url)
        try:
            theirs = await nc.jetstream().object_store(store.bucket)
            await theirs.put("shared", b"theirs")
        finally:
            await nc.close()

    run(natspy_overwrites())
    assert store.get_bytes("shared") == b"theirs"
    listed = {v.version_id: v for v in store.versions()}
    assert listed[first.nuid].lost is False
    # the version nats-py replaced was the current one, which natsobj keeps only once it
    # replaces it: nats-py purged it, and it is not listed (docs/versioning.md)
    assert second.nuid not in listed
    # another client purges a kept version's chunks (as a raw purge of its subject would)
    run(store.aio.bucket_stream.purge(chunk_subject(store.bucket, first.nuid)))
    listed = {v.version_id: v for v in store.versions()}
    assert listed[first.nuid].lost is True

    with (
        pytest.raises(natsobj.ObjectNotFound, match="is lost"),
        store.get("shared", version=first.nuid),
    ):
        pass


def test_other_clients_see_the_current_version_of_a_versioned_bucket(store, nats_url) -> None:
    _versioned(store)
    store.put("seen", b"old")
    store.put("seen", b"current")
    store.put("gone", b"x")
    store.delete("gone")

    async def natspy_view() -> tuple[bytes, list[str]]:
        nc = await nats.connect(nats_url)
        try:
            theirs = await nc.jetstream().object_store(store.bucket)
            got = await theirs.get("seen")
            names = [info.name for info in await theirs.list() if not info.deleted]
            return got.data, names
        finally:
            await nc.close()

    data, names = run(natspy_view())
    assert data == b"current"
    assert names == ["seen"]


def test_ranged_reads_name_a_version_and_read_only_its_bytes(store) -> None:
    _versioned(store)
    old = store.put("r", b"0123456789" * 30_000, chunk_size=65_536)
    store.put("r", b"abcdefghij" * 30_000, chunk_size=65_536)
    assert store.get_range("r", 100_000, 100_010, version=old.nuid) == b"0123456789"
    with store.open_range("r", version=old.nuid) as reader:
        reader.seek(299_995)
        assert reader.read() == b"56789"
    assert store.get_range("r", 0, 10) == b"abcdefghij"


def test_the_example_in_docs_versioning_runs_as_written(nats_url, bucket_name, capsys) -> None:
    """docs/versioning.md's example, with this suite's server and a bucket of its own."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "versioning.md").read_text()
    code = text.split("```python\n", 1)[1].split("\n```", 1)[0]
    code = code.replace("nats://127.0.0.1:4222", nats_url).replace('"reports"', repr(bucket_name))
    exec(compile(code, "docs/versioning.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[2:] for line in printed] == [["True", "False"], ["False", "False"]]
    with natsobj.connect(nats_url) as client:
        store = client.store(bucket_name)
        listed = store.versions()
        assert [(v.delete_marker, v.is_latest) for v in listed] == [(True, True), (False, False)]
        client.delete_store(bucket_name)


def test_the_change_feed_names_each_version_and_delete_marker(store) -> None:
    """``changes()`` (what sensors and triggers poll) reports every write of a versioned
    bucket with its version id (``nuid``) and tells a delete marker from a plain delete."""
    _versioned(store)
    seen, cursor = [], 0

    def poll() -> None:
        nonlocal cursor
        batch = store.changes(cursor)
        seen.extend(batch)
        cursor = batch.last_sequence

    first = store.put("feed", b"1")
    poll()
    second = store.put("feed", b"2")
    poll()
    marker = store.delete("feed")
    poll()
    assert [info.nuid for info in seen] == [first.nuid, second.nuid, marker.nuid]
    assert [info.delete_marker for info in seen] == [False, False, True]
    listed = {v.version_id for v in store.versions()}
    assert listed == {first.nuid, second.nuid, marker.nuid}


def test_creating_a_versioned_bucket_again_binds_to_it(sync_client, bucket_name) -> None:
    """A job that creates its bucket on every run keeps running once versioning is on: the
    metadata natsobj keeps there is not a different configuration."""
    store = sync_client.create_store(bucket_name)
    try:
        store.set_versioning("Enabled")
        again = sync_client.create_store(bucket_name)
        assert again.versioning() is Versioning.ENABLED
        with pytest.raises(natsobj.BucketExists):
            sync_client.create_store(bucket_name, max_bytes=1 << 20)
    finally:
        sync_client.delete_store(bucket_name)


def test_a_version_id_is_checked_before_it_reaches_a_subject(store) -> None:
    """A wildcard or a dot would widen the subject read or removed: refused up front; ``null``
    (S3's id of an unversioned object) is the current version."""
    _versioned(store)
    current = store.put("v", b"bytes")
    for bad in ("*", ">", "a.b", "x" * 23):
        with pytest.raises(ValueError, match="version id"):
            store.get_info("v", version=bad)
        with pytest.raises(ValueError, match="version id"):
            store.delete("v", version=bad)
    assert store.get_info("v", version="null").nuid == current.nuid
    assert store.get_bytes("v", version=current.nuid) == b"bytes"
