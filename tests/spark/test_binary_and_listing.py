"""Raw objects in binary mode, and Parquet written by other tools (no manifest)."""

from __future__ import annotations

import datetime as dt
import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from natsobj.spark import NoManifestWarning, read_dataframe


def test_binary_mode_reads_objects_as_rows(spark, options, store) -> None:
    blobs = {
        "models/v1/weights.bin": bytes(range(256)) * 1000,
        "models/v1/config.json": b'{"layers": 3}',
        "models/v1/README": b"",
        "other/ignored.bin": b"x",
    }
    infos = {name: store.put(name, data) for name, data in blobs.items()}

    df = spark.read.format("natsobj").options(**options).option("layout", "binary").load("models")
    assert df.columns == ["name", "size", "mtime", "digest", "content"]
    rows = {r.name: r for r in df.collect()}
    assert set(rows) == {n for n in blobs if n.startswith("models/")}
    for name, row in rows.items():
        assert row.content == blobs[name]
        assert row.size == len(blobs[name])
        assert row.digest == infos[name].digest
        assert abs(row.mtime.timestamp() - infos[name].mtime.timestamp()) < 5

    only_json = read_dataframe(
        spark, options["url"], store.bucket, "models", layout="binary", glob="models/**.json"
    )
    assert [r.name for r in only_json.select("name").collect()] == ["models/v1/config.json"]


def test_binary_glob_is_path_aware_on_the_full_name(spark, options, store) -> None:
    for name in ("raw/a.csv", "raw/old/b.csv", "raw/c.txt", "rawx/d.csv"):
        store.put(name, b"x")

    def names(glob: str) -> list[str]:
        df = spark.read.format("natsobj").options(**options, layout="binary", glob=glob).load()
        return sorted(r.name for r in df.select("name").collect())

    assert names("raw/*.csv") == ["raw/a.csv"]  # `*` stays within one segment
    assert names("raw/**.csv") == ["raw/a.csv", "raw/old/b.csv"]  # `**` crosses them
    assert names("*.csv") == []  # matched against the full name, not its last segment


def test_binary_mode_over_the_whole_bucket_and_empty_prefix(spark, options, store) -> None:
    store.put("a", b"1")
    store.put("b/c", b"22")
    df = spark.read.format("natsobj").options(**options, layout="binary").load()
    assert sorted((r.name, r.size) for r in df.select("name", "size").collect()) == [
        ("a", 1),
        ("b/c", 2),
    ]
    empty = spark.read.format("natsobj").options(**options, layout="binary").load("nothing")
    assert empty.count() == 0


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_prefix_without_manifest_is_read_by_listing_with_a_warning(spark, options, store) -> None:
    stamp = dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)
    for i in range(3):
        table = pa.table(
            {
                "id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                "at": pa.array([stamp] * 10, pa.timestamp("ms", tz="UTC")),
            }
        )
        store.put(f"foreign/part-{i}.parquet", _parquet(table))
    store.put("foreign/_SUCCESS", b"")
    store.put("foreign/.hidden/x.parquet", b"not parquet")

    with pytest.warns(NoManifestWarning, match="3 .parquet objects found by listing"):
        df = read_dataframe(spark, options["url"], store.bucket, "foreign")
    rows = df.collect()
    assert sorted(r.id for r in rows) == list(range(30))
    assert {r.at.astimezone(dt.UTC) for r in rows} == {stamp}
    plain = spark.read.format("natsobj").options(**options).load("foreign")
    assert plain.count() == 30
