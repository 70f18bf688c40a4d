"""The write path: tasks stream Parquet parts, the driver publishes the manifest or cleans up.

Visibility rule: nothing a write stores is visible until ``commit`` publishes the manifest, and
``abort`` (or a failed commit) deletes every part the write stored, found through the write id
each part carries, so parts of killed or speculative task attempts are swept as well.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

import natsobj
from natsobj.errors import ObjectChanged, in_words_of
from natsobj.retry import CONFLICT
from natsobj.spark.arrowio import ObjectSplitter, RowCount, parquet_stream
from natsobj.spark.errors import (
    BadSparkOption,
    DatasetChanged,
    DatasetExists,
    WriteAborted,
)
from natsobj.spark.handoff import consume_behind
from natsobj.spark.manifest import (
    WRITE_ID_KEY,
    Manifest,
    Part,
    abort_marker,
    expiring,
    is_data_object,
    manifest_name,
    merge_schemas,
    next_generation,
    part_name,
)
from natsobj.spark.options import SourceOptions
from natsobj.spark.pushdown import file_stats
from natsobj.spark.storage import (
    delete_quietly,
    expire_quietly,
    is_aborted,
    manifest_for_update,
    open_store,
    read_manifest,
    strays,
)
from natsobj.spark.wording import spark_words

log = logging.getLogger("natsobj.spark")


@dataclass
class PartsMessage(WriterCommitMessage):
    """What one task stored: the driver lists these parts in the manifest."""

    partition: int
    attempt: int
    parts: list[Part] = field(default_factory=list)


def prepare_writer(opts: SourceOptions, schema: StructType, overwrite: bool) -> NatsObjWriter:
    """Driver-side checks before any task runs, so a doomed write fails in seconds."""
    with open_store(opts, create=opts.create_bucket) as store:
        check_target(opts, read_manifest(store, opts.prefix), schema, overwrite)
    return NatsObjWriter(opts, schema, overwrite, opts.write_id or uuid.uuid4().hex)


def check_target(
    opts: SourceOptions, previous: Manifest | None, schema: StructType, overwrite: bool
) -> None:
    """Refuse a write that cannot commit: if_exists=error over a dataset, or an append whose
    columns differ from the dataset's."""
    if opts.if_exists and overwrite:
        raise BadSparkOption(
            f"option if_exists={opts.if_exists!r} needs .mode('append'), not overwrite",
            bucket=opts.bucket,
        )
    if previous is not None and opts.if_exists == "error":
        raise DatasetExists(f"dataset {opts.prefix!r} already exists", bucket=opts.bucket)
    if previous is not None and not overwrite:
        merge_schemas(previous.schema, schema.jsonValue(), where=opts.prefix)


