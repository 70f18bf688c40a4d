"""A ``pl.LazyFrame`` input holds no secret (issue 39, finding 15): pickled, as an output
holding it is stored, or ``serialize()``d, it carries no NATS password, and it still reads; and
a missing object behind one is ``ObjectNotFound`` like any input's, so
``allow_missing_partitions`` applies (finding 17)."""

from __future__ import annotations

import pickle

import polars as pl
import pytest
from dagster import AssetKey, asset, build_input_context, materialize
from dagster._core.types.dagster_type import resolve_dagster_type

from dagster_natsobj import NatsObjectStoreIOManager, NatsObjectStoreResource
from dagster_natsobj.scan_connection import ScanConnectionUnknown, _by_token
from natsobj.errors import ObjectNotFound

# nats-server without accounts ignores the user and password a client offers, so this one
# connects, and any copy of the password that leaks into a value shows in its bytes
PASSWORD = "pw-7Q2xV9sLk3"
LAZY = resolve_dagster_type(pl.LazyFrame)


@pytest.fixture
def lazy_io_manager(nats_url, bucket_name, sync_client):
    resource = NatsObjectStoreResource(url=nats_url, user="etl", password=PASSWORD)
    yield NatsObjectStoreIOManager(resource=resource, bucket=bucket_name, prefix="pipe")
    if bucket_name in sync_client.store_names():
        sync_client.delete_store(bucket_name)


def test_a_lazy_frame_input_carries_no_password_and_still_reads(lazy_io_manager):
    @asset
    def temps() -> pl.LazyFrame:
        return pl.LazyFrame({"city": ["Oslo", "Lima"], "temp": [1.5, 19.0]})

    assert materialize([temps], resources={"io_manager": lazy_io_manager}).success
    with build_input_context(asset_key=AssetKey("temps"), dagster_type=LAZY) as context:
        frame = lazy_io_manager.load_input(context)
    assert isinstance(frame, pl.LazyFrame)

    pickled = pickle.dumps(frame)
    for stored in (pickled, frame.serialize()):
        assert PASSWORD.encode() not in stored
    again = pickle.loads(pickled)  # in this process, the token finds the connection
    assert again.collect()["city"].to_list() == ["Oslo", "Lima"]
    assert frame.filter(pl.col("temp") > 10).collect()["city"].to_list() == ["Lima"]

    # elsewhere, a token names no connection: a typed error, not a silent anonymous one
    with pytest.raises(ScanConnectionUnknown, match="known only in the process"):
        _by_token("0" * 64)


def test_a_missing_object_behind_a_lazy_frame_input_is_object_not_found(
    lazy_io_manager, sync_client, bucket_name
):
    sync_client.create_store(bucket_name)  # the bucket is there, the object is not
    with (
        build_input_context(
            name="nothing", asset_key=AssetKey("nothing"), dagster_type=LAZY
        ) as context,
        pytest.raises(ObjectNotFound, match="no stored output for input"),
    ):
        lazy_io_manager.load_input(context)
