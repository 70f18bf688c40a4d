"""The parity matrix: the calls a data engineer makes on ``s3://``, each run against s3fs on
moto and against ``nats://`` with natsobj, which must give the same result.

A case is one call (or a write and the read that checks it) written once for both sides; a
case with a ``route`` runs the route on ``nats://`` where S3 has the library's native call,
because the library has no hook for a third-party scheme (pyarrow's ``FileSystem.from_uri``,
polars' Rust readers). Every route is a row of docs/data-stack.md (``doc`` is the text that
row must hold); the README's pandas, pyarrow, polars tour names them as the exceptions and
runs them.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from upath import UPath

from natsobj import arrow as nats_arrow
from natsobj import polars as nats_polars

FRAME = pd.DataFrame(
    {
        "id": list(range(8)),
        "amount": [1.5, 2.0, 3.25, 4.0, 5.5, 6.0, 7.75, 8.0],
        "region": ["us", "eu", "us", "eu", "apac", "us", "eu", "apac"],
    }
)


@dataclass(frozen=True)
class Side:
    """One backend: its scheme, fsspec filesystem, storage options and bucket; ``case`` and
    ``local`` are set per case (its own prefix in the bucket, its own local directory)."""

    scheme: str
    fs: Any
    options: dict[str, Any]
    bucket: str
    case: str = ""
    local: Path = field(default_factory=Path)

    def at(self, case: str, local: Path) -> Side:
        return replace(self, case=case, local=local)

    def path(self, *parts: str) -> str:
        """``bucket/case/parts`` (the form fsspec calls return)."""
        return "/".join([self.bucket, self.case, *parts])

    def url(self, *parts: str) -> str:
        return f"{self.scheme}://{self.path(*parts)}"

    def rel(self, name: str) -> str:
        """A name a call returned, relative to the case's prefix (scheme or not)."""
        return str(name).removeprefix(f"{self.scheme}://").removeprefix(self.path()).lstrip("/")

    @property
    def polars_options(self) -> dict[str, str]:
        """polars' storage options: its object_store keys for S3, fsspec's for nats."""
        if self.scheme == "nats":
            return self.options
        return {
            "aws_endpoint_url": self.options["client_kwargs"]["endpoint_url"],
            "aws_access_key_id": self.options["key"],
            "aws_secret_access_key": self.options["secret"],
            "aws_region": "us-east-1",
            "aws_allow_http": "true",
        }

    def seed(self, *names: str) -> None:
        """FRAME as Parquet (``.parquet``) or CSV (``.csv``) at each name below the case."""
        for name in names:
            data = (
                FRAME.to_parquet(index=False)
                if name.endswith(".parquet")
                else FRAME.to_csv(index=False).encode()
            )
            self.fs.pipe(self.path(name), data)

    def seed_dataset(self, name: str = "ds") -> None:
        """FRAME as a hive-partitioned Parquet dataset (``region=.../part-0.parquet``)."""
        table = pa.Table.from_pandas(FRAME, preserve_index=False)
        for region in sorted(set(FRAME["region"])):
            part = table.filter(pa.compute.equal(table["region"], region)).drop_columns("region")
            buffer = io.BytesIO()
            pq.write_table(part, buffer)
            self.fs.pipe(self.path(name, f"region={region}", "part-0.parquet"), buffer.getvalue())


@dataclass(frozen=True)
class Case:
    library: str
    name: str
    call: Callable[[Side], Any]
    route: Callable[[Side], Any] | None = None  # what nats:// runs instead of ``call``
    doc: str = ""  # the S3 call as docs/data-stack.md's row names it


def rows(frame: Any) -> list[dict[str, Any]]:
    """A table's rows, in a stable order, with dictionary/categorical columns as text."""
    if isinstance(frame, (pl.DataFrame, pa.Table)):
        frame = frame.to_pandas()
    frame = frame.copy()
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.CategoricalDtype):
            frame[column] = frame[column].astype(str)
    return sorted(frame.to_dict("records"), key=lambda row: sorted(map(str, row.items())))


