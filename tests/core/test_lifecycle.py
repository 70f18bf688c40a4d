"""Per-object expiry and lifecycle rules (issue 23) on a real server: short TTLs, the
server's 1 s granularity, buckets whose delete markers live 1 s (the shortest TTL)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import nats
import orjson
import pytest

import natsobj
import natsobj.aio
from natsobj.aio import lifecycle_apply, listing
from natsobj.aio.expiry import BucketExpiry
from natsobj.errors import (
    BadLifecycleRule,
    BucketExists,
    ExpiryNotEnabled,
    NatsObjError,
    ObjectNotFound,
)
from natsobj.lifecycle import (
    KEPT_EXPIRES_FIELD,
    LifecycleRule,
    chunk_ttl,
    coerce_ttl,
    decode_rules,
    expired_record,
    resolve_ttl,
    server_supports_ttl,
)
from natsobj.model import ObjectInfo
from natsobj.names import all_chunks_subject, meta_subject
from natsobj.parsing import parse_duration, parse_ttl
from natsobj.store_config import StoreConfig
from natsobj.sync import run

DATA = bytes(range(256)) * 1200  # 300 KiB: three chunks of 128 KiB


@pytest.fixture
def ttl_store(sync_client, bucket_name: str) -> Iterator:
    created = sync_client.create_store(bucket_name, delete_marker_ttl=1)
    yield created
    with contextlib.suppress(Exception):
        sync_client.delete_store(bucket_name)


def _wait_for(check, timeout: float, every: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(every)
    return check()


@pytest.mark.unit
def test_rules_and_durations_without_a_server() -> None:
    assert parse_duration("7d") == timedelta(days=7)
    assert parse_duration("1h30m") == timedelta(minutes=90)
    assert parse_duration("15m0s") == timedelta(minutes=15)  # as the server writes Nats-TTL
    rules = [
        LifecycleRule.parse("tmp/**=7d"),
        LifecycleRule.parse("reports/**=never"),
        LifecycleRule("**", timedelta(days=30)),
    ]
    assert [str(rule) for rule in rules] == ["tmp/**=7d", "reports/**=never", "**=30d"]
    assert resolve_ttl(None, rules, "tmp/x/y.bin") == timedelta(days=7)
    assert resolve_ttl(None, rules, "reports/q3.pdf") is None  # first match: never
    assert resolve_ttl(None, rules, "models/m.bin") == timedelta(days=30)
    explicit = coerce_ttl(60)  # a put's own ttl, parsed once where it was given
    assert resolve_ttl(explicit, rules, "reports/q3.pdf") == timedelta(minutes=1)  # it wins
    never = coerce_ttl("never")
    assert resolve_ttl(never, rules, "tmp/x") is None  # 0: never, whatever the rules say
    with pytest.raises(ValueError, match="at least 1 second"):
        coerce_ttl(0.5)
    with pytest.raises(ValueError, match="GLOB=DURATION"):
        LifecycleRule.parse("tmp/**")
    # the chunks always outlive the record, by at least the marker TTL
    assert chunk_ttl(2, timedelta(seconds=1)) == 4
    assert chunk_ttl(7 * 86400, timedelta(minutes=5)) == 7 * 86400 + 300


def test_an_object_with_a_ttl_disappears_with_no_client_running(
    nats_url: str, ttl_store, bucket_name: str
) -> None:
    with natsobj.connect(nats_url) as writer:  # closed before anything expires
        store = writer.store(bucket_name)
        info = store.put("scratch/a.bin", DATA, ttl=1)
        assert info.expires is not None
        assert info.expires - info.mtime <= timedelta(seconds=1)
        read = store.get_info("scratch/a.bin")
        assert read.expires is not None
        assert abs(read.expires - info.expires) < timedelta(seconds=1)
        assert "expires" not in read.to_json()  # never in the record (ADR-20)
        assert store.put("kept.bin", b"stays").expires is None
    time.sleep(4)  # record at 1 s, chunks at 2 s, each marker 1 s later; nobody connected

    with natsobj.connect(nats_url) as reader:
        store = reader.store(bucket_name)
        status = store.status()
        assert status.messages == 2  # kept.bin's chunk and record: nothing else is left
        with pytest.raises(ObjectNotFound):
            store.get_info("scratch/a.bin")
        assert [i.name for i in store.list()] == ["kept.bin"]
        assert run(store.aio.bucket_stream.leader_count(all_chunks_subject(bucket_name))) == 1


def test_a_reader_racing_expiry_gets_the_whole_object_or_not_found(ttl_store) -> None:
    ttl_store.put("race.bin", DATA, ttl=1)
    outcomes = set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            assert ttl_store.get_bytes("race.bin") == DATA
            outcomes.add("whole")
        except ObjectNotFound:
            outcomes.add("gone")
            break
    assert outcomes == {"whole", "gone"}

    # a reader that found the record just before it expired still reads every chunk, and
    # one that starts after the chunks went too gets ObjectNotFound, never a short object
    ttl_store.put("late.bin", DATA, ttl=1)
    info = ttl_store.get_info("late.bin")
    assert _wait_for(lambda: _missing(ttl_store, "late.bin"), timeout=3)
    with _reader(ttl_store, info) as read:
        assert read() == DATA
    time.sleep(2.2)  # the chunks' grace (1 s past the record) is over
    with pytest.raises(ObjectNotFound, match="expired"), _reader(ttl_store, info) as read:
        read()


def test_a_ranged_reader_of_an_expired_object_says_not_found_as_get_does(ttl_store) -> None:
    """A ranged reader opened before expiry, reading after the chunks went: the object
    expired (ObjectNotFound, as a whole read says), not "overwritten" (ObjectChanged)."""
    data = os.urandom(20_000)
    ttl_store.put("ranged.bin", data, ttl=1, chunk_size=1_000)
    with ttl_store.open_range("ranged.bin") as reader:
        assert reader.read(10) == data[:10]
        assert _wait_for(lambda: _missing(ttl_store, "ranged.bin"), timeout=3)
        time.sleep(2.2)  # the chunks' grace (1 s past the record) is over
        reader.seek(10_000)  # a chunk it never held
        with pytest.raises(ObjectNotFound, match="expired"):
            reader.read(10)


def _missing(store, name: str) -> bool:
    try:
        store.get_info(name)
    except ObjectNotFound:
        return True
    return False


@contextlib.contextmanager
def _reader(store, info):
    """Read the version ``info`` names through the async core's reader, blocking."""

    async def read_all() -> bytes:
        reader = store.aio.reader(info)
        try:
            return await reader.read()
        finally:
            await reader.close()

    yield lambda: run(read_all())


