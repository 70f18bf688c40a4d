"""Meta records as untrusted input, round two (issue 28): what a record claims about where it
lives, what it restates and how it was cut is checked against what the server says.

Each test publishes records with nats-py directly (tests/raw.py), as a writer of the bucket
with nothing but publish rights would, and reproduces the defect as it was found.
"""

from __future__ import annotations

import json
import logging
import time
import tracemalloc
from datetime import timedelta

import fsspec
import pytest
from click.testing import CliRunner

import natsobj
import natsobj.aio
from natsobj.aio import lifecycle_apply
from natsobj.cli import cli
from natsobj.errors import BadChunkSize
from natsobj.lifecycle import LifecycleRule
from natsobj.model import (
    MAX_KEPT_CHUNK_SIZE,
    MAX_RECORD_BYTES,
    MIN_CHUNK_SIZE,
    ObjectInfo,
    kept_chunk_size,
)
from natsobj.names import meta_subject
from natsobj.sync import run


def publish_record(raw, bucket: str, name: str, record: dict | bytes, headers=None) -> int:
    data = (
        record if isinstance(record, bytes) else json.dumps(record, separators=(",", ":")).encode()
    )
    return raw.publish(meta_subject(bucket, name), data, {"Nats-Rollup": "sub", **(headers or {})})


def stored_record(raw, bucket: str, name: str) -> dict:
    return json.loads(raw.last_msg(meta_subject(bucket, name), bucket).data)


def warnings_naming(caplog, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


# -- a record's bucket field ----------------------------------------------------------------


@pytest.fixture
def other_store(sync_client, bucket_name: str):
    created = sync_client.create_store(bucket_name + "b")
    yield created
    sync_client.delete_store(created.bucket)


def test_a_record_naming_another_bucket_is_refused_and_never_followed(
    store, other_store, raw, nats_url, tmp_path, caplog
):
    """A writer of bucket A republishes a record saying ``"bucket": "B"``: A's listings,
    downloads and recursive deletes must neither show nor touch B's object."""
    a, b = store.bucket, other_store.bucket
    secret = other_store.put("payroll.csv", b"salaries")
    store.put("mine.txt", b"A's own")
    forged = {**stored_record(raw, b, "payroll.csv"), "bucket": b}
    publish_record(raw, a, "payroll.csv", forged)

    with pytest.raises(natsobj.BadObjectMeta, match=r"'payroll.csv'.*field 'bucket'") as caught:
        store.get_info("payroll.csv")
    assert a in str(caught.value)
    with pytest.raises(natsobj.BadObjectMeta, match="field 'bucket'"):
        ObjectInfo.from_json(forged, bucket=a)
    assert ObjectInfo.from_json(forged, bucket=b).bucket == b  # where it belongs, it is fine

    with caplog.at_level(logging.WARNING, logger="natsobj"):
        assert [(i.bucket, i.name) for i in store.list()] == [(a, "mine.txt")]
    assert len(warnings_naming(caplog, "'payroll.csv'")) == 1, caplog.text

    fs = fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)
    assert fs.find(a) == [f"{a}/mine.txt"]
    fs.get(f"{a}/", str(tmp_path), recursive=True)
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["mine.txt"]
    fs.rm(a, recursive=True)
    assert other_store.get_bytes("payroll.csv") == b"salaries"
    assert other_store.get_info("payroll.csv").sequence == secret.sequence
    with pytest.raises((natsobj.ObjectNotFound, natsobj.BucketNotFound)):
        store.get_info("mine.txt")  # what A held went, bucket and all


# -- what a listing takes from the server, not from the publisher ---------------------------


def test_a_shadow_record_claiming_another_name_never_stands_for_it(
    store, raw, nats_url, tmp_path, caplog
):
    """A record on the subject of ``shadow`` saying it is ``real.csv`` (with the size and
    digest of the copy already on disk) made ``natsobj sync`` skip the real file, exit 0."""
    store.put("real.csv", b"the new version")
    local = tmp_path / "dest"
    local.mkdir()
    (local / "real.csv").write_bytes(b"old")
    shadow = {**stored_record(raw, store.bucket, "real.csv"), "nuid": "SHADOWNUID"}
    shadow.update(size=3, digest=natsobj.model.digest_of(b"old"))
    publish_record(raw, store.bucket, "shadow", shadow)

    with caplog.at_level(logging.WARNING, logger="natsobj"):
        listed = store.list()
    assert [(i.name, i.size) for i in listed] == [("real.csv", len(b"the new version"))]
    assert len(warnings_naming(caplog, "not the name its subject encodes")) == 1, caplog.text
    assert [(i.name, i.size) for i in store.iter_list()] == [("real.csv", 15)]
    assert [i.name for i in store.changes(0)] == ["real.csv"]
    with store.watch() as watcher:
        assert watcher.next(5).size == 15
        assert watcher.next(0.3) is None

    result = CliRunner().invoke(
        cli, ["--url", nats_url, "sync", f"nats://{store.bucket}", str(local)]
    )
    assert result.exit_code == 0, result.output
    assert (local / "real.csv").read_bytes() == b"the new version"


