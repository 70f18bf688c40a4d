# ruff: noqa: F811  (the Dagster, archive and S3 fixtures are imported by name)
"""Dagster's face of the operation options (``natsobj.operation_options``), generated from
``tests/contract/cases.py``: every spelling of every option Dagster takes reaches the core
operation as the table's value, and with nothing given Dagster applies the table's defaults.

The calls are Dagster's own: ``materialize`` with the IO manager (put, get, Parquet writes),
``build_sensor_context`` ticks of ``make_nats_object_sensor`` on a real instance (change
feeds), and the archive and offload jobs' config, run by ``execute_in_process`` once per
operation (a pass against S3 is costly, so every spelling is also checked on the config the
op reads). What reached the core is read back from the server: an object's expiry, whether a
record without digest loaded, which changes became runs, the Parquet file's own metadata."""

from __future__ import annotations

import inspect
import io
import math
import os
import time
from datetime import timedelta
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dagster import AssetIn, RunConfig, asset, build_sensor_context, job, materialize, op

from dagster_natsobj import NatsObjectStoreIOManager, NatsObjectStoreResource
from dagster_natsobj.archive import (
    NatsArchiveConfig,
    NatsOffloadConfig,
    make_nats_archive_job,
    make_nats_offload_job,
)
from dagster_natsobj.sensors import make_nats_object_sensor
from dagster_natsobj.versions import VERSION_ID_KEY
from natsobj.cursors import ChangeCursor
from natsobj.lifecycle import LifecycleRule
from natsobj.operation_options import CURRENT, EARLIEST, LATEST, OPERATIONS, Face
from tests.archive.conftest import archive_url, moto, s3_env  # noqa: F401  (fixtures)
from tests.contract.cases import Case, cases, defaults
from tests.dagster.conftest import (  # noqa: F401  (fixtures)
    bucket_store,
    dagster_home,
    instance,
    io_manager,
    nats_resource,
)
from tests.security.test_missing_digest_faces import CONTENT, refusal, strip_digest

FACE = Face.DAGSTER


# Where Dagster takes each operation's options: the names a user writes them under.
def _fields(cls: Any) -> set[str]:
    return set(cls.model_fields)


PARAMETERS: dict[str, set[str]] = {
    "put": _fields(NatsObjectStoreIOManager),
    "get": _fields(NatsObjectStoreIOManager),
    "write_parquet": _fields(NatsObjectStoreIOManager),
    # version_id is an input's metadata (AssetIn(metadata=...)), the rest IO manager fields
    "version": _fields(NatsObjectStoreIOManager) | {VERSION_ID_KEY},
    "follow": set(inspect.signature(make_nats_object_sensor).parameters),
    "archive": _fields(NatsArchiveConfig),
    "offload": _fields(NatsOffloadConfig),
}


def _defaults_of(operation: str) -> dict[str, Any]:
    """What each of the operation's parameters defaults to on the Dagster side."""
    spelled = {name: o.spelled(FACE) for name, o in OPERATIONS[operation].items() if o.takes(FACE)}
    if operation == "follow":
        params = inspect.signature(make_nats_object_sensor).parameters
        return {name: params[s].default for name, s in spelled.items()}
    cls = {"archive": NatsArchiveConfig, "offload": NatsOffloadConfig}.get(
        operation, NatsObjectStoreIOManager
    )
    fields = cls.model_fields  # an input metadata key is unset unless given
    return {name: fields[s].default if s in fields else None for name, s in spelled.items()}


def test_dagster_takes_every_option_the_table_gives_it_and_defaults_to_the_table():
    """A row naming Dagster that Dagster does not take fails here, and so does a parameter
    with a default of its own (None is "the table's default")."""
    taking = {op for op, rows in OPERATIONS.items() if any(o.takes(FACE) for o in rows.values())}
    assert taking == set(PARAMETERS)
    for operation, rows in OPERATIONS.items():
        for option in rows.values():
            if option.takes(FACE):
                assert option.spelled(FACE) in PARAMETERS[operation], option
        if operation in PARAMETERS:
            assert set(_defaults_of(operation).values()) <= {None}, operation


