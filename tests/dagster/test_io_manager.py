"""Every type handler round-trips through real Dagster runs and a real nats-server."""

from __future__ import annotations

import hashlib
import pickle
from datetime import datetime
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from dagster import (
    AssetIn,
    AssetKey,
    DynamicOut,
    DynamicOutput,
    Out,
    TableSchema,
    asset,
    build_input_context,
    build_output_context,
    job,
    materialize,
    op,
)

from dagster_natsobj import NatsObjectStoreIOManager
from natsobj.errors import ObjectNotFound
from natsobj.model import format_digest


def _materialize(assets, io_manager, **kwargs):
    result = materialize(assets, resources={"io_manager": io_manager}, **kwargs)
    assert result.success
    return result


def _metadata(result, key: str) -> dict[str, Any]:
    [mat] = result.asset_materializations_for_node(key)
    return {k: v.value for k, v in mat.metadata.items()}


class Point:
    """A plain class: stored with pickle."""

    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and (self.x, self.y) == (other.x, other.y)


FRAME = pd.DataFrame({"id": [1, 2, 3], "city": ["Oslo", "Lima", "Pune"], "temp": [1.5, 19.0, 31.2]})


@pytest.mark.parametrize(
    ("value", "fmt", "content_type"),
    [
        (b"\x00raw bytes\xff", "bytes", "application/octet-stream"),
        ("text, stored raw: æøå", "text", "text/plain; charset=utf-8"),
        ({"nested": [1, 2, {"x": Point(1, 2)}]}, "pickle", "application/x-python-pickle"),
    ],
)
def test_raw_and_pickled_values_round_trip(
    signed_io_manager, bucket_store, value, fmt, content_type
):
    @asset
    def produced():
        return value

    @asset
    def consumed(produced):  # un-annotated: the stored format decides (a pickle if signed)
        return produced

    result = _materialize([produced, consumed], signed_io_manager)
    assert result.output_for_node("consumed") == value
    info = bucket_store.get_info("pipe/produced")
    assert info.metadata["natsobj.format"] == fmt
    assert info.headers["Content-Type"] == [content_type]
    assert info.metadata["dagster.asset_key"] == "produced"
    assert info.metadata["dagster.run_id"] == result.run_id
    if fmt == "bytes":
        assert bucket_store.get_bytes("pipe/produced") == value
    if fmt == "text":
        assert bucket_store.get_bytes("pipe/produced") == value.encode()
    if fmt == "pickle":
        assert pickle.loads(bucket_store.get_bytes("pipe/produced")) == value


def test_pandas_round_trip_with_table_metadata(io_manager, bucket_store):
    @asset
    def cities() -> pd.DataFrame:
        return FRAME

    @asset
    def warm(cities: pd.DataFrame) -> pd.DataFrame:
        return cities[cities.temp > 10]

    result = _materialize([cities, warm], io_manager)
    pd.testing.assert_frame_equal(result.output_for_node("warm"), FRAME[FRAME.temp > 10])

    meta = _metadata(result, "cities")
    info = bucket_store.get_info("pipe/cities")
    assert meta["dagster/uri"] == f"nats://{io_manager.bucket}/pipe/cities"
    assert meta["size"] == info.size > 0
    assert meta["chunks"] == info.chunks >= 1
    assert (
        meta["digest"]
        == info.digest
        == format_digest(hashlib.sha256(bucket_store.get_bytes("pipe/cities")).digest())
    )
    assert meta["nuid"] == info.nuid
    assert abs(meta["mtime"] - info.mtime.timestamp()) < 1
    assert meta["format"] == "parquet"
    assert meta["dagster/row_count"] == 3
    schema = meta["dagster/column_schema"]
    assert isinstance(schema, TableSchema)
    assert [(c.name, c.type) for c in schema.columns] == [
        ("id", "int64"),
        ("city", str(FRAME.dtypes["city"])),
        ("temp", "float64"),
    ]
    # The object is plain Parquet any tool can read.
    assert bucket_store.get_bytes("pipe/cities")[:4] == b"PAR1"


def test_arrow_round_trip_and_any_input_gets_the_stored_type(io_manager):
    table = pa.table({"k": pa.array([1, 2], pa.int32()), "v": ["a", "b"]})

    @asset
    def arrow_table() -> pa.Table:
        return table

    @asset
    def as_any(arrow_table: Any) -> int:
        assert isinstance(arrow_table, pa.Table)
        return arrow_table.num_rows

    @asset
    def as_pandas(arrow_table: pd.DataFrame) -> list:  # the annotation decides the reader
        assert isinstance(arrow_table, pd.DataFrame)
        return arrow_table["v"].tolist()

    result = _materialize([arrow_table, as_any, as_pandas], io_manager)
    assert result.output_for_node("as_any") == 2
    assert result.output_for_node("as_pandas") == ["a", "b"]
    meta = _metadata(result, "arrow_table")
    assert meta["dagster/row_count"] == 2
    assert [(c.name, c.type) for c in meta["dagster/column_schema"].columns] == [
        ("k", "int32"),
        ("v", "string"),
    ]
    assert meta["python_type"] == "pyarrow.Table"