def test_the_server_s_sequence_and_time_win_over_headers_a_publisher_wrote(store, raw):
    """A publisher's own Nats-Sequence / Nats-Time-Stamp headers come before the server's
    in a direct-get reply: a listing reported sequence 424242 and an mtime in 2099."""
    real = store.put("stamped", b"x")
    record = stored_record(raw, store.bucket, "stamped")
    forged = {
        "Nats-Stream": "OBJ_elsewhere",
        "Nats-Subject": meta_subject(store.bucket, "stamped"),
        "Nats-Sequence": "424242",
        "Nats-Time-Stamp": "2099-01-01T00:00:00.000000000Z",
    }
    sequence = publish_record(raw, store.bucket, "stamped", record, forged)
    assert sequence != 424242 and sequence > real.sequence

    def check(info: ObjectInfo) -> None:
        assert info.sequence == sequence
        assert info.mtime is not None and info.mtime.year < 2099

    check(store.get_info("stamped"))
    (listed,) = store.list()
    check(listed)
    (streamed,) = list(store.iter_list())
    check(streamed)
    (changed,) = store.changes(real.sequence)
    check(changed)
    assert store.get_bytes("stamped") == b"x"
    assert store.get_range("stamped", 0, 1) == b"x"


# -- what one record may cost ---------------------------------------------------------------


def test_an_oversized_record_is_refused_unparsed_and_costs_only_itself(store, raw, caplog):
    """A record with a 0.9 MB metadata map peaked at about 19 MB in a listing."""
    store.put("good", b"fine")
    huge = {**stored_record(raw, store.bucket, "good"), "name": "huge"}
    huge["metadata"] = {f"k{i}": "v" for i in range(60_000)}
    publish_record(raw, store.bucket, "huge", huge)

    with pytest.raises(natsobj.BadObjectMeta, match=rf"'huge'.*more than {MAX_RECORD_BYTES}"):
        store.get_info("huge")
    tracemalloc.start()
    try:
        with caplog.at_level(logging.WARNING, logger="natsobj"):
            assert [i.name for i in store.list()] == ["good"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, peak
    assert len(warnings_naming(caplog, "'huge'")) == 1, caplog.text
    assert [i.name for i in store.changes(0)] == ["good"]
    store.delete("huge")  # and it can be got rid of

    before = store.status().last_sequence
    with pytest.raises(natsobj.BadObjectMeta, match=r"'big'.*more than"):
        store.put("big", b"x", metadata={f"k{i}": "v" * 10 for i in range(10_000)})
    assert store.status().last_sequence == before  # not even a chunk was sent
    store.put("big", b"x", metadata={f"k{i}": "v" * 10 for i in range(100)})  # a usual one


# -- a record's chunk size ------------------------------------------------------------------

SIXTY_FOUR_KIB = bytes(range(256)) * 256


def chunk_messages(raw, bucket: str, info) -> int:
    return raw.subject_count(bucket, f"$O.{bucket}.C.{info.nuid}")


def test_a_foreign_chunk_size_of_one_does_not_multiply_what_a_copy_or_restamp_stores(
    store, raw, nats_url
):
    """Copying a 64 KiB object whose record says max_chunk_size: 1 wrote 65,536 chunks."""
    store.put("src", SIXTY_FOUR_KIB)
    record = stored_record(raw, store.bucket, "src")
    publish_record(raw, store.bucket, "src", {**record, "options": {"max_chunk_size": 1}})
    assert store.get_info("src").chunk_size == 1  # read as written: other clients' layout

    fs = fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)
    fs.cp_file(f"{store.bucket}/src", f"{store.bucket}/by-fs")
    result = CliRunner().invoke(
        cli, ["--url", nats_url, "cp", store.bucket, "src", store.bucket, "by-cli"]
    )
    assert result.exit_code == 0, result.output
    for name in ("by-fs", "by-cli"):
        copied = store.get_info(name)
        assert (copied.chunks, chunk_messages(raw, store.bucket, copied)) == (1, 1), name
        assert store.get_bytes(name) == SIXTY_FOUR_KIB

    store.set_lifecycle_rules([LifecycleRule("src", timedelta(days=7))])

    async def restamped() -> list[lifecycle_apply.Restamp]:
        async with await natsobj.aio.connect(nats_url) as client:
            aio_store = await client.store(store.bucket)
            return await lifecycle_apply.apply(aio_store, await lifecycle_apply.plan(aio_store))

    (done,) = run(restamped())
    assert done.done
    after = store.get_info("src")
    assert after.expires is not None
    assert (after.chunks, chunk_messages(raw, store.bucket, after)) == (1, 1)
    assert store.get_bytes("src") == SIXTY_FOUR_KIB

    # a sane recorded chunk size is kept
    assert kept_chunk_size(4096) == 4096 and kept_chunk_size(1) is None
    assert kept_chunk_size(MAX_KEPT_CHUNK_SIZE + 1) is None


