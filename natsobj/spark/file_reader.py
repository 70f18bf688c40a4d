"""Batch table reads of CSV, JSON and text objects (and Parquet objects outside a dataset):
one input partition per object, each fetched whole (spooled to a temp file when large) and
decoded by ``natsobj.spark.decode``, the decoder the streaming source uses. The schema, when
the read gives none, is inferred on the driver from the first object, as Spark's sources
infer it: CSV columns are strings unless option inferSchema, JSON fields are sorted by name.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

import natsobj
from natsobj.errors import in_words_of
from natsobj.spark.arrowio import spark_arrow_schema
from natsobj.spark.decode import (
    FALSE_VALUES,
    TRUE_VALUES,
    csv_options,
    csv_stream,
    decode,
    null_values,
    object_format,
    opened,
)
from natsobj.spark.file_options import CSV, JSON, PARQUET, TEXT
from natsobj.spark.handoff import produce_ahead
from natsobj.spark.manifest import Part
from natsobj.spark.options import SourceOptions
from natsobj.spark.reader import fetch_whole
from natsobj.spark.storage import open_store
from natsobj.spark.wording import spark_words

# JSON Lines schema inference reads at most this much of the first object.
INFER_BYTES = 16 * 1024 * 1024
TEXT_SCHEMA = StructType([StructField("value", StringType(), True)])


@dataclass
class ObjectPartition(InputPartition):
    name: str
    size: int


class FileTableReader(DataSourceReader):
    """Reads listed objects (or the one object a read names), one task per object."""

    def __init__(self, opts: SourceOptions, schema: StructType, parts: tuple[Part, ...]) -> None:
        self.opts = opts
        self.schema = schema
        self.parts = parts

    def partitions(self) -> list[InputPartition]:
        return [ObjectPartition(p.name, p.size) for p in self.parts]

    @in_words_of(spark_words)
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, ObjectPartition):
            return
        target = spark_arrow_schema(self.schema)
        yield from produce_ahead(lambda: self._batches(partition, target))

    def _batches(self, partition: ObjectPartition, target: pa.Schema) -> Iterator[pa.RecordBatch]:
        fmt = object_format(partition.name, self.opts.object_format)
        with contextlib.ExitStack() as stack, open_store(self.opts) as store:
            source = fetch_whole(store, self.opts, partition.name, partition.size, stack)
            yield from decode(
                source, fmt, target, name=partition.name, options=self.opts.file_format
            )


def infer_schema(store: natsobj.ObjectStore, opts: SourceOptions, first: Part) -> StructType:
    """The schema of a read given none, from its first object."""
    fmt = object_format(first.name, opts.object_format)
    if fmt == TEXT:
        return TEXT_SCHEMA
    with contextlib.ExitStack() as stack:
        source = fetch_whole(store, opts, first.name, first.size, stack)
        if fmt == PARQUET:
            return from_arrow_schema(pq.ParquetFile(source).schema_arrow)

        data = source if isinstance(source, str) else source.read_buffer()

        def stream() -> pa.NativeFile:
            """The object from its start (a decompressing stream closes what it reads)."""
            fresh = data if isinstance(data, str) else pa.BufferReader(data)
            return opened(fresh, first.name, opts.file_format)

        if fmt == CSV:
            return _csv_schema(lambda: csv_stream(stream(), opts.file_format), opts)
        assert fmt == JSON
        return _json_schema(stream(), opts)


def _csv_schema(stream: Callable[[], pa.NativeFile], opts: SourceOptions) -> StructType:
    """Column names from the header (or ``_c0``, ``_c1``...), all strings, or with option
    inferSchema the narrowest type every value of the column parses as, in Spark's order:
    int, bigint, double, timestamp, boolean, date, else string."""
    options = opts.file_format
    read, parse = csv_options(options)
    found = pacsv.open_csv(stream(), read_options=read, parse_options=parse).schema.names
    names = found if options.header else [f"_c{i}" for i in range(len(found))]
    if not options.infer_schema:
        return StructType([StructField(n, StringType(), True) for n in names])
    # Read again with every column a string, so a value far down cannot fail the inference.
    positions = [f"c{i}" for i in range(len(names))]
    reader = pacsv.open_csv(
        stream(),
        read_options=pacsv.ReadOptions(
            column_names=positions, skip_rows=1 if options.header else 0, use_threads=False
        ),
        parse_options=parse,
        convert_options=pacsv.ConvertOptions(
            column_types=dict.fromkeys(positions, pa.string()),
            null_values=null_values(options),
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )
    table = reader.read_all()
    return StructType(
        [
            StructField(name, _csv_type(table.column(i).drop_null()), True)
            for i, name in enumerate(names)
        ]
    )


def _csv_type(values: pa.ChunkedArray) -> DataType:
    if len(values) == 0:
        return StringType()
    candidates: list[tuple[pa.DataType, DataType]] = [
        (pa.int32(), IntegerType()),
        (pa.int64(), LongType()),
        (pa.float64(), DoubleType()),
    ]
    for arrow_type, spark_type in candidates:
        with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pc.cast(values, arrow_type)
            return spark_type
    with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError):
        if pc.all(pc.match_substring_regex(values, r"\d{4}-\d{2}-\d{2}[ T]")).as_py():
            pc.cast(values, pa.timestamp("us"))
            return TimestampType()
    if pc.all(pc.is_in(values, pa.array(TRUE_VALUES + FALSE_VALUES))).as_py():
        return BooleanType()
    with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError):
        if pc.all(pc.match_substring_regex(values, r"^\d{4}-\d{2}-\d{2}$")).as_py():
            pc.cast(values, pa.date32())
            return DateType()
    return StringType()


def _json_schema(stream: pa.NativeFile, opts: SourceOptions) -> StructType:
    """Spark's JSON inference: integers bigint, other numbers double, objects structs with
    their fields sorted by name, a field of differing kinds a string; null-only fields are
    strings."""
    if opts.file_format.multi_line:
        doc = json.loads(stream.read())
        records = doc if isinstance(doc, list) else [doc]
    else:
        records = [json.loads(line) for line in _head_lines(stream) if line.strip()]
    inferred: DataType = NullType()
    for record in records:
        inferred = _merge(inferred, _json_type(record))
    if not isinstance(inferred, StructType):
        return StructType([])
    return _no_nulls(inferred)


def _head_lines(stream: pa.NativeFile) -> list[bytes]:
    data = stream.read(INFER_BYTES)
    if len(data) == INFER_BYTES:
        data = data[: data.rfind(b"\n") + 1]
    return data.splitlines()


def _json_type(value: Any) -> DataType:
    if value is None:
        return NullType()
    if isinstance(value, bool):
        return BooleanType()
    if isinstance(value, int):
        return LongType()
    if isinstance(value, float):
        return DoubleType()
    if isinstance(value, str):
        return StringType()
    if isinstance(value, list):
        element: DataType = NullType()
        for item in value:
            element = _merge(element, _json_type(item))
        return ArrayType(element, True)
    fields = [StructField(k, _json_type(v), True) for k, v in sorted(value.items())]
    return StructType(fields)


def _merge(a: DataType, b: DataType) -> DataType:
    if isinstance(a, NullType):
        return b
    if isinstance(b, NullType) or a == b:
        return a
    if {type(a), type(b)} == {LongType, DoubleType}:
        return DoubleType()
    if isinstance(a, StructType) and isinstance(b, StructType):
        mine = {f.name: f.dataType for f in a.fields}
        theirs = {f.name: f.dataType for f in b.fields}
        names = sorted(set(mine) | set(theirs))
        return StructType(
            [
                StructField(n, _merge(mine.get(n, NullType()), theirs.get(n, NullType())), True)
                for n in names
            ]
        )
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return ArrayType(_merge(a.elementType, b.elementType), True)
    return StringType()


def _no_nulls(value: DataType) -> Any:
    if isinstance(value, NullType):
        return StringType()
    if isinstance(value, StructType):
        return StructType([StructField(f.name, _no_nulls(f.dataType), True) for f in value.fields])
    if isinstance(value, ArrayType):
        return ArrayType(_no_nulls(value.elementType), True)
    return value
