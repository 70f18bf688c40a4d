"""The read paths: one input partition per part object (table mode), or objects grouped into
partitions of bounded size (binary mode). Tasks connect by themselves and stream objects."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import (
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

import natsobj
from natsobj.errors import ObjectNotFound, in_words_of
from natsobj.matching import NameMatcher
from natsobj.spark.arrowio import conform, spark_arrow_schema
from natsobj.spark.errors import DatasetChanged
from natsobj.spark.handoff import produce_ahead
from natsobj.spark.manifest import Part, retained_name
from natsobj.spark.options import SourceOptions
from natsobj.spark.partitions import UNPARTITIONED, Layout, add_constants, may_hold
from natsobj.spark.pushdown import Condition, conditions, may_match, row_group_stats
from natsobj.spark.scan_claims import first_push, new_plan, serves_stage
from natsobj.spark.storage import objects_under, open_store
from natsobj.spark.wording import spark_words

if TYPE_CHECKING:
    from pyspark.sql.datasource import Filter  # PySpark 4.1: pushFilters is not called before

# Objects up to this size are decoded from memory; larger ones are spooled to a temp file.
SPILL_BYTES = 256 * 1024 * 1024
BATCH_ROWS = 65_536
# Binary mode packs objects into one partition up to this many bytes.
BINARY_PARTITION_BYTES = 64 * 1024 * 1024
T = TypeVar("T")

BINARY_SCHEMA = StructType(
    [
        StructField("name", StringType(), False),
        StructField("size", LongType(), False),
        StructField("mtime", TimestampType(), True),
        StructField("digest", StringType(), True),
        StructField("content", BinaryType(), True),
    ]
)


@dataclass
class PartPartition(InputPartition):
    name: str
    size: int
    values: tuple[Any, ...] = ()  # the part's partition values, in the layout's order


@dataclass
class PrunedPartition(InputPartition):
    """One task of a pruned plan: the part the filters keep (none when they keep nothing) and
    a share of the parts they exclude, read too unless the task serves the scan that pushed
    the filters (``natsobj.spark.scan_claims``), so the plan's tasks together read everything
    for any other scan."""

    plan: str
    index: int  # the partition's place in the plan, which is Spark's partition id in its scan
    kept: tuple[PartPartition, ...]
    excluded: tuple[PartPartition, ...]


@dataclass
class ObjectsPartition(InputPartition):
    names: tuple[str, ...]


class TableReader(DataSourceReader):
    """Reads the parts of one manifest generation, pinned when the query was planned."""

    def __init__(
        self,
        opts: SourceOptions,
        schema: StructType,
        parts: tuple[Part, ...],
        generation: int,
        layout: Layout = UNPARTITIONED,
    ) -> None:
        self.opts = opts
        self.schema = schema
        self.parts = parts
        self.generation = generation  # 0 when planned from a listing
        self.layout = layout  # hive-style partition columns, filled in from the names

    def partitions(self) -> list[InputPartition]:
        return list(self._planned())

    def _planned(self) -> Iterator[PartPartition]:
        schema = self.schema.jsonValue()
        for p in self.parts:
            yield PartPartition(
                p.name, p.size, self.layout.values(self.opts.prefix, p.name, schema)
            )

    @in_words_of(spark_words)
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, PartPartition):  # a dataset with no parts
            return
        yield from self._read_parts((partition,), ())

    def _read_parts(
        self, parts: Iterable[PartPartition], where: tuple[Condition, ...]
    ) -> Iterator[pa.RecordBatch]:
        target = spark_arrow_schema(self.schema)
        for part in parts:
            # Fetch and decode on a thread while this one hands the batches to the JVM.
            yield from produce_ahead(partial(self._batches, part, target, where))

    def _batches(
        self, partition: PartPartition, target: pa.Schema, where: tuple[Condition, ...]
    ) -> Iterator[pa.RecordBatch]:
        with contextlib.ExitStack() as stack, open_store(self.opts) as store:
            parquet, row_groups = self._open_part(store, partition, stack, where)
            fixed = {
                c: v
                for c, v in zip(self.layout.columns, partition.values, strict=True)
                if c in target.names
            }
            stored = [n for n in target.names if n not in fixed]
            missing = [n for n in stored if n not in parquet.schema_arrow.names]
            if missing:
                raise KeyError(
                    f"bucket {self.opts.bucket!r}, object {partition.name!r} has no column(s) "
                    f"{missing}; it has {parquet.schema_arrow.names}. Fix the read schema."
                )
            batches = parquet.iter_batches(
                batch_size=BATCH_ROWS,
                row_groups=row_groups,
                columns=stored,
                use_threads=False,
            )
            for batch in batches:
                try:
                    yield conform(add_constants(batch, fixed, target), target)
                except (pa.ArrowInvalid, ValueError) as exc:
                    raise ValueError(
                        f"bucket {self.opts.bucket!r}, object {partition.name!r} does not fit "
                        f"the read schema: {exc}. Pass a matching schema or make the column "
                        "nullable."
                    ) from None

    def _open_part(
        self,
        store: natsobj.ObjectStore,
        part: PartPartition,
        stack: contextlib.ExitStack,
        where: tuple[Condition, ...],
    ) -> tuple[pq.ParquetFile, list[int]]:
        """The part and the row groups to read. With no filters, the whole part, downloaded and
        verified against its SHA-256. With filters, the footer first, through a ranged reader,
        then only the column chunks of the row groups the statistics keep (a ranged read is not
        checked against the object's SHA-256, which covers the whole object); when every row
        group is kept the part is downloaded whole and verified instead."""
        if where:
            with self._missing_part(part):
                ranged = stack.enter_context(
                    self._at_either_name(
                        part,
                        lambda name: store.open_range(
                            name, allow_missing_digest=self.opts.allow_missing_digest
                        ),
                    )
                )
                parquet = pq.ParquetFile(ranged, pre_buffer=True)
            metadata = parquet.metadata
            kept = [
                i
                for i in range(metadata.num_row_groups)
                if may_match(row_group_stats(metadata, i), where)
            ]
            if len(kept) < metadata.num_row_groups:
                return parquet, kept
        with self._missing_part(part):
            parquet = pq.ParquetFile(self._download(store, part, stack))
        return parquet, list(range(parquet.metadata.num_row_groups))

    @contextlib.contextmanager
    def _missing_part(self, part: PartPartition) -> Iterator[None]:
        """A part of a pinned generation that is gone raises ``DatasetChanged``."""
        try:
            yield
        except ObjectNotFound:
            if not self.generation:
                raise
            raise DatasetChanged(
                f"part {part.name!r} of generation {self.generation} is gone",
                bucket=self.opts.bucket,
                name=part.name,
            ) from None

    def _at_either_name(self, part: PartPartition, fetch: Callable[[str], T]) -> T:
        """``fetch`` of the part at its name, else, when an overwrite has superseded the
        pinned generation since, at its ``retained_name``, where that commit moves it."""
        try:
            return fetch(part.name)
        except ObjectNotFound:
            if not self.generation:
                raise
        return fetch(retained_name(part.name))

    def _download(
        self, store: natsobj.ObjectStore, part: PartPartition, stack: contextlib.ExitStack
    ) -> pa.NativeFile | str:
        return self._at_either_name(
            part, lambda name: fetch_whole(store, self.opts, name, part.size, stack)
        )


def fetch_whole(
    store: natsobj.ObjectStore,
    opts: SourceOptions,
    name: str,
    size: int,
    stack: contextlib.ExitStack,
) -> pa.NativeFile | str:
    """An object whole and checked against its digest: in memory, or spooled to a temp file
    (removed with ``stack``) when it is large."""
    if size <= SPILL_BYTES:
        return pa.BufferReader(
            store.get_bytes(name, allow_missing_digest=opts.allow_missing_digest)
        )
    path = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "object"
    store.get_file(name, path, allow_missing_digest=opts.allow_missing_digest)
    return str(path)


class FilteringTableReader(TableReader):
    """A table reader that takes Spark's filters (option ``pushdown``; Spark calls
    ``pushFilters`` only with ``spark.sql.python.filterPushdown.enabled``, and refuses a reader
    that has it when that is off, hence a class of its own). Parts and row groups whose
    statistics exclude the filters are skipped by the scan that pushed them; any other scan
    Spark runs this plan for reads everything (``natsobj.spark.scan_claims``). Spark still
    applies every filter to the rows."""

    load_id: str = ""  # the load() this reader plans for, set by the data source
    where: tuple[Condition, ...] = ()
    plan: str | None = None  # the pruned plan's claim, when the filters prune

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        where = tuple(conditions(filters))
        with open_store(self.opts) as store:
            # Every push counts, also one with nothing to decide: the last push's plan is the
            # one every scan of this load uses.
            if first_push(store, self.load_id) and where:
                self.plan = new_plan(store)
        if self.plan is not None:
            self.where = where
        return filters

    def partitions(self) -> list[InputPartition]:
        planned = list(self._planned())
        if self.plan is None:
            return list[InputPartition](planned)
        kept: list[PartPartition] = []
        excluded: list[PartPartition] = []
        for p, part in zip(self.parts, planned, strict=True):
            keep = may_match(p.stats, self.where) and may_hold(self.layout, part.values, self.where)
            (kept if keep else excluded).append(part)
        if not kept:
            return [PrunedPartition(self.plan, 0, (), tuple(excluded))]
        return [
            PrunedPartition(self.plan, i, (part,), tuple(excluded[i :: len(kept)]))
            for i, part in enumerate(kept)
        ]

    @in_words_of(spark_words)
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, PrunedPartition):
            yield from super().read(partition)
            return
        if self._serves_pusher(partition):
            # Row groups have no statistics of partition columns, which the folders decided.
            stored = tuple(c for c in self.where if c.column not in self.layout.columns)
            yield from self._read_parts(partition.kept, stored)
        else:
            yield from self._read_parts(partition.kept + partition.excluded, ())

    def _serves_pusher(self, partition: PrunedPartition) -> bool:
        """Whether this task serves the scan that pushed the filters: its stage is the first
        that ran the plan, and its partition id is the partition's place in the plan (in a
        stage that scans the plan twice, a union, the second scan's ids come after the first's).
        """
        from pyspark import TaskContext

        task = TaskContext.get()
        if task is None or task.partitionId() != partition.index:
            return False
        with open_store(self.opts) as store:
            return serves_stage(store, partition.plan, task.stageId())


class BinaryReader(DataSourceReader):
    """Raw objects as rows of (name, size, mtime, digest, content), like Spark's binaryFile."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        matcher = NameMatcher(opts.glob, "glob") if opts.glob else None
        with open_store(opts) as store:
            self.objects = [
                (info.name, info.size)
                for info in objects_under(store, opts.prefix)
                if matcher is None or matcher.matches(info.name)
            ]

    def partitions(self) -> list[InputPartition]:
        groups: list[list[str]] = []
        filled = 0
        for name, size in self.objects:
            if not groups or filled + size > BINARY_PARTITION_BYTES:
                groups.append([])
                filled = 0
            groups[-1].append(name)
            filled += size
        return [ObjectsPartition(tuple(g)) for g in groups]

    @in_words_of(spark_words)
    def read(self, partition: InputPartition) -> Iterator[tuple]:
        if not isinstance(partition, ObjectsPartition):
            return
        with open_store(self.opts) as store:
            for name in partition.names:
                with store.get(name, allow_missing_digest=self.opts.allow_missing_digest) as reader:
                    content = reader.read()
                    info = reader.info
                yield (name, info.size, info.mtime, info.digest, content)
