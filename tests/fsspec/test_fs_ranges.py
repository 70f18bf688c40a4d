"""Ranged reads through the nats:// fsspec filesystem: cat_file ranges, cat_ranges and
seek/read on open files fetch only the chunks that hold the bytes asked for, and every
columnar reader people point at nats:// (pyarrow, pyarrow.dataset, pandas, polars, DuckDB)
reads Parquet and CSV correctly through it. On the session's real server."""

from __future__ import annotations

import io

import duckdb
import fsspec
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from natsobj.errors import ObjectChanged
from natsobj.fs import NatsObjectFileSystem
from tests.fetch_counter import FetchCounter

COLUMNS = [f"c{i}" for i in range(10)]
ROWS = 400_000
GROUP_ROWS = 100_000
ODD_SIZE = 50_003
ODD_CHUNK = 1_000  # small and odd: ranges cross many chunk boundaries

HYPOTHESIS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture
def fs(nats_url: str, store) -> NatsObjectFileSystem:
    return fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)


@pytest.fixture
def table() -> pa.Table:
    """Ten float columns of distinct values (no dictionary or run-length shortcut), so each
    column chunk holds about a tenth of the file."""
    return pa.table(
        {name: pa.array(range(i, i + ROWS), pa.float64()) for i, name in enumerate(COLUMNS)}
    )


@pytest.fixture
def parquet_path(fs, bucket_name: str, table: pa.Table) -> str:
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=GROUP_ROWS, compression="none")
    path = f"{bucket_name}/lake/wide.parquet"
    fs.pipe(path, sink.getvalue())
    return path


