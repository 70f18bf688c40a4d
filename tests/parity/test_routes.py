"""The routes of docs/data-stack.md as a user types them from the issue's failures: the
connection from ``NATS_URL`` alone, and pyarrow's filesystem over an existing ``nats://``
filesystem."""

from __future__ import annotations

import io

import fsspec
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from natsobj import arrow as nats_arrow
from natsobj import polars as nats_polars

FRAME = pd.DataFrame({"id": [1, 2, 3, 4], "region": ["us", "eu", "us", "eu"]})


def parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), buffer)
    return buffer.getvalue()


def test_polars_routes_connect_from_nats_url(
    nats_url: str, store, bucket_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NATS_URL", nats_url)
    url = f"nats://{bucket_name}/with/pandas.parquet"
    nats_polars.write_parquet(pl.from_pandas(FRAME), url)
    assert nats_polars.read_parquet(url).to_pandas().equals(FRAME)
    csv = f"nats://{bucket_name}/with/frame.csv"
    nats_polars.write_csv(pl.from_pandas(FRAME), csv)
    assert nats_polars.scan_csv(csv).filter(pl.col("id") > 2).collect()["id"].to_list() == [3, 4]


def test_arrow_filesystem_over_an_existing_filesystem(
    nats_url: str, store, bucket_name: str
) -> None:
    """As found: ``ds.dataset("nats://lake/with/pa_ds", filesystem=fs)`` raised ArrowInvalid
    (a listed name outside the base dir); the same URL through natsobj.arrow reads it."""
    fs = fsspec.filesystem("nats", servers=nats_url)
    for region in ("eu", "us"):
        part = FRAME[FRAME["region"] == region].drop(columns="region")
        fs.pipe(f"{bucket_name}/with/pa_ds/region={region}/part-0.parquet", parquet(part))
    url = f"nats://{bucket_name}/with/pa_ds"
    dataset = ds.dataset(url, filesystem=nats_arrow.filesystem(fs), partitioning="hive")
    table = dataset.to_table(filter=ds.field("region") == "us")
    assert sorted(table["id"].to_pylist()) == [1, 3]
    with pytest.raises(TypeError, match="not both"):
        nats_arrow.filesystem(fs, servers=nats_url)


def test_missing_objects_are_file_not_found(nats_url: str, store, bucket_name: str) -> None:
    options = {"servers": nats_url}
    with pytest.raises(FileNotFoundError, match="nope"):
        nats_polars.read_parquet(f"nats://{bucket_name}/nope.parquet", storage_options=options)
    with pytest.raises(FileNotFoundError, match="no object matches"):
        nats_polars.scan_parquet(f"nats://{bucket_name}/*.parquet", storage_options=options)
    with pytest.raises(FileNotFoundError, match="nope"):
        nats_polars.read_csv(f"nats://{bucket_name}/nope.csv", storage_options=options)