def _ids(operation: str) -> list[Case]:
    return [pytest.param(case, id=case.id) for case in cases(FACE, operation)]


# -- put: ttl --------------------------------------------------------------------------------


RULE = timedelta(days=1)  # the bucket's lifecycle rule: what a put without ttl gets


@pytest.fixture
def ttl_bucket(sync_client, bucket_name):
    store = sync_client.create_store(bucket_name, allow_msg_ttl=True)
    store.set_lifecycle_rules([LifecycleRule("**", RULE)])
    yield store
    sync_client.delete_store(bucket_name)


def _lifetime(info) -> timedelta | None:
    """How long after its put the object expires, to the second; None: never."""
    if info.expires is None:
        return None
    return timedelta(seconds=round((info.expires - info.mtime).total_seconds()))


def _core_lifetime(store, ttl: Any) -> timedelta | None:
    """What the core's put does with ``ttl``: the reference every face must reach."""
    return _lifetime(store.put(f"reference/{time.monotonic_ns()}", b"x", ttl=ttl))


def _materialize_with_ttl(store, nats_resource, config_ttl: Any, metadata_ttl: Any = None):
    io_manager = NatsObjectStoreIOManager(
        resource=nats_resource, bucket=store.bucket, prefix="pipe", ttl=config_ttl
    )
    metadata = {} if metadata_ttl is None else {"natsobj/ttl": metadata_ttl}

    @asset(metadata=metadata)
    def staged() -> bytes:
        return b"rows"

    assert materialize([staged], resources={"io_manager": io_manager}).success
    return store.get_info("pipe/staged")


@pytest.mark.parametrize("case", _ids("put"))
def test_put(case: Case, ttl_bucket, nats_resource):
    expected = _core_lifetime(ttl_bucket, case.expected)
    info = _materialize_with_ttl(ttl_bucket, nats_resource, case.given)
    assert _lifetime(info) == expected, info
    if not isinstance(case.given, timedelta):  # definition metadata holds text and numbers
        info = _materialize_with_ttl(ttl_bucket, nats_resource, None, case.given)
        assert _lifetime(info) == expected, info


def test_put_defaults(ttl_bucket, nats_resource):
    expected = _core_lifetime(ttl_bucket, defaults(FACE, "put")["ttl"])
    assert _lifetime(_materialize_with_ttl(ttl_bucket, nats_resource, None)) == expected


# -- get: allow_missing_digest ---------------------------------------------------------------


def _load_without_digest(nats_resource, store, raw, allow: Any) -> bool:
    """Whether a record without digest loads: what allow_missing_digest told the get."""
    store.put("pipe/upstream", CONTENT)
    strip_digest(raw, store.bucket, "pipe/upstream")
    kwargs = {} if allow is None else {"allow_missing_digest": allow}
    io_manager = NatsObjectStoreIOManager(
        resource=nats_resource, bucket=store.bucket, prefix="pipe", **kwargs
    )
    loaded: list[bytes] = []

    @asset
    def upstream() -> bytes:
        raise AssertionError("not materialized here")

    @asset
    def consumer(upstream: bytes) -> None:
        loaded.append(upstream)

    result = materialize(
        [upstream, consumer],
        selection=[consumer],
        resources={"io_manager": io_manager},
        raise_on_error=False,
    )
    if result.success:
        assert loaded == [CONTENT]
        return True
    failures = [str(e.step_failure_data.error) for e in result.all_events if e.is_step_failure]
    assert refusal(store.bucket, "pipe/upstream") in "\n".join(failures), failures
    return False


@pytest.mark.parametrize("case", _ids("get"))
def test_get(case: Case, nats_resource, store, raw):
    assert _load_without_digest(nats_resource, store, raw, case.given) is case.expected