def test_a_rule_applies_by_prefix_and_an_explicit_ttl_wins(ttl_store) -> None:
    rules = [LifecycleRule("tmp/**", timedelta(days=7)), LifecycleRule("reports/**", None)]
    ttl_store.set_lifecycle_rules(rules)
    assert ttl_store.lifecycle_rules() == rules
    assert decode_rules(ttl_store.status().metadata) == rules
    now = datetime.now(UTC)
    week = ttl_store.put("tmp/x.parquet", b"x").expires
    assert week is not None and abs(week - (now + timedelta(days=7))) < timedelta(seconds=5)
    assert ttl_store.get_info("tmp/x.parquet").expires is not None
    assert ttl_store.put("reports/q.pdf", b"r").expires is None
    assert ttl_store.put("models/m.bin", b"m").expires is None  # no rule matches
    hour = ttl_store.put("reports/draft.pdf", b"d", ttl=3600).expires
    assert hour is not None and abs(hour - (now + timedelta(hours=1))) < timedelta(seconds=5)
    assert ttl_store.put("tmp/keep.bin", b"k", ttl=0).expires is None
    # "never", as the CLI, the Airflow operators and the Dagster IO manager all take it
    assert parse_ttl("never") == parse_ttl(" Never ") == timedelta(0)
    assert ttl_store.put("tmp/kept.bin", b"k", ttl=parse_ttl("never")).expires is None
    for _ in range(2):  # the first listing fills the name index, the second reads from it
        listed = {i.name: i.expires is not None for i in ttl_store.list()}
        assert listed == {
            "tmp/x.parquet": True,
            "reports/q.pdf": False,
            "models/m.bin": False,
            "reports/draft.pdf": True,
            "tmp/keep.bin": False,
            "tmp/kept.bin": False,
        }
        assert {i.name for i in ttl_store.list(prefix="tmp/") if i.expires} == {"tmp/x.parquet"}
    # the rules live with the bucket: another client's store applies them too
    ttl_store.set_lifecycle_rules([])
    assert ttl_store.lifecycle_rules() == []
    assert ttl_store.put("tmp/y.parquet", b"y").expires is None


