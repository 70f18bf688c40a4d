"""Triggers run in asyncio against the real server; the change trigger's cursor lives in
Airflow's real asset state store from 3.3.2 (the execution API over the test database, as
``airflow dags test`` reaches it), and in NATS before (``tests.airflow.cursors``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psutil
import pytest
import structlog
from airflow.sdk import Asset
from airflow.sdk.exceptions import AirflowRuntimeError, ErrorType
from airflow.sdk.execution_time.comms import ErrorResponse
from airflow.sdk.execution_time.supervisor import (
    InProcessSupervisorComms,
    InProcessTestSupervisor,
    set_supervisor_comms,
)
from airflow.triggers.base import TriggerEvent
from airflow_natsobj.triggers.object_store import (
    NatsKeysUnchangedTrigger,
    NatsObjectChangeTrigger,
    NatsObjectTrigger,
)

import natsobj
from natsobj.cursors import ChangeCursor
from natsobj.errors import BucketRecreated, NatsObjError
from tests.airflow.cursors import HAS_ASSET_STATE_STORE, NatsCursors

if HAS_ASSET_STATE_STORE:
    from airflow.sdk.execution_time.context import AssetStateStoreAccessors

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def astore(nats_default: str, store, bucket_name: str):
    """An async put helper on its own connection, used while a trigger watches."""

    async def put(name: str, data: bytes = b"x") -> natsobj.ObjectInfo:
        async with await natsobj.aio.connect(nats_default) as client:
            return await (await client.store(bucket_name)).put(name, data)

    async def delete(name: str) -> None:
        async with await natsobj.aio.connect(nats_default) as client:
            await (await client.store(bucket_name)).delete(name)

    put.delete = delete  # type: ignore[attr-defined]
    return put


@pytest.fixture
def astatus(nats_default: str, bucket_name: str):
    """The bucket's status, read on its own connection."""

    async def status() -> natsobj.StoreStatus:
        async with await natsobj.aio.connect(nats_default) as client:
            return await (await client.store(bucket_name)).status()

    return status


async def next_event(events: AsyncIterator[TriggerEvent], timeout: float = 15) -> dict[str, Any]:
    event = await asyncio.wait_for(anext(events), timeout)
    return event.payload


async def no_event(events: AsyncIterator[TriggerEvent], wait: float = 1.0) -> None:
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(anext(events), wait)


@pytest.mark.parametrize(
    "trigger",
    [
        NatsObjectTrigger(bucket="b", glob="raw/*.csv", after_sequence=7, nats_conn_id="other"),
        NatsObjectTrigger(
            bucket="b",
            name=["a", "b"],
            rejected=[3, 1],
            deadline="2030-01-01T00:00:00+00:00",
            nats_conn_id="other",
        ),
        NatsKeysUnchangedTrigger(
            bucket_name="b",
            prefix="batch/",
            inactivity_period=5,
            min_objects=2,
            previous_objects=["batch/1"],
            allow_delete=False,
            deadline="2030-01-01T00:00:00+00:00",
            nats_conn_id="other",
        ),
        NatsObjectChangeTrigger(
            bucket="b",
            regex="^in/.+$",
            include_deletes=True,
            start_at="all",
            nats_conn_id="other",
        ),
    ],
)
def test_serialize_round_trips(trigger) -> None:
    try:  # where the triggerer imports a trigger's classpath from (Airflow 3.3)
        from airflow.sdk._shared.module_loading import import_string
    except ImportError:  # before
        from airflow.sdk.module_loading import import_string

    classpath, kwargs = trigger.serialize()
    again = import_string(classpath)(**kwargs)
    assert again.serialize() == (classpath, kwargs)
    assert kwargs["nats_conn_id"] == "other"


@pytest.mark.parametrize(
    ("cls", "old", "new"),
    [
        (NatsObjectTrigger, {"pattern": "a.csv"}, {"name": "a.csv"}),
        (NatsObjectTrigger, {"pattern": "r/*", "match": "glob"}, {"glob": "r/*"}),
        (NatsObjectChangeTrigger, {"pattern": "in/*"}, {"glob": "in/*"}),
        (NatsObjectChangeTrigger, {"pattern": "^x$", "match": "regex"}, {"regex": "^x$"}),
    ],
)
def test_triggers_serialized_by_the_previous_release_resume_with_a_warning(cls, old, new) -> None:
    from airflow.exceptions import AirflowProviderDeprecationWarning

    with pytest.warns(AirflowProviderDeprecationWarning, match="match=.*deprecated"):
        trigger = cls(bucket="b", **old)
    kwargs = trigger.serialize()[1]
    assert {k: kwargs[k] for k in ("name", "glob", "regex") if k in kwargs} == new
    assert "pattern" not in kwargs and "match" not in kwargs


