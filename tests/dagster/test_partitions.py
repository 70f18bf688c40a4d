"""Partitioned assets: one object per partition, several loaded as a dict, missing ones."""

from __future__ import annotations

from dagster import (
    AllPartitionMapping,
    AssetIn,
    AssetKey,
    MultiPartitionKey,
    MultiPartitionsDefinition,
    PartitionKeyRange,
    StaticPartitionsDefinition,
    asset,
    build_input_context,
    materialize,
)

DAYS = StaticPartitionsDefinition(["2024-01-01", "2024-01-02", "a/b", ".."])


@asset(partitions_def=DAYS)
def daily(context) -> str:
    return f"data for {context.partition_key}"


def test_each_partition_is_its_own_object_with_escaped_keys(io_manager, bucket_store):
    for key in DAYS.get_partition_keys():
        result = materialize([daily], partition_key=key, resources={"io_manager": io_manager})
        assert result.success
    names = sorted(info.name for info in bucket_store.list())
    assert names == [
        "pipe/daily/%2E%2E",
        "pipe/daily/2024-01-01",
        "pipe/daily/2024-01-02",
        "pipe/daily/a%2Fb",
    ]
    assert bucket_store.get_bytes("pipe/daily/a%2Fb") == b"data for a/b"
    info = bucket_store.get_info("pipe/daily/%2E%2E")
    assert info.metadata["dagster.partition"] == ".."


def test_one_partition_loads_as_the_value_several_as_a_dict(io_manager, bucket_store):
    for key in ["2024-01-01", "a/b"]:
        materialize([daily], partition_key=key, resources={"io_manager": io_manager})

    @asset(partitions_def=DAYS)
    def same_day(daily: str) -> str:
        return daily.upper()

    result = materialize(
        [daily.to_source_asset(), same_day],
        partition_key="a/b",
        resources={"io_manager": io_manager},
    )
    assert result.output_for_node("same_day") == "DATA FOR A/B"

    @asset(
        ins={
            "daily": AssetIn(
                partition_mapping=AllPartitionMapping(),
                metadata={"allow_missing_partitions": True},
            )
        }
    )
    def all_days(daily: dict[str, str]) -> list:
        return sorted(daily.items())

    result = materialize([daily.to_source_asset(), all_days], resources={"io_manager": io_manager})
    assert result.output_for_node("all_days") == [
        ("2024-01-01", "data for 2024-01-01"),
        ("a/b", "data for a/b"),
    ]


def test_missing_partition_fails_clearly_without_allow_missing(io_manager, bucket_store):
    materialize([daily], partition_key="2024-01-01", resources={"io_manager": io_manager})

    @asset(ins={"daily": AssetIn(partition_mapping=AllPartitionMapping())})
    def strict(daily: dict[str, str]) -> int:
        return len(daily)

    result = materialize(
        [daily.to_source_asset(), strict],
        resources={"io_manager": io_manager},
        raise_on_error=False,
    )
    assert not result.success
    error = result.failure_data_for_node("strict").error
    while error.cause is not None and error.cls_name != "ObjectNotFound":
        error = error.cause
    assert error.cls_name == "ObjectNotFound"
    assert f"bucket '{io_manager.bucket}', object 'pipe/daily/2024-01-02'" in error.message
    assert "allow_missing_partitions" in error.message


def test_input_context_with_missing_partitions(io_manager, bucket_store):
    materialize([daily], partition_key="2024-01-02", resources={"io_manager": io_manager})
    # The range makes the input asset-partitioned on every Dagster: 1.12's
    # build_input_context derives none from partition_key alone.
    with build_input_context(
        asset_key=AssetKey("daily"),
        asset_partitions_def=DAYS,
        partition_key="2024-01-01",
        asset_partition_key_range=PartitionKeyRange("2024-01-01", "2024-01-01"),
        definition_metadata={"allow_missing_partitions": True},
    ) as ctx:
        assert io_manager.load_input(ctx) is None


MULTI = MultiPartitionsDefinition(
    {"region": StaticPartitionsDefinition(["eu", "us"]), "date": StaticPartitionsDefinition(["d1"])}
)


@asset(partitions_def=MULTI)
def regional(context) -> dict:
    keys = context.partition_key.keys_by_dimension
    return {"region": keys["region"], "date": keys["date"]}


def test_multi_partitions_follow_dagster_dimension_order(signed_io_manager, bucket_store):
    io_manager = signed_io_manager  # `combined` leaves the partitions' type open: signed pickles
    for region in ["eu", "us"]:
        key = MultiPartitionKey({"region": region, "date": "d1"})
        result = materialize([regional], partition_key=key, resources={"io_manager": io_manager})
        assert result.success
    # Dimensions sorted by name: date before region.
    assert sorted(i.name for i in bucket_store.list()) == [
        "pipe/regional/d1/eu",
        "pipe/regional/d1/us",
    ]

    @asset(ins={"regional": AssetIn(partition_mapping=AllPartitionMapping())})
    def combined(regional: dict) -> dict:
        return regional

    result = materialize(
        [regional.to_source_asset(), combined], resources={"io_manager": io_manager}
    )
    loaded = result.output_for_node("combined")
    assert loaded == {
        "d1|eu": {"region": "eu", "date": "d1"},
        "d1|us": {"region": "us", "date": "d1"},
    }