@pytest.mark.parametrize("chunk_size", [1, 7, MIN_CHUNK_SIZE - 1, -5])
def test_every_face_refuses_a_chunk_size_below_the_minimum_before_sending(
    store, raw, nats_url, tmp_path, chunk_size
):
    with pytest.raises(BadChunkSize, match=rf"'tiny'.*{chunk_size} bytes.*{MIN_CHUNK_SIZE}"):
        store.put("tiny", SIXTY_FOUR_KIB, chunk_size=chunk_size)
    assert isinstance(BadChunkSize("x"), ValueError)
    fs = fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)
    with (
        pytest.raises(BadChunkSize),
        fs.open(f"{store.bucket}/tiny", "wb", chunk_size=chunk_size) as f,
    ):
        f.write(SIXTY_FOUR_KIB)
    source = tmp_path / "data.bin"
    source.write_bytes(SIXTY_FOUR_KIB)
    args = ["--url", nats_url, "put", "--chunk-size", str(chunk_size), store.bucket, "tiny"]
    result = CliRunner().invoke(cli, [*args, str(source)])
    assert result.exit_code == 2, result.output
    assert f"least a put takes ({MIN_CHUNK_SIZE} bytes)" in result.output
    assert store.status().messages == 0  # not one chunk was sent

    assert store.put("tiny", SIXTY_FOUR_KIB, chunk_size=MIN_CHUNK_SIZE).chunks == 128


# -- restatements ---------------------------------------------------------------------------

TIERING = "natsobj_tiering"


def forge_new_version(raw, bucket: str, name: str, data: bytes, replaces: int) -> dict:
    """A writer's new bytes for ``name``, in a record claiming to restate ``replaces``."""
    record = stored_record(raw, bucket, name)
    raw.publish(f"$O.{bucket}.C.FORGEDNUID", data)
    record.update(nuid="FORGEDNUID", size=len(data), chunks=1)
    record["digest"] = natsobj.model.digest_of(data)
    record[TIERING] = {"replaces": replaces, "mtime": "2001-01-01T00:00:00+00:00"}
    return record


@pytest.mark.parametrize("rollup", [True, False])
def test_a_forged_restatement_is_a_new_version_with_the_server_s_time(store, raw, nats_url, rollup):
    """New bytes in a record saying ``natsobj_tiering.replaces``: neither changes() nor a
    live watch() reported them, and the field's mtime overrode the server's everywhere."""
    first = store.put("model.bin", b"version one")
    first = store.get_info("model.bin")
    record = forge_new_version(raw, store.bucket, "model.bin", b"version two!", first.sequence)
    data = json.dumps(record).encode()
    subject = meta_subject(store.bucket, "model.bin")

    with store.watch(start="latest") as watcher:
        sequence = raw.publish(subject, data, {"Nats-Rollup": "sub"} if rollup else None)
        live = watcher.next(5)
    assert live is not None and (live.sequence, live.size) == (sequence, 12)
    assert live.stands_for is None

    (changed,) = store.changes(first.sequence)
    assert (changed.sequence, changed.digest) == (sequence, record["digest"])
    for info in (live, changed, store.get_info("model.bin"), *store.list()):
        assert info.mtime is not None and info.mtime >= first.mtime, info
        assert info.mtime.year != 2001 and info.stands_for is None
    assert store.get_bytes("model.bin") == b"version two!"