def test_get_defaults(nats_resource, store, raw):
    expected = defaults(FACE, "get")["allow_missing_digest"]
    assert _load_without_digest(nats_resource, store, raw, None) is expected


# -- follow: start, include_deletes, on_recreated ----------------------------------------------


@op
def react() -> None:
    pass


@job
def react_job():
    react()


def _tick(sensor, instance, resource, cursor=None):
    with build_sensor_context(
        instance=instance, cursor=cursor, resources={"nats": resource}
    ) as context:
        return sensor.evaluate_tick(context)


def _history(store) -> None:
    """Eight puts (two names written twice) and a delete."""
    for i in range(6):
        store.put(f"x{i}", b"a")
    store.put("x0", b"b")
    store.put("x1", b"b")
    store.delete("x2")


def _core_feed(store, start: str | int, include_deletes: bool) -> list[int]:
    """The meta sequences a change feed from ``start`` reports on its first read."""
    if start == LATEST:
        return []
    if start == CURRENT:
        return sorted(info.sequence for info in store.list())
    after = 0 if start == EARLIEST else start - 1
    changes = store.changes(after, limit=1000, include_deletes=include_deletes)
    return [info.sequence for info in changes]


def _first_runs(sensor, instance, resource) -> list[int]:
    result = _tick(sensor, instance, resource)
    return [int(r.run_key.rpartition(":")[2]) for r in result.run_requests]


def _recreate(sync_client, store, sensor, instance, resource) -> str:
    """A cursor taken on ``store``'s bucket, which is then deleted and created again with
    one new object; the cursor."""
    cursor = _tick(sensor, instance, resource).cursor
    sync_client.delete_store(store.bucket)
    sync_client.create_store(store.bucket).put("fresh", b"y")
    return cursor


def _after_recreation(sensor, instance, resource, cursor) -> str:
    """What the sensor does with a cursor of a deleted bucket: the table's on_recreated."""
    try:
        result = _tick(sensor, instance, resource, cursor)
    except Exception as exc:
        assert "created again" in str(exc), exc
        return "fail"
    assert [r.tags["natsobj/object"] for r in result.run_requests] == ["fresh"]
    return "restart"


@pytest.mark.parametrize("case", _ids("follow"))
def test_follow(case: Case, store, sync_client, instance, nats_resource):
    _history(store)
    name = case.option.name
    sensor = make_nats_object_sensor("s", store.bucket, job=react_job, **{name: case.given})
    expected_defaults = defaults(FACE, "follow")
    if name == "on_recreated":
        cursor = _recreate(sync_client, store, sensor, instance, nats_resource)
        assert _after_recreation(sensor, instance, nats_resource, cursor) == case.expected
        return
    feed = {**expected_defaults, name: case.expected}
    expected = _core_feed(store, feed["start"], feed["include_deletes"])
    result = _tick(sensor, instance, nats_resource)
    assert [int(r.run_key.rpartition(":")[2]) for r in result.run_requests] == expected
    # and the next tick goes on after the bucket's last change
    assert ChangeCursor.parse(result.cursor).sequence == store.status().last_sequence


def test_follow_defaults(store, sync_client, instance, nats_resource):
    _history(store)
    expected = defaults(FACE, "follow")
    sensor = make_nats_object_sensor("s", store.bucket, job=react_job)
    runs = _first_runs(sensor, instance, nats_resource)
    assert runs == _core_feed(store, expected["start"], expected["include_deletes"])
    cursor = _recreate(sync_client, store, sensor, instance, nats_resource)
    assert _after_recreation(sensor, instance, nats_resource, cursor) == expected["on_recreated"]


# -- archive: give_up_after ------------------------------------------------------------------


@pytest.mark.parametrize("case", _ids("archive"))
def test_archive(case: Case):
    config = NatsArchiveConfig(bucket="b", target="s3://b/p", give_up_after=case.given)
    assert config.give_up_seconds() == case.expected.total_seconds()


def test_archive_defaults():
    expected = defaults(FACE, "archive")["give_up_after"].total_seconds()
    assert NatsArchiveConfig(bucket="b", target="s3://b/p").give_up_seconds() == expected


