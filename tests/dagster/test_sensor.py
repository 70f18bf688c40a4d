"""The meta-stream sensor: every change between ticks is seen, run keys are stable."""

from __future__ import annotations

import time

import pytest
from dagster import (
    AssetSelection,
    Definitions,
    RunRequest,
    asset,
    build_sensor_context,
    define_asset_job,
    job,
    op,
)

from dagster_natsobj import make_nats_object_sensor
from natsobj.cursors import ChangeCursor


@op(config_schema={"object": str})
def react(context) -> None:
    context.log.info(context.op_config["object"])


@job
def react_job():
    react()


def _tick(sensor, instance, resource, cursor, defs=None):
    with build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={"nats": resource},
        repository_def=defs.get_repository_def() if defs else None,
    ) as context:
        return sensor.evaluate_tick(context)


def test_changes_between_ticks_are_all_seen_once_with_stable_keys(
    store, bucket_name, instance, nats_resource
):
    sensor = make_nats_object_sensor(
        "landing",
        bucket_name,
        job=react_job,
        run_config_fn=lambda info: {"ops": {"react": {"config": {"object": info.name}}}},
        batch_size=3,
    )
    store.put("in/a.csv", b"a")
    store.put("in/b.csv", b"b")

    first = _tick(sensor, instance, nats_resource, None)
    assert [r.tags["natsobj/object"] for r in first.run_requests] == ["in/a.csv", "in/b.csv"]
    info_b = store.get_info("in/b.csv")
    assert ChangeCursor.parse(first.cursor).sequence == info_b.sequence

    # Re-evaluating from the same cursor asks for exactly the same runs.
    again = _tick(sensor, instance, nats_resource, None)
    assert [r.run_key for r in again.run_requests] == [r.run_key for r in first.run_requests]

    # Changes made between ticks: a new object, an update, a delete (ignored by default), and
    # more objects than one batch holds.
    store.put("in/c.csv", b"c")
    store.put("in/a.csv", b"a2")
    store.delete("in/b.csv")
    for i in range(4):
        store.put(f"in/more-{i}.csv", b"m")

    seen: list[RunRequest] = []
    cursor = first.cursor
    for _ in range(5):
        result = _tick(sensor, instance, nats_resource, cursor)
        seen.extend(result.run_requests)
        assert _sequence(result.cursor) >= _sequence(cursor)
        cursor = result.cursor
    names = [r.tags["natsobj/object"] for r in seen]
    assert names == ["in/c.csv", "in/a.csv", *[f"in/more-{i}.csv" for i in range(4)]]
    keys = [r.run_key for r in first.run_requests + seen]
    assert len(set(keys)) == len(keys)
    assert all(k.startswith(f"{bucket_name}:") for k in keys)

    update = next(r for r in seen if r.tags["natsobj/object"] == "in/a.csv")
    info_a = store.get_info("in/a.csv")
    assert update.run_key == f"{bucket_name}:{info_a.sequence}"
    assert update.tags["natsobj/digest"] == info_a.digest
    assert update.tags["natsobj/size"] == "2"
    assert update.tags["natsobj/nuid"] == info_a.nuid
    assert update.tags["natsobj/bucket"] == bucket_name
    assert update.run_config == {"ops": {"react": {"config": {"object": "in/a.csv"}}}}

    # Nothing new: a skip, cursor unchanged.
    idle = _tick(sensor, instance, nats_resource, cursor)
    assert idle.run_requests == [] and idle.cursor == cursor
    assert "no new objects" in idle.skip_message


def test_glob_and_deletes_with_an_asset_selection(store, bucket_name, instance, nats_resource):
    @asset
    def on_csv() -> int:
        return 1

    sensor = make_nats_object_sensor(
        "csv_only",
        bucket_name,
        asset_selection=AssetSelection.assets(on_csv),
        glob="*.csv",
        include_deletes=True,
    )
    defs = Definitions(assets=[on_csv], sensors=[sensor], resources={"nats": nats_resource})
    store.put("x.csv", b"1")
    store.put("x.json", b"2")
    store.delete("x.csv")
    result = _tick(sensor, instance, nats_resource, None, defs)
    assert result.run_requests[0].asset_selection == [on_csv.key]
    tags = [(r.tags["natsobj/object"], r.tags["natsobj/deleted"]) for r in result.run_requests]
    assert tags == [("x.csv", "true")]  # the put was rolled up into the tombstone
    assert _sequence(result.cursor) == store.get_info("x.csv", include_deleted=True).sequence


def test_sensor_inside_definitions_targets_its_job(store, bucket_name, instance, nats_resource):
    @asset
    def reacting() -> int:
        return 1

    sensor = make_nats_object_sensor(
        "assets_on_landing", bucket_name, job=define_asset_job("react_assets", [reacting])
    )
    defs = Definitions(assets=[reacting], sensors=[sensor], resources={"nats": nats_resource})
    store.put("drop.bin", b"z")
    sensor_def = defs.resolve_sensor_def("assets_on_landing")
    result = _tick(sensor_def, instance, nats_resource, None)
    [request] = result.run_requests
    assert request.run_key == f"{bucket_name}:{store.get_info('drop.bin').sequence}"
    assert sensor_def.job_name == "react_assets"


