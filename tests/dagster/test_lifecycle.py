"""The IO manager's ``ttl`` and the per-output ``natsobj/ttl`` override: real runs, a real
server, and the object gone from the server once its time is up."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from dagster import asset, materialize

from dagster_natsobj import NatsObjectStoreIOManager
from natsobj.errors import ObjectNotFound


def _expires_in(info, expected: timedelta) -> None:
    assert info.expires is not None, info
    left = info.expires - datetime.now(UTC)
    assert expected - timedelta(seconds=20) < left <= expected, left


def test_ttl_config_and_metadata_override_set_each_objects_expiry(
    nats_resource, bucket_name, bucket_store
):
    io_manager = NatsObjectStoreIOManager(
        resource=nats_resource, bucket=bucket_name, prefix="pipe", ttl="2h"
    )

    @asset
    def staging() -> bytes:
        return b"rows"

    @asset(metadata={"natsobj/ttl": "90m"})
    def scratch(staging: bytes) -> str:
        return staging.decode() + "!"

    @asset(metadata={"natsobj/ttl": "600"})  # plain seconds
    def table(scratch: str) -> dict:
        return {"value": scratch}

    result = materialize([staging, scratch, table], resources={"io_manager": io_manager})
    assert result.success
    assert result.output_for_node("table") == {"value": "rows!"}
    _expires_in(bucket_store.get_info("pipe/staging"), timedelta(hours=2))
    _expires_in(bucket_store.get_info("pipe/scratch"), timedelta(minutes=90))
    _expires_in(bucket_store.get_info("pipe/table"), timedelta(seconds=600))

    [mat] = result.asset_materializations_for_node("scratch")
    shown = mat.metadata["expires"].value  # a timestamp (seconds), as mtime is
    assert shown == pytest.approx(bucket_store.get_info("pipe/scratch").expires.timestamp(), abs=1)


def test_without_ttl_nothing_expires_and_no_expiry_is_shown(io_manager, bucket_store):
    @asset
    def kept() -> bytes:
        return b"keep me"

    result = materialize([kept], resources={"io_manager": io_manager})
    assert result.success
    assert bucket_store.get_info("pipe/kept").expires is None
    [mat] = result.asset_materializations_for_node("kept")
    assert "expires" not in mat.metadata


def test_an_intermediate_asset_is_gone_from_the_server_after_its_ttl(
    io_manager, nats_resource, sync_client, bucket_name
):
    # The bucket's delete-marker TTL is its shortest object TTL (5 min by default): 1 s here.
    # (The io_manager fixture deletes the bucket afterwards.)
    bucket_store = sync_client.create_store(bucket_name, delete_marker_ttl=1)
    io_manager = NatsObjectStoreIOManager(resource=nats_resource, bucket=bucket_name, prefix="p")

    @asset(metadata={"natsobj/ttl": "2s"})
    def intermediate() -> bytes:
        return b"x" * 300_000  # several chunks: all of them expire, not only the record

    @asset
    def final(intermediate: bytes) -> int:
        return len(intermediate)

    result = materialize([intermediate, final], resources={"io_manager": io_manager})
    assert result.success and result.output_for_node("final") == 300_000
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            bucket_store.get_info("p/intermediate")
        except ObjectNotFound:
            break
        time.sleep(0.5)
    else:
        pytest.fail("p/intermediate did not expire within 30 s")
    assert bucket_store.get_info("p/final").expires is None
    assert [i.name for i in bucket_store.list()] == ["p/final"]
    # the chunks go as well, a grace after the record (natsobj.lifecycle.chunk_grace)
    while bucket_store.status().size >= 300_000 and time.monotonic() < deadline + 10:
        time.sleep(0.5)
    assert bucket_store.status().size < 300_000


def test_a_malformed_ttl_fails_the_step_before_anything_is_stored(io_manager, bucket_store):
    @asset(metadata={"natsobj/ttl": "soon"})
    def vague() -> bytes:
        return b"x"

    result = materialize([vague], resources={"io_manager": io_manager}, raise_on_error=False)
    assert not result.success
    with pytest.raises(ObjectNotFound):
        bucket_store.get_info("pipe/vague")