def test_overwrite_restarts_the_clock_and_update_meta_keeps_it(ttl_store) -> None:
    first = ttl_store.put("o.bin", b"1", ttl=3600)
    again = ttl_store.put("o.bin", b"2")  # a new version: no TTL given, no rule: never
    assert first.expires is not None and again.expires is None
    assert ttl_store.get_info("o.bin").expires is None

    ttl_store.put("u.bin", b"u", ttl=3)
    before = ttl_store.get_info("u.bin").expires
    updated = ttl_store.update_meta("u.bin", description="still expiring")
    moved = ttl_store.update_meta("u.bin", new_name="v.bin")
    after = ttl_store.get_info("v.bin").expires
    assert after is not None and before is not None
    # kept to the second: each restamp may bring it up to a second earlier, never later
    assert before - timedelta(seconds=2.5) <= after <= before + timedelta(seconds=0.5)
    assert updated.description == moved.description == "still expiring"
    assert _wait_for(lambda: _missing(ttl_store, "v.bin"), timeout=5)
    with pytest.raises(ObjectNotFound):
        ttl_store.get_info("u.bin")


def test_a_watcher_and_changes_see_each_expiry_once(ttl_store) -> None:
    start = ttl_store.status().last_sequence
    with ttl_store.watch(start="latest") as watcher:
        ttl_store.put("w/a.bin", b"a", ttl=1)
        ttl_store.put("w/b.bin", b"b", ttl=2)
        seen = []
        deadline = time.monotonic() + 7
        while time.monotonic() < deadline:
            change = watcher.next(timeout=0.5)
            if change is not None:
                seen.append((change.name, change.deleted, change.expired))
                if len(seen) == 4:  # a second delete would come within the 1 s markers live
                    deadline = time.monotonic() + 1.5
    assert seen == [
        ("w/a.bin", False, False),
        ("w/b.bin", False, False),
        ("w/a.bin", True, True),
        ("w/b.bin", True, True),
    ]
    assert _wait_for(lambda: ttl_store.changes(start) == [], timeout=3)  # all gone then


def test_changes_report_an_expiry_once_while_its_marker_lives(sync_client, bucket_name) -> None:
    store = sync_client.create_store(bucket_name, delete_marker_ttl=2)
    try:
        start = store.status().last_sequence
        store.put("c.bin", b"c", ttl=2)
        before = store.changes(start)
        assert [(c.name, c.deleted, c.expires is not None) for c in before] == [
            ("c.bin", False, True)
        ]
        assert _wait_for(lambda: _missing(store, "c.bin"), timeout=8)
        time.sleep(0.3)
        after = store.changes(before.last_sequence)
        assert [(c.name, c.deleted, c.expired) for c in after] == [("c.bin", True, True)]
        assert store.changes(after.last_sequence) == []  # once
        info = store.get_info("c.bin", include_deleted=True)
        assert info.deleted and info.expired
    finally:
        sync_client.delete_store(bucket_name)


