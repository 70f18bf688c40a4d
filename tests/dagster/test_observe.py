"""Observed source assets: the data version is the digest, so staleness follows content."""

from __future__ import annotations

import pytest
from dagster import AssetIn, AssetSpec, asset, materialize
from dagster._core.definitions.data_version import StaleStatus
from dagster._core.definitions.observe import observe
from dagster._utils.test.data_versions import get_stale_status_resolver

from dagster_natsobj import make_nats_object_observable, nats_object_observable_asset


def _observed_version(source, instance, resources) -> str:
    result = observe([source], instance=instance, resources=resources)
    [observation] = result.asset_observations_for_node(source.node_def.name)
    return observation.tags["dagster/data_version"]


def test_data_version_is_the_digest_and_changes_only_with_content(
    store, bucket_name, instance, io_manager, nats_resource
):
    source = nats_object_observable_asset(
        AssetSpec(["landing", "raw"], group_name="landing"), bucket_name, "drop/raw.csv"
    )
    assert source.is_external and source.is_observable
    assert source.specs_by_key[source.key].group_name == "landing"

    # `parsed` reads the source through the IO manager, from the pinned bucket and object.
    @asset(ins={"raw": AssetIn(key=source.key)})
    def parsed(raw: bytes) -> int:
        return len(raw.splitlines())

    resources = {"nats": nats_resource, "io_manager": io_manager}
    graph = [source, parsed]

    assert _observed_version(source, instance, resources) == "missing"

    v1 = store.put("drop/raw.csv", b"a\nb\n")
    assert _observed_version(source, instance, resources) == v1.digest
    result = materialize(graph, selection=[parsed], instance=instance, resources=resources)
    assert result.output_for_node("parsed") == 2
    assert get_stale_status_resolver(instance, graph).get_status(parsed.key) == (StaleStatus.FRESH)

    # Same bytes again: a new upload (new nuid, new sequence) but the same version.
    again = store.put("drop/raw.csv", b"a\nb\n")
    assert again.nuid != v1.nuid
    assert _observed_version(source, instance, resources) == v1.digest
    assert get_stale_status_resolver(instance, graph).get_status(parsed.key) == (StaleStatus.FRESH)

    # New content: new version, downstream stale.
    v2 = store.put("drop/raw.csv", b"a\nb\nc\n")
    assert v2.digest != v1.digest
    assert _observed_version(source, instance, resources) == v2.digest
    assert get_stale_status_resolver(instance, graph).get_status(parsed.key) == (StaleStatus.STALE)
    result = materialize(graph, selection=[parsed], instance=instance, resources=resources)
    assert result.output_for_node("parsed") == 3

    store.delete("drop/raw.csv")
    assert _observed_version(source, instance, resources) == "missing"


def test_make_nats_object_observable_is_a_deprecated_alias(
    store, bucket_name, instance, nats_resource
) -> None:
    with pytest.warns(DeprecationWarning, match="make_nats_object_observable.*deprecated"):
        source = make_nats_object_observable("old_style", bucket_name, "x.bin", group_name="g")
    assert source.is_observable and source.specs_by_key[source.key].group_name == "g"
    info = store.put("x.bin", b"x")
    assert _observed_version(source, instance, {"nats": nats_resource}) == info.digest