class NatsObjWriter(DataSourceArrowWriter):
    # (query id, batch id) when a streaming sink commits a micro-batch: kept in the manifest.
    stream: tuple[str, int] | None = None

    def __init__(
        self, opts: SourceOptions, schema: StructType, overwrite: bool, write_id: str
    ) -> None:
        self.opts = opts
        self.schema = schema
        self.overwrite = overwrite
        self.write_id = write_id

    # -- executors --------------------------------------------------------------------------------

    @in_words_of(spark_words)
    def write(self, iterator: Iterator[pa.RecordBatch]) -> PartsMessage:
        context = TaskContext.get()
        message = PartsMessage(
            partition=context.partitionId() if context else 0,
            attempt=context.attemptNumber() if context else 0,
        )
        with open_store(self.opts, create=self.opts.create_bucket) as store:
            try:
                # Encode and upload on a thread while this one keeps taking rows from the JVM.
                consume_behind(iterator, lambda batches: self._put_parts(store, message, batches))
            except BaseException:
                with contextlib.suppress(Exception):  # abort sweeps whatever is left
                    delete_quietly(store, [p.name for p in message.parts])
                raise
        return message

    def _put_parts(
        self, store: natsobj.ObjectStore, message: PartsMessage, batches: Iterator[pa.RecordBatch]
    ) -> None:
        for part_batches in ObjectSplitter(batches, self.opts.rows_per_object):
            message.parts.append(self._put_part(store, message, part_batches))
            if is_aborted(store, self.opts.prefix, self.write_id):
                raise WriteAborted(
                    "the write was aborted while this task ran", bucket=self.opts.bucket
                )

    def _put_part(
        self, store: natsobj.ObjectStore, message: PartsMessage, batches: Iterator[pa.RecordBatch]
    ) -> Part:
        name = part_name(self.opts.prefix, message.partition, message.attempt)
        counter = RowCount()
        stream = parquet_stream(
            batches,
            compression=self.opts.compression,
            row_group_rows=self.opts.row_group_rows,
            counter=counter,
            dictionary=self.opts.dictionary,
        )
        info = store.put(name, stream, metadata={WRITE_ID_KEY: self.write_id})
        stats = file_stats(counter.metadata) if counter.metadata is not None else None
        return Part(name, counter.rows, info.size, info.digest, stats)

    # -- driver -----------------------------------------------------------------------------------

    @in_words_of(spark_words)
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        parts = _parts(messages)
        with open_store(self.opts) as store:
            try:
                manifest, doomed = self._publish(store, parts)
            except BaseException:
                with contextlib.suppress(Exception):  # keep the commit's own error
                    self._clean_up(store, parts)
                raise
            if manifest is None:  # if_exists=ignore and the dataset appeared meanwhile
                self._clean_up(store, parts)
                return
            swept = strays(store, self.opts.prefix, self.write_id, {p.name for p in parts})
            deleted = delete_quietly(store, [*self._own_data_objects(doomed), *swept])
            self._expire_superseded(store, manifest)
        log.info(
            "natsobj: committed %s generation %d: %d parts, %d rows; deleted %d old objects",
            self.opts.where,
            manifest.generation,
            len(manifest.parts),
            manifest.num_rows,
            deleted,
        )

    def _expire_superseded(self, store: natsobj.ObjectStore, manifest: Manifest) -> None:
        """Give the parts this commit superseded their TTL (``superseded_ttl``), once the
        manifest that no longer lists them is published; under the same trust rule as
        deleting: only this dataset's own data objects. A part that cannot be given its TTL
        stays listed under ``retained`` and is deleted by the first commit after its
        ``expires_at``."""
        ttl = self.opts.superseded_ttl
        if ttl is None:
            return
        names = self._own_data_objects(list(expiring(manifest)))
        if names:
            given = expire_quietly(store, names, ttl)
            log.info(
                "natsobj: %d of %d superseded parts of %s expire in %s",
                given,
                len(names),
                self.opts.where,
                ttl,
            )

    def _own_data_objects(self, names: list[str]) -> list[str]:
        """The manifest is an object any bucket writer can replace, so the names it lists are
        untrusted: only this dataset's own data objects may be deleted, never an object of
        another dataset or one the data-object rule does not match."""
        own = [n for n in names if is_data_object(self.opts.prefix, n)]
        for name in sorted(set(names) - set(own)):
            log.warning(
                "natsobj: the manifest of %s lists %r, which is not one of its data objects; "
                "not deleting it (was the manifest edited by another writer?)",
                self.opts.where,
                name,
            )
        return own

    def _publish(
        self, store: natsobj.ObjectStore, parts: list[Part]
    ) -> tuple[Manifest | None, list[str]]:
        """Publish the next generation as a compare-and-swap on the manifest: when another
        writer commits in between, build again on its generation, so concurrent committers
        are serialized and none loses the other's parts."""
        for attempt in CONFLICT.tries():
            if attempt:
                CONFLICT.pause_blocking(attempt)
            try:
                previous, expected = manifest_for_update(store, self.opts.prefix)
                return self._publish_over(store, parts, previous, expected)
            except ObjectChanged:
                continue
        raise DatasetChanged(
            f"dataset {self.opts.prefix!r} kept changing under {CONFLICT.attempts} commit attempts",
            bucket=self.opts.bucket,
        )

    def _publish_over(
        self,
        store: natsobj.ObjectStore,
        parts: list[Part],
        previous: Manifest | None,
        expected: int,
    ) -> tuple[Manifest | None, list[str]]:
        """Publish the generation after ``previous``, the manifest read at ``expected``."""
        if previous is not None and self.opts.if_exists == "error":
            raise DatasetExists(
                f"dataset {self.opts.prefix!r} was created by another writer during this write",
                bucket=self.opts.bucket,
            )
        if previous is not None and self.opts.if_exists == "ignore":
            return None, []
        manifest, doomed = next_generation(
            previous,
            prefix=self.opts.prefix,
            schema=self.schema.jsonValue(),
            parts=parts,
            overwrite=self.overwrite,
            write_id=self.write_id,
            retain=self.opts.retain_generations,
            stream=self.stream,
            superseded_ttl=self.opts.superseded_ttl,
        )
        store.put(
            manifest_name(self.opts.prefix),
            manifest.to_json(),
            metadata={WRITE_ID_KEY: self.write_id, "generation": str(manifest.generation)},
            expected_sequence=expected,
        )
        return manifest, doomed

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        try:
            with open_store(self.opts) as store:
                store.put(abort_marker(self.opts.prefix, self.write_id), b"")
                self._clean_up(store, _parts(messages))
        except Exception as exc:  # never hide the task failure that made Spark abort
            log.warning("natsobj: abort of %s could not delete parts: %s", self.opts.where, exc)

    def _clean_up(self, store: natsobj.ObjectStore, parts: list[Part]) -> None:
        names = {p.name for p in parts}
        names.update(strays(store, self.opts.prefix, self.write_id, keep=set()))
        deleted = delete_quietly(store, sorted(names))
        log.info("natsobj: aborted write to %s, deleted %d parts", self.opts.where, deleted)


def _parts(messages: list[WriterCommitMessage | None]) -> list[Part]:
    return [p for m in messages if isinstance(m, PartsMessage) for p in m.parts]
