"""The Dagster sensor across a leader SIGKILL (issue 10, item 3): ticks keep running while a
writer puts a run of objects into an R3 store and the stream leader is killed; every put gets
exactly one run request (one run key), none is missed."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from dagster import build_sensor_context, job, op

from dagster_natsobj import NatsObjectStoreResource, make_nats_object_sensor
from natsobj.names import stream_name
from tests.cluster.test_watch_failover import COUNT, join_writer, names, write_killing


@op
def react() -> None:
    pass


@job
def react_job():
    react()


def tick(sensor, instance, resource, cursor):
    with build_sensor_context(instance=instance, cursor=cursor, resources={"nats": resource}) as c:
        return sensor.evaluate_tick(c)


@pytest.mark.timeout(300)
def test_sensor_sees_every_put_once_across_a_leader_kill(cluster, r3_bucket, instance):
    resource = NatsObjectStoreResource(url=cluster.url)
    sensor = make_nats_object_sensor("failover", r3_bucket, job=react_job, batch_size=7)
    leader = cluster.leader_of(stream_name(r3_bucket))
    cursor = tick(sensor, instance, resource, None).cursor  # an empty store: nothing yet
    writer = write_killing(cluster, r3_bucket, lambda: cluster.kill(leader))
    requests = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        result = tick(sensor, instance, resource, cursor)
        requests += result.run_requests
        cursor = result.cursor
        if not writer.is_alive() and len(requests) >= COUNT and not result.run_requests:
            break
        time.sleep(0.2)
    join_writer(writer)
    objects = Counter(r.tags["natsobj/object"] for r in requests)
    assert set(objects) == set(names()), f"missed: {sorted(set(names()) - set(objects))}"
    assert [name for name, n in objects.items() if n > 1] == []
    assert len({r.run_key for r in requests}) == COUNT
    assert cluster.leader_of(stream_name(r3_bucket)) != leader
