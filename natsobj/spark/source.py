"""The ``natsobj`` PySpark data source: option parsing and planning on the driver, tasks in
``reader``/``writer``. Every method parses the options first, so a bad option fails with a
Python message at ``load()`` / ``save()`` instead of inside a task."""

from __future__ import annotations

import uuid

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from natsobj.errors import in_words_of
from natsobj.spark.errors import BadSparkOption
from natsobj.spark.file_options import PARQUET, check_write_format, format_of
from natsobj.spark.file_reader import FileTableReader, infer_schema
from natsobj.spark.folders import folder_read
from natsobj.spark.options import BINARY, SourceOptions
from natsobj.spark.partitions import dataset_layout, with_partitions
from natsobj.spark.reader import (
    BINARY_SCHEMA,
    BinaryReader,
    FilteringTableReader,
    TableReader,
)
from natsobj.spark.storage import TablePlan, load_plan, open_store
from natsobj.spark.stream_options import StreamOptions, source_options
from natsobj.spark.stream_reader import NatsObjStreamReader
from natsobj.spark.stream_writer import prepare_stream_writer
from natsobj.spark.wording import spark_words
from natsobj.spark.writer import prepare_writer

FORMAT_NAME = "natsobj"


class NatsObjDataSource(DataSource):
    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        # Spark makes this object once per load() and pickles it to every later planning of
        # that DataFrame: the id names the load, whose read plan all its scans share.
        self.load_id = uuid.uuid4().hex

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def _options(self) -> SourceOptions:
        return SourceOptions.parse(self.options)

    @in_words_of(spark_words)
    def schema(self) -> StructType:
        # readStream asks for the schema too, with its streaming options among the others.
        opts = StreamOptions.parse(self.options, header_default=False).source
        if opts.layout == BINARY:
            return BINARY_SCHEMA
        with open_store(opts) as store:
            folder = folder_read(store, opts)
            if folder is not None:
                return StructType.fromJson(folder.schema())
            plan = load_plan(store, opts)
            if plan.manifest is not None:
                return StructType.fromJson(plan.manifest.schema)
            # Objects without a manifest: the schema of the first, as spark.read.parquet (or
            # csv, json) does by default (no merging).
            stored = infer_schema(store, opts, plan.parts[0])
            if _reads_files(plan, opts):
                return stored
        # Hive-style col=value folders of Parquet become columns after the data, as Spark
        # discovers them.
        layout = dataset_layout(
            opts.prefix, [p.name for p in plan.parts], manifest=None, where=opts.where
        )
        return StructType.fromJson(with_partitions(stored.jsonValue(), layout))

    @in_words_of(spark_words)
    def reader(self, schema: StructType) -> DataSourceReader:
        opts = self._options()
        if opts.layout == BINARY:
            return BinaryReader(opts)
        with open_store(opts) as store:
            folder = folder_read(store, opts)
            plan = folder.plan(opts) if folder else load_plan(store, opts)
        if _reads_files(plan, opts):
            return FileTableReader(opts, schema, plan.parts)
        generation = plan.manifest.generation if plan.manifest else 0
        reader = FilteringTableReader if opts.pushdown else TableReader
        if folder is not None:
            made = reader(
                folder.reader_options(opts), schema, plan.parts, generation, folder.layout()
            )
        else:
            layout = dataset_layout(
                opts.prefix, [p.name for p in plan.parts], manifest=plan.manifest, where=opts.where
            )
            made = reader(opts, schema, plan.parts, generation, layout)
        if isinstance(made, FilteringTableReader):
            made.load_id = self.load_id
        return made

    @in_words_of(spark_words)
    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        opts = self._options()
        if opts.layout == BINARY:
            raise BadSparkOption(
                "layout 'binary' is read-only",
                bucket=opts.bucket,
                hint="Write tables without the layout option; store files with `natsobj put`.",
            )
        check_write_format(opts.object_format, opts.bucket)
        return prepare_writer(opts, schema, overwrite)

    # Structured Streaming: see stream_reader / stream_writer.
    @in_words_of(spark_words)
    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return NatsObjStreamReader(StreamOptions.parse(self.options), schema)

    @in_words_of(spark_words)
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        opts = source_options(self.options)
        check_write_format(opts.object_format, opts.bucket)
        return prepare_stream_writer(opts, schema, overwrite)


def _reads_files(plan: TablePlan, opts: SourceOptions) -> bool:
    """A read of objects without a manifest, some not Parquet (CSV, JSON, text): read by
    ``FileTableReader``, with no partition columns."""
    return plan.manifest is None and any(
        format_of(p.name, opts.object_format) != PARQUET for p in plan.parts
    )
