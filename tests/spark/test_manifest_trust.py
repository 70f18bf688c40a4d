"""A manifest is an object any writer to the bucket can replace: a commit must not delete an
object just because an edited manifest names it (issue 21, point 8)."""

from __future__ import annotations

import json
import logging

import pytest
from pyspark.sql.types import LongType, StructField, StructType

from natsobj.spark.manifest import retained_name
from natsobj.spark.options import SourceOptions
from natsobj.spark.writer import NatsObjWriter

PREFIX = "lake/events"
VICTIMS = {
    "lake/other/part-00000-0-victim.parquet": b"another dataset's part",
    "lake/events-archive/part-00000-0-victim.parquet": b"a sibling prefix",
    f"{PREFIX}/_keep/part-00000-0-victim.parquet": b"a hidden folder of the dataset",
    f"{PREFIX}/README.md": b"not a data object",
    "_natsobj/retained/lake/other/part-00000-0-victim.parquet": b"another dataset's retained",
}


def _write(spark, options, mode: str, start: int, end: int) -> None:
    df = spark.range(start, end, numPartitions=2)
    df.write.format("natsobj").mode(mode).options(**options).save(PREFIX)


def _parts(store) -> set[str]:
    return {i.name for i in store.list(prefix=PREFIX + "/") if i.name.endswith(".parquet")}


def test_append_after_an_edited_manifest_deletes_only_the_datasets_own_parts(
    spark, options, store
) -> None:
    _write(spark, options, "overwrite", 0, 10)
    first = _parts(store)
    _write(spark, options, "overwrite", 10, 20)  # generation 1's parts are retained
    for name, data in VICTIMS.items():
        store.put(name, data)

    # Another writer rewrites the manifest: the retained generation now also lists the victims.
    manifest_name = f"{PREFIX}/_manifest.json"
    doc = json.loads(store.get_bytes(manifest_name))
    (retained,) = doc["retained"]
    assert set(retained["parts"]) == {retained_name(n) for n in first}
    retained["parts"] += sorted(VICTIMS)
    store.put(manifest_name, json.dumps(doc).encode())

    _write(spark, options, "append", 20, 30)  # generation 3 drops generation 1

    for name, data in VICTIMS.items():
        assert store.get_bytes(name) == data, name
    # the dataset's own superseded parts still go
    assert {i.name for i in store.list()}.isdisjoint({retained_name(n) for n in first} | first)
    df = spark.read.format("natsobj").options(**options).load(PREFIX)
    assert sorted(r.id for r in df.collect()) == list(range(10, 30))


def test_a_refused_name_is_named_in_a_warning(
    nats_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    opts = SourceOptions.parse({"url": nats_url, "bucket": "b", "path": PREFIX})
    schema = StructType([StructField("id", LongType())])
    writer = NatsObjWriter(opts, schema, overwrite=False, write_id="w")
    own = f"{PREFIX}/part-00001-0-x.parquet"
    with caplog.at_level(logging.WARNING, logger="natsobj.spark"):
        kept = writer._own_data_objects([own, *VICTIMS])
    assert kept == [own]
    for name in VICTIMS:
        assert repr(name) in caplog.text
    assert repr(own) not in caplog.text
