"""Versions in Dagster (docs/dagster.md, "Versions"): every materialization records its
object's version id, an input pinned to a version loads that version, a backfill with
``pin_materialized`` reads what the upstream's latest materialization wrote, and the sensor
tags each run with the change's version id and whether it was a delete marker. Real runs on a
real instance against a real nats-server, in versioned buckets."""

from __future__ import annotations

from typing import Any

import pandas as pd
import polars as pl
import pytest
from dagster import (
    AssetIn,
    StaticPartitionsDefinition,
    asset,
    build_sensor_context,
    job,
    materialize,
    op,
)

from dagster_natsobj import (
    Handler,
    NatsObjectStoreIOManager,
    make_nats_object_sensor,
    register_handler,
    unregister_handler,
)

FIRST, SECOND = {"run": 1, "rows": [1, 2]}, {"run": 2, "rows": [3]}


@pytest.fixture
def versioned(bucket_store):
    """The IO manager's bucket, keeping the versions a write replaces."""
    bucket_store.set_versioning("Enabled")
    return bucket_store


def _version_id(result, node: str, partition: str | None = None) -> str:
    [mat] = [
        m
        for m in result.asset_materializations_for_node(node)
        if partition is None or m.partition == partition
    ]
    return mat.metadata["version_id"].value


def _failure(result) -> str:
    return "\n".join(str(e.step_failure_data.error) for e in result.all_events if e.is_step_failure)


def _producer(values: list[Any]):
    @asset(name="report")
    def report() -> dict:
        return values.pop(0)

    return report


def _consumer(seen: list[Any], **metadata: Any):
    @asset(ins={"report": AssetIn(metadata=metadata)})
    def summary(report) -> None:  # untyped: the stored (JSON) version decides
        seen.append(report)

    return summary


def test_each_materialization_records_its_version_and_a_pinned_input_loads_it(
    io_manager, versioned, instance
):
    values = [FIRST, SECOND]
    report = _producer(values)
    first = materialize([report], resources={"io_manager": io_manager}, instance=instance)
    second = materialize([report], resources={"io_manager": io_manager}, instance=instance)
    v1, v2 = _version_id(first, "report"), _version_id(second, "report")
    assert v1 != v2
    assert v2 == versioned.get_info("pipe/report").nuid  # the id is the version's nuid

    seen: list[Any] = []
    pinned = _consumer(seen, version_id=v1)
    result = materialize(
        [report, pinned],
        selection=[pinned],
        resources={"io_manager": io_manager},
        instance=instance,
    )
    assert result.success
    assert seen == [FIRST]
    current = _consumer(seen)
    assert materialize(
        [report, current], selection=[current], resources={"io_manager": io_manager}
    ).success
    assert seen == [FIRST, SECOND]


def test_a_pin_to_a_missing_version_fails_naming_bucket_object_and_version(
    io_manager, versioned, instance
):
    report = _producer([FIRST])
    materialize([report], resources={"io_manager": io_manager}, instance=instance)
    gone = "AbCdEfGhIjKlMnOpQrStU9"
    pinned = _consumer([], version_id=gone)
    result = materialize(
        [report, pinned],
        selection=[pinned],
        resources={"io_manager": io_manager},
        instance=instance,
        raise_on_error=False,
    )
    assert not result.success
    text = _failure(result)
    assert "ObjectNotFound" in text, text
    assert (
        f"bucket {versioned.bucket!r}, object 'pipe/report': input 'report' is pinned to "
        f"version {gone!r}, which is not there"
    ) in text, text


def test_a_version_id_that_is_no_version_id_fails_before_any_read(io_manager, versioned):
    report = _producer([FIRST])
    pinned = _consumer([], version_id="x.>")
    result = materialize(
        [report, pinned], resources={"io_manager": io_manager}, raise_on_error=False
    )
    assert "input 'report': version_id: version must be a version id" in _failure(result)


def test_an_unversioned_bucket_records_the_id_and_a_pin_holds_only_while_it_is_current(
    io_manager, bucket_store, instance
):
    """Recorded always; an unversioned bucket replaces the version, so the pin then fails
    (typed, naming the version) instead of loading the new bytes."""
    report = _producer([FIRST, SECOND])
    first = materialize([report], resources={"io_manager": io_manager}, instance=instance)
    v1 = _version_id(first, "report")
    seen: list[Any] = []
    pinned = _consumer(seen, version_id=v1)
    resources = {"io_manager": io_manager}
    assert materialize([report, pinned], selection=[pinned], resources=resources).success
    assert seen == [FIRST]
    materialize([report], resources=resources, instance=instance)
    result = materialize(
        [report, pinned], selection=[pinned], resources=resources, raise_on_error=False
    )
    assert not result.success
    assert f"pinned to version {v1!r}, which is not there" in _failure(result)
    assert seen == [FIRST]


