"""``nats://`` for polars: ``scan_parquet``, ``read_parquet``, ``scan_csv``, ``read_csv``,
``write_parquet``, ``write_csv``, ``sink_parquet`` and ``sink_csv`` taking ``nats://`` URLs
and ``storage_options`` as polars' own functions take ``s3://`` ones.

polars' readers and writers are Rust and know a fixed set of schemes (``s3``, ``gs``, ``az``,
``http``, ``file``, ...) with no hook for another one, so ``pl.read_parquet("nats://...")``
looks for a local file. The Parquet scan here is a pyarrow dataset over the ``nats://``
fsspec filesystem given to ``pl.scan_pyarrow_dataset``, polars' scan of a Python source: polars
pushes the query's projection and predicate into it, so only the footers, the selected
columns' chunks and the row groups (and hive partitions) the predicate can match are fetched,
by ranged reads. CSV has no such layout: an object is fetched whole when its scan is built.
docs/data-stack.md maps each S3 call to its ``nats://`` form.
"""

from __future__ import annotations

from natsobj.extras import require_extra

require_extra("polars", "natsobj.polars")

import posixpath
from glob import has_magic
from typing import Any
from urllib.parse import unquote

import fsspec
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds

from natsobj.fs import NatsObjectFileSystem, strip_protocol


def _filesystem(storage_options: dict[str, Any] | None) -> NatsObjectFileSystem:
    """The ``nats://`` filesystem of these options (none: the ``NATS_*`` environment)."""
    fs: NatsObjectFileSystem = fsspec.filesystem("nats", **(storage_options or {}))
    return fs


def _glob_root(path: str) -> str:
    """The directory a glob pattern's matches are below (hive partitions start there)."""
    parts = path.split("/")
    fixed = next(i for i, part in enumerate(parts) if has_magic(part))
    return "/".join(parts[:fixed])


# pyarrow's name for a null hive value, left out when a partition column's type is inferred
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def _hive_type(values: list[str]) -> pa.DataType:
    """A partition column's type as polars infers it from the values in the paths: integers
    are Int64 and decimals Float64 (pyarrow alone would make Int32 and strings), else text."""
    present = [value for value in values if value != HIVE_NULL]
    if present and all(_parses(int, value) for value in present):
        return pa.int64()
    if present and all(_parses(float, value) for value in present):
        return pa.float64()
    return pa.string()


def _parses(kind: type, value: str) -> bool:
    try:
        kind(value)
    except ValueError:
        return False
    return True


def _hive_partitioning(files: list[str], base: str) -> ds.Partitioning:
    """Hive partitioning of ``files`` below ``base``, typed as polars types it."""
    values: dict[str, list[str]] = {}
    for name in files:
        for segment in name[len(base) :].strip("/").split("/")[:-1]:
            key, equals, value = segment.partition("=")
            if equals:
                values.setdefault(key, []).append(unquote(value))
    fields = [pa.field(key, _hive_type(found)) for key, found in values.items()]
    return ds.partitioning(pa.schema(fields), flavor="hive")


def _parquet_dataset(
    fs: NatsObjectFileSystem, source: str, hive_partitioning: bool | None
) -> ds.Dataset:
    """A pyarrow dataset of one object, a prefix directory or a glob of objects. Hive
    partitioning as polars infers it when not told: on for a directory only."""
    path = strip_protocol(source)
    if has_magic(path):
        files = sorted(fs.glob(path))
        if not files:
            raise FileNotFoundError(2, f"no object matches nats://{path}", path)
        hive, base = bool(hive_partitioning), _glob_root(path)
    else:
        path = posixpath.normpath(path)
        directory = fs.isdir(path)
        hive = directory if hive_partitioning is None else hive_partitioning
        if not hive:
            return ds.dataset(path, filesystem=fs, format="parquet")
        # pyarrow's discovery: the objects below, without its ignored "_" and "." names
        files = ds.dataset(path, filesystem=fs, format="parquet").files
        base = path if directory else path.split("/")[0]
    if not hive:
        return ds.dataset(files, filesystem=fs, format="parquet")
    return ds.dataset(
        files,
        filesystem=fs,
        format="parquet",
        partitioning=_hive_partitioning(files, base),
        partition_base_dir=base,
    )


