"""Batch reads of single objects and of CSV, JSON and text objects through format("natsobj"),
each compared with Spark's own reader on a local copy of the same bytes; write format options;
option names. A real local[2] session and a real nats-server."""

from __future__ import annotations

import gzip
import io
import re
import warnings
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import PySparkException

from natsobj.spark import NoManifestWarning
from natsobj.spark.file_options import FILE_OPTIONS, UNSUPPORTED
from natsobj.spark.options import KNOWN_OPTIONS

CSV_A = (
    b"id,name,amount,day,ok\n"
    b"1,ann,1.5,2024-01-02,true\n"
    b"2,,2.25,2024-02-03,false\n"
    b"3,bob,,2024-03-04,\n"
)
CSV_B = b"id,name,amount,day,ok\n4,cy,4.0,2024-04-05,true\n"
JSON_LINES = (
    b'{"b": 1, "a": "x", "n": {"z": 1, "y": [1, 2]}}\n'
    b'{"b": 2.5, "a": null, "t": true}\n'
    b"\n"
    b'{"b": 3, "t": false}\n'
)
JSON_DOC = b'[{"a": 1, "s": {"q": "x"}},\n {"a": 2, "b": "q"}]'
TEXT = b"l1\r\nl2\n\nl4\rl5"


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _same(ours, theirs) -> None:
    """Same schema (names, types, nullability) and the same rows as Spark's own source."""
    assert ours.schema == theirs.schema, (ours.schema.simpleString(), theirs.schema.simpleString())
    assert _rows(ours) == _rows(theirs)


@pytest.fixture
def files(store, tmp_path: Path):
    """Put ``objects`` into the test bucket and the same bytes under ``tmp_path``."""

    def put(objects: dict[str, bytes]) -> Path:
        for name, data in objects.items():
            store.put(name, data)
            local = tmp_path / name
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_bytes(data)
        return tmp_path

    return put


@pytest.fixture
def natsobj_read(spark, options):
    def read(**extra: str):
        return spark.read.format("natsobj").options(**options).options(**extra)

    return read


def test_a_single_object_loads_as_a_dataset_of_one(spark, natsobj_read, files, store) -> None:
    buffer = io.BytesIO()
    pq.write_table(pa.table({"x": [1, 2, 3], "s": ["a", None, "c"]}), buffer)
    local = files({"with/pandas.parquet": buffer.getvalue()})
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoManifestWarning)  # one put: nothing half-written
        ours = natsobj_read().load(f"nats://{store.bucket}/with/pandas.parquet")
        _same(ours, spark.read.parquet(str(local / "with/pandas.parquet")))


@pytest.mark.parametrize(
    "csv_options",
    [
        {"header": "true"},
        {"header": "true", "inferSchema": "true"},
        {},
        {"inferSchema": "true"},
    ],
)
def test_csv_glob_reads_like_spark_read_csv(spark, natsobj_read, files, csv_options) -> None:
    local = files({"raw/a.csv": CSV_A, "raw/b.csv": CSV_B, "raw/notes.txt": b"not csv"})
    ours = natsobj_read(objectFormat="csv", glob="raw/*.csv", **csv_options).load()
    _same(ours, spark.read.options(**csv_options).csv(str(local / "raw/*.csv")))
    assert ours.rdd.getNumPartitions() == 2  # one task per object


def test_csv_parsing_options_match_spark(spark, natsobj_read, files) -> None:
    data = b"# exported\nk;v;note\n1;NA;'semi;colon'\n2;x;'it\\'s'\n3;;'two\nlines'\n4;'';''\n"
    local = files({"opt/a.csv": data})
    csv_options = {
        "header": "true",
        "sep": ";",
        "quote": "'",
        "escape": "\\",
        "nullValue": "NA",
        "comment": "#",
        "multiLine": "true",
    }
    ours = natsobj_read(objectFormat="csv", **csv_options).load("opt")
    _same(ours, spark.read.options(**csv_options).csv(str(local / "opt")))
    assert ours.where("k = '1'").first().v is None


def test_gzipped_csv_is_read_by_its_extension(spark, natsobj_read, files) -> None:
    local = files({"gz/a.csv.gz": gzip.compress(CSV_A)})
    ours = natsobj_read(header="true", inferSchema="true").load("gz")
    _same(ours, spark.read.options(header="true", inferSchema="true").csv(str(local / "gz")))


def test_json_lines_and_multiline_read_like_spark_read_json(spark, natsobj_read, files) -> None:
    local = files({"j/a.json": JSON_LINES, "m/a.json": JSON_DOC})
    _same(natsobj_read().load("j"), spark.read.json(str(local / "j")))
    _same(
        natsobj_read(multiLine="true").load("m"),
        spark.read.json(str(local / "m"), multiLine=True),
    )
    schema = "a STRING, b DOUBLE"
    _same(
        natsobj_read().schema(schema).load("j/a.json"),
        spark.read.schema(schema).json(str(local / "j/a.json")),
    )


@pytest.mark.parametrize("text_options", [{}, {"wholetext": True}, {"lineSep": "l"}])
def test_text_reads_like_spark_read_text(spark, natsobj_read, files, text_options) -> None:
    local = files({"t/a.txt": TEXT, "t/b.log": b"b1\nb2\n"})
    given = {k: str(v).lower() for k, v in text_options.items()}
    ours = natsobj_read(objectFormat="text", **given).load("t")
    _same(ours, spark.read.text(str(local / "t"), **text_options))


