"""Meta records are untrusted input: anyone who may publish to a bucket writes them.

Each test publishes the record with nats-py directly (tests/raw.py), as another client or a
hand-written script would, and shows that one bad record costs nothing but its own object:
other objects' chunks survive, listings and watches of the whole bucket go on (skipping it
with one warning), and ``delete`` / ``natsobj rm`` still get rid of it.
"""

from __future__ import annotations

import json
import logging
import os

import pytest
from click.testing import CliRunner

import natsobj
import natsobj.aio
from natsobj.cli import cli
from natsobj.errors import MissingDigest
from natsobj.names import (
    check_subjects_fit,
    encode_name,
    meta_subject,
    names_that_always_fit,
)
from natsobj.sync import run

VICTIM = os.urandom(300_000)  # three chunks: purged by any wildcard over the bucket's chunks


def publish_record(raw, bucket: str, name: str, record: dict | bytes) -> None:
    """A meta record as another client would write it; json.dumps writes NaN and Infinity."""
    data = record if isinstance(record, bytes) else json.dumps(record).encode()
    raw.publish(meta_subject(bucket, name), data, {"Nats-Rollup": "sub"})


def chunk_count(raw, bucket: str, nuid: str) -> int:
    return raw.subject_count(bucket, f"$O.{bucket}.C.{nuid}")


def bad_record(bucket: str, **fields) -> dict:
    record = {"name": "bad", "bucket": bucket, "nuid": "NUIDOFBAD", "size": 3, "chunks": 1}
    record["digest"] = "SHA-256=ungYv9Ecf4GTqBWhEgfjnO3xvDyvvZs6q1z5Vw0kTg0="
    return {**record, **fields}


@pytest.mark.parametrize("nuid", [">", "*", "a.>", "a b", "x\r\nPUB"])
def test_a_record_with_a_wildcard_nuid_never_purges_other_objects(store, raw, nuid):
    victim = store.put("victim", VICTIM)
    publish_record(raw, store.bucket, "bad", bad_record(store.bucket, nuid=nuid))
    with pytest.raises(natsobj.BadObjectMeta, match=r"'bad'.*field 'nuid'") as caught:
        store.get_info("bad")
    assert store.bucket in str(caught.value)

    tombstone = store.delete("bad")  # purges nothing: the nuid is no single token
    assert tombstone.deleted and tombstone.nuid == ""
    with pytest.raises(natsobj.ObjectNotFound):
        store.get_info("bad")

    publish_record(raw, store.bucket, "bad", bad_record(store.bucket, nuid=nuid))
    store.put("bad", b"replaced")  # an overwrite purges by the replaced nuid: not by this one
    assert store.get_bytes("bad") == b"replaced"

    assert chunk_count(raw, store.bucket, victim.nuid) == victim.chunks == 3
    assert store.get_bytes("victim") == VICTIM


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("size", float("inf")),
        ("size", float("nan")),
        ("size", -1),
        ("size", "x"),
        ("size", True),
        ("chunks", float("-inf")),
        ("chunks", 2**64),
        ("metadata", {"k": 1}),
        ("deleted", "false"),
        ("options", {"max_chunk_size": float("inf")}),
    ],
)
def test_a_record_with_bad_numbers_is_skipped_by_every_listing_and_rm_removes_it(
    store, raw, caplog, nats_url, field, value
):
    store.put("good", b"fine")
    publish_record(raw, store.bucket, "bad", bad_record(store.bucket, **{field: value}))
    field_name = "options.max_chunk_size" if field == "options" else field

    with pytest.raises(natsobj.BadObjectMeta, match=rf"'bad'.*field '{field_name}'"):
        store.get_info("bad")
    with pytest.raises(natsobj.BadObjectMeta):
        store.get_bytes("bad")

    for listing in (store.list, lambda: list(store.iter_list())):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="natsobj"):
            assert [info.name for info in listing()] == ["good"]
        warnings = [r for r in caplog.records if "'bad'" in r.getMessage()]
        assert len(warnings) == 1, caplog.text
        assert field_name in warnings[0].getMessage()
    assert store.status(count_offloaded=True).offloaded_objects == 0
    assert [info.name for info in store.changes(0)] == ["good"]
    with store.watch() as watcher:
        assert watcher.next(5).name == "good"
        assert watcher.next(0.3) is None

    result = CliRunner().invoke(cli, ["--url", nats_url, "rm", store.bucket, "bad"])
    assert result.exit_code == 0, result.output
    with pytest.raises(natsobj.ObjectNotFound):
        store.get_info("bad")
    assert chunk_count(raw, store.bucket, "NUIDOFBAD") == 0
    assert store.get_bytes("good") == b"fine"


def test_a_record_naming_another_object_is_refused_and_deleting_it_spares_that_object(store, raw):
    victim = store.put("victim", VICTIM)
    alias = bad_record(store.bucket, name="victim", nuid="ALIASNUID")
    publish_record(raw, store.bucket, "alias", alias)
    with pytest.raises(natsobj.BadObjectMeta, match="not the name its subject encodes"):
        store.get_info("alias")
    store.delete("alias")  # the tombstone goes to 'alias', not to the name the record claims
    assert store.get_info("victim").nuid == victim.nuid
    assert store.get_bytes("victim") == VICTIM


def test_compact_keeps_the_chunks_of_records_it_cannot_parse(store, raw):
    kept = store.put("kept", VICTIM)
    # the same object, rewritten by another client with a size natsobj cannot use
    record = json.loads(raw.last_msg(meta_subject(store.bucket, "kept"), store.bucket).data)
    publish_record(raw, store.bucket, "kept", {**record, "size": float("inf")})
    raw.publish(f"$O.{store.bucket}.C.ORPHAN", b"left by an interrupted put")

    result = store.compact(min_age=0)
    assert result.purged_subjects == [f"$O.{store.bucket}.C.ORPHAN"]
    assert chunk_count(raw, store.bucket, kept.nuid) == 3


