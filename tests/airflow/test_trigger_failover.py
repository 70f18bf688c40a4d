"""Airflow's NatsObjectChangeTrigger across a leader SIGKILL (issue 10, item 3): the trigger
runs as the triggerer runs it while a writer puts a run of objects into an R3 store and the
stream leader is killed; it fires exactly once per put and misses none."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import pytest
from airflow_natsobj.triggers.object_store import NatsObjectChangeTrigger

from natsobj.names import stream_name
from tests.airflow.conftest import conn_json
from tests.cluster.test_watch_failover import COUNT, join_writer, names, write_killing


async def consume(trigger: NatsObjectChangeTrigger, into: asyncio.Queue) -> None:
    """What the triggerer does: iterate the trigger, handing each event over at once (a
    timeout on the iteration itself would cancel the trigger)."""
    async for event in trigger.run():
        into.put_nowait(event.payload)


async def collect(events: asyncio.Queue, writer, deadline: float) -> list[dict]:
    """Events until every name fired and the writer is done, then two quiet seconds more to
    catch duplicates."""
    fired: list[dict] = []
    while time.monotonic() < deadline:
        done = not writer.is_alive() and len({e["name"] for e in fired}) >= COUNT
        try:
            fired.append(await asyncio.wait_for(events.get(), 2 if done else 5))
        except TimeoutError:
            if done:
                break
    return fired


@pytest.mark.timeout(300)
def test_change_trigger_fires_once_per_put_across_a_leader_kill(
    cluster,
    r3_bucket,
    monkeypatch,
):
    monkeypatch.setenv("AIRFLOW_CONN_NATS_CLUSTER", conn_json(cluster.url))
    trigger = NatsObjectChangeTrigger(bucket=r3_bucket, nats_conn_id="nats_cluster")
    leader = cluster.leader_of(stream_name(r3_bucket))

    async def scenario() -> tuple[list[dict], object]:
        events: asyncio.Queue = asyncio.Queue()
        triggerer = asyncio.ensure_future(consume(trigger, events))
        await asyncio.sleep(2)  # the watch opens at the end of the stream, before any put
        writer = write_killing(cluster, r3_bucket, lambda: cluster.kill(leader))
        try:
            return await collect(events, writer, time.monotonic() + 180), writer
        finally:
            triggerer.cancel()

    fired, writer = asyncio.run(scenario())
    join_writer(writer)
    counts = Counter(event["name"] for event in fired)
    assert set(counts) == set(names()), f"missed: {sorted(set(names()) - set(counts))}"
    assert [name for name, n in counts.items() if n > 1] == []
    sequences = [event["sequence"] for event in fired]
    assert sequences == sorted(sequences)