def test_change_trigger_watches_every_object_by_default() -> None:
    assert NatsObjectChangeTrigger(bucket="b").serialize()[1]["glob"] == "**"


def test_change_trigger_rejects_bad_patterns_at_parse_time() -> None:
    with pytest.raises(ValueError, match="invalid regex"):
        NatsObjectChangeTrigger(bucket="b", regex="(")
    with pytest.raises(ValueError, match="start_at"):
        NatsObjectChangeTrigger(bucket="b", start_at="yesterday")


async def test_object_trigger_fires_at_once_for_an_existing_object(astore, bucket_name) -> None:
    info = await astore("reports/a.csv", b"1,2")
    events = NatsObjectTrigger(bucket=bucket_name, name="reports/a.csv").run()
    payload = await next_event(events)
    assert payload["status"] == "success"
    assert payload["object"]["name"] == "reports/a.csv"
    assert payload["object"]["sequence"] == info.sequence
    assert payload["object"]["digest"] == info.digest


async def test_object_trigger_waits_on_the_watch_for_a_matching_put(astore, bucket_name) -> None:
    await astore("raw/notes.txt")
    events = NatsObjectTrigger(bucket=bucket_name, regex=r"raw/\d+\.csv").run()
    waiting = asyncio.ensure_future(next_event(events))
    await asyncio.sleep(0.5)
    assert not waiting.done()
    await astore("raw/x.csv")
    await asyncio.sleep(0.3)
    assert not waiting.done()
    info = await astore("raw/42.csv")
    payload = await waiting
    assert payload["object"]["name"] == "raw/42.csv"
    assert payload["object"]["sequence"] == info.sequence


async def test_object_trigger_after_sequence_waits_for_a_change(astore, bucket_name) -> None:
    first = await astore("model.bin", b"v1")
    events = NatsObjectTrigger(
        bucket=bucket_name, name="model.bin", after_sequence=first.sequence
    ).run()
    waiting = asyncio.ensure_future(next_event(events))
    await asyncio.sleep(0.5)
    assert not waiting.done()
    second = await astore("model.bin", b"v2")
    assert (await waiting)["object"]["nuid"] == second.nuid


async def test_object_trigger_skips_replayed_records_no_longer_current(astore, bucket_name) -> None:
    start = await astore("other")
    await astore("gone.txt")
    await astore.delete("gone.txt")
    await astore("kept.txt", b"v1")
    latest = await astore("kept.txt", b"v2")
    events = NatsObjectTrigger(
        bucket=bucket_name, glob="*.txt", after_sequence=start.sequence
    ).run()
    payload = await next_event(events)
    assert payload["object"]["name"] == "kept.txt"
    assert payload["object"]["sequence"] == latest.sequence


async def test_object_trigger_reports_an_unknown_bucket(nats_default, bucket_name) -> None:
    events = NatsObjectTrigger(bucket=bucket_name, name="x").run()
    payload = await next_event(events)
    assert payload["status"] == "error"
    assert payload["error_type"] == "BucketNotFound"
    assert f"bucket '{bucket_name}'" in payload["message"]


async def test_change_trigger_fires_per_matching_put_and_optionally_deletes(astore, bucket_name):
    await astore("in/before.csv")  # start_at="new": earlier objects are not events
    trigger = NatsObjectChangeTrigger(bucket=bucket_name, glob="in/*.csv")
    events = trigger.run()
    waiting = asyncio.ensure_future(next_event(events))
    await asyncio.sleep(0.5)
    await astore("in/skip.txt")
    a = await astore("in/a.csv", b"aaa")
    payload = await waiting
    assert (payload["name"], payload["size"], payload["sequence"]) == ("in/a.csv", 3, a.sequence)
    await astore.delete("in/a.csv")
    b = await astore("in/b.csv")
    assert (await next_event(events))["sequence"] == b.sequence
    await events.aclose()

    with_deletes = NatsObjectChangeTrigger(
        bucket=bucket_name, glob="in/*.csv", include_deletes=True
    ).run()
    waiting = asyncio.ensure_future(next_event(with_deletes))
    await asyncio.sleep(0.5)
    await astore.delete("in/b.csv")
    payload = await waiting
    assert payload["name"] == "in/b.csv" and payload["deleted"] is True
    await with_deletes.aclose()


