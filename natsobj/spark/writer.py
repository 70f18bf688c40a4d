"""The write path: tasks stream Parquet parts, the driver publishes the manifest or cleans up.

Visibility rule: nothing a write stores is visible to a reader of the manifest until ``commit``
publishes it, and ``abort`` (or a failed commit) deletes every part the write stored, found
through the write id each part carries, so parts of killed or speculative task attempts are
swept as well. A reader of the folder (pandas, DuckDB) does see the parts of a write still
running: they are stored in place. After the commit the parts it superseded leave the folder
(``NatsObjWriter._move_out``).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

import natsobj
from natsobj.aio.put_modes import OVERWRITE, PutMode
from natsobj.errors import ObjectChanged, in_words_of
from natsobj.model import ObjectInfo
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
    is_own_object,
    manifest_name,
    merge_schemas,
    next_generation,
    part_name,
    retained_name,
    superseded_name,
)
from natsobj.spark.options import SourceOptions
from natsobj.spark.partitions import resolve, split, stored_schema
from natsobj.spark.pushdown import file_stats
from natsobj.spark.storage import (
    delete_quietly,
    expire_quietly,
    is_aborted,
    manifest_for_update,
    move_quietly,
    objects_under,
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
        columns = check_target(opts, read_manifest(store, opts.prefix), schema, overwrite)
    return NatsObjWriter(opts, schema, overwrite, opts.write_id or uuid.uuid4().hex, columns)


def check_target(
    opts: SourceOptions, previous: Manifest | None, schema: StructType, overwrite: bool
) -> tuple[str, ...]:
    """Refuse a write that cannot commit: if_exists=error over a dataset, or an append whose
    columns or partitioning differ from the dataset's. Returns the partition columns."""
    if opts.if_exists and overwrite:
        raise BadSparkOption(
            f"option if_exists={opts.if_exists!r} needs .mode('append'), not overwrite",
            bucket=opts.bucket,
        )
    if previous is not None and opts.if_exists == "error":
        raise DatasetExists(f"dataset {opts.prefix!r} already exists", bucket=opts.bucket)
    columns = resolve(
        opts.partition_by,
        schema.jsonValue(),
        previous.partition_columns if previous is not None else None,
        overwrite=overwrite,
        where=opts.where,
    )
    if previous is not None and not overwrite:
        merge_schemas(
            previous.schema, stored_schema(schema.jsonValue(), columns), where=opts.prefix
        )
    return columns


