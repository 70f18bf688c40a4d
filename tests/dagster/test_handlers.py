"""The open handler registry: users store their own types; polars frames are Parquet."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from dagster import AssetKey, TableSchema, asset, build_input_context, materialize

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