def test_archive_job_gives_up_after_the_duration_given(nats_url, store):
    """A real run against an S3 endpoint nothing listens on: "2s" is two seconds, not the
    five-minute default (and not a config error)."""
    store.put("model.pkl", b"weights")
    started = time.monotonic()
    result = make_nats_archive_job("nats_archive").execute_in_process(
        run_config={
            "ops": {
                "nats_archive_pass": {
                    "config": {
                        "bucket": store.bucket,
                        "target": "s3://nowhere/p",
                        "endpoint": "http://127.0.0.1:9",
                        "region": "us-east-1",
                        "give_up_after": "2s",
                    }
                }
            }
        },
        resources={"nats": NatsObjectStoreResource(url=nats_url)},
        raise_on_error=False,
    )
    assert not result.success
    assert time.monotonic() - started < 120


# -- offload: older_than, larger_than, expiry_margin -------------------------------------------


@pytest.mark.parametrize("case", _ids("offload"))
def test_offload(case: Case):
    config = NatsOffloadConfig(bucket="b", target="s3://b/p", **{case.option.name: case.given})
    assert getattr(config.policy(), case.option.name) == case.expected


def test_offload_defaults():
    policy = NatsOffloadConfig(bucket="b", target="s3://b/p").policy()
    for name, expected in defaults(FACE, "offload").items():
        assert getattr(policy, name) == expected, name


def test_offload_deprecated_fields_still_work():
    with pytest.warns(DeprecationWarning, match="older_than_days is deprecated"):
        policy = NatsOffloadConfig(bucket="b", target="s3://b/p", older_than_days=1.5).policy()
    assert policy.older_than == timedelta(hours=36)
    with pytest.warns(DeprecationWarning, match="expiry_margin_hours is deprecated"):
        policy = NatsOffloadConfig(bucket="b", target="s3://b/p", expiry_margin_hours=2).policy()
    assert policy.expiry_margin == timedelta(hours=2)


def test_offload_job_takes_a_size(nats_url, store, archive_url):
    big = os.urandom(100_000)
    store.put("big.bin", big)
    store.put("small.bin", b"tiny")
    resources = {"nats": NatsObjectStoreResource(url=nats_url)}
    archived = make_nats_archive_job("nats_archive").execute_in_process(
        run_config=RunConfig(
            ops={"nats_archive_pass": NatsArchiveConfig(bucket=store.bucket, target=archive_url)}
        ),
        resources=resources,
    )
    assert archived.success
    result = make_nats_offload_job("nats_offload").execute_in_process(
        run_config={
            "ops": {
                "nats_offload_pass": {
                    "config": {
                        "bucket": store.bucket,
                        "target": archive_url,
                        "larger_than": "50KB",
                        "expiry_margin": "12h",
                    }
                }
            }
        },
        resources=resources,
    )
    assert result.success
    assert result.output_for_node("nats_offload_pass")["offloaded"] == ["big.bin"]
    assert store.get_bytes("big.bin") == big


# -- write_parquet: compression, dictionary, row_group_rows -------------------------------------