def raised(call: Callable[[], Any]) -> str:
    """The name of the error ``call`` raised ("" for none): errors are part of parity."""
    try:
        call()
    except Exception as exc:
        return type(exc).__name__
    return ""


def names(side: Side, found: Any) -> list[str]:
    return sorted(side.rel(name) for name in found)


# -- pandas ---------------------------------------------------------------------------------------


def pandas_parquet(side: Side) -> Any:
    FRAME.to_parquet(side.url("p.parquet"), index=False, storage_options=side.options)
    return rows(pd.read_parquet(side.url("p.parquet"), storage_options=side.options))


def pandas_parquet_filtered(side: Side) -> Any:
    side.seed("p.parquet")
    frame = pd.read_parquet(
        side.url("p.parquet"),
        columns=["id", "amount"],
        filters=[("amount", ">", 4.0)],
        storage_options=side.options,
    )
    return rows(frame)


def pandas_partitioned(side: Side) -> Any:
    side.seed_dataset()
    return rows(pd.read_parquet(side.url("ds"), storage_options=side.options))


def pandas_csv(side: Side) -> Any:
    FRAME.to_csv(side.url("p.csv"), index=False, storage_options=side.options)
    return rows(pd.read_csv(side.url("p.csv"), storage_options=side.options))


def pandas_compressed_json(side: Side) -> Any:
    FRAME.to_csv(side.url("p.csv.gz"), index=False, storage_options=side.options)
    FRAME.to_json(side.url("p.jsonl"), orient="records", lines=True, storage_options=side.options)
    return (
        rows(pd.read_csv(side.url("p.csv.gz"), storage_options=side.options)),
        rows(pd.read_json(side.url("p.jsonl"), lines=True, storage_options=side.options)),
        side.fs.cat(side.path("p.csv.gz"))[:2],  # gzip's magic: written compressed
    )


# -- pyarrow --------------------------------------------------------------------------------------


def arrow_fs(side: Side) -> Any:
    return nats_arrow.filesystem(**side.options)


def arrow_write_read(side: Side, filesystem: Any = None) -> Any:
    table = pa.Table.from_pandas(FRAME, preserve_index=False)
    pq.write_table(table, side.url("t.parquet"), filesystem=filesystem)
    return rows(pq.read_table(side.url("t.parquet"), columns=["id"], filesystem=filesystem))


def arrow_read_dataset(side: Side, filesystem: Any = None) -> Any:
    side.seed_dataset()
    dataset = ds.dataset(side.url("ds"), partitioning="hive", filesystem=filesystem)
    table = dataset.to_table(columns=["id", "region"], filter=ds.field("region") == "eu")
    return rows(table)


def arrow_read_table_dir(side: Side, filesystem: Any = None) -> Any:
    side.seed_dataset()
    return rows(pq.read_table(side.url("ds"), filters=[("id", "<", 4)], filesystem=filesystem))


def arrow_write_dataset(side: Side, filesystem: Any = None) -> Any:
    table = pa.Table.from_pandas(FRAME, preserve_index=False)
    ds.write_dataset(
        table,
        side.url("out"),
        format="parquet",
        partitioning=["region"],
        partitioning_flavor="hive",
        filesystem=filesystem,
    )
    # pyarrow's own S3 filesystem also writes empty "directory/" marker objects: not data
    return [name for name in names(side, side.fs.find(side.path("out"))) if not name.endswith("/")]


def arrow_parquet_file(side: Side) -> Any:
    side.seed("p.parquet")
    with side.fs.open(side.path("p.parquet"), "rb") as handle:
        parquet = pq.ParquetFile(handle)
        return parquet.metadata.num_rows, parquet.schema_arrow.names


# -- polars ---------------------------------------------------------------------------------------


def polars_read_parquet(side: Side, reader: Any = pl) -> Any:
    side.seed("p.parquet")
    return rows(reader.read_parquet(side.url("p.parquet"), storage_options=side.polars_options))


def polars_scan_parquet(side: Side, reader: Any = pl) -> Any:
    side.seed_dataset()
    frame = reader.scan_parquet(
        side.url("ds") + "/", storage_options=side.polars_options, hive_partitioning=True
    )
    return rows(frame.filter(pl.col("amount") > 3).select("id", "region").collect())