def test_pin_materialized_reads_what_dagster_wrote_after_another_writer_replaced_it(
    nats_resource, bucket_name, versioned, instance
):
    """A backfill of the downstream asset reads each partition's version its latest
    materialization recorded, though another writer put new bytes over two of them since."""
    io_manager = NatsObjectStoreIOManager(
        resource=nats_resource, bucket=bucket_name, prefix="pipe", pin_materialized="on"
    )
    parts = StaticPartitionsDefinition(["eu", "us"])

    @asset(partitions_def=parts)
    def events(context) -> pd.DataFrame:
        return pd.DataFrame({"region": [context.partition_key], "n": [1]})

    loaded: dict[str, Any] = {}

    @asset(partitions_def=parts)
    def totals(context, events: pl.LazyFrame) -> None:
        loaded[context.partition_key] = events.collect()["n"].to_list()

    resources = {"io_manager": io_manager}
    for key in ("eu", "us"):
        assert materialize(
            [events], partition_key=key, resources=resources, instance=instance
        ).success
        versioned.put(f"pipe/events/{key}", _parquet(n=99))  # another writer's bytes

    for key in ("eu", "us"):  # the backfill, one run per partition
        assert materialize(
            [events, totals],
            selection=[totals],
            partition_key=key,
            resources=resources,
            instance=instance,
        ).success
    assert loaded == {"eu": [1], "us": [1]}

    # the input's own metadata turns it off: the current bytes
    @asset(partitions_def=parts, ins={"events": AssetIn(metadata={"pin_materialized": "no"})})
    def latest(context, events: pd.DataFrame) -> None:
        loaded[context.partition_key] = events["n"].tolist()

    assert materialize(
        [events, latest], selection=[latest], partition_key="eu", resources=resources
    ).success
    assert loaded["eu"] == [99]


def test_pin_materialized_refuses_an_asset_never_materialized_by_dagster(
    nats_resource, bucket_name, versioned, instance
):
    versioned.put("pipe/report", b'{"written": "elsewhere"}')
    io_manager = NatsObjectStoreIOManager(
        resource=nats_resource, bucket=bucket_name, prefix="pipe", pin_materialized=True
    )
    seen: list[Any] = []
    result = materialize(
        [_producer([]), _consumer(seen)],
        selection=["summary"],
        resources={"io_manager": io_manager},
        instance=instance,
        raise_on_error=False,
    )
    text = _failure(result)
    assert "VersionNotPinnable" in text and "was never materialized" in text, text
    assert seen == []


class Opaque:
    """A type of a handler that reads the current object whatever the pin says."""


class OpaqueHandler(Handler):
    format, type_name = "opaque", "test.Opaque"

    def classes(self):
        return (Opaque,)

    def load(self, target):  # ignores target.version
        return Opaque()


def test_a_pin_on_a_format_that_is_not_loaded_by_version_is_refused(io_manager, versioned):
    """Such a handler is refused a pinned load: the pin would otherwise be silently ignored."""
    handler = register_handler(OpaqueHandler())
    try:
        versioned.put("pipe/report", b"x")
        v1 = versioned.get_info("pipe/report").nuid

        @asset(name="report")
        def report() -> Opaque:
            raise AssertionError("not materialized here")

        @asset(ins={"report": AssetIn(metadata={"version_id": v1})})
        def summary(report: Opaque) -> None:
            pass

        result = materialize(
            [report, summary],
            selection=[summary],
            resources={"io_manager": io_manager},
            raise_on_error=False,
        )
        text = _failure(result)
        assert "VersionNotPinnable" in text and "test.Opaque values are not loaded" in text
    finally:
        unregister_handler(handler)


def _parquet(n: int) -> bytes:
    import io

    out = io.BytesIO()
    pd.DataFrame({"region": ["x"], "n": [n]}).to_parquet(out)
    return out.getvalue()


# -- the sensor ---------------------------------------------------------------------------


@op
def react() -> None:
    pass


@job
def react_job():
    react()


def test_the_sensor_reports_version_ids_and_delete_markers(
    store, bucket_name, instance, nats_resource
):
    store.set_versioning("Enabled")
    first = store.put("in/a.csv", b"1")
    second = store.put("in/a.csv", b"2")
    marker = store.delete("in/a.csv")
    sensor = make_nats_object_sensor("landing", bucket_name, job=react_job, include_deletes=True)
    with build_sensor_context(instance=instance, resources={"nats": nats_resource}) as context:
        result = sensor.evaluate_tick(context)
    tags = [
        (r.tags["natsobj/version_id"], r.tags["natsobj/delete_marker"]) for r in result.run_requests
    ]
    # the meta stream keeps one record per name: the marker, a version of its own
    assert tags == [(marker.nuid, "true")]
    assert marker.nuid not in (first.nuid, second.nuid)

    store.put("in/b.csv", b"3")
    with build_sensor_context(
        instance=instance, cursor=result.cursor, resources={"nats": nats_resource}
    ) as context:
        [put] = sensor.evaluate_tick(context).run_requests
    assert put.tags["natsobj/version_id"] == store.get_info("in/b.csv").nuid
    assert put.tags["natsobj/delete_marker"] == "false"


def test_a_plain_delete_reports_no_version(sync_client, bucket_name, instance, nats_resource):
    """An unversioned bucket's delete is ADR-20's tombstone: no version, and no marker."""
    store = sync_client.create_store(bucket_name)
    store.put("gone.csv", b"1")
    store.delete("gone.csv")
    sensor = make_nats_object_sensor("landing", bucket_name, job=react_job, include_deletes=True)
    with build_sensor_context(instance=instance, resources={"nats": nats_resource}) as context:
        [request] = sensor.evaluate_tick(context).run_requests
    assert request.tags["natsobj/deleted"] == "true"
    assert request.tags["natsobj/version_id"] == ""
    assert request.tags["natsobj/delete_marker"] == "false"
    sync_client.delete_store(bucket_name)