ROWS = 12_000
TABLE = pa.table({"city": ["Oslo", "Lima", "Pune"] * (ROWS // 3), "n": range(ROWS)})
TABLES = {
    "pyarrow": lambda: TABLE,
    "pandas": TABLE.to_pandas,
    "polars": lambda: pl.from_arrow(TABLE),
}
ANNOTATIONS = {"pyarrow": pa.Table, "pandas": pd.DataFrame, "polars": pl.DataFrame}


def _written(io_manager, bucket_store, library: str) -> pq.FileMetaData:
    value = TABLES[library]()

    def table():  # annotated below: the handler follows the annotation
        return value

    table.__annotations__["return"] = ANNOTATIONS[library]
    assert materialize([asset(table)], resources={"io_manager": io_manager}).success
    return pq.ParquetFile(io.BytesIO(bucket_store.get_bytes("pipe/table"))).metadata


def _layout(meta: pq.FileMetaData) -> dict[str, Any]:
    """What the file says it was written with, in the table's words."""
    column = meta.row_group(0).column(0)
    codec = column.compression.lower()
    return {
        "compression": "none" if codec == "uncompressed" else codec,
        "dictionary": column.has_dictionary_page,
        "row_group_rows": meta.row_group(0).num_rows,
        "row_groups": meta.num_row_groups,
    }


def _expected_layout(settings: dict[str, Any]) -> dict[str, Any]:
    rows = settings["row_group_rows"]
    return {**settings, "row_group_rows": min(rows, ROWS), "row_groups": math.ceil(ROWS / rows)}


@pytest.mark.parametrize("library", list(TABLES))
@pytest.mark.parametrize("case", _ids("write_parquet"))
def test_write_parquet(case: Case, library: str, io_manager, bucket_store):
    manager = NatsObjectStoreIOManager(
        resource=io_manager.resource,
        bucket=io_manager.bucket,
        prefix=io_manager.prefix,
        **{case.option.name: case.given},
    )
    settings = {**defaults(FACE, "write_parquet"), case.option.name: case.expected}
    assert _layout(_written(manager, bucket_store, library)) == _expected_layout(settings)


@pytest.mark.parametrize("library", list(TABLES))
def test_write_parquet_defaults(library: str, io_manager, bucket_store):
    """Unconfigured, every table handler writes the table's layout (Spark's), not its
    library's default (pandas and pyarrow: snappy with dictionaries)."""
    expected = _expected_layout(defaults(FACE, "write_parquet"))
    assert _layout(_written(io_manager, bucket_store, library)) == expected


# -- version: version_id (an input's metadata), pin_materialized -------------------------------


def _pinned_load(store, nats_resource, instance, **given: Any) -> bytes | str:
    """What an input loads after Dagster wrote b"dagster" and another writer b"other" over
    it, pinned as ``given`` says (the failure's text when the load fails)."""
    store.set_versioning("Enabled")
    pin = {k: v for k, v in given.items() if k != VERSION_ID_KEY}
    io_manager = NatsObjectStoreIOManager(
        resource=nats_resource, bucket=store.bucket, prefix="pipe", **pin
    )
    metadata = {k: v for k, v in given.items() if k == VERSION_ID_KEY}
    loaded: list[bytes] = []

    @asset
    def upstream() -> bytes:
        return b"dagster"

    @asset(ins={"upstream": AssetIn(metadata=metadata)})
    def consumer(upstream: bytes) -> None:
        loaded.append(upstream)

    resources = {"io_manager": io_manager}
    assert materialize([upstream], resources=resources, instance=instance).success
    store.put("pipe/upstream", b"other")
    result = materialize(
        [upstream, consumer],
        selection=[consumer],
        resources=resources,
        instance=instance,
        raise_on_error=False,
    )
    if not result.success:
        return "\n".join(
            str(e.step_failure_data.error) for e in result.all_events if e.is_step_failure
        )
    [value] = loaded
    return value


@pytest.mark.parametrize("case", _ids("version"))
def test_version(case: Case, store, nats_resource, instance):
    """version_id: the version the load asked the server for (no version has the spelled
    one, so the failure names it; null is the current version). pin_materialized: the bytes
    Dagster wrote, or the other writer's."""
    given = {case.option.spelled(FACE): case.given}
    loaded = _pinned_load(store, nats_resource, instance, **given)
    if case.option.name == "pin_materialized":
        assert loaded == (b"dagster" if case.expected else b"other")
    elif case.expected is None:
        assert loaded == b"other"
    else:
        assert f"pinned to version {case.expected!r}, which is not there" in str(loaded)


def test_version_defaults(store, nats_resource, instance):
    assert defaults(FACE, "version") == {"version": None, "pin_materialized": False}
    assert _pinned_load(store, nats_resource, instance) == b"other"