def test_missing_bucket_skips_and_bad_cursor_explains(bucket_name, instance, nats_resource):
    sensor = make_nats_object_sensor("nobucket", bucket_name, job=react_job)
    result = _tick(sensor, instance, nats_resource, None)
    assert result.run_requests == []
    assert bucket_name in result.skip_message and "does not exist" in result.skip_message

    with pytest.raises(Exception, match="change cursor"):
        _tick(sensor, instance, nats_resource, "yesterday")


def test_factory_rejects_a_sensor_without_target():
    with pytest.raises(ValueError, match=r"give target= \(or job=/asset_selection=\)"):
        make_nats_object_sensor("no_target", "b")


@pytest.mark.parametrize("new_objects", [1, 9], ids=["below-cursor", "past-cursor"])
def test_recreated_bucket_fails_the_tick_or_restarts_and_skips_nothing(
    sync_client, bucket_name, instance, nats_resource, new_objects
):
    """A bucket deleted and created again, whether the new one is still below the old cursor
    or has already grown past it: the default fails the tick with BucketRecreated and keeps
    the cursor; on_recreated="restart" requests a run for every object of the new bucket."""
    failing = make_nats_object_sensor("recreate_fail", bucket_name, job=react_job)
    restarting = make_nats_object_sensor(
        "recreate_restart", bucket_name, job=react_job, on_recreated="restart"
    )
    store = sync_client.create_store(bucket_name)
    try:
        for i in range(5):
            store.put(f"o{i}", b"x")
        first = _tick(failing, instance, nats_resource, None)
        assert len(first.run_requests) == 5
        sync_client.delete_store(bucket_name)
        store = sync_client.create_store(bucket_name)
        fresh = [f"fresh{i}" for i in range(new_objects)]
        for name in fresh:
            store.put(name, b"y")
        with pytest.raises(Exception, match=r"recreated|created again"):
            _tick(failing, instance, nats_resource, first.cursor)
        after = _tick(restarting, instance, nats_resource, first.cursor)
        assert [r.tags["natsobj/object"] for r in after.run_requests] == fresh
        assert _sequence(after.cursor) == store.get_info(fresh[-1]).sequence
    finally:
        sync_client.delete_store(bucket_name)


def test_sensor_targets_assets_with_target_and_globs_by_path(
    store, bucket_name, instance, nats_resource
):
    @asset
    def landed() -> int:
        return 1

    sensor = make_nats_object_sensor("by_target", bucket_name, target=[landed], glob="in/*.csv")
    defs = Definitions(assets=[landed], sensors=[sensor], resources={"nats": nats_resource})
    store.put("in/a.csv", b"1")
    store.put("in/old/b.csv", b"2")  # `*` stays within one path segment
    result = _tick(sensor, instance, nats_resource, None, defs)
    assert [r.tags["natsobj/object"] for r in result.run_requests] == ["in/a.csv"]
    assert [a.key for t in sensor.targets for a in t.assets_defs] == [landed.key]


def test_documented_direct_invocation_passes_the_resource(store, bucket_name, nats_resource):
    sensor = make_nats_object_sensor("direct", bucket_name, job=react_job, regex=r"r/\d+")
    store.put("r/1", b"1")
    store.put("r/x", b"2")
    result = sensor(build_sensor_context(resources={"nats": nats_resource}))
    assert [r.tags["natsobj/object"] for r in result.run_requests] == ["r/1"]


def test_name_glob_is_a_deprecated_alias_of_glob(store, bucket_name, instance, nats_resource):
    with pytest.warns(DeprecationWarning, match=r"name_glob=.*deprecated.*glob="):
        sensor = make_nats_object_sensor("old", bucket_name, job=react_job, name_glob="*.csv")
    store.put("a.csv", b"1")
    store.put("d/b.csv", b"2")
    result = _tick(sensor, instance, nats_resource, None)
    assert [r.tags["natsobj/object"] for r in result.run_requests] == ["a.csv"]


def _sequence(cursor: str) -> int:
    return ChangeCursor.parse(cursor).sequence


def test_an_expiry_requests_one_delete_run(sync_client, bucket_name, instance, nats_resource):
    """An object put with a TTL: one run for the put, and, once the server has expired it,
    exactly one run for the expiry (a delete, tagged as such), however often the sensor ticks."""
    sensor = make_nats_object_sensor("expiring", bucket_name, job=react_job, include_deletes=True)
    store = sync_client.create_store(bucket_name, delete_marker_ttl=1)
    try:
        store.put("tmp/a.bin", b"a", ttl=1)
        first = _tick(sensor, instance, nats_resource, None)
        assert [r.tags["natsobj/deleted"] for r in first.run_requests] == ["false"]
        cursor, requests = first.cursor, []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not requests:
            time.sleep(0.5)
            tick = _tick(sensor, instance, nats_resource, cursor)
            requests += tick.run_requests
            cursor = tick.cursor
        for _ in range(3):  # later ticks request nothing more for it
            time.sleep(0.5)
            tick = _tick(sensor, instance, nats_resource, cursor)
            requests += tick.run_requests
            cursor = tick.cursor
        assert [(r.tags["natsobj/object"], r.tags["natsobj/deleted"]) for r in requests] == [
            ("tmp/a.bin", "true")
        ]
    finally:
        sync_client.delete_store(bucket_name)