def test_expiry_needs_allow_msg_ttl_and_update_store_turns_it_on(
    sync_client, bucket_name: str
) -> None:
    store = sync_client.create_store(bucket_name, allow_msg_ttl=False)
    try:
        with pytest.raises(ExpiryNotEnabled, match="does not allow per-object TTLs") as err:
            store.put("a.bin", b"a", ttl=60)
        assert "allow_msg_ttl=True" in err.value.hint
        with pytest.raises(ExpiryNotEnabled):
            store.set_lifecycle_rules([LifecycleRule("tmp/**", timedelta(days=1))])
        store.put("plain.bin", b"p")  # no TTL: fine
        sync_client.update_store(bucket_name, allow_msg_ttl=True)
        config = sync_client.store(bucket_name).status().stream_info.config
        assert config["allow_msg_ttl"] is True
        assert config["subject_delete_marker_ttl"] == 300 * 10**9  # the default, 5 min
        # the store bound before the update re-reads the setting instead of refusing
        assert store.put("a.bin", b"a", ttl=600).expires is not None
    finally:
        sync_client.delete_store(bucket_name)


def test_new_stores_allow_ttls_and_the_marker_ttl_is_the_shortest(
    sync_client, bucket_name: str
) -> None:
    store = sync_client.create_store(bucket_name)
    try:
        config = store.status().stream_info.config
        assert config["allow_msg_ttl"] is True
        info = store.put("short.bin", b"s", ttl=5)  # raised to the 5 min markers live
        assert info.expires is not None
        assert info.expires - info.mtime >= timedelta(minutes=5) - timedelta(seconds=1)
        read = store.get_info("short.bin").expires
        assert read is not None and abs(read - info.expires) < timedelta(seconds=2)
    finally:
        sync_client.delete_store(bucket_name)


def test_apply_restamps_objects_a_rule_says_should_expire(ttl_store) -> None:
    ttl_store.put("tmp/old.bin", DATA)  # before the rule: no TTL
    ttl_store.put("tmp/fresh.bin", b"f", ttl=600)  # already expiring: left alone
    ttl_store.put("keep/k.bin", b"k")
    original = ttl_store.get_info("tmp/old.bin")
    ttl_store.set_lifecycle_rules([LifecycleRule("tmp/**", timedelta(hours=1))])

    planned = _plan(ttl_store)
    assert [(r.info.name, r.rule.pattern) for r in planned] == [("tmp/old.bin", "tmp/**")]
    assert timedelta(minutes=59) <= planned[0].ttl <= timedelta(hours=1)
    assert ttl_store.get_info("tmp/old.bin").expires is None  # planning changes nothing

    done = _apply(ttl_store)
    assert [r.done for r in done] == [True]
    restamped = ttl_store.get_info("tmp/old.bin")
    assert restamped.expires is not None
    assert restamped.digest == original.digest and restamped.size == original.size
    assert ttl_store.get_bytes("tmp/old.bin") == DATA
    assert ttl_store.get_info("keep/k.bin").expires is None
    assert _plan(ttl_store) == []


def _plan(store) -> list[lifecycle_apply.Restamp]:
    return run(lifecycle_apply.plan(store.aio))


def _apply(store) -> list[lifecycle_apply.Restamp]:
    return run(lifecycle_apply.apply(store.aio, _plan(store)))


def test_compaction_passes_over_delete_markers(sync_client, bucket_name: str) -> None:
    store = sync_client.create_store(bucket_name, delete_marker_ttl=2)
    try:
        store.put("gone.bin", DATA, ttl=2)
        store.put("kept.bin", b"k")
        assert _wait_for(lambda: _missing(store, "gone.bin"), timeout=6)
        assert store.get_info("gone.bin", include_deleted=True).expired  # the marker is there
        result = store.compact(min_age=0)
        assert len(result.purged_subjects) == 1  # the expired object's chunks, in their grace
        assert store.get_bytes("kept.bin") == b"k"
    finally:
        sync_client.delete_store(bucket_name)