def test_a_write_format_other_than_parquet_is_refused(spark, options, store) -> None:
    for key in ("format", "objectFormat"):
        with pytest.raises(PySparkException) as excinfo:
            spark.range(3).write.format("natsobj").mode("overwrite").options(**options).option(
                key, "csv"
            ).save("w")
        assert "format 'csv' cannot be written" in str(excinfo.value)
    assert store.list(prefix="w/") == []
    spark.range(3).write.format("natsobj").mode("overwrite").options(**options).option(
        "format", "parquet"
    ).save("w")
    assert natsobj_rows(spark, options, "w") == [(0,), (1,), (2,)]


def natsobj_rows(spark, options, prefix: str) -> list[tuple]:
    return _rows(spark.read.format("natsobj").options(**options).load(prefix))


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"hedaer": "true"}, "unknown natsobj option 'hedaer' (did you mean 'header'?)"),
        ({"inferschemas": "true"}, "did you mean 'inferschema'?"),
        ({"dateFormat": "dd.MM.yyyy"}, "option 'dateformat' of Spark's CSV/JSON sources"),
        ({"sep": "::"}, "option sep must be one character"),
        ({"format": "avro"}, "options objectFormat and format disagree"),
    ],
)
def test_misspelt_and_unsupported_options_are_refused(spark, natsobj_read, files, extra, expected):
    files({"raw/a.csv": CSV_A})
    with pytest.raises(PySparkException) as excinfo:
        natsobj_read(objectFormat="csv", **extra).load("raw").collect()
    assert expected in str(excinfo.value)


def test_options_of_other_sources_are_ignored_as_spark_does(spark, natsobj_read, files) -> None:
    local = files({"raw/a.csv": CSV_A})
    ours = natsobj_read(objectFormat="csv", header="true", mergeSchema="true").load("raw")
    _same(ours, spark.read.options(header="true", mergeSchema="true").csv(str(local / "raw")))


def test_a_missing_dataset_names_it_on_the_first_line(spark, natsobj_read, store) -> None:
    """Spark prints the worker's traceback first; with its hideTraceback setting the first
    line is the exception, which names the dataset and the bucket."""
    spark.conf.set("spark.sql.execution.pyspark.udf.hideTraceback.enabled", "true")
    try:
        with pytest.raises(PySparkException) as excinfo:
            natsobj_read().load("nope").collect()
    finally:
        spark.conf.unset("spark.sql.execution.pyspark.udf.hideTraceback.enabled")
    first = str(excinfo.value).splitlines()[0]
    assert first.startswith("[PYTHON_DATA_SOURCE_ERROR]")
    assert f"DatasetNotFound: bucket {store.bucket!r}: dataset 'nope' not found" in first


def test_catalog_tables_are_refused_naming_why_and_temporary_views_work(spark, options) -> None:
    """Spark hands a Python data source no options for a catalog table (PythonDataSourceV2
    drops the table's properties), so CREATE TABLE is refused up front, and a table that
    saveAsTable registered fails on read with the same cause, not 'bucket is required'."""
    spark.range(3).write.format("natsobj").mode("overwrite").options(**options).save("cat")
    given = ", ".join(f"{k} '{v}'" for k, v in {**options, "path": "cat"}.items())
    with pytest.raises(PySparkException) as excinfo:
        spark.sql(f"CREATE TABLE natsobj_cat USING natsobj OPTIONS ({given})")
    assert "CatalogTableUnsupported: CREATE TABLE ... USING natsobj cannot keep its OPTIONS" in (
        str(excinfo.value)
    )
    assert not spark.catalog.tableExists("natsobj_cat")
    try:
        spark.range(2).write.format("natsobj").mode("overwrite").options(**options).option(
            "path", "saved"
        ).saveAsTable("natsobj_saved")
        with pytest.raises(PySparkException) as excinfo:
            spark.sql("SELECT * FROM natsobj_saved").collect()
        assert "CatalogTableUnsupported: format('natsobj') was given no options at all" in str(
            excinfo.value
        )
    finally:
        spark.sql("DROP TABLE IF EXISTS natsobj_saved")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW natsobj_view USING natsobj OPTIONS ({given})")
    assert _rows(spark.sql("SELECT * FROM natsobj_view")) == [(0,), (1,), (2,)]


def _option_map() -> list[list[str]]:
    """The rows of docs/spark.md's map of Spark's source options, as cells."""
    text = (Path(__file__).parents[2] / "docs" / "spark.md").read_text()
    section = text.split("## Spark's Parquet, CSV, JSON and text options", 1)[1].split("\n## ", 1)[
        0
    ]
    rows = [line for line in section.splitlines() if line.startswith("| ")][2:]
    return [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]


def test_the_docs_option_map_names_only_options_natsobj_accepts() -> None:
    rows = _option_map()
    assert len(rows) > 15
    named = {n.lower() for row in rows for n in re.findall(r"`([^`]+)`", row[2])}
    assert named <= KNOWN_OPTIONS, sorted(named - KNOWN_OPTIONS)
    # ...and every CSV/JSON/text option the source reads has its row.
    spelt = {k for option in FILE_OPTIONS for k in option.spellings()}
    assert spelt <= named, sorted(spelt - named)
    refused = {
        n.lower() for row in rows if "refused" in row[3] for n in re.findall(r"`(\w+)`", row[1])
    }
    assert refused <= UNSUPPORTED, sorted(refused - UNSUPPORTED)


def test_a_streaming_sink_refuses_another_format_at_start(spark, options, tmp_path) -> None:
    rows = spark.readStream.format("rate").option("rowsPerSecond", "1").load()
    writer = (
        rows.writeStream.format("natsobj")
        .options(**options)
        .option("format", "json")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
    )
    with pytest.raises(PySparkException) as excinfo:
        query = writer.start("stream_json")
        query.awaitTermination(60)
    assert "format 'json' cannot be written" in str(excinfo.value)