async def test_change_trigger_start_at_all_replays_current_objects(astore, bucket_name) -> None:
    await astore("in/old.csv", b"v1")
    current = await astore("in/old.csv", b"v2")
    events = NatsObjectChangeTrigger(bucket=bucket_name, glob="in/*", start_at="all").run()
    payload = await next_event(events)
    assert payload["sequence"] == current.sequence
    await no_event(events)
    await events.aclose()


# -- restart: the cursor in the triggerer's asset state store ------------------------------------


class _AsyncInProcessComms(InProcessSupervisorComms):
    """Airflow's in-process supervisor comms (as used by dag.test), plus the async send the
    triggerer's comms offer; requests go through the real execution API to the database."""

    async def asend(self, msg: Any) -> Any:
        return self.send(msg)


@pytest.fixture
def asset_state_store(nats_default: str, bucket_name: str) -> Iterator[Any]:
    """Where the trigger keeps its cursor: the asset state store of its asset, or NATS."""
    if not HAS_ASSET_STATE_STORE:
        yield NatsCursors(nats_default)
        return
    from airflow.models.asset import AssetActive, AssetModel
    from airflow.utils.session import create_session

    uri = f"nats://{bucket_name}/in"
    with create_session() as session:
        session.add(AssetModel(name=uri, uri=uri, group="asset"))
        session.add(AssetActive(name=uri, uri=uri))
    supervisor = InProcessTestSupervisor(
        id=uuid.uuid4(),
        pid=os.getpid(),
        process=psutil.Process(),
        process_log=structlog.get_logger(logger_name="task").bind(),
        client=InProcessTestSupervisor._api_client(),
    )
    supervisor.comms = _AsyncInProcessComms(supervisor=supervisor)
    with set_supervisor_comms(supervisor.comms):
        yield AssetStateStoreAccessors(inlets=[Asset(name=uri, uri=uri)])


async def cursor_reaches(states: Any, key: str, sequence: int, timeout: float = 15) -> int | None:
    """The stored cursor's sequence once it is ``sequence`` (or at ``timeout``): the trigger
    stores it after its event is taken, on its next step, in NATS over a connection of its own
    before Airflow 3.3.2."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await states.aget(key)
        found = None if value is None else ChangeCursor.parse(value).sequence
        if found == sequence or loop.time() > deadline:
            return found
        await asyncio.sleep(0.1)  # polling the stored value, not waiting for a result


class _Triggerer:
    """Consumes a trigger the way Airflow's triggerer does: ``async for`` into a queue, so
    the trigger resumes right after each event is taken; ``stop()`` cancels it."""

    def __init__(self, bucket: str, store: Any, **options: Any) -> None:
        self.trigger = NatsObjectChangeTrigger(bucket=bucket, glob="in/*", **options)
        if not isinstance(store, NatsCursors):  # a triggerer without one injects nothing
            self.trigger.asset_state_store = store  # what the triggerer injects before run()
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.task = asyncio.ensure_future(self._consume(self.trigger))

    async def _consume(self, trigger: NatsObjectChangeTrigger) -> None:
        async for event in trigger.run():
            self.events.put_nowait(event.payload)

    async def next(self, timeout: float = 15) -> dict[str, Any]:
        return await asyncio.wait_for(self.events.get(), timeout)

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task


async def test_change_trigger_restart_neither_loses_nor_repeats(
    astore, astatus, bucket_name, asset_state_store
) -> None:
    triggerer = _Triggerer(bucket_name, asset_state_store)
    key = triggerer.trigger.cursor_key
    assert key.startswith(f"nats_meta_sequence:{bucket_name}:")
    for _ in range(100):  # the start position is stored before the watch begins
        if await asset_state_store.aget(key) is not None:
            break
        await asyncio.sleep(0.1)
    assert await asset_state_store.aget(key) == str(ChangeCursor.end_of(await astatus()))
    one = await astore("in/1")
    two = await astore("in/2")
    assert (await triggerer.next())["sequence"] == one.sequence
    assert (await triggerer.next())["sequence"] == two.sequence
    assert await cursor_reaches(asset_state_store, key, two.sequence) == two.sequence
    await triggerer.stop()
    assert ChangeCursor.parse(await asset_state_store.aget(key)).sequence == two.sequence

    three = await astore("in/3")  # written while no triggerer runs
    await astore("elsewhere")
    four = await astore("in/4")

    other = NatsObjectChangeTrigger(bucket=bucket_name, glob="in/*", start_at="all")
    assert other.cursor_key != key  # another configuration keeps its own place

    restarted = _Triggerer(bucket_name, asset_state_store)
    assert (await restarted.next())["sequence"] == three.sequence
    assert (await restarted.next())["sequence"] == four.sequence
    five = await astore("in/5")
    assert (await restarted.next())["sequence"] == five.sequence
    await asyncio.sleep(0.5)
    assert restarted.events.empty()  # nothing repeated
    assert await cursor_reaches(asset_state_store, key, five.sequence) == five.sequence
    await restarted.stop()
    assert ChangeCursor.parse(await asset_state_store.aget(key)).sequence == five.sequence


def _refusal() -> Exception:
    """What a refused cursor write raises: the triggerer's supervisor's answer when the API
    server cannot store a value, or the cursor keeper's when NATS refuses the key-value put."""
    if HAS_ASSET_STATE_STORE:
        return AirflowRuntimeError(
            ErrorResponse(error=ErrorType.API_SERVER_ERROR, detail={"status_code": 500})
        )
    return NatsObjError("could not store the change-feed cursor", bucket="natsobj_cursors")