class NatsObjWriter(DataSourceArrowWriter):
    # (query id, batch id) when a streaming sink commits a micro-batch: kept in the manifest.
    stream: tuple[str, int] | None = None

    def __init__(
        self,
        opts: SourceOptions,
        schema: StructType,
        overwrite: bool,
        write_id: str,
        partition_by: tuple[str, ...] = (),
    ) -> None:
        self.opts = opts
        self.schema = schema
        self.overwrite = overwrite
        self.write_id = write_id
        self.partition_by = partition_by  # hive-style folders: natsobj.spark.partitions

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
        runs: Iterable[tuple[str, Iterable[pa.RecordBatch]]]
        if self.partition_by:
            runs = PartitionRuns(batches, self.partition_by, self.opts.rows_per_object)
        else:
            runs = (("", run) for run in ObjectSplitter(batches, self.opts.rows_per_object))
        for folder, part_batches in runs:
            message.parts.append(self._put_part(store, message, part_batches, folder))
            if is_aborted(store, self.opts.prefix, self.write_id):
                raise WriteAborted(
                    "the write was aborted while this task ran", bucket=self.opts.bucket
                )

    def _put_part(
        self,
        store: natsobj.ObjectStore,
        message: PartsMessage,
        batches: Iterable[pa.RecordBatch],
        folder: str,
    ) -> Part:
        name = part_name(self.opts.prefix, message.partition, message.attempt, folder)
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
            try:
                self._tidy(store, manifest, doomed, parts)
            except Exception as exc:
                log.warning(
                    "natsobj: committed %s generation %d, then could not tidy after it (%s); "
                    "the next commit moves superseded parts still in the folder",
                    self.opts.where,
                    manifest.generation,
                    exc,
                )

    def _tidy(
        self, store: natsobj.ObjectStore, manifest: Manifest, doomed: list[str], parts: list[Part]
    ) -> None:
        """What follows a published manifest: superseded parts moved out of the folder,
        dropped and stray ones deleted, TTLs given. The write is committed by then, so
        ``commit`` logs a failure here instead of raising it: Spark answers a failed commit
        with ``abort``, which would delete the parts the manifest now lists."""
        infos = objects_under(store, self.opts.prefix)
        moved = self._move_out(store, manifest, infos)
        swept = strays(infos, self.opts.prefix, self.write_id, {p.name for p in parts})
        left = {superseded_name(n) for n in doomed} & {i.name for i in infos}
        deleted = delete_quietly(store, [*self._own_data_objects(sorted({*doomed, *left})), *swept])
        self._expire_superseded(store, manifest)
        log.info(
            "natsobj: committed %s generation %d: %d parts, %d rows; moved %d superseded "
            "parts out of the folder, deleted %d old objects",
            self.opts.where,
            manifest.generation,
            len(manifest.parts),
            manifest.num_rows,
            moved,
            deleted,
        )

    def _move_out(
        self, store: natsobj.ObjectStore, manifest: Manifest, infos: list[ObjectInfo]
    ) -> int:
        """Move the parts ``manifest`` retains out of the dataset's folder (``infos``) to their
        ``retained_name``, where it lists them, once it is published: a reader of the folder
        then finds the current generation only, and a crash before the moves leaves that
        generation whole. So parts a commit that died here left are moved by the next."""
        current = {p.name for p in manifest.parts}
        left = (manifest.in_folder() - current) & {i.name for i in infos}
        names = self._own_data_objects(sorted(left))
        return move_quietly(store, [(n, retained_name(n)) for n in names])

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
        untrusted: only this dataset's own data objects (in its folder or at their retained
        names) may be moved or deleted, never an object of another dataset or one the
        data-object rule does not match."""
        own = [n for n in names if is_own_object(self.opts.prefix, n)]
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
            schema=stored_schema(self.schema.jsonValue(), self.partition_by),
            partition_columns=self.partition_by,
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
            mode=OVERWRITE if expected is None else PutMode.update(expected),
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
        infos = objects_under(store, self.opts.prefix)
        names.update(strays(infos, self.opts.prefix, self.write_id, keep=set()))
        deleted = delete_quietly(store, sorted(names))
        log.info("natsobj: aborted write to %s, deleted %d parts", self.opts.where, deleted)


def _parts(messages: list[WriterCommitMessage | None]) -> list[Part]:
    return [p for m in messages if isinstance(m, PartsMessage) for p in m.parts]


# A task holds at most about this much Arrow data of partitions not yet stored.
PARTITION_BUFFER_BYTES = 64 * 1024 * 1024


class PartitionRuns:
    """A task's rows by partition, as ``(folder, batches)`` runs of one part object each.

    Spark's Parquet source sorts a task's rows by the partition columns to write one file at
    a time; a Python data source is not given that sort, so rows are held per partition and a
    run goes out when it reaches ``rows_per_object`` rows, when the rows held pass
    ``PARTITION_BUFFER_BYTES`` (the largest partition), and at the end. A task whose
    partitions fit in memory thus stores one object per partition, as Spark's source does."""

    def __init__(
        self, batches: Iterable[pa.RecordBatch], columns: tuple[str, ...], rows_per_object: int
    ) -> None:
        self._batches = batches
        self._columns = columns
        self._limit = rows_per_object
        self._held: dict[str, list[pa.RecordBatch]] = {}
        self._rows: dict[str, int] = {}
        self._bytes: dict[str, int] = {}

    def __iter__(self) -> Iterator[tuple[str, list[pa.RecordBatch]]]:
        for batch in self._batches:
            for folder, rows in split(batch, self._columns):
                self._held.setdefault(folder, []).append(rows)
                self._rows[folder] = self._rows.get(folder, 0) + rows.num_rows
                self._bytes[folder] = self._bytes.get(folder, 0) + rows.nbytes
                while self._rows.get(folder, 0) >= self._limit:
                    yield folder, self._take(folder, self._limit)
            while sum(self._bytes.values()) > PARTITION_BUFFER_BYTES:
                largest = max(self._bytes, key=self._bytes.__getitem__)
                yield largest, self._take(largest, self._rows[largest])
        for folder in sorted(self._held):
            yield folder, self._take(folder, self._rows[folder])

    def _take(self, folder: str, rows: int) -> list[pa.RecordBatch]:
        """The first ``rows`` rows held for ``folder``; the rest stay held."""
        taken: list[pa.RecordBatch] = []
        held = self._held.pop(folder)
        del self._rows[folder], self._bytes[folder]
        while held and rows > 0:
            batch = held.pop(0)
            head, tail = batch.slice(0, rows), batch.slice(rows)
            taken.append(head)
            rows -= head.num_rows
            if tail.num_rows:
                held.insert(0, tail)
        if held:
            self._held[folder] = held
            self._rows[folder] = sum(b.num_rows for b in held)
            self._bytes[folder] = sum(b.nbytes for b in held)
        return taken
