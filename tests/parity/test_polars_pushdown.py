"""``natsobj.polars.scan_parquet`` keeps polars' projection and predicate pushdown: counted on
the core's ranged reads (tests/fetch_counter.py), a query fetches only the columns it selects
and the row groups its predicate can match, never the whole object."""

from __future__ import annotations

import io

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from natsobj import polars as nats_polars
from tests.fetch_counter import FetchCounter

ROWS, GROUP, COLUMNS = 200_000, 20_000, 8


@pytest.fixture
def wide(fs_options: dict[str, str], store, bucket_name: str) -> tuple[str, int, pa.Table]:
    """A Parquet object of ten row groups and nine columns: its URL, its size, its table."""
    rng = np.random.default_rng(0)
    table = pa.table({"id": np.arange(ROWS), **{f"c{i}": rng.random(ROWS) for i in range(COLUMNS)}})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=GROUP)
    store.put("wide.parquet", buffer.getvalue())
    return f"nats://{bucket_name}/wide.parquet", len(buffer.getvalue()), table


@pytest.fixture
def fs_options(nats_url: str) -> dict[str, str]:
    return {"servers": nats_url}


def test_projection_fetches_only_the_selected_columns(wide, fs_options) -> None:
    url, size, table = wide
    with FetchCounter() as counted:
        frame = nats_polars.scan_parquet(url, storage_options=fs_options).select("id", "c0")
        got = frame.collect()
    assert got.to_dict(as_series=False) == table.select(["id", "c0"]).to_pydict()
    assert 0 < counted.bytes < size * 2 / (COLUMNS + 1) * 1.5  # two columns of nine


def test_predicate_skips_the_row_groups_it_cannot_match(wide, fs_options) -> None:
    url, _, table = wide
    with FetchCounter() as projected:
        nats_polars.scan_parquet(url, storage_options=fs_options).select("id", "c0").collect()
    with FetchCounter() as filtered:
        got = (
            nats_polars.scan_parquet(url, storage_options=fs_options)
            .filter(pl.col("id") >= ROWS - 100)
            .select("id", "c0")
            .collect()
        )
    assert got["id"].to_list() == list(range(ROWS - 100, ROWS))
    assert got["c0"].to_list() == table["c0"].to_pylist()[-100:]
    assert 0 < filtered.bytes < projected.bytes / 4  # one row group of ten