class _RefusedWrites:
    """The place the cursor is kept, its writes refused while ``refusing``."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.refusing = False

    async def aget(self, key: str, default: Any = None) -> Any:
        return await self.store.aget(key, default)

    async def aset(self, key: str, value: Any) -> None:
        if self.refusing:
            raise _refusal()
        await self.store.aset(key, value)


async def test_a_refused_cursor_write_neither_ends_the_trigger_nor_repeats_an_event(
    astore, astatus, bucket_name, asset_state_store
) -> None:
    """Ending the trigger on a refused write would make Airflow start it again from the older
    stored place, firing again for what it had handed over."""
    writes = _RefusedWrites(asset_state_store)
    triggerer = _Triggerer(bucket_name, writes)  # type: ignore[arg-type]
    key = triggerer.trigger.cursor_key
    for _ in range(100):  # the start position is stored before the watch begins
        if await asset_state_store.aget(key) is not None:
            break
        await asyncio.sleep(0.1)
    one = await astore("in/1")
    assert (await triggerer.next())["sequence"] == one.sequence
    writes.refusing = True
    two = await astore("in/2")
    three = await astore("in/3")
    assert [(await triggerer.next())["sequence"] for _ in range(2)] == [
        two.sequence,
        three.sequence,
    ]
    assert not triggerer.task.done()
    assert ChangeCursor.parse(await asset_state_store.aget(key)).sequence == one.sequence
    writes.refusing = False
    four = await astore("in/4")
    assert (await triggerer.next())["sequence"] == four.sequence  # in order: nothing repeated
    assert await cursor_reaches(asset_state_store, key, four.sequence) == four.sequence
    await triggerer.stop()
    assert ChangeCursor.parse(await asset_state_store.aget(key)).sequence == four.sequence


async def test_change_trigger_retries_until_the_bucket_exists(
    nats_default, bucket_name, sync_client
) -> None:
    events = NatsObjectChangeTrigger(bucket=bucket_name, glob="*").run()
    waiting = asyncio.ensure_future(next_event(events, timeout=20))
    await asyncio.sleep(1.5)
    assert not waiting.done()
    store = sync_client.create_store(bucket_name)
    try:
        await asyncio.sleep(2.5)  # the retry after 1 s + 2 s finds the bucket
        info = await asyncio.to_thread(store.put, "late", b"x")
        assert (await waiting)["sequence"] == info.sequence
    finally:
        await events.aclose()
        sync_client.delete_store(bucket_name)


async def test_a_trigger_shared_by_several_assets_keeps_its_cursor(caplog, nats_default) -> None:
    """Airflow's asset state store has no single asset for a shared trigger: its cursor is kept
    in memory, said once. Kept in NATS (before 3.3.2) it is the trigger's own, under its key."""
    import logging

    from airflow_natsobj.triggers.object_store import _CursorStore

    key = f"nats_meta_sequence:shared:{uuid.uuid4().hex[:12]}"
    log = logging.getLogger("test.cursor")
    async with await natsobj.aio.connect(nats_default) as client:
        if HAS_ASSET_STATE_STORE:
            shared = AssetStateStoreAccessors(
                inlets=[
                    Asset(name="nats://b/x", uri="nats://b/x"),
                    Asset(name="nats://b/y", uri="nats://b/y"),
                ]
            )
            cursor = _CursorStore(shared, key, log)
        else:
            cursor = _CursorStore(None, key, log)
            cursor.keep_in_nats(client)
        with caplog.at_level(logging.WARNING, logger="test.cursor"):
            assert await cursor.get() is None
            await cursor.set(ChangeCursor(5))
        assert await cursor.get() == ChangeCursor(5)
    if HAS_ASSET_STATE_STORE:
        assert "give each asset its own AssetWatcher" in caplog.text
        assert caplog.text.count("kept in memory only") == 1
    else:
        assert await NatsCursors(nats_default).aget(key) == str(ChangeCursor(5))
        assert "memory" not in caplog.text