def scan_parquet(
    source: str,
    *,
    storage_options: dict[str, Any] | None = None,
    hive_partitioning: bool | None = None,
) -> pl.LazyFrame:
    """``pl.scan_parquet`` for ``nats://``: one object, a prefix (its objects, hive
    partitions read as columns) or a glob; projection and predicate pushed down."""
    dataset = _parquet_dataset(_filesystem(storage_options), source, hive_partitioning)
    return pl.scan_pyarrow_dataset(dataset)


def read_parquet(
    source: str,
    *,
    columns: list[str] | None = None,
    storage_options: dict[str, Any] | None = None,
    hive_partitioning: bool | None = None,
) -> pl.DataFrame:
    """``pl.read_parquet`` for ``nats://``: ``scan_parquet`` collected, only ``columns`` read."""
    frame = scan_parquet(
        source, storage_options=storage_options, hive_partitioning=hive_partitioning
    )
    return (frame if columns is None else frame.select(columns)).collect()


def _csv_sources(fs: NatsObjectFileSystem, source: str) -> bytes | list[bytes]:
    path = strip_protocol(source)
    if not has_magic(path):
        return fs.cat_file(path)
    files = sorted(fs.glob(path))
    if not files:
        raise FileNotFoundError(2, f"no object matches nats://{path}", path)
    return [fs.cat_file(name) for name in files]


def scan_csv(
    source: str, *, storage_options: dict[str, Any] | None = None, **options: Any
) -> pl.LazyFrame:
    """``pl.scan_csv`` for ``nats://`` (one object or a glob), with polars' CSV ``options``."""
    return pl.scan_csv(_csv_sources(_filesystem(storage_options), source), **options)


def read_csv(
    source: str, *, storage_options: dict[str, Any] | None = None, **options: Any
) -> pl.DataFrame:
    """``pl.read_csv`` for ``nats://`` (one object or a glob), with polars' CSV ``options``."""
    sources = _csv_sources(_filesystem(storage_options), source)
    if isinstance(sources, bytes):
        return pl.read_csv(sources, **options)
    return pl.concat([pl.read_csv(data, **options) for data in sources], how="vertical")


def write_parquet(
    frame: pl.DataFrame,
    target: str,
    *,
    storage_options: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    """``DataFrame.write_parquet`` for ``nats://``: streamed into one put, published when
    the file is complete (no object if writing fails)."""
    with _filesystem(storage_options).open(strip_protocol(target), "wb") as handle:
        frame.write_parquet(handle, **options)


def write_csv(
    frame: pl.DataFrame,
    target: str,
    *,
    storage_options: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    """``DataFrame.write_csv`` for ``nats://``, as ``write_parquet``."""
    with _filesystem(storage_options).open(strip_protocol(target), "wb") as handle:
        frame.write_csv(handle, **options)


def sink_parquet(
    frame: pl.LazyFrame,
    target: str,
    *,
    storage_options: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    """``LazyFrame.sink_parquet`` for ``nats://``: the query's output streamed into one put,
    as ``write_parquet``."""
    with _filesystem(storage_options).open(strip_protocol(target), "wb") as handle:
        frame.sink_parquet(handle, **options)


def sink_csv(
    frame: pl.LazyFrame,
    target: str,
    *,
    storage_options: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    """``LazyFrame.sink_csv`` for ``nats://``, as ``sink_parquet``."""
    with _filesystem(storage_options).open(strip_protocol(target), "wb") as handle:
        frame.sink_csv(handle, **options)