def polars_typed_partitions(side: Side, reader: Any = pl) -> Any:
    """Hive partitions whose values are numbers: the column types polars gives them too."""
    for year, rate in ((2024, "0.5"), (2025, "1.25")):
        buffer = io.BytesIO()
        pq.write_table(pa.Table.from_pandas(FRAME, preserve_index=False), buffer)
        name = side.path("years", f"year={year}", f"rate={rate}", "part-0.parquet")
        side.fs.pipe(name, buffer.getvalue())
    frame = reader.scan_parquet(side.url("years") + "/", storage_options=side.polars_options)
    got = frame.filter(pl.col("year") == 2025).select("id", "year", "rate").collect()
    return {name: str(dtype) for name, dtype in got.schema.items()}, rows(got)


def polars_scan_glob(side: Side, reader: Any = pl) -> Any:
    """A glob, where polars reads no hive columns unless told, and one where it is told."""
    side.seed_dataset()
    pattern = side.url("ds", "**", "*.parquet")
    options = side.polars_options
    plain = reader.scan_parquet(pattern, storage_options=options)
    hive = reader.scan_parquet(pattern, storage_options=options, hive_partitioning=True)
    return (
        rows(plain.filter(pl.col("id") > 2).collect()),
        rows(hive.filter(pl.col("region") == "us").collect()),
    )


def polars_write_parquet(side: Side, writer: Any = None) -> Any:
    frame = pl.from_pandas(FRAME)
    if writer is None:
        frame.write_parquet(side.url("w.parquet"), storage_options=side.polars_options)
    else:
        writer.write_parquet(frame, side.url("w.parquet"), storage_options=side.polars_options)
    return rows(pd.read_parquet(side.url("w.parquet"), storage_options=side.options))


def polars_sink(side: Side, writer: Any = None) -> Any:
    query = pl.from_pandas(FRAME).lazy().filter(pl.col("amount") > 2).select("id", "region")
    if writer is None:
        query.sink_parquet(side.url("s.parquet"), storage_options=side.polars_options)
        query.sink_csv(side.url("s.csv"), storage_options=side.polars_options)
    else:
        writer.sink_parquet(query, side.url("s.parquet"), storage_options=side.polars_options)
        writer.sink_csv(query, side.url("s.csv"), storage_options=side.polars_options)
    written = pd.read_parquet(side.url("s.parquet"), storage_options=side.options)
    return rows(written), side.fs.cat(side.path("s.csv")).decode()


def polars_read_csv(side: Side, reader: Any = pl) -> Any:
    side.seed("p.csv")
    return rows(reader.read_csv(side.url("p.csv"), storage_options=side.polars_options))


def polars_scan_csv(side: Side, reader: Any = pl) -> Any:
    side.seed("p.csv")
    frame = reader.scan_csv(side.url("p.csv"), storage_options=side.polars_options)
    return rows(frame.filter(pl.col("region") != "us").select("amount").collect())


def polars_write_csv(side: Side, writer: Any = None) -> Any:
    frame = pl.from_pandas(FRAME)
    if writer is None:
        frame.write_csv(side.url("w.csv"), storage_options=side.polars_options)
    else:
        writer.write_csv(frame, side.url("w.csv"), storage_options=side.polars_options)
    return side.fs.cat(side.path("w.csv")).decode()


def missing_objects(side: Side, reader: Any = pl, filesystem: Any = None) -> Any:
    """What each library raises for an object that is not there."""
    missing = side.url("nope.parquet")
    return (
        raised(lambda: pd.read_parquet(missing, storage_options=side.options)),
        raised(lambda: pd.read_csv(side.url("nope.csv"), storage_options=side.options)),
        raised(lambda: pq.read_table(missing, filesystem=filesystem)),
        raised(lambda: reader.read_parquet(missing, storage_options=side.polars_options)),
        raised(lambda: reader.read_csv(side.url("nope.csv"), storage_options=side.polars_options)),
    )


# -- DuckDB ---------------------------------------------------------------------------------------


