"""Change feeds of versioned buckets (``natsobj.version_events``): ``changes()`` and ``watch()``
say each record's version id and whether it is a delete marker, and, asked for version events,
report lock changes and versions removed for good in stream order among the records; a cursor
resumes after a lock event; an unversioned bucket's feed is as it was; a garbage lock record
is reported unreadable and costs no other event."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from natsobj.cursors import ChangeCursor
from natsobj.model import ObjectInfo
from natsobj.names import lock_subject
from natsobj.version_events import LockEvent, VersionRemoved

WAIT = 10.0  # how long a watch may take to deliver what was already written


def _shape(change) -> tuple[str, str | None]:
    """A change as (what happened, which version)."""
    if isinstance(change, LockEvent):
        kind = "unreadable" if change.unreadable else "unlock" if change.unlocked else "lock"
        return kind, change.version_id
    if isinstance(change, VersionRemoved):
        return "removed", change.version_id
    assert isinstance(change, ObjectInfo)
    return ("marker" if change.delete_marker else "del" if change.deleted else "put"), (
        change.version_id
    )


def _collect(watcher, count: int) -> list:
    """The next ``count`` changes of a watch, waiting for each at most WAIT seconds."""
    got = []
    deadline = time.monotonic() + WAIT
    while len(got) < count and time.monotonic() < deadline:
        change = watcher.next(timeout=max(0.01, deadline - time.monotonic()))
        if change is not None:
            got.append(change)
    return got


def test_versions_locks_and_removals_come_in_order_in_changes_and_watch(store) -> None:
    store.set_versioning("Enabled")
    seen, cursor = [], ChangeCursor()
    # each step is read as it happens: a name's next record rolls its earlier one up
    with store.watch(start="latest", include_version_events=True) as watcher:

        def step() -> None:
            nonlocal cursor
            batch = store.changes(cursor, include_version_events=True)
            seen.extend(batch)
            cursor = batch.cursor

        first = store.put("a", b"one")
        step()
        second = store.put("a", b"two")  # keeps `first`: its kept record is no change
        step()
        store.lock("a", version=first.nuid, legal_hold=True)
        step()
        store.lock("a", version=first.nuid, legal_hold=False)
        step()
        marker = store.delete("a")
        step()
        store.delete("a", version=first.nuid)
        step()
        store.delete("a", version=marker.nuid)  # the current one: `second` is current again
        step()
        watched = _collect(watcher, 8)
    expected = [
        ("put", first.nuid),
        ("put", second.nuid),
        ("lock", first.nuid),
        ("unlock", first.nuid),
        ("marker", marker.nuid),
        ("removed", first.nuid),
        ("put", second.nuid),  # promoted back
        ("removed", marker.nuid),
    ]
    assert [_shape(c) for c in seen] == expected
    assert [_shape(c) for c in watched] == expected
    assert [c.sequence for c in seen] == sorted(c.sequence for c in seen)
    lock = seen[2]
    assert (lock.bucket, lock.name, lock.lock.legal_hold) == (store.bucket, "a", True)
    # a removal is reported once, however often the feed is read again from the start
    removals = [c for c in store.changes(include_version_events=True) if _shape(c)[0] == "removed"]
    assert [c.version_id for c in removals] == [first.nuid, marker.nuid]
    # not asked for version events, a feed sees records only (a sensor does not fire on locks)
    assert all(isinstance(c, ObjectInfo) for c in store.changes())


def test_a_cursor_taken_after_a_lock_event_resumes_after_it(store) -> None:
    store.set_versioning("Enabled")
    kept = store.put("audit.log", b"entries")
    store.lock("audit.log", mode="GOVERNANCE", retain_until=_days_ahead(1))
    batch = store.changes(ChangeCursor(), include_version_events=True)
    assert [_shape(c) for c in batch] == [("put", kept.nuid), ("lock", kept.nuid)]
    assert batch.cursor is not None and batch.cursor.sequence == batch[-1].sequence
    after = store.put("next.log", b"more")
    resumed = store.changes(batch.cursor, include_version_events=True)
    assert [_shape(c) for c in resumed] == [("put", after.nuid)]
    with store.watch(after_sequence=batch.cursor, include_version_events=True) as watcher:
        assert [_shape(c) for c in _collect(watcher, 1)] == [("put", after.nuid)]
        assert watcher.cursor.sequence == after.sequence


def test_a_watch_of_the_current_values_starts_with_each_lock_not_old_removals(store) -> None:
    store.set_versioning("Enabled")
    gone = store.put("x", b"1")
    held = store.put("x", b"2")
    store.delete("x", version=gone.nuid)
    store.lock("x", legal_hold=True)
    with store.watch(include_version_events=True) as watcher:
        assert [_shape(c) for c in _collect(watcher, 2)] == [
            ("put", held.nuid),
            ("lock", held.nuid),
        ]
        assert watcher.next(timeout=0.5) is None  # no removal replayed


def test_an_unversioned_bucket_feed_is_unchanged(store) -> None:
    first = store.put("plain", b"one")
    second = store.put("plain", b"two")
    store.put("other", b"x")
    store.delete("other")
    plain = store.changes()
    asked = store.changes(include_version_events=True)
    assert [(c.name, c.sequence, c.deleted) for c in asked] == [
        (c.name, c.sequence, c.deleted) for c in plain
    ]
    assert all(isinstance(c, ObjectInfo) for c in asked)
    put, tombstone = asked
    assert put.version_id == second.nuid != first.nuid and not put.delete_marker
    # an unversioned delete is no version (S3 gives it no version id) and no marker
    assert (tombstone.version_id, tombstone.delete_marker) == (None, False)
    assert plain.last_sequence == asked.last_sequence


def test_a_garbage_lock_record_is_reported_unreadable_and_the_next_event_still_comes(
    store, raw
) -> None:
    """Any writer of the bucket can publish on a lock subject: what cannot be read is said
    so, with its version, and the feed goes on to the next real event."""
    store.set_versioning("Enabled")
    planted = store.put("x", b"bytes")
    other = store.put("y", b"bytes")
    start = store.changes(ChangeCursor(), include_version_events=True).cursor
    with store.watch(start="latest", include_version_events=True) as watcher:
        raw.publish(lock_subject(store.bucket, "x", planted.nuid), b"not json")
        raw.publish(lock_subject(store.bucket, "x", planted.nuid), b"[" * 200_000)  # too deep
        raw.publish(f"$O.{store.bucket}.C.L.!!!.{planted.nuid}", b"{}")  # names no object
        store.lock("y", legal_hold=True)
        watched = _collect(watcher, 3)
    batch = store.changes(start, include_version_events=True)
    for changes in (batch, watched):
        assert [_shape(c) for c in changes] == [
            ("unreadable", planted.nuid),
            ("unreadable", planted.nuid),
            ("lock", other.nuid),
        ]
        assert "unreadable" in changes[0].problem and changes[0].name == "x"
        assert changes[2].lock.legal_hold and changes[2].name == "y"
    # the planted record still holds its version, as the lock rules say
    assert store.lock_info("x").legal_hold


def _days_ahead(days: int) -> datetime:
    return datetime.now(UTC) + timedelta(days=days)
