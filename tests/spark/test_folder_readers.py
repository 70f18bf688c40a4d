"""Every reader of a dataset's folder sees exactly the committed rows after an overwrite
(issue 42): pandas, pyarrow.dataset, DuckDB and polars through the nats:// fsspec filesystem,
and the natsobj Spark source. The generation an overwrite supersedes is kept for readers
planned on it, but outside the folder (``natsobj.spark.manifest.retained_name``)."""

from __future__ import annotations

import json
from dataclasses import replace

import duckdb
import fsspec
import pandas as pd
import polars as pl
import pyarrow.dataset as ds
import pytest

from natsobj.aio import records
from natsobj.errors import BadObjectName, ObjectNotFound
from natsobj.spark.manifest import (
    Part,
    is_data_object,
    is_own_object,
    next_generation,
    retained_name,
)
from natsobj.sync import run

PREFIX = "lake/sales"
ROWS = 200
REGIONS = ("eu", "us", "apac")


def _write(spark, options, mode: str, start: int, **extra) -> None:
    data = [(i, REGIONS[i % len(REGIONS)]) for i in range(start, start + ROWS)]
    df = spark.createDataFrame(data, "id long, region string").repartition(2)
    df.write.format("natsobj").mode(mode).options(
        **options, partitionBy="region", rows_per_object="40", **extra
    ).save(PREFIX)


def _manifest(store) -> dict:
    return json.loads(store.get_bytes(f"{PREFIX}/_manifest.json"))


def _folder_parts(store) -> set[str]:
    return {i.name for i in store.list(prefix=PREFIX + "/") if is_data_object(PREFIX, i.name)}


@pytest.fixture
def fs(nats_url: str):
    return fsspec.filesystem("nats", servers=nats_url, skip_instance_cache=True)


def _every_reader(spark, options, fs, nats_url: str, bucket: str) -> dict[str, tuple[int, int]]:
    """(rows, sum of ids) of the folder as each reader sees it."""
    folder = f"{bucket}/{PREFIX}"
    url = f"nats://{folder}"
    storage = {"servers": nats_url}
    seen: dict[str, tuple[int, int]] = {}
    frame = pd.read_parquet(url, engine="pyarrow", storage_options=storage)
    seen["pandas"] = (len(frame), int(frame["id"].sum()))
    table = ds.dataset(folder, filesystem=fs, format="parquet", partitioning="hive").to_table()
    seen["pyarrow.dataset"] = (table.num_rows, int(table["id"].to_numpy().sum()))
    connection = duckdb.connect()
    connection.register_filesystem(fs)
    count, total = connection.execute(
        f"SELECT count(*), sum(id) FROM read_parquet('{url}/**/*.parquet', hive_partitioning=true)"
    ).fetchone()
    seen["duckdb"] = (count, int(total))
    # polars' own reader knows no nats:// URL: it reads what a glob of the folder finds
    files = [fs.open(path) for path in fs.glob(f"{url}/**/*.parquet")]
    polars = pl.concat([pl.read_parquet(f) for f in files])
    seen["polars"] = (polars.height, int(polars["id"].sum()))
    df = spark.read.format("natsobj").options(**options).load(PREFIX)
    rows = df.collect()
    seen["spark"] = (len(rows), sum(r.id for r in rows))
    return seen


def _expected(start: int) -> tuple[int, int]:
    return ROWS, sum(range(start, start + ROWS))


def test_after_an_overwrite_every_reader_of_the_folder_counts_the_committed_rows(
    spark, options, store, fs, nats_url
) -> None:
    _write(spark, options, "overwrite", 0)
    first = _folder_parts(store)
    pinned = spark.read.format("natsobj").options(**options).load(PREFIX)
    assert pinned.rdd.getNumPartitions() == len(first)  # planned on generation 1

    _write(spark, options, "overwrite", 10_000)

    seen = _every_reader(spark, options, fs, nats_url, store.bucket)
    assert seen == dict.fromkeys(seen, _expected(10_000))
    # Generation 1 is kept, out of the folder, for the read planned on it.
    manifest = _manifest(store)
    (retained,) = manifest["retained"]
    assert set(retained["parts"]) == {retained_name(n) for n in first}
    assert _folder_parts(store) == {p["name"] for p in manifest["parts"]}
    assert sorted(r.id for r in pinned.collect()) == list(range(ROWS))


