"""The open handler registry: users store their own types; polars frames (lazy ones too) are
Parquet."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest
from dagster import (
    AssetKey,
    TableSchema,
    asset,
    build_input_context,
    materialize,
)

from dagster_natsobj import FileHandler, Handler, register_handler, unregister_handler


@dataclass
class Reading:
    sensor: str
    value: float


class ReadingHandler(FileHandler):
    """A user's own type, stored as JSON other systems can read."""

    format = "json"
    type_name = "example.Reading"
    content_type = "application/json"

    def classes(self) -> tuple[type, ...]:
        return (Reading,)

    def write_file(self, value: Any, path: Path) -> tuple[int | None, TableSchema | None]:
        path.write_text(json.dumps({"sensor": value.sensor, "value": value.value}))
        return None, None

    def read_file(self, path: Path) -> Reading:
        return Reading(**json.loads(path.read_text()))


@pytest.fixture
def reading_handler():
    handler = register_handler(ReadingHandler())
    yield handler
    unregister_handler(handler)


def test_a_registered_handler_stores_and_loads_its_type(io_manager, bucket_store, reading_handler):
    @asset
    def reading() -> Reading:
        return Reading("t1", 21.5)

    result = materialize([reading], resources={"io_manager": io_manager})
    assert result.success
    info = bucket_store.get_info("pipe/reading")
    assert json.loads(bucket_store.get_bytes("pipe/reading")) == {"sensor": "t1", "value": 21.5}
    assert info.metadata["natsobj.type"] == "example.Reading"
    assert info.headers["Content-Type"] == ["application/json"]
    # an un-annotated input finds the handler from the type recorded on the object
    with build_input_context(asset_key=AssetKey("reading")) as context:
        assert io_manager.load_input(context) == Reading("t1", 21.5)


def test_registration_refuses_clashes_and_non_handlers(reading_handler) -> None:
    class Clash(ReadingHandler):
        pass

    with pytest.raises(ValueError, match=r"type_name 'example\.Reading' is taken"):
        register_handler(Clash())
    with pytest.raises(TypeError, match="Handler instance"):
        register_handler(ReadingHandler)  # type: ignore[arg-type]

    class Unnamed(Handler):
        pass

    with pytest.raises(ValueError, match="needs a format and a type_name"):
        register_handler(Unnamed())


def test_polars_frames_round_trip_as_parquet(io_manager, bucket_store) -> None:
    frame = pl.DataFrame({"city": ["Oslo", "Lima"], "temp": [1.5, 19.0]})

    @asset
    def temps() -> pl.DataFrame:
        return frame

    @asset
    def warm(temps: pl.DataFrame) -> int:
        return temps.filter(pl.col("temp") > 10).height

    result = materialize([temps, warm], resources={"io_manager": io_manager})
    assert result.success and result.output_for_node("warm") == 1
    [mat] = result.asset_materializations_for_node("temps")
    assert mat.metadata["dagster/row_count"].value == 2
    info = bucket_store.get_info("pipe/temps")
    assert info.metadata["natsobj.type"] == "polars.DataFrame"
    assert bucket_store.get_bytes("pipe/temps")[:4] == b"PAR1"  # plain Parquet for any reader
    with build_input_context(asset_key=AssetKey("temps")) as context:
        assert io_manager.load_input(context).equals(frame)


def test_a_lazy_frame_is_sunk_as_parquet_and_loads_lazily(io_manager, bucket_store) -> None:
    settings = io_manager.model_dump() | {"row_group_rows": 2, "compression": "snappy"}
    writer = type(io_manager)(**settings)
    query = pl.LazyFrame({"city": ["Oslo", "Lima", "Pune"], "temp": [1.5, 19.0, 31.2]})
    query = query.with_columns(warm=pl.col("temp") > 10)

    @asset
    def temps() -> pl.LazyFrame:
        return query

    @asset
    def lazy(temps: pl.LazyFrame) -> list:
        assert isinstance(temps, pl.LazyFrame)
        return temps.filter(pl.col("warm")).select("city").collect()["city"].to_list()

    @asset
    def untyped(temps) -> int:  # the stored metadata says LazyFrame
        assert isinstance(temps, pl.LazyFrame)
        return temps.select(pl.len()).collect().item()

    @asset
    def eager(temps: pl.DataFrame) -> int:
        assert isinstance(temps, pl.DataFrame)
        return temps.height

    result = materialize([temps, lazy, untyped, eager], resources={"io_manager": writer})
    assert result.success
    assert result.output_for_node("lazy") == ["Lima", "Pune"]
    assert result.output_for_node("untyped") == result.output_for_node("eager") == 3
    info = bucket_store.get_info("pipe/temps")
    assert info.metadata["natsobj.type"] == "polars.LazyFrame"
    assert info.metadata["natsobj.format"] == "parquet"
    assert info.headers["Content-Type"] == ["application/vnd.apache.parquet"]
    [mat] = result.asset_materializations_for_node("temps")
    assert mat.metadata["dagster/row_count"].value == 3
    schema = mat.metadata["dagster/column_schema"].value
    assert [(c.name, c.type) for c in schema.columns] == [
        ("city", "String"),
        ("temp", "Float64"),
        ("warm", "Boolean"),
    ]
    parquet = pq.ParquetFile(io.BytesIO(bucket_store.get_bytes("pipe/temps")))
    assert parquet.metadata.num_row_groups == 2  # the IO manager's row_group_rows
    assert parquet.metadata.row_group(0).column(0).compression == "SNAPPY"
