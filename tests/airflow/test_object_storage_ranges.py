"""``ObjectStoragePath`` reads get the filesystem's ranged reads: pyarrow reading a column
subset of a nats:// Parquet object through the path's filesystem fetches only those columns."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
from airflow.sdk import ObjectStoragePath

from tests.fetch_counter import FetchCounter


def test_a_column_subset_through_object_storage_path_fetches_only_those_columns(
    nats_default, store, bucket_name
) -> None:
    table = pa.table({f"c{i}": pa.array(range(i, i + 400_000), pa.float64()) for i in range(8)})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=200_000, compression="none")
    path = ObjectStoragePath(f"nats://nats_default@{bucket_name}/lake/wide.parquet")
    path.write_bytes(sink.getvalue())

    with FetchCounter() as counter:
        got = pq.read_table(path.path, filesystem=path.fs, columns=["c2", "c5"])
    assert got.equals(table.select(["c2", "c5"]))
    size = path.stat().st_size
    print(f"\ntwo columns of eight: {counter.bytes} of {size} bytes")
    assert counter.bytes < 0.4 * size, (counter.bytes, size)  # two columns of eight, and a footer