# -- a bucket deleted and created again: never a silent skip ----------------------------------


async def _recreate(nats_default: str, bucket: str, objects: int) -> list[natsobj.ObjectInfo]:
    async with await natsobj.aio.connect(nats_default) as client:
        await client.delete_store(bucket)
        fresh = await client.create_store(bucket)
        return [await fresh.put(f"in/new{index}", b"n") for index in range(objects)]


async def _watching(triggerer: _Triggerer, states, astore, names: list[str]) -> int:
    """Once the trigger holds its start position, put ``names`` and take their events; the
    sequence the trigger's cursor is then at."""
    for _ in range(100):
        if await states.aget(triggerer.trigger.cursor_key) is not None:
            break
        await asyncio.sleep(0.1)
    puts = [await astore(name) for name in names]
    for put in puts:
        assert (await triggerer.next())["sequence"] == put.sequence
    return puts[-1].sequence


@pytest.mark.parametrize("new_objects", [2, 9], ids=["fewer", "more"])
async def test_change_trigger_fails_when_its_bucket_is_recreated(
    nats_default, astore, bucket_name, asset_state_store, new_objects
) -> None:
    """The new bucket counts from 1 again: with fewer records than the cursor it used to wait
    silently until it passed it, with more it looked normal having skipped the first ones.
    Now the running trigger stops with BucketRecreated, and so does a restarted one reading
    the stored cursor; nothing of the new bucket is fired meanwhile."""
    triggerer = _Triggerer(bucket_name, asset_state_store)
    held = await _watching(triggerer, asset_state_store, astore, [f"in/{i}" for i in range(5)])
    await _recreate(nats_default, bucket_name, new_objects)
    with pytest.raises(BucketRecreated) as err:
        await asyncio.wait_for(triggerer.task, 30)
    assert bucket_name in str(err.value) and f"sequence {held} " in str(err.value)
    assert triggerer.events.empty()
    stored = ChangeCursor.parse(await asset_state_store.aget(triggerer.trigger.cursor_key))
    assert stored.sequence == held  # left for the operator to decide

    restarted = _Triggerer(bucket_name, asset_state_store)
    with pytest.raises(BucketRecreated, match="deleted and created again"):
        await asyncio.wait_for(restarted.task, 30)
    assert restarted.events.empty()


@pytest.mark.parametrize("new_objects", [2, 9], ids=["fewer", "more"])
async def test_change_trigger_restart_option_fires_for_all_of_the_new_bucket(
    nats_default, astore, bucket_name, asset_state_store, new_objects
) -> None:
    triggerer = _Triggerer(bucket_name, asset_state_store, on_recreated="restart")
    await _watching(triggerer, asset_state_store, astore, [f"in/{i}" for i in range(5)])
    puts = await _recreate(nats_default, bucket_name, new_objects)
    fired = [(await triggerer.next(timeout=30))["name"] for _ in puts]
    assert fired == [put.name for put in puts]
    await asyncio.sleep(0.3)
    await triggerer.stop()
    assert triggerer.events.empty()