def test_compact_refuses_while_a_record_names_no_readable_nuid(store, raw):
    store.put("good", VICTIM)
    publish_record(raw, store.bucket, "bad", bad_record(store.bucket, nuid=">"))
    raw.publish(f"$O.{store.bucket}.C.ORPHAN", b"orphan")
    with pytest.raises(natsobj.BadObjectMeta, match=r"'bad'.*compaction refused.*delete\(name\)"):
        store.compact(min_age=0)
    assert chunk_count(raw, store.bucket, "ORPHAN") == 1  # nothing purged

    publish_record(raw, store.bucket, "bad", b"{not json")
    with pytest.raises(natsobj.BadObjectMeta, match="compaction refused"):
        store.compact(min_age=0)

    store.delete("bad")
    assert store.compact(min_age=0).purged_subjects == [f"$O.{store.bucket}.C.ORPHAN"]
    assert store.get_bytes("good") == VICTIM


def test_a_record_without_a_digest_is_refused_unless_the_reader_opts_out(
    store, raw, tmp_path, nats_url
):
    store.put("plain", VICTIM)
    record = json.loads(raw.last_msg(meta_subject(store.bucket, "plain"), store.bucket).data)
    del record["digest"]
    publish_record(raw, store.bucket, "plain", record)

    with pytest.raises(MissingDigest, match=r"'plain'.*no digest.*allow_missing_digest=True"):
        store.get_bytes("plain")
    with pytest.raises(natsobj.DigestMismatch):  # MissingDigest is one
        store.get_file("plain", tmp_path / "out")
    with pytest.raises(MissingDigest), store.get("plain"):
        pass
    assert list(tmp_path.iterdir()) == []

    assert store.get_bytes("plain", allow_missing_digest=True) == VICTIM
    store.get_file("plain", tmp_path / "out", allow_missing_digest=True)
    assert (tmp_path / "out").read_bytes() == VICTIM
    with store.get("plain", allow_missing_digest=True) as reader:
        assert reader.read() == VICTIM

    async def through_the_async_face() -> bytes:
        async with await natsobj.aio.connect(nats_url) as client:
            aio_store = await client.store(store.bucket)
            with pytest.raises(MissingDigest):
                await aio_store.get_bytes("plain")
            return await aio_store.get_bytes("plain", allow_missing_digest=True)

    assert run(through_the_async_face()) == VICTIM

    publish_record(raw, store.bucket, "plain", {**record, "digest": "SHA-256=not base64!"})
    with pytest.raises(natsobj.DigestMismatch, match="not a SHA-256 digest"):
        store.get_bytes("plain", allow_missing_digest=True)


def test_an_overlong_name_is_refused_before_sending_and_the_client_stays_usable(nats_url):
    client = natsobj.connect(nats_url)  # a client of its own: a dead connection stays dead
    try:
        store = client.create_store(f"long{os.urandom(4).hex()}")
        store.put("ok", b"before")
        too_long = "n" * 3500
        for call in (
            lambda: store.put(too_long, b"x"),
            lambda: store.get_info(too_long),
            lambda: store.get_bytes(too_long),
            lambda: store.delete(too_long),
            lambda: store.update_meta("ok", new_name=too_long),
        ):
            with pytest.raises(natsobj.BadObjectName, match=r"bytes.*protocol line"):
                call()
        longest_allowed = "n" * 2500  # the limit is not tighter than it must be
        store.put(longest_allowed, b"long")
        assert store.get_bytes(longest_allowed) == b"long"
        assert [info.name for info in store.list()] == [longest_allowed, "ok"]
        store.put("ok", b"still connected")
        assert store.get_bytes("ok") == b"still connected"
        client.delete_store(store.bucket)
    finally:
        client.close()


def test_names_that_skip_the_subject_check_always_fit_it() -> None:
    """Short names skip building their subjects (a put or get would pay for it): the length
    below which they may is safe for the widest characters, and not far from the limit."""
    bucket, prefix, inbox = "b" * 40, "$JS.hub.API", "_INBOX_" + "i" * 30
    subjects = [meta_subject(bucket, ""), f"{prefix}.DIRECT.GET.OBJ_{bucket}.$O.{bucket}.M."]
    fitting = names_that_always_fit(subjects, inbox_prefix=inbox)
    for char in ("n", "é", "€", "😀"):
        name = char * fitting
        full = [subject + encode_name(name) for subject in subjects]
        check_subjects_fit(full, inbox_prefix=inbox, bucket=bucket, name=name)  # no raise
    widest = "😀" * (fitting + 3)
    with pytest.raises(natsobj.BadObjectName):
        full = [subject + encode_name(widest) for subject in subjects]
        check_subjects_fit(full, inbox_prefix=inbox, bucket=bucket, name=widest)
    assert fitting > 500  # ordinary names never take the slow check


def test_non_string_metadata_is_refused_on_write(store, raw):
    for metadata in ({"count": 1}, {"tags": ["a"]}, {1: "x"}, {"none": None}):
        with pytest.raises(natsobj.BadObjectMeta, match="string"):
            store.put("typed", b"x", metadata=metadata)
    assert raw.subject_count(store.bucket, meta_subject(store.bucket, "typed")) == 0
    store.put("typed", b"x", metadata={"count": "1"})
    with pytest.raises(natsobj.BadObjectMeta, match="string"):
        store.update_meta("typed", metadata={"count": 2})
    assert store.get_info("typed").metadata == {"count": "1"}