@pytest.fixture
def odd_object(store) -> tuple[str, bytes]:
    """An object of small, odd-sized chunks whose bytes say where they are."""
    data = bytes((i * 7 + i // 251) % 256 for i in range(ODD_SIZE))
    store.put("odd.bin", data, chunk_size=ODD_CHUNK)
    return "odd.bin", data


offsets = st.one_of(st.none(), st.integers(-ODD_SIZE - 10, ODD_SIZE + 10))


@HYPOTHESIS
@given(start=offsets, end=offsets)
def test_cat_file_ranges_equal_the_local_bytes(fs, bucket_name, odd_object, start, end) -> None:
    name, data = odd_object
    assert fs.cat_file(f"{bucket_name}/{name}", start=start, end=end) == data[start:end]


@HYPOTHESIS
@given(
    ranges=st.lists(
        st.tuples(st.integers(0, ODD_SIZE), st.integers(0, ODD_SIZE + 5)), min_size=1, max_size=8
    )
)
def test_cat_ranges_equal_the_local_bytes(fs, bucket_name, odd_object, ranges) -> None:
    name, data = odd_object
    path = f"{bucket_name}/{name}"
    starts, ends = [s for s, _ in ranges], [e for _, e in ranges]
    assert fs.cat_ranges([path] * len(ranges), starts, ends) == [data[s:e] for s, e in ranges]


def test_cat_ranges_of_several_objects_report_errors_in_place(fs, bucket_name, odd_object):
    name, data = odd_object
    fs.pipe(f"{bucket_name}/other.bin", b"0123456789")
    paths = [f"{bucket_name}/{name}", f"{bucket_name}/missing", f"{bucket_name}/other.bin"] * 2
    got = fs.cat_ranges(paths, [0, 0, 2, -5, 1, 8], [10, 5, 4, None, 2, None])
    assert [got[0], got[2], got[3], got[5]] == [data[:10], b"23", data[-5:], b"89"]
    assert isinstance(got[1], FileNotFoundError) and isinstance(got[4], FileNotFoundError)
    with pytest.raises(FileNotFoundError, match="missing"):
        fs.cat_ranges(paths, 0, 3, on_error="raise")


step = st.one_of(
    st.tuples(st.just("seek"), st.integers(0, ODD_SIZE + 5), st.sampled_from([0, 1, 2])),
    st.tuples(st.just("read"), st.integers(-1, 20_000), st.just(0)),
)


@HYPOTHESIS
@given(steps=st.lists(step, min_size=1, max_size=12))
def test_seek_and_read_sequences_equal_the_local_file(fs, bucket_name, odd_object, steps) -> None:
    """Seeks to a position (relative to the start, the current position or the end, per
    ``whence``) and reads of any size, on one open file."""
    name, data = odd_object
    local = io.BytesIO(data)
    with fs.open(f"{bucket_name}/{name}", "rb") as remote:
        for op, value, whence in steps:
            if op == "seek":
                offset = value - (0, local.tell(), ODD_SIZE)[whence]
                assert remote.seek(offset, whence) == local.seek(offset, whence) == value
            else:
                assert remote.read(value) == local.read(value)
            assert remote.tell() == local.tell()


def test_a_backward_seek_refetches_only_its_chunks(fs, bucket_name, odd_object) -> None:
    name, data = odd_object
    with FetchCounter() as counter, fs.open(f"{bucket_name}/{name}", "rb", block_size=0) as f:
        f.seek(ODD_SIZE - 100)
        assert f.read(100) == data[-100:]
        f.seek(10)
        assert f.read(20) == data[10:30]
    assert counter.bytes <= 4 * ODD_CHUNK, counter.bytes


def test_an_open_file_reads_the_version_it_opened_or_fails(fs, bucket_name, store) -> None:
    """The file's size and its bytes come from one version: an overwrite after the open makes
    the next fetch raise ObjectChanged, never the new bytes under the old size."""
    path = f"{bucket_name}/versioned.bin"
    store.put("versioned.bin", b"a" * 20_000, chunk_size=ODD_CHUNK)
    with fs.open(path, "rb", block_size=0) as f:
        assert f.size == 20_000
        store.put("versioned.bin", b"b" * 7_000)
        with pytest.raises(ObjectChanged):
            f.read(10)
        f.seek(10_000)  # a chunk the reader never held
        with pytest.raises(ObjectChanged):
            f.read(10)
    with fs.open(path, "rb") as f:
        assert f.size == 7_000 and f.read() == b"b" * 7_000


def test_a_read_of_a_block_or_more_fetches_no_read_ahead(fs, bucket_name, odd_object) -> None:
    """A columnar reader's column-chunk reads are fetched as asked (ExactReadAhead), while a
    small read still brings a block to serve the reads after it."""
    name, data = odd_object
    opening = ODD_CHUNK + ODD_SIZE % ODD_CHUNK  # the first and last chunks, finding the map
    with FetchCounter() as counter, fs.open(f"{bucket_name}/{name}", "rb", block_size=4_000) as f:
        f.seek(10_000)
        assert f.read(8_000) == data[10_000:18_000]  # chunk-aligned, two blocks long
        assert counter.bytes == opening + 8_000, counter.bytes
        f.seek(30_000)
        assert f.read(10) == data[30_000:30_010]
        assert f.read(3_000) == data[30_010:33_010]  # from the block the small read brought
    assert counter.bytes == opening + 8_000 + 5_000 and counter.requests == 2, counter.bytes


def test_pyarrow_reads_columns_and_datasets(fs, parquet_path, table) -> None:
    assert pq.read_table(parquet_path, filesystem=fs, columns=["c3", "c7"]).equals(
        table.select(["c3", "c7"])
    )
    assert pq.read_table(f"nats://{parquet_path}", filesystem=fs).equals(table)
    dataset = ds.dataset(parquet_path.rsplit("/", 1)[0], filesystem=fs, format="parquet")
    got = dataset.to_table(columns=["c0", "c9"], filter=pc.field("c0") >= ROWS - 10)
    assert got.to_pydict() == {
        "c0": [float(v) for v in range(ROWS - 10, ROWS)],
        "c9": [float(v) for v in range(ROWS - 1, ROWS + 9)],
    }


def test_a_footer_read_is_one_small_request(fs, parquet_path) -> None:
    size = fs.size(parquet_path)
    with FetchCounter() as counter, fs.open(parquet_path, "rb") as f:
        metadata = pq.ParquetFile(f).metadata
    assert metadata.num_rows == ROWS and metadata.num_row_groups == ROWS // GROUP_ROWS
    print(f"\nfooter: {counter.requests} request(s), {counter.bytes} of {size} bytes")
    assert counter.requests == 1 and counter.bytes <= 512 * 1024


def test_one_column_of_ten_fetches_well_under_the_object(fs, parquet_path, table) -> None:
    size = fs.size(parquet_path)
    with FetchCounter() as counter:
        got = pq.read_table(parquet_path, filesystem=fs, columns=["c4"])
    assert got.equals(table.select(["c4"]))
    print(f"\none column of ten: {counter.requests} request(s), {counter.bytes} of {size} bytes")
    assert counter.bytes < 0.2 * size, (counter.bytes, size)
    with FetchCounter() as whole:
        assert pq.read_table(parquet_path, filesystem=fs).equals(table)
    print(f"whole table: {whole.requests} request(s), {whole.bytes} of {size} bytes")
    assert size <= whole.bytes <= 1.05 * size


def test_pandas_polars_and_duckdb_read_nats_parquet_and_csv(
    fs, nats_url, bucket_name, parquet_path, table
) -> None:
    options = {"servers": nats_url}
    url = f"nats://{parquet_path}"
    frame = table.select(["c1", "c2"]).to_pandas()
    pd.testing.assert_frame_equal(
        pd.read_parquet(url, columns=["c1", "c2"], storage_options=options), frame
    )
    csv_url = f"nats://{bucket_name}/lake/wide.csv"
    table.slice(0, 5000).to_pandas().to_csv(csv_url, index=False, storage_options=options)
    pd.testing.assert_frame_equal(
        pd.read_csv(csv_url, storage_options=options), table.slice(0, 5000).to_pandas()
    )

    # polars' own reader knows no nats:// (its URLs are object_store's); through pyarrow it
    # reads with the filesystem's ranges
    with FetchCounter() as counter:
        got = pl.read_parquet(url, columns=["c5"], use_pyarrow=True, storage_options=options)
    assert got["c5"].to_list() == table["c5"].to_pylist()
    assert 0 < counter.bytes < 0.2 * fs.size(parquet_path)
    assert pl.read_csv(fs.cat_file(csv_url)).equals(pl.from_arrow(table.slice(0, 5000)))

    connection = duckdb.connect()
    connection.register_filesystem(fs)
    total, count = connection.execute(
        f"SELECT sum(c6), count(*) FROM read_parquet('{url}')"
    ).fetchone()
    assert (total, count) == (pc.sum(table["c6"]).as_py(), ROWS)
    row = connection.execute(f"SELECT c0, c9 FROM read_csv('{csv_url}') WHERE c0 = 4321").fetchone()
    assert row == (4321.0, 4330.0)
