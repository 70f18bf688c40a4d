"""``df.writeStream.format("natsobj")``: every micro-batch is one manifest commit.

Tasks store Parquet parts exactly as a batch write does; the driver's commit publishes the next
manifest generation with the parts appended (or replacing the dataset in complete mode) and
records ``streams[query id] = batch id`` in it. Readers, sensors and triggers therefore see
whole micro-batches or nothing, and a batch Spark replays from its checkpoint after a crash
(because the crash came between our commit and Spark's own commit log) is recognised by that
entry and not appended twice.

Write ids are ``<query id>.<run id>.<batch id>``: a replay runs under a new run id, so cleaning
up after it can never touch the parts the first attempt committed, while parts a crashed run
left behind are found through the query id and swept by the next run's first commit.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import WriterCommitMessage

try:  # PySpark 4.1: a streaming writer is handed Arrow batches
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as StreamWriterBase

    HANDED_ROWS = False
except ImportError:  # PySpark 4.0: it is handed Rows
    from pyspark.sql.datasource import (  # type: ignore[assignment]
        DataSourceStreamWriter as StreamWriterBase,
    )

    HANDED_ROWS = True
from pyspark.sql.types import StructType

import natsobj
from natsobj.spark.arrowio import rows_as_batches
from natsobj.spark.errors import BadSparkOption
from natsobj.spark.manifest import WRITE_ID_KEY, Manifest, Part, is_data_object, manifest_name
from natsobj.spark.options import BINARY, SourceOptions
from natsobj.spark.storage import delete_quietly, objects_under, open_store, read_manifest
from natsobj.spark.writer import NatsObjWriter, PartsMessage, check_target

log = logging.getLogger("natsobj.spark")

# Local properties Spark's micro-batch execution sets on every job it runs.
QUERY_ID_PROPERTY = "sql.streaming.queryId"
BATCH_ID_PROPERTY = "streaming.sql.batchId"
RUN_ID_PROPERTY = "spark.jobGroup.id"  # the run id: a restarted query gets a new one


@dataclass
class BatchPartsMessage(PartsMessage):
    """What one task of a micro-batch stored, and under which write id."""

    write_id: str = ""
    query_id: str = ""


def prepare_stream_writer(
    opts: SourceOptions, schema: StructType, overwrite: bool
) -> NatsObjStreamWriter:
    """Checked when the query starts (and before each commit): a sink that cannot commit fails
    at ``start()``, not after the first batch has been computed."""
    if opts.layout == BINARY:
        raise BadSparkOption(
            "mode 'binary' is read-only; a streaming sink writes a table dataset",
            bucket=opts.bucket,
        )
    with open_store(opts, create=opts.create_bucket) as store:
        columns = check_target(opts, read_manifest(store, opts.prefix), schema, overwrite)
    return NatsObjStreamWriter(opts, schema, overwrite, columns)


def batch_write_id(context: TaskContext | None) -> tuple[str, str]:
    """(write id, query id) of the micro-batch a task belongs to."""
    if context is None or context.getLocalProperty(QUERY_ID_PROPERTY) is None:
        raise BadSparkOption(
            "the natsobj stream writer runs only inside a streaming query",
            hint='Use df.write.format("natsobj") for a batch write.',
        )
    query = str(context.getLocalProperty(QUERY_ID_PROPERTY))
    run = context.getLocalProperty(RUN_ID_PROPERTY) or "run"
    batch = context.getLocalProperty(BATCH_ID_PROPERTY)
    return f"{query}.{run}.{batch}", query


def run_of(write_id: str) -> str:
    """``<query id>.<run id>.``: the part of a write id shared by one run's batches."""
    return write_id.rpartition(".")[0] + "."


class NatsObjStreamWriter(StreamWriterBase):
    def __init__(
        self,
        opts: SourceOptions,
        schema: StructType,
        overwrite: bool,
        partition_by: tuple[str, ...] = (),
    ) -> None:
        self.opts = opts
        self.schema = schema
        self.overwrite = overwrite  # complete output mode: each batch replaces the dataset
        self.partition_by = partition_by

    def _batch_writer(self, write_id: str) -> NatsObjWriter:
        return NatsObjWriter(self.opts, self.schema, self.overwrite, write_id, self.partition_by)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> BatchPartsMessage:
        write_id, query = batch_write_id(TaskContext.get())
        if HANDED_ROWS:
            iterator = rows_as_batches(iterator, self.schema)
        stored = self._batch_writer(write_id).write(iterator)
        return BatchPartsMessage(stored.partition, stored.attempt, stored.parts, write_id, query)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        reports = [m for m in messages if isinstance(m, BatchPartsMessage)]
        if not reports:
            return  # no task ran: an empty batch commits nothing
        write_id, query = reports[0].write_id, reports[0].query_id
        if not any(m.parts for m in reports):
            log.info("natsobj stream: batch %d of %s is empty", batchId, self.opts.where)
            return  # a generation per empty batch would wake every sensor for nothing
        committer = MicroBatchCommit(
            self.opts, self.schema, self.overwrite, write_id, self.partition_by
        )
        committer.stream = (query, batchId)
        committer.commit(list(reports))
        if not committer.built_on.startswith(run_of(write_id)):
            # The first commit of a run (or one after another writer's): a killed earlier run
            # may have left parts. Later commits of the same run have nothing new to sweep.
            with open_store(self.opts) as store:
                sweep_dead_runs(store, self.opts.prefix, query, write_id)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        reports = [m for m in messages if isinstance(m, BatchPartsMessage)]
        if reports:  # without a report the write id is unknown; the next commit sweeps
            self._batch_writer(reports[0].write_id).abort(list(reports))


class MicroBatchCommit(NatsObjWriter):
    """The batch writer's commit, skipped when the manifest already holds this batch."""

    built_on = ""  # write id of the generation this commit replaced (or found committed)

    def _publish_over(
        self,
        store: natsobj.ObjectStore,
        parts: list[Part],
        previous: Manifest | None,
        expected: int,
    ) -> tuple[Manifest | None, list[str]]:
        assert self.stream is not None
        query, batch = self.stream
        self.built_on = previous.write_id if previous is not None else ""
        if previous is not None and previous.committed_batch(query) >= batch:
            log.warning(
                "natsobj stream: %s already holds batch %d of query %s (a replay after a "
                "failure); not appending it again",
                self.opts.where,
                batch,
                query,
            )
            return None, []  # commit() then deletes this attempt's parts
        return super()._publish_over(store, parts, previous, expected)


def sweep_dead_runs(store: natsobj.ObjectStore, prefix: str, query: str, write_id: str) -> int:
    """Delete parts earlier runs of ``query`` stored but never committed (the run was killed
    mid-batch). Only one run of a query writes at a time, so whatever such a part is, no
    manifest lists it and no task will."""
    manifest = read_manifest(store, prefix)
    if manifest is None:
        return 0
    live = {p.name for p in manifest.parts} | manifest.in_folder()
    live.add(manifest_name(prefix))  # it carries the write id of the commit that made it
    dead = [
        info.name
        for info in objects_under(store, prefix)
        if info.metadata.get(WRITE_ID_KEY, "").startswith(query + ".")
        and info.metadata.get(WRITE_ID_KEY) != write_id
        and info.name not in live
        and is_data_object(prefix, info.name)
    ]
    deleted = delete_quietly(store, dead)
    if deleted:
        log.info("natsobj stream: swept %d parts of dead runs from %s", deleted, prefix)
    return deleted