def test_a_listing_parses_a_batch_with_a_delete_marker_in_one_go(
    sync_client, bucket_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An expiry's delete marker (an empty payload) is left out of the batch before its one
    parse: among the records it would make the joined JSON array invalid, and every record of
    the batch (up to 1,024) would be parsed one at a time."""
    parses: list[bool] = []  # whether each of the listing's batch parses succeeded

    def counted(data: bytes) -> object:
        try:
            parsed = orjson.loads(data)
        except ValueError:
            parses.append(False)
            raise
        parses.append(True)
        return parsed

    monkeypatch.setattr(listing, "orjson", SimpleNamespace(loads=counted))
    store = sync_client.create_store(bucket_name, delete_marker_ttl=2)
    try:
        live = [f"d/live-{i}.bin" for i in range(5)]
        store.put("d/gone.bin", b"g", ttl=2)
        for name in live:
            store.put(name, b"x")
        assert _wait_for(lambda: _missing(store, "d/gone.bin"), timeout=6)
        # the first whole-bucket listing takes the records the name index was just built
        # with; one by prefix fetches them with a batched get
        assert sorted(i.name for i in store.list()) == live
        assert sorted(i.name for i in store.list(prefix="d/")) == live
        assert store.get_info("d/gone.bin", include_deleted=True).expired  # the marker lived
        assert parses and all(parses)
    finally:
        sync_client.delete_store(bucket_name)


def test_unreadable_rules_refuse_puts_without_a_ttl_until_set_again(ttl_store) -> None:
    # the stream metadata, written by hand or another tool
    run(ttl_store.aio.bucket_stream.update(metadata={"natsobj.lifecycle": "not json"}))
    fresh = run(ttl_store.aio.client.store(ttl_store.bucket))  # bound now: reads the bad value
    with pytest.raises(NatsObjError, match="lifecycle rules"):
        run(fresh.put("a.bin", b"a"))
    assert run(fresh.put("b.bin", b"b", ttl=60)).expires is not None  # an explicit TTL is fine
    assert run(fresh.get_bytes("b.bin")) == b"b"  # reads are unaffected
    run(fresh.set_lifecycle_rules([]))
    assert run(fresh.put("a.bin", b"a")).expires is None


def test_expiry_survives_the_dict_form_faces_hand_around(ttl_store) -> None:
    """XCom values, run tags and trigger events carry ObjectInfo.as_dict()."""
    info = ttl_store.put("d.bin", b"d", ttl=600)
    doc = info.as_dict()
    assert doc["expires"] == info.expires.isoformat() and doc["expired"] is False
    back = ObjectInfo.from_dict(doc)
    assert (back.expires, back.expired) == (info.expires, False)
    gone = expired_record("d.bin", ttl_store.bucket, mtime=info.mtime, sequence=9)
    assert ObjectInfo.from_dict(gone.as_dict()) == gone


def test_the_error_names_the_server_version_needed(ttl_store) -> None:
    """Against an older server's version (the pinned one has TTLs, so it is given here)."""
    old = SimpleNamespace(major=2, minor=10, patch=4)
    stream = ttl_store.aio.bucket_stream
    expiry = BucketExpiry(stream, run(stream.info()), old)
    error = expiry.not_enabled("a.bin", "it should expire in 1:00:00")
    assert isinstance(error, ExpiryNotEnabled)
    assert "need nats-server 2.11 or later; this server is 2.10.4" in str(error)
    assert not server_supports_ttl((2, 10)) and server_supports_ttl((2, 15))


def test_an_atomic_put_carries_the_ttl_too(ttl_store) -> None:
    """A put sent as one ADR-50 batch (natsobj.aio.atomic_put) stamps the same TTLs."""
    ttl_store.aio.atomic_max_bytes = 1 << 40
    info = ttl_store.put("atomic.bin", DATA, ttl=1)
    assert ttl_store.get_info("atomic.bin").sequence == info.chunks + 1  # one batch
    assert ttl_store.get_info("atomic.bin").expires is not None
    assert ttl_store.get_bytes("atomic.bin") == DATA
    assert _wait_for(lambda: ttl_store.status().messages == 0, timeout=5)


def test_create_store_stays_idempotent_for_a_bucket_made_before_expiry(
    nats_url: str, sync_client, bucket_name: str
) -> None:
    """A bucket an earlier release created (no per-object TTLs, no atomic batches): a
    pipeline that calls create_store on every run keeps working; asking for different
    settings, or for expiry explicitly, is still BucketExists."""
    config = StoreConfig(bucket_name, description="artifacts").stream_config()
    for added in ("allow_atomic", "allow_msg_ttl", "subject_delete_marker_ttl"):
        config.pop(added, None)

    async def create_as_before() -> None:
        nc = await nats.connect(nats_url)
        try:
            reply = await nc.request(
                f"$JS.API.STREAM.CREATE.{config['name']}", json.dumps(config).encode()
            )
            assert "error" not in json.loads(reply.data), reply.data
        finally:
            await nc.close()

    asyncio.run(create_as_before())
    try:
        store = sync_client.create_store(bucket_name, description="artifacts")
        store.put("a", b"still works")
        assert store.get_bytes("a") == b"still works"
        assert not store.status().stream_info.config.get("allow_msg_ttl")  # left as it was
        for different in ({"description": "other"}, {"allow_msg_ttl": True}):
            with pytest.raises(BucketExists):
                sync_client.create_store(bucket_name, **{"description": "artifacts", **different})
    finally:
        sync_client.delete_store(bucket_name)


def _republish_with_ttl(raw, bucket: str, name: str, ttl: str) -> None:
    """Another writer of the bucket publishes the object's record again with its own
    ``Nats-TTL`` (the server stores any whole number of seconds)."""
    subject = meta_subject(bucket, name)
    record = raw.last_msg(subject, bucket)
    raw.publish(subject, record.data, {"Nats-TTL": ttl, "Nats-Rollup": "sub"})
    assert raw.last_msg(subject, bucket).headers["Nats-TTL"] == ttl  # the server kept it


@pytest.mark.parametrize("header", ["1000000000000", "9223372036854775807"])
def test_one_records_unusable_ttl_header_costs_only_its_expiry(
    ttl_store, raw, header: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 28, point 3: one record with ``Nats-TTL: 1000000000000`` made list(),
    iter_list(), changes() and watch() of the whole bucket raise OverflowError. The object
    is listed, read and watched as usual, without an expiry, with a warning naming it."""
    bucket = ttl_store.bucket
    ttl_store.put("odd.bin", b"odd")
    ttl_store.put("fine.bin", b"fine", ttl=3600)
    _republish_with_ttl(raw, bucket, "odd.bin", header)
    names = ["fine.bin", "odd.bin"]
    for _ in range(2):  # the second listing is answered from the name index
        listed = {info.name: info for info in ttl_store.list()}
        assert sorted(listed) == names
        assert listed["odd.bin"].expires is None and listed["fine.bin"].expires is not None
    assert sorted(i.name for i in ttl_store.iter_list()) == names
    assert sorted(i.name for i in ttl_store.changes() if not i.deleted) == names
    assert ttl_store.get_info("odd.bin").expires is None
    assert ttl_store.get_bytes("odd.bin") == b"odd"

    with ttl_store.watch() as watcher:  # each name's latest record, then live ones
        watched = [watcher.next(timeout=5), watcher.next(timeout=5)]
    assert sorted(i.name for i in watched if i is not None) == names
    warned = [r.getMessage() for r in caplog.records if "Nats-TTL header" in r.getMessage()]
    assert warned and all(meta_subject(bucket, "odd.bin") in m or "odd.bin" in m for m in warned)


def test_a_record_cannot_forge_the_expiry_the_name_index_keeps(ttl_store, raw) -> None:
    """The name index keeps each record's expiry as one more JSON field; a record that
    carries a field of that name itself (here: long expired) is not hidden by it."""
    ttl_store.put("kept.bin", b"kept")
    subject = meta_subject(ttl_store.bucket, "kept.bin")
    doc = json.loads(raw.last_msg(subject, ttl_store.bucket).data)
    doc[KEPT_EXPIRES_FIELD] = 1_000_000
    raw.publish(subject, json.dumps(doc).encode(), {"Nats-Rollup": "sub"})
    for _ in range(2):  # fetched records, then the name index's copies
        [info] = ttl_store.list()
        assert (info.name, info.expires) == ("kept.bin", None)


def test_unusable_rules_in_the_metadata_cost_only_the_puts_they_match(ttl_store) -> None:
    """Issue 28, point 3: a rule TTL of 1e300 made client.store() raise OverflowError and a
    pattern ``[]`` made every put raise a raw re.error. Each bad rule is kept in its place as
    unusable (one warning): the others apply, a put a bad TTL's glob matches is refused with
    BadLifecycleRule naming the rule, and a glob that is none matches no name."""
    rows = [
        {"pattern": "[]", "ttl": 60},
        {"pattern": "huge/**", "ttl": 1e300},
        {"pattern": "inf/**", "ttl": float("inf")},
        {"pattern": "tmp/**", "ttl": 3600},
    ]
    metadata = {"natsobj.lifecycle": json.dumps(rows)}  # Infinity: Python's JSON writes it
    run(ttl_store.aio.bucket_stream.update(metadata=metadata))
    fresh = run(ttl_store.aio.client.store(ttl_store.bucket))
    rules = run(fresh.lifecycle_rules())
    assert [(r.pattern, bool(r.problem)) for r in rules] == [
        ("[]", True),
        ("huge/**", True),
        ("inf/**", True),
        ("tmp/**", False),
    ]
    assert run(fresh.put("tmp/a.bin", b"a")).expires is not None  # the good rule applies
    assert run(fresh.put("other.bin", b"b")).expires is None  # matches nothing bad
    for name in ("huge/x.bin", "inf/x.bin"):
        with pytest.raises(BadLifecycleRule, match=rf"{name}.*lifecycle rule '{name[:3]}"):
            run(fresh.put(name, b"c"))
    assert run(fresh.put("huge/y.bin", b"d", ttl=60)).expires is not None  # its own TTL
    with pytest.raises(BadLifecycleRule, match=r"lifecycle rule '\[\]'"):
        run(fresh.set_lifecycle_rules(rules))  # an unusable rule is not written back
    run(fresh.set_lifecycle_rules([rule for rule in rules if not rule.problem]))
    assert [str(r) for r in run(fresh.lifecycle_rules())] == ["tmp/**=1h"]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("pattern", "ttl"),
    [("[]", 60), ("x/[z-a]", 60), ("a", float("inf")), ("a", 1e300), ("a", 0.5), ("a", -1)],
)
def test_a_rule_made_here_is_checked_when_made(pattern: str, ttl: float) -> None:
    with pytest.raises(BadLifecycleRule, match=re.escape(repr(pattern))):
        LifecycleRule(pattern, ttl)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 1 second"):
        coerce_ttl(1e300)  # a put's own TTL too


def test_a_catastrophic_rule_does_not_stall_a_put(ttl_store) -> None:
    """Issue 28, point 6: a 43-character rule (``**/`` twelve times) made one put take
    16.9 s with the event loop stalled; the glob is matched in linear time."""
    rule = LifecycleRule("**/" * 12 + "*.tmp/x", timedelta(hours=1))
    assert len(rule.pattern) == 43
    ttl_store.set_lifecycle_rules([rule])
    name = "a/" * 40 + "y.bin"
    started = time.monotonic()
    assert ttl_store.put(name, b"data").expires is None  # the rule does not match it
    assert time.monotonic() - started < 2
    assert ttl_store.put("a/" * 40 + "y.tmp/x", b"data").expires is not None