def duckdb_connection(side: Side) -> Any:
    connection = duckdb.connect()
    connection.register_filesystem(side.fs)
    return connection


def duckdb_query(side: Side) -> Any:
    side.seed("a.parquet", "b.parquet")
    query = (
        f"select region, sum(amount) from read_parquet('{side.url('*.parquet')}') "
        "group by region order by region"
    )
    return duckdb_connection(side).sql(query).fetchall()


def duckdb_copy(side: Side) -> Any:
    connection = duckdb_connection(side)
    connection.sql(f"copy (select range as id from range(5)) to '{side.url('d.parquet')}'")
    return connection.sql(f"select sum(id) from '{side.url('d.parquet')}'").fetchall()


# -- fsspec ---------------------------------------------------------------------------------------


def tree(side: Side) -> None:
    for name in ("a.csv", "b.csv", "sub/c.csv", "sub/deep/d.txt"):
        side.fs.pipe(side.path(name), name.encode())


def fsspec_open(side: Side) -> Any:
    with side.fs.open(side.url("f.bin"), "wb") as handle:
        handle.write(b"0123456789" * 1000)
    with side.fs.open(side.url("f.bin"), "rb") as handle:
        handle.seek(4995)
        middle = handle.read(10)
        handle.seek(-3, 2)
        return middle, handle.read(), handle.tell()


def fsspec_open_text(side: Side) -> Any:
    with side.fs.open(side.url("t.txt"), "w") as handle:
        handle.write("one\ntwo\n")
    with side.fs.open(side.url("t.txt"), "r") as handle:
        return handle.readlines()


def fsspec_cat(side: Side) -> Any:
    tree(side)
    return (
        side.fs.cat(side.url("a.csv")),
        side.fs.cat_file(side.url("sub/c.csv"), start=2, end=5),
        {side.rel(k): v for k, v in side.fs.cat(side.url("*.csv")).items()},
        side.fs.head(side.url("sub/deep/d.txt"), 3),
        side.fs.tail(side.url("sub/deep/d.txt"), 3),
    )


def fsspec_put_get(side: Side) -> Any:
    source = side.local / "src"
    (source / "inner").mkdir(parents=True)
    (source / "x.txt").write_text("x")
    (source / "inner" / "y.txt").write_text("y")
    side.fs.put(str(source / "x.txt"), side.url("one.txt"))
    side.fs.put(str(source), side.url("up"), recursive=True)
    side.fs.get(side.url("one.txt"), str(side.local / "one.txt"))
    side.fs.get(side.url("up"), str(side.local / "down"), recursive=True)
    fetched = sorted(str(p.relative_to(side.local)) for p in side.local.rglob("*") if p.is_file())
    return names(side, side.fs.find(side.path())), fetched


def fsspec_listing(side: Side) -> Any:
    tree(side)
    fs = side.fs
    return (
        names(side, fs.ls(side.url(), detail=False)),
        names(side, fs.ls(side.url("sub") + "/", detail=False)),
        names(side, fs.find(side.url())),
        names(side, fs.find(side.url(), withdirs=True)),
        names(side, fs.find(side.url(), maxdepth=1)),
        names(side, fs.glob(side.url("*.csv"))),
        names(side, fs.glob(side.url("**/*.csv"))),
        names(side, fs.glob(side.url("sub/*"))),
        fs.du(side.url()),
        fs.du(side.url("sub")),
    )


def fsspec_walk(side: Side) -> Any:
    tree(side)
    fs = side.fs
    walked = [
        (side.rel(root), sorted(dirs), sorted(files)) for root, dirs, files in fs.walk(side.url())
    ]
    fs.makedirs(side.url("made/inner"), exist_ok=True)  # a prefix needs no marker object
    ranges = fs.cat_ranges([side.path("a.csv"), side.path("sub/c.csv")], [0, 1], [2, 4])
    return sorted(walked), fs.exists(side.url("made/inner")), ranges