def test_a_restatement_of_the_same_bytes_kept_above_its_version_is_proven(store, raw):
    """What offload and rehydrate write: the same bytes and metadata, published without a
    rollup over the version it names. Watches and changes skip it; its mtime is the
    version's, by the server's clock."""
    store.put("same.bin", b"unchanged", metadata={"k": "v"})
    first = store.get_info("same.bin")
    record = {**stored_record(raw, store.bucket, "same.bin"), TIERING: {"replaces": first.sequence}}
    subject = meta_subject(store.bucket, "same.bin")
    with store.watch(start="latest") as watcher:
        raw.publish(subject, json.dumps(record).encode())
        store.put("other", b"a real new version")
        assert watcher.next(5).name == "other"
    assert [i.name for i in store.changes(first.sequence)] == ["other"]
    # a consumer that never saw the version gets it once, as its latest restatement
    (once,) = [i for i in store.changes(0) if i.name == "same.bin"]
    restated = store.get_info("same.bin")
    assert once.sequence == restated.sequence > first.sequence
    for info in (once, restated, *store.list(prefix="same")):
        assert (info.stands_for, info.mtime) == (first.sequence, first.mtime), info

    # the same claim over other metadata is a new version
    changed = {**record, "metadata": {"k": "changed"}}
    newer = raw.publish(subject, json.dumps(changed).encode())
    assert [i.sequence for i in store.changes(newer - 1)] == [newer]
    assert store.get_info("same.bin").stands_for is None


def test_a_restamp_is_a_new_version_every_watcher_sees_once_with_the_same_digest(store, nats_url):
    """What docs/lifecycle.md says of ``lifecycle --apply``: a restamp cannot keep the
    version's identity (its old record has no TTL and would outlive a restatement)."""
    first = store.put("old.csv", b"a,b\n1,2\n", ttl=0)
    store.set_lifecycle_rules([LifecycleRule("*.csv", timedelta(days=30))])

    async def restamped() -> list[lifecycle_apply.Restamp]:
        async with await natsobj.aio.connect(nats_url) as client:
            aio_store = await client.store(store.bucket)
            return await lifecycle_apply.apply(aio_store, await lifecycle_apply.plan(aio_store))

    with store.watch(start="latest") as watcher:
        (done,) = run(restamped())
        seen = watcher.next(5)
    assert done.done and seen is not None
    (changed,) = store.changes(first.sequence)
    for info in (seen, changed):
        assert (info.name, info.digest) == ("old.csv", first.digest)
        assert info.sequence > first.sequence and info.stands_for is None
    assert store.get_info("old.csv").expires is not None


def test_a_new_watch_replays_each_restamped_name_s_current_version_past_records_it_skips(
    store, raw, nats_url
):
    """The sequence the adversary's long profile flagged (a watch's replay said to miss the
    restamped version of an object nothing else touched), replayed deterministically: an
    oversized record on an undecodable subject and a nameless one (both skipped), the
    objects restamped under a lifecycle rule, then a nameless record last. A new watch's
    initial values are each name's restamped version, and ``initial_done`` turns even though
    the replay ends on a record the watch skips (so no record is returned with it)."""
    infos = {
        name: store.put(name, name.encode() * 5000, chunk_size=4096) for name in ("h/0", "h/1")
    }
    big = {"name": "h/0", "bucket": store.bucket, "metadata": {"k": "v" * (MAX_RECORD_BYTES * 6)}}
    raw.publish(f"$O.{store.bucket}.M.not-base64!", json.dumps(big).encode())
    nameless = {"name": "", "bucket": store.bucket, "nuid": "ADV1", "size": 0, "chunks": 0}
    publish_record(raw, store.bucket, "x/a", nameless)
    store.set_lifecycle_rules([LifecycleRule("h/**", timedelta(days=7))])

    async def restamped() -> list[lifecycle_apply.Restamp]:
        async with await natsobj.aio.connect(nats_url) as client:
            aio_store = await client.store(store.bucket)
            return await lifecycle_apply.apply(aio_store, await lifecycle_apply.plan(aio_store))

    assert [(r.info.name, r.done) for r in run(restamped())] == [("h/0", True), ("h/1", True)]
    current = {name: store.get_info(name) for name in infos}
    assert all(current[n].nuid != infos[n].nuid for n in infos)  # a restamp is a new version
    publish_record(raw, store.bucket, "x/b", nameless)

    seen = {}
    deadline = time.monotonic() + 10
    with store.watch() as watcher:
        while not watcher.initial_done:
            assert time.monotonic() < deadline, f"the replay stalled after {seen}"
            if (info := watcher.next(0.2)) is not None:
                seen[info.name] = (info.sequence, info.nuid)
    assert seen == {n: (current[n].sequence, current[n].nuid) for n in infos}
