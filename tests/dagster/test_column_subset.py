"""A downstream asset that names its columns (input metadata {"columns": [...]}) gets only
those, and only their column chunks are fetched, with the Arrow, pandas and polars handlers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
from dagster import AssetIn, asset, materialize

from tests.fetch_counter import FetchCounter

COLUMNS = ["c1", "c6"]
ROWS = 60_000


def test_downstream_assets_load_only_the_columns_they_ask_for(io_manager, bucket_store) -> None:
    # Random values: the table handlers write zstd (docs/options.md), which would shrink a
    # column of consecutive numbers below the ranged reader's fetch size.
    rng = np.random.default_rng(7)
    table = pa.table({f"c{i}": pa.array(rng.random(ROWS)) for i in range(10)})
    expected = table.select(COLUMNS)

    @asset
    def wide() -> pa.Table:
        return table

    subset = {"wide": AssetIn(metadata={"columns": COLUMNS})}

    @asset(ins=subset)
    def as_arrow(wide: pa.Table) -> int:
        assert wide.equals(expected)
        return wide.num_columns

    @asset(ins=subset)
    def as_pandas(wide: pd.DataFrame) -> int:
        pd.testing.assert_frame_equal(wide, expected.to_pandas())
        return wide.shape[1]

    @asset(ins=subset)
    def as_polars(wide: pl.DataFrame) -> int:
        assert wide.equals(pl.from_arrow(expected))
        return wide.width

    assert materialize([wide], resources={"io_manager": io_manager}).success
    size = bucket_store.get_info("pipe/wide").size
    for downstream in (as_arrow, as_pandas, as_polars):
        with FetchCounter() as counter:
            result = materialize(
                [wide, downstream], resources={"io_manager": io_manager}, selection=[downstream]
            )
        assert result.success
        assert result.output_for_node(downstream.op.name) == len(COLUMNS)
        print(f"\n{downstream.op.name}: {counter.bytes} of {size} bytes")
        assert 0 < counter.bytes < 0.4 * size, (downstream.op.name, counter.bytes, size)