def fsspec_info(side: Side) -> Any:
    tree(side)
    fs = side.fs
    file = fs.info(side.url("sub/c.csv"))
    directory = fs.info(side.url("sub"))
    return (
        (side.rel(file["name"]), file["type"], file["size"]),
        (side.rel(directory["name"]), directory["type"]),
        fs.exists(side.url("a.csv")),
        fs.exists(side.url("sub")),
        fs.exists(side.url("nope")),
        fs.isdir(side.url("sub")),
        fs.isfile(side.url("sub")),
        fs.isfile(side.url("a.csv")),
        fs.size(side.url("b.csv")),
        raised(lambda: fs.info(side.url("nope"))),
        raised(lambda: fs.cat(side.url("nope"))),
        raised(lambda: fs.open(side.url("nope"), "rb")),
    )


def fsspec_rm(side: Side) -> Any:
    tree(side)
    fs = side.fs
    fs.rm(side.url("a.csv"))
    fs.rm(side.url("sub"), recursive=True)
    return names(side, fs.find(side.url())), raised(lambda: fs.rm(side.url("nope")))


def fsspec_copy_move(side: Side) -> Any:
    tree(side)
    fs = side.fs
    fs.cp_file(side.url("a.csv"), side.url("copy.csv"))
    fs.cp(side.url("sub"), side.url("copied"), recursive=True)
    fs.mv(side.url("b.csv"), side.url("moved.csv"))
    return names(side, fs.find(side.url())), fs.cat(side.url("copied/deep/d.txt"))


def fsspec_pipe_create(side: Side) -> Any:
    fs = side.fs
    fs.pipe_file(side.url("c.txt"), b"first", mode="create")
    return raised(lambda: fs.pipe_file(side.url("c.txt"), b"second", mode="create")), fs.cat(
        side.url("c.txt")
    )


def fsspec_touch(side: Side) -> Any:
    side.fs.touch(side.url("empty"))
    return side.fs.cat(side.url("empty")), side.fs.size(side.url("empty"))


def fsspec_open_url(side: Side) -> Any:
    import fsspec

    with fsspec.open(side.url("u.txt"), "wt", **side.options) as handle:
        handle.write("by url")
    with fsspec.open(side.url("u.txt"), "rt", **side.options) as handle:
        return handle.read()


# -- UPath ----------------------------------------------------------------------------------------


def upath_calls(side: Side) -> Any:
    root = UPath(side.url(), **side.options)
    (root / "docs" / "a.txt").write_text("hello")
    (root / "docs" / "b.csv").write_bytes(b"1,2")
    docs = root / "docs"
    a = docs / "a.txt"
    listed = sorted(side.rel(str(p)) for p in docs.iterdir())
    globbed = sorted(side.rel(str(p)) for p in root.glob("docs/*.csv"))
    recursive = sorted(side.rel(str(p)) for p in root.rglob("*.txt"))
    facts = (a.read_text(), a.exists(), a.is_file(), docs.is_dir(), (docs / "no").exists())
    naming = (a.name, a.suffix, a.stem, side.rel(str(a.parent)), a.stat().st_size)
    # The bucket is the anchor, as on S3Path: a path's drive, anchor and parts, and the parent
    # of a bucket (itself).
    bucket = UPath(f"{side.scheme}://{side.bucket}", **side.options)
    anchoring = (
        type(a).__name__.removeprefix("S3").removeprefix("Nats"),
        a.drive == side.bucket,
        a.anchor == f"{side.bucket}/",
        a.parts[1:],
        str(bucket.parent) == str(bucket),
        side.rel(str(bucket / "x" / "y")),
    )
    a.unlink()
    return listed, globbed, recursive, facts, naming, anchoring, a.exists()


