"""The sensor maps an object's name to a partition key (issue 31): its run requests carry the
partition of the object, for a template or a function."""

from __future__ import annotations

import logging

import pytest
from dagster import (
    DailyPartitionsDefinition,
    Definitions,
    MultiPartitionKey,
    MultiPartitionsDefinition,
    StaticPartitionsDefinition,
    asset,
    build_sensor_context,
    materialize,
)

from dagster_natsobj import make_nats_object_sensor

DAILY = DailyPartitionsDefinition(start_date="2026-11-01")


@asset(partitions_def=DAILY)
def daily(context) -> str:
    return context.partition_key


class _Logged(logging.Handler):
    """The messages a tick logs through ``context.log`` (a logger of its own, which no
    ancestor's handler such as pytest's sees)."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _tick(sensor, instance, resource, assets, logged: _Logged | None = None):
    defs = Definitions(assets=assets, sensors=[sensor], resources={"nats": resource})
    with build_sensor_context(
        instance=instance,
        resources={"nats": resource},
        repository_def=defs.get_repository_def(),
    ) as context:
        if logged is not None:
            context.log.addHandler(logged)
        return sensor.evaluate_tick(context)


def test_a_template_gives_each_run_its_partition(store, bucket_name, instance, nats_resource):
    sensor = make_nats_object_sensor(
        "daily_files",
        bucket_name,
        target=[daily],
        partition_key_template="daily/{date}.parquet",
    )
    store.put("daily/2026-11-01.parquet", b"1")
    store.put("daily/notes.txt", b"no partition in this name")
    store.put("other/2026-11-03.parquet", b"not under daily/")
    store.put("daily/2026-11-02.parquet", b"2")
    result = _tick(sensor, instance, nats_resource, [daily])
    requests = result.run_requests
    assert [(r.tags["natsobj/object"], r.partition_key) for r in requests] == [
        ("daily/2026-11-01.parquet", "2026-11-01"),
        ("daily/2026-11-02.parquet", "2026-11-02"),
    ]
    assert (
        requests[0].run_key
        == f"{bucket_name}:{store.get_info(requests[0].tags['natsobj/object']).sequence}"
    )
    # The key is one the asset has: the partition runs as requested, on the same instance.
    run = materialize([daily], partition_key=requests[0].partition_key, instance=instance)
    assert run.success and run.output_for_node("daily") == "2026-11-01"
    assert instance.get_run_by_id(run.run_id).tags["dagster/partition"] == "2026-11-01"


def test_a_name_giving_a_key_the_target_lacks_is_skipped_and_the_tick_goes_on(
    store, bucket_name, instance, nats_resource
):
    """Issue 39, finding 14: one such object failed every tick, so no later object got its
    run. It is logged, once, and the objects after it get theirs."""
    sensor = make_nats_object_sensor(
        "daily_files", bucket_name, target=[daily], partition_key_template="daily/{date}.parquet"
    )
    store.put("daily/latest.parquet", b"3")
    store.put("daily/2026-11-03.parquet", b"4")
    logged = _Logged()
    result = _tick(sensor, instance, nats_resource, [daily], logged)
    assert [(r.tags["natsobj/object"], r.partition_key) for r in result.run_requests] == [
        ("daily/2026-11-03.parquet", "2026-11-03")
    ]
    [warning] = [m for m in logged.messages if "latest" in m]
    assert f"object 'daily/latest.parquet' in bucket {bucket_name!r}" in warning
    assert "partition 'latest', which the sensor's target does not have" in warning


def test_several_fields_make_a_multi_partition_key(store, bucket_name, instance, nats_resource):
    @asset(
        partitions_def=MultiPartitionsDefinition(
            {"date": DAILY, "region": StaticPartitionsDefinition(["eu", "us"])}
        )
    )
    def regional() -> None:
        return None

    sensor = make_nats_object_sensor(
        "regional_files",
        bucket_name,
        target=[regional],
        partition_key_template="{region}/{date}.csv",
    )
    store.put("eu/2026-11-01.csv", b"1")
    result = _tick(sensor, instance, nats_resource, [regional])
    [request] = result.run_requests
    assert request.partition_key == MultiPartitionKey({"date": "2026-11-01", "region": "eu"})
    assert request.partition_key == "2026-11-01|eu"  # Dagster's own form of the key


def test_a_function_gives_the_key_and_none_requests_no_run(
    store, bucket_name, instance, nats_resource
):
    def key_of(name: str) -> str | None:
        folder, _, file = name.rpartition("/")
        return (
            file.removesuffix(".parquet")
            if folder == "daily" and file.endswith(".parquet")
            else None
        )

    sensor = make_nats_object_sensor(
        "daily_by_function", bucket_name, target=[daily], partition_key_fn=key_of, start="current"
    )
    store.put("daily/2026-11-05.parquet", b"1")
    store.put("daily/readme", b"2")
    result = _tick(sensor, instance, nats_resource, [daily])
    assert [r.partition_key for r in result.run_requests] == ["2026-11-05"]


def test_partition_options_are_checked_when_the_sensor_is_built(bucket_name):
    with pytest.raises(ValueError, match="sensor 'both': give partition_key_fn= or"):
        make_nats_object_sensor(
            "both",
            bucket_name,
            target=[daily],
            partition_key_fn=str,
            partition_key_template="{d}",
        )
    with pytest.raises(ValueError, match=r"sensor 'bad': partition_key_template: .* no \{field\}"):
        make_nats_object_sensor("bad", bucket_name, target=[daily], partition_key_template="a/b")