async def test_a_bare_cursor_of_an_older_release_resumes_and_is_stored_in_full(
    astore, astatus, bucket_name, asset_state_store
) -> None:
    first = await astore("in/1")
    second = await astore("in/2")
    key = NatsObjectChangeTrigger(bucket=bucket_name, glob="in/*").cursor_key
    await asset_state_store.aset(key, first.sequence)  # what 0.2 stored
    triggerer = _Triggerer(bucket_name, asset_state_store)
    assert (await triggerer.next())["sequence"] == second.sequence
    end = ChangeCursor.end_of(await astatus())
    assert await cursor_reaches(asset_state_store, key, end.sequence) == end.sequence
    await triggerer.stop()
    assert await asset_state_store.aget(key) == str(end)


async def test_change_trigger_sees_an_expiry_once_as_a_delete(nats_default, bucket_name) -> None:
    """An object put with a TTL expires on the server; the trigger fires once for the put and
    once for the expiry (deleted and expired), from the server's delete marker."""
    async with await natsobj.aio.connect(nats_default) as client:
        store = await client.create_store(bucket_name, delete_marker_ttl=1)
        try:
            trigger = NatsObjectChangeTrigger(
                bucket=bucket_name, glob="tmp/**", include_deletes=True
            )
            events = trigger.run()
            waiting = asyncio.ensure_future(next_event(events))
            await asyncio.sleep(0.5)
            put = await store.put("tmp/a.bin", b"a", ttl=1)
            first = await waiting
            assert (first["name"], first["deleted"], first["sequence"]) == (
                "tmp/a.bin",
                False,
                put.sequence,
            )
            expired = await next_event(events, timeout=20)
            assert expired["name"] == "tmp/a.bin"
            assert expired["deleted"] is True and expired["expired"] is True
            await no_event(events, wait=3)  # the expiry is one event, not one per record
            await events.aclose()
        finally:
            await client.delete_store(bucket_name)


def test_the_cursor_key_of_an_upgraded_trigger_is_the_one_it_kept() -> None:
    """Releases before the options table hashed ``start_at`` as "new" or "all" (the default
    "new"); a triggerer upgraded under a running watcher must find the cursor it kept there,
    whatever spelling of the position the DAG now uses."""
    import hashlib
    import json

    def key_before(start_at: str) -> str:
        kwargs = {
            "bucket": "b",
            "glob": "**",
            "include_deletes": False,
            "start_at": start_at,
            "nats_conn_id": "nats_default",
        }
        digest = hashlib.sha256(json.dumps(kwargs, sort_keys=True).encode()).hexdigest()[:12]
        return f"nats_meta_sequence:b:{digest}"

    for given, before in [(None, "new"), ("latest", "new"), ("new", "new"), ("current", "all")]:
        assert NatsObjectChangeTrigger(bucket="b", start_at=given).cursor_key == key_before(before)


async def test_object_trigger_fires_once_every_name_is_there(astore, bucket_name) -> None:
    first = await astore("in/a.csv")
    events = NatsObjectTrigger(bucket=bucket_name, name=["in/a.csv", "in/b.csv"]).run()
    waiting = asyncio.ensure_future(next_event(events))
    await no_event_yet(waiting)
    second = await astore("in/b.csv")
    payload = await waiting
    assert [o["sequence"] for o in payload["objects"]] == [first.sequence, second.sequence]
    assert "object" not in payload  # a list was given: the objects are a list


async def test_object_trigger_skips_the_records_the_sensor_rejected(astore, bucket_name) -> None:
    refused = await astore("in/a.csv")
    taken = await astore("in/b.csv")
    payload = await next_event(
        NatsObjectTrigger(bucket=bucket_name, glob="in/*.csv", rejected=[refused.sequence]).run()
    )
    assert payload["object"]["sequence"] == taken.sequence
    assert payload["rejected"] == [refused.sequence]


async def test_object_trigger_ends_with_a_timeout_event_at_its_deadline(astore, bucket_name):
    from datetime import UTC, datetime, timedelta

    await astore("in/a.csv")
    deadline = datetime.now(UTC) + timedelta(seconds=1)
    trigger = NatsObjectTrigger(bucket=bucket_name, name=["in/a.csv", "never"], deadline=deadline)
    payload = await next_event(trigger.run(), timeout=10)
    assert payload["status"] == "timeout"
    assert datetime.now(UTC) >= deadline
    assert payload["message"].startswith(f"Sensor has timed out: nats://{bucket_name}/in/a.csv")


async def no_event_yet(waiting: asyncio.Future[Any], wait: float = 0.5) -> None:
    done, _ = await asyncio.wait([waiting], timeout=wait)
    assert not done