CASES: list[Case] = [
    Case("pandas", "to_parquet + read_parquet", pandas_parquet),
    Case("pandas", "read_parquet columns + filters", pandas_parquet_filtered),
    Case("pandas", "read_parquet of a hive dataset", pandas_partitioned),
    Case("pandas", "to_csv + read_csv", pandas_csv),
    Case("pandas", "csv.gz and JSON lines", pandas_compressed_json),
    Case(
        "pyarrow",
        "pq.write_table + pq.read_table",
        arrow_write_read,
        lambda side: arrow_write_read(side, arrow_fs(side)),
        doc='pq.read_table("s3://',
    ),
    Case(
        "pyarrow",
        "ds.dataset hive + filter",
        arrow_read_dataset,
        lambda side: arrow_read_dataset(side, arrow_fs(side)),
        doc='ds.dataset("s3://',
    ),
    Case(
        "pyarrow",
        "pq.read_table of a dataset + filters",
        arrow_read_table_dir,
        lambda side: arrow_read_table_dir(side, arrow_fs(side)),
        doc='pq.read_table("s3://',
    ),
    Case(
        "pyarrow",
        "ds.write_dataset hive",
        arrow_write_dataset,
        lambda side: arrow_write_dataset(side, arrow_fs(side)),
        doc='ds.write_dataset(table, "s3://',
    ),
    Case("pyarrow", "pq.ParquetFile(fs.open(...))", arrow_parquet_file),
    Case(
        "polars",
        "read_parquet",
        polars_read_parquet,
        lambda side: polars_read_parquet(side, nats_polars),
        doc='pl.read_parquet("s3://',
    ),
    Case(
        "polars",
        "scan_parquet hive + filter + select",
        polars_scan_parquet,
        lambda side: polars_scan_parquet(side, nats_polars),
        doc='pl.scan_parquet("s3://',
    ),
    Case(
        "polars",
        "scan_parquet typed hive partitions",
        polars_typed_partitions,
        lambda side: polars_typed_partitions(side, nats_polars),
        doc='pl.scan_parquet("s3://',
    ),
    Case(
        "polars",
        "scan_parquet glob",
        polars_scan_glob,
        lambda side: polars_scan_glob(side, nats_polars),
        doc='pl.scan_parquet("s3://',
    ),
    Case(
        "polars",
        "write_parquet",
        polars_write_parquet,
        lambda side: polars_write_parquet(side, nats_polars),
        doc='df.write_parquet("s3://',
    ),
    Case(
        "polars",
        "sink_parquet + sink_csv",
        polars_sink,
        lambda side: polars_sink(side, nats_polars),
        doc='lf.sink_parquet("s3://',
    ),
    Case(
        "polars",
        "read_csv",
        polars_read_csv,
        lambda side: polars_read_csv(side, nats_polars),
        doc='pl.read_csv("s3://',
    ),
    Case(
        "polars",
        "scan_csv + filter + select",
        polars_scan_csv,
        lambda side: polars_scan_csv(side, nats_polars),
        doc='pl.scan_csv("s3://',
    ),
    Case(
        "polars",
        "write_csv",
        polars_write_csv,
        lambda side: polars_write_csv(side, nats_polars),
        doc='df.write_csv("s3://',
    ),
    Case(
        "all",
        "a missing object",
        missing_objects,
        lambda side: missing_objects(side, nats_polars, arrow_fs(side)),
        doc='pl.read_parquet("s3://',
    ),
    Case("duckdb", "read_parquet glob + group by", duckdb_query),
    Case("duckdb", "COPY TO + read back", duckdb_copy),
    Case("fsspec", "open wb/rb + seek", fsspec_open),
    Case("fsspec", "open w/r text", fsspec_open_text),
    Case("fsspec", "cat, cat_file range, head, tail", fsspec_cat),
    Case("fsspec", "put, put -r, get, get -r", fsspec_put_get),
    Case("fsspec", "ls, find, glob, du", fsspec_listing),
    Case("fsspec", "walk, makedirs, cat_ranges", fsspec_walk),
    Case("fsspec", "info, exists, isdir, isfile, size, errors", fsspec_info),
    Case("fsspec", "rm, rm -r", fsspec_rm),
    Case("fsspec", "cp_file, cp -r, mv", fsspec_copy_move),
    Case("fsspec", "pipe_file mode=create", fsspec_pipe_create),
    Case("fsspec", "touch", fsspec_touch),
    Case("fsspec", "fsspec.open(url, **storage_options)", fsspec_open_url),
    Case("upath", "write, read, iterdir, glob, rglob, stat, unlink", upath_calls),
]