def test_bytes_annotation_reads_raw_bytes_of_any_object(io_manager, bucket_store):
    @asset
    def doc() -> str:
        return "hello"

    @asset
    def raw(doc: bytes) -> int:
        return len(doc)

    result = _materialize([doc, raw], io_manager)
    assert result.output_for_node("raw") == 5


def test_large_pickled_object_is_chunked_and_round_trips(io_manager, bucket_store):
    blob = bytes(range(256)) * (5 * 4096)  # 5 MiB, many chunks

    @asset
    def big() -> list:
        return [blob, blob[::-1]]

    @asset
    def check(big: list) -> bool:
        return big == [blob, blob[::-1]]

    result = _materialize([big, check], io_manager)
    assert result.output_for_node("check") is True
    info = bucket_store.get_info("pipe/big")
    assert info.size > 10 * 1024 * 1024
    assert info.chunks > 1
    assert _metadata(result, "big")["chunks"] == info.chunks


def test_asset_key_path_and_prefix_make_the_object_name(nats_resource, bucket_name, bucket_store):
    manager = NatsObjectStoreIOManager(resource=nats_resource, bucket=bucket_name, prefix="/a/b/")

    @asset(key_prefix=["sales", "eu"])
    def orders() -> bytes:
        return b"x"

    _materialize([orders], manager)
    assert bucket_store.get_bytes("a/b/sales/eu/orders") == b"x"


def test_op_outputs_and_dynamic_outputs_are_stored_per_run_and_escaped(io_manager, bucket_store):
    @op(out=DynamicOut(str))
    def fan_out():
        for key in ["a", "b"]:
            yield DynamicOutput(f"value-{key}", mapping_key=key)

    @op
    def upper(value: str) -> str:
        return value.upper()

    @op(out={"left": Out(bytes), "right": Out(bytes)})
    def pair():
        return b"L", b"R"

    @job(resource_defs={"io_manager": io_manager})
    def pipeline():
        fan_out().map(upper)
        pair()

    result = pipeline.execute_in_process()
    assert result.success
    run = result.run_id
    names = {info.name for info in bucket_store.list()}
    assert f"pipe/storage/{run}/pair/left" in names
    assert f"pipe/storage/{run}/pair/right" in names
    assert f"pipe/storage/{run}/fan_out/result/a" in names
    # Dynamic step keys carry brackets, which are escaped in the object name.
    assert f"pipe/storage/{run}/upper%5Ba%5D/result" in names
    assert bucket_store.get_bytes(f"pipe/storage/{run}/upper%5Bb%5D/result") == b"VALUE-B"
    assert bucket_store.get_bytes(f"pipe/storage/{run}/pair/right") == b"R"


def test_direct_contexts_round_trip(signed_io_manager, bucket_store):
    io_manager = signed_io_manager  # the input is untyped: a pickle loads because it is signed
    # Contexts are closed deterministically: their ephemeral instance must not be left to GC.
    with build_output_context(asset_key=AssetKey(["direct", "thing"]), name="result") as out_ctx:
        io_manager.handle_output(out_ctx, {"when": datetime(2024, 1, 2)})
        meta = {k: v.value for k, v in out_ctx.get_logged_metadata().items()}
    assert meta["dagster/uri"] == f"nats://{io_manager.bucket}/pipe/direct/thing"
    assert meta["format"] == "pickle"

    with build_input_context(asset_key=AssetKey(["direct", "thing"])) as in_ctx:
        assert io_manager.load_input(in_ctx) == {"when": datetime(2024, 1, 2)}
    assert bucket_store.get_info("pipe/direct/thing").metadata["natsobj.type"] == "object"


def test_loading_a_missing_object_names_bucket_and_object(io_manager, bucket_store):
    with (
        build_input_context(asset_key=AssetKey("never_made"), name="never_made") as in_ctx,
        pytest.raises(ObjectNotFound, match=r"never_made") as err,
    ):
        io_manager.load_input(in_ctx)
    text = str(err.value)
    assert io_manager.bucket in text and "pipe/never_made" in text
    assert "Materialize the upstream asset" in text


def test_pinned_asset_key_reads_without_brackets_in_input(io_manager, bucket_store):
    @asset(ins={"src": AssetIn(key=AssetKey(["raw", "src"]))})
    def uses_src(src: str) -> str:
        return src + "!"

    @asset(key=AssetKey(["raw", "src"]))
    def src() -> str:
        return "hey"

    result = _materialize([src, uses_src], io_manager)
    assert result.output_for_node("uses_src") == "hey!"


def test_definition_metadata_pins_object_name_and_content_type(io_manager, bucket_store):
    @asset(metadata={"natsobj/object": "reports/chart.png", "natsobj/content_type": "image/png"})
    def chart() -> bytes:
        return b"\x89PNG..."

    @asset
    def chart_size(chart: bytes) -> int:
        return len(chart)

    result = _materialize([chart, chart_size], io_manager)
    assert result.output_for_node("chart_size") == 7
    info = bucket_store.get_info("reports/chart.png")
    assert info.headers["Content-Type"] == ["image/png"]
    assert "natsobj/content_type" not in info.metadata and "Content-Type" not in info.metadata
    assert (
        _metadata(result, "chart")["dagster/uri"] == f"nats://{io_manager.bucket}/reports/chart.png"
    )