def test_a_commit_moves_out_superseded_parts_a_crash_or_an_older_writer_left_in_the_folder(
    spark, options, store, fs, nats_url
) -> None:
    """The state a commit leaves when it dies between publishing its manifest and moving the
    superseded parts out, and that a manifest of an older writer describes (its ``retained``
    names the parts in the folder): a pinned read still finishes, and the next commit tidies."""
    _write(spark, options, "overwrite", 0)
    first = _folder_parts(store)
    pinned = spark.read.format("natsobj").options(**options).load(PREFIX)
    pinned.rdd.getNumPartitions()
    _write(spark, options, "overwrite", 10_000)
    _move_back(store, sorted(first)[:2])  # a crash after two of the moves
    _half_move(store, sorted(first)[2])  # and one cut short between its two steps
    doc = _manifest(store)
    doc["retained"][0]["parts"] = sorted(first)  # and as an older writer listed them
    store.put(f"{PREFIX}/_manifest.json", json.dumps(doc).encode())
    assert sorted(r.id for r in pinned.collect()) == list(range(ROWS))

    _write(spark, options, "append", 20_000, retain_generations="2")

    manifest = _manifest(store)
    assert manifest["generation"] == 3
    assert set(manifest["retained"][0]["parts"]) == {retained_name(n) for n in first}
    assert _folder_parts(store) == {p["name"] for p in manifest["parts"]}
    rows, total = _expected(10_000)
    more, more_total = _expected(20_000)
    seen = _every_reader(spark, options, fs, nats_url, store.bucket)
    assert seen == dict.fromkeys(seen, (rows + more, total + more_total))
    assert sorted(r.id for r in pinned.collect()) == list(range(ROWS))

    _move_back(store, sorted(first)[-1:])
    _write(spark, options, "append", 30_000)  # generation 4 drops generation 1, moved or not
    assert _manifest(store)["retained"] == []
    assert {i.name for i in store.list() if i.name.endswith(".parquet")} == _folder_parts(store)
    with pytest.raises(Exception, match="of generation 1 is gone"):
        pinned.collect()


def _half_move(store, name: str) -> None:
    """The part at both names, on the same chunks: a rename writes the new record, then
    purges the old one, and a crash in between leaves this."""
    info = store.get_info(retained_name(name))
    run(records.publish_record(store.aio.bucket_stream, info.evolve(name=name)))
    assert store.get_bytes(name) == store.get_bytes(retained_name(name))


def _move_back(store, names: list[str]) -> None:
    """Into the folder, as a commit that died before moving them out leaves them."""
    for name in names:
        store.update_meta(retained_name(name), new_name=name)


def test_retained_entries_name_the_datasets_own_parts_outside_the_folder_and_nothing_else() -> None:
    own, other = f"{PREFIX}/region=eu/part-00000-0-a.parquet", "lake/other/part-00000-0-b.parquet"
    hidden = f"{PREFIX}/_keep/part-00000-0-c.parquet"
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False}]}

    def commit(previous, names, overwrite=True):
        parts = [Part(n, 1, 10, "SHA-256=x") for n in names]
        return next_generation(
            previous,
            prefix=PREFIX,
            schema=schema,
            parts=parts,
            overwrite=overwrite,
            write_id="w",
            retain=2,
        )

    g1, _ = commit(None, [own, other, hidden])
    g2, _ = commit(g1, [f"{PREFIX}/part-00000-0-d.parquet"])
    assert g2.retained[0].parts == (retained_name(own), other, hidden)
    assert g2.in_folder() == {own, other, hidden}
    # an older writer's entry, listing the parts in the folder, is rewritten by the next commit
    older = replace(g2, retained=(replace(g2.retained[0], parts=(own, other)),))
    g3, _ = commit(older, [], overwrite=False)
    assert g3.retained[0].parts == (retained_name(own), other)
    assert is_own_object(PREFIX, retained_name(own)) and is_own_object(PREFIX, own)
    for name in (other, hidden, retained_name(other), retained_name(hidden), "_natsobj/x"):
        assert not is_own_object(PREFIX, name), name


def _longest_name(store) -> int:
    """The longest ASCII object name the server's protocol line takes in this bucket."""
    fits, too_long = 1, 10_000
    while too_long - fits > 1:
        middle = (fits + too_long) // 2
        try:
            store.get_info("n" * middle)
        except ObjectNotFound:
            fits = middle
        except BadObjectName:
            too_long = middle
    return fits


def test_a_part_that_cannot_be_moved_out_stays_and_the_commit_keeps_its_generation(
    spark, options, store
) -> None:
    """A failure after the manifest is published must not fail the commit: Spark would then
    call abort, which deletes the write's parts, now the dataset's. A prefix so long that its
    parts' retained names cannot be made is one such failure."""
    part = len("/part-00000-0-") + 32 + len(".parquet")
    prefix = "lake/" + "d" * (_longest_name(store) - part - len("lake/") - 4)
    assert len(retained_name(prefix)) + part > _longest_name(store)

    def write(mode: str, start: int) -> None:
        df = spark.range(start, start + 10, numPartitions=2)
        df.write.format("natsobj").mode(mode).options(**options).save(prefix)

    def ids(df) -> list[int]:
        return sorted(r.id for r in df.collect())

    write("overwrite", 0)
    first = {i.name for i in store.list() if i.name.endswith(".parquet")}
    pinned = spark.read.format("natsobj").options(**options).load(prefix)
    pinned.rdd.getNumPartitions()
    write("overwrite", 100)  # its parts cannot be moved out: they stay in the folder
    read = spark.read.format("natsobj").options(**options).load(prefix)
    assert ids(read) == list(range(100, 110))
    assert ids(pinned) == list(range(10))
    assert first < {i.name for i in store.list() if i.name.endswith(".parquet")}

    write("append", 200)  # drops generation 1, from where it stayed
    listed = {i.name for i in store.list() if i.name.endswith(".parquet")}
    manifest = json.loads(store.get_bytes(f"{prefix}/_manifest.json"))
    assert listed == {p["name"] for p in manifest["parts"]}
    read = spark.read.format("natsobj").options(**options).load(prefix)
    assert ids(read) == [*range(100, 110), *range(200, 210)]
