"""Change cursors across a bucket deleted and created again under the same name.

A cursor's sequence counts records of one stream; the new bucket counts from 1 again. Resuming
after the old number would skip, without a word, every record of the new bucket up to it
(when the new bucket is shorter) or look perfectly normal while having skipped them (when it
has grown past it). Both cases must end in ``BucketRecreated``.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

import natsobj.aio
from natsobj.aio.watch import ObjectWatcher
from natsobj.changefeed import cursor_after_recreation
from natsobj.cursors import ChangeCursor
from natsobj.errors import BucketRecreated
from natsobj.operation_options import FOLLOW


def _recreate(sync_client, bucket: str, objects: int) -> None:
    sync_client.delete_store(bucket)
    fresh = sync_client.create_store(bucket)
    for index in range(objects):
        fresh.put(f"new/{index}", b"n")


def test_the_compact_form_round_trips_and_old_bare_sequences_still_parse() -> None:
    created = datetime(2024, 6, 10, 9, 15, 22, 123456, tzinfo=UTC)
    cursor = ChangeCursor(42, created)
    assert str(cursor) == "42@2024-06-10T09:15:22.123456Z"
    assert ChangeCursor.parse(str(cursor)) == cursor
    # the server's nanosecond form compares equal to the microsecond one it was read into
    assert ChangeCursor(42, "2024-06-10T09:15:22.123456789Z") == cursor
    assert ChangeCursor.parse("42") == ChangeCursor.parse(42) == ChangeCursor(42)
    for bad in ("forty-two", "42@yesterday", "-1", 4.2):
        with pytest.raises(ValueError, match=r"change cursor|creation time"):
            ChangeCursor.parse(bad)


def test_the_on_recreated_policy_is_checked_once_for_every_watcher() -> None:
    """The trigger and the sensor share it: a typo fails where the watcher is defined, "fail"
    hands the refusal back, "restart" starts over with a cursor the next check pins afresh."""
    row = FOLLOW["on_recreated"]
    assert row.parse("RESTART") == "restart"
    with pytest.raises(ValueError, match=r"on_recreated must be one of .*'retry'"):
        row.parse("retry")
    refused = BucketRecreated("created again", bucket="b")
    with pytest.raises(BucketRecreated) as raised:
        cursor_after_recreation(refused, "fail")
    assert raised.value is refused
    assert cursor_after_recreation(refused, "restart") == ChangeCursor()


@pytest.mark.parametrize("new_objects", [2, 9], ids=["fewer", "more"])
def test_changes_refuses_a_cursor_of_a_recreated_bucket(sync_client, store, new_objects) -> None:
    for index in range(5):
        store.put(f"old/{index}", b"o")
    taken = store.changes(ChangeCursor()).cursor
    assert taken is not None and taken.sequence == store.status().last_sequence
    _recreate(sync_client, store.bucket, new_objects)
    with pytest.raises(BucketRecreated) as err:
        store.changes(taken)
    message = str(err.value)
    assert store.bucket in message and f"sequence {taken.sequence} " in message
    assert taken.stream_created is not None
    assert taken.stream_created.isoformat() in message and "restart" in message
    # starting over from the new bucket's beginning sees every one of its objects
    fresh = store.changes(ChangeCursor.start_of(store.status()))
    assert sorted(info.name for info in fresh) == sorted(f"new/{i}" for i in range(new_objects))


def test_an_old_bare_cursor_is_refused_past_the_end_and_pinned_otherwise(
    sync_client, store
) -> None:
    for index in range(5):
        store.put(f"old/{index}", b"o")
    _recreate(sync_client, store.bucket, 2)
    with pytest.raises(BucketRecreated, match="unknown time"):
        store.changes(ChangeCursor.parse("5"))
    batch = store.changes(ChangeCursor.parse(str(store.get_info("new/0").sequence)))
    assert [info.name for info in batch] == ["new/1"]
    assert batch.cursor == ChangeCursor.end_of(store.status())  # stored in full from now on


@pytest.mark.parametrize("new_objects", [2, 9], ids=["fewer", "more"])
def test_watch_refuses_a_cursor_of_a_recreated_bucket(sync_client, store, new_objects) -> None:
    for index in range(5):
        store.put(f"old/{index}", b"o")
    with store.watch(start="earliest") as watcher:
        for _ in range(5):
            watcher.next(timeout=5)
        taken = watcher.cursor
    assert taken == ChangeCursor.end_of(store.status())
    _recreate(sync_client, store.bucket, new_objects)
    with pytest.raises(BucketRecreated, match="deleted and created again"):
        store.watch(after_sequence=taken).next(timeout=5)
    with store.watch(after_sequence=ChangeCursor.start_of(store.status())) as watcher:
        seen = [watcher.next(timeout=5) for _ in range(new_objects)]
    assert sorted(info.name for info in seen) == sorted(f"new/{i}" for i in range(new_objects))


@pytest.mark.parametrize("new_objects", [2, 9], ids=["fewer", "more"])
def test_a_running_watch_ends_when_its_bucket_is_recreated_under_it(
    nats_url, bucket_name, new_objects
) -> None:
    """The watch's consumer goes with the old stream and is created again once a stream of
    that name exists; resuming there at the old sequence is the silent skip."""

    async def scenario() -> None:
        async with await natsobj.aio.connect(nats_url) as client:
            store = await client.create_store(bucket_name)
            for index in range(5):
                await store.put(f"old/{index}", b"o")
            async with ObjectWatcher(store, start="earliest", heartbeat=0.3) as watcher:
                for _ in range(5):
                    assert await watcher.next(timeout=5) is not None
                await client.delete_store(bucket_name)
                fresh = await client.create_store(bucket_name)
                for index in range(new_objects):
                    await fresh.put(f"new/{index}", b"n")
                with pytest.raises(BucketRecreated, match=bucket_name):
                    await watcher.next(timeout=10)
            await client.delete_store(bucket_name)

    asyncio.run(scenario())
