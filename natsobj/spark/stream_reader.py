"""``spark.readStream.format("natsobj")``: the objects that land in a bucket, as micro-batches.

Offsets are change cursors (``natsobj.spark.offsets``): ``{"sequence": n, "created": t}``
means "every meta record up to stream sequence n of the bucket created at t has been planned".
The creation time tells a checkpoint written against a bucket that was deleted and created
again since, whose sequences mean nothing now: that query fails with
``CheckpointOfAnotherBucket`` (a ``BucketRecreated``) instead of silently skipping what the new
bucket holds, or with option onRecreated=restart reads the new bucket from its beginning
(offsets of older checkpoints, without it, are checked by their sequence alone).
A batch (start, end] is planned on the driver from the meta
records alone (``changes()``); executors then fetch the planned objects in parallel. Planning
is a pure function of the meta stream, so when Spark replays a batch from its checkpoint it
plans the same objects again: with an idempotent sink that is exactly once.

Meta records are rolled up per name: when a name is overwritten only its newest record is
kept. A batch therefore sees each name at its latest version, and a version overwritten before
the batch read it is skipped (the newer version lies after it and is in a later batch); the
skip is counted in a warning. Mixed data is impossible: a task reads exactly the version it
planned (same nuid, digest checked) or nothing.
"""

from __future__ import annotations

import contextlib
import logging
import math
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

try:  # PySpark 4.2: read limits (admission control) and Trigger.AvailableNow
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxBytes,
        ReadMaxFiles,
        SupportsTriggerAvailableNow,
    )

    AVAILABLE_NOW: tuple[type, ...] = (SupportsTriggerAvailableNow,)
except ImportError:  # PySpark 4.0, 4.1: Spark asks latestOffset() with no start and no limit
    AVAILABLE_NOW = ()

import natsobj
from natsobj.changefeed import cursor_after_recreation
from natsobj.cursors import ChangeCursor
from natsobj.errors import BucketRecreated, DigestMismatch, ObjectChanged, ObjectNotFound
from natsobj.model import ObjectInfo, StoreStatus
from natsobj.spark.arrowio import spark_arrow_schema
from natsobj.spark.decode import decode, object_format
from natsobj.spark.errors import CheckpointOfAnotherBucket
from natsobj.spark.offsets import as_offset, cursor_of
from natsobj.spark.options import BINARY
from natsobj.spark.reader import BINARY_PARTITION_BYTES, SPILL_BYTES
from natsobj.spark.storage import open_store
from natsobj.spark.stream_options import StreamOptions

log = logging.getLogger("natsobj.spark")

# Whether Spark passes the source a read limit: without, each micro-batch takes every change
# there is, and Trigger.AvailableNow runs one batch of what was there when the query started.
READ_LIMITS = bool(AVAILABLE_NOW)

SCAN_PAGE = 1024
# Objects per input partition at most, and partitions per batch at least (when there are that
# many objects), so small files are still fetched by several executors at once.
PARTITION_OBJECTS = 64
MIN_PARTITIONS = 4
# With nothing selected, a scan that crossed this many other records still moves the offset
# on (an empty batch), so a busy bucket with a narrow glob is not rescanned every trigger.
SKIP_AHEAD_RECORDS = 10_000


class ReplacedSincePlanned(UserWarning):
    """Objects of a batch were overwritten or deleted before a task read them: skipped."""


@dataclass(frozen=True)
class PlannedObject:
    """One meta record a batch covers: the version a task must read, or a delete."""

    name: str
    sequence: int
    nuid: str
    size: int
    digest: str
    mtime: datetime | None
    deleted: bool

    @classmethod
    def of(cls, info: ObjectInfo) -> PlannedObject:
        return cls(
            info.name,
            info.sequence or 0,
            info.nuid,
            info.size,
            info.digest,
            info.mtime,
            info.deleted,
        )


@dataclass
class PlannedPartition(InputPartition):
    objects: tuple[PlannedObject, ...]


@dataclass(frozen=True)
class Scan:
    """What a scan of the meta stream after ``start`` found: the selected records, and the
    offset that covers them (and the unselected records around them)."""

    objects: tuple[PlannedObject, ...]
    end: int


@dataclass(frozen=True)
class Budget:
    objects: int | None = None
    bytes: int | None = None

    @classmethod
    def of(cls, opts: StreamOptions, limit: ReadLimit | None) -> Budget:
        """The engine's ReadAllAvailable overrides the options (Trigger.AvailableNow, Once)."""
        if AVAILABLE_NOW and isinstance(limit, ReadAllAvailable):
            return cls()
        return cls(opts.max_objects, opts.max_bytes)


UNLIMITED = Budget()


def scan(
    store: natsobj.ObjectStore,
    opts: StreamOptions,
    start: int,
    *,
    until: int | None = None,
    budget: Budget = UNLIMITED,
) -> Scan:
    """Selected meta records in (start, until], in sequence order, within ``budget``.

    The end offset covers every record looked at, selected or not, so the next batch does not
    scan them again; with nothing selected it stays at ``start`` (no empty batch) unless the
    scan crossed ``SKIP_AHEAD_RECORDS`` records."""
    selected: list[PlannedObject] = []
    used_bytes = 0
    cursor = start  # every meta record up to here has been looked at
    scanned = 0
    while until is None or cursor < until:
        page = store.changes(cursor, limit=SCAN_PAGE, include_deletes=True)
        for info in page:
            sequence = info.sequence or 0
            if until is not None and sequence > until:
                cursor = until
                break
            if _wanted(opts, info):
                full = budget.objects is not None and len(selected) >= budget.objects
                over = budget.bytes is not None and used_bytes + info.size > budget.bytes
                if full or (over and selected):
                    return Scan(tuple(selected), sequence - 1)
                selected.append(PlannedObject.of(info))
                used_bytes += info.size
            scanned += 1
            cursor = sequence
        if page.last_sequence <= cursor:
            break
        # unreadable records are skipped by changes() but still count as looked at
        cursor = page.last_sequence if until is None else min(page.last_sequence, until)
    if selected or scanned >= SKIP_AHEAD_RECORDS:
        return Scan(tuple(selected), cursor)
    return Scan((), start)


def _wanted(opts: StreamOptions, info: ObjectInfo) -> bool:
    if info.is_link or (info.deleted and not opts.include_deletes):
        return False
    return opts.selects(info.name)


def group(objects: tuple[PlannedObject, ...]) -> list[PlannedPartition]:
    """Contiguous runs of about equal count, none over 64 MiB (unless one object is)."""
    if not objects:
        return []
    total = sum(o.size for o in objects)
    count = max(
        math.ceil(total / BINARY_PARTITION_BYTES),
        math.ceil(len(objects) / PARTITION_OBJECTS),
        min(len(objects), MIN_PARTITIONS),
    )
    per = math.ceil(len(objects) / count)
    groups: list[list[PlannedObject]] = []
    filled = 0
    for obj in objects:
        if not groups or len(groups[-1]) >= per or filled + obj.size > BINARY_PARTITION_BYTES:
            groups.append([])
            filled = 0
        groups[-1].append(obj)
        filled += obj.size
    return [PlannedPartition(tuple(g)) for g in groups]


class NatsObjStreamReader(DataSourceStreamReader, *AVAILABLE_NOW):  # type: ignore[misc]
    def __init__(self, opts: StreamOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema
        self._available_now: int | None = None  # the last sequence Trigger.AvailableNow reads
        # The end of the last batch Spark planned or committed, where the next one starts:
        # what a PySpark before 4.2 does not pass to latestOffset().
        self._last_end: dict | None = None
        if not READ_LIMITS and (opts.max_objects is not None or opts.max_bytes is not None):
            log.warning(
                "natsobj stream: bucket %r: maxObjectsPerTrigger and maxBytesPerTrigger need "
                "PySpark 4.2 or newer; on this PySpark each micro-batch takes every change "
                "there is",
                opts.bucket,
            )

    # -- driver: offsets and planning -------------------------------------------------------------

    def initialOffset(self) -> dict:
        """Where a new query starts. The meta stream keeps one record per name, so earliest
        (every change kept) and current (each object's current version) start alike, at 0."""
        with open_store(self.opts.source) as store:
            status = store.status()
        return as_offset(ChangeCursor.starting_at(self.opts.starting, status))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_objects is not None:
            return ReadMaxFiles(self.opts.max_objects)
        if self.opts.max_bytes is not None:
            return ReadMaxBytes(self.opts.max_bytes)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        with open_store(self.opts.source) as store:
            self._available_now = store.status().last_sequence

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        """The end of the next batch: from ``start`` within ``limit``. A PySpark before 4.2
        gives neither, and a batch then takes every change there is (no admission control:
        ``maxObjectsPerTrigger`` and ``maxBytesPerTrigger`` need PySpark 4.2); it starts where
        the last batch this reader saw ended, so a change the glob does not select still
        makes no batch (the first batch of a run, not knowing that end, ends at the last one)."""
        with open_store(self.opts.source) as store:
            status = store.status()
            if start is None:
                if self._last_end is None:
                    return _offset(status.last_sequence, status)
                start = self._last_end
            first = self._resume(start, status)
            # Bounded by what is there now, so a scan never chases a busy bucket.
            until = self._available_now
            if until is None:
                until = status.last_sequence
            found = scan(
                store,
                self.opts,
                first,
                until=until,
                budget=Budget.of(self.opts, limit) if READ_LIMITS else UNLIMITED,
            )
        return _offset(found.end, status)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        self._last_end = end
        with open_store(self.opts.source) as store:
            status = store.status()
            # Both checked: a batch replayed from the checkpoint, or the first batch of the
            # bucket that replaced the start's (onRecreated=restart: from its beginning).
            first, last = self._resume(start, status), self._resume(end, status)
            if last <= first:
                return []
            found = scan(store, self.opts, first, until=last)
        log.info(
            "natsobj stream: batch (%d, %d] of bucket %r plans %d objects",
            first,
            last,
            self.opts.bucket,
            len(found.objects),
        )
        return list(group(found.objects))

    def commit(self, end: dict) -> None:
        """Nothing to release: the offset lives in Spark's checkpoint, not in the server."""
        self._last_end = end

    def _resume(self, offset: dict, status: StoreStatus) -> int:
        """The meta sequence ``offset`` stands for in the bucket ``status`` was read from. An
        offset of an earlier bucket of that name fails the query with
        ``CheckpointOfAnotherBucket``, or with onRecreated=restart stands for the new
        bucket's beginning (the core's ``cursor_after_recreation``)."""
        try:
            _check_same_bucket(offset, status)
        except CheckpointOfAnotherBucket as exc:
            restart = cursor_after_recreation(exc, self.opts.on_recreated)
            log.warning(
                "natsobj stream: %s; onRecreated=restart: reading the new bucket from its "
                "beginning",
                exc.message,
            )
            return restart.sequence
        return _sequence(offset)

    # -- executors --------------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[tuple] | Iterator[pa.RecordBatch]:
        if not isinstance(partition, PlannedPartition):
            return iter(())
        if self.opts.source.layout == BINARY:
            return self._binary_rows(partition)
        return self._table_batches(partition)

    def _binary_rows(self, partition: PlannedPartition) -> Iterator[tuple]:
        with open_store(self.opts.source) as store, SkipCounter(self.opts.bucket) as skipped:
            for obj in partition.objects:
                if obj.deleted:
                    yield (obj.name, 0, obj.mtime, None, None)
                    continue
                with contextlib.ExitStack() as stack:
                    source = fetch(
                        store,
                        obj,
                        stack,
                        spill=False,
                        allow_missing_digest=self.opts.source.allow_missing_digest,
                    )
                    if source is None:
                        skipped.add(obj)
                        continue
                    assert not isinstance(source, str)  # without spill: in memory, not a path
                    yield (obj.name, obj.size, obj.mtime, obj.digest, source.read())

    def _table_batches(self, partition: PlannedPartition) -> Iterator[pa.RecordBatch]:
        target = spark_arrow_schema(self.schema)
        with open_store(self.opts.source) as store, SkipCounter(self.opts.bucket) as skipped:
            for obj in partition.objects:
                fmt = object_format(obj.name, self.opts.source.object_format)
                with contextlib.ExitStack() as stack:
                    source = fetch(
                        store,
                        obj,
                        stack,
                        spill=True,
                        allow_missing_digest=self.opts.source.allow_missing_digest,
                    )
                    if source is None:
                        skipped.add(obj)
                        continue
                    yield from decode(
                        source, fmt, target, name=obj.name, options=self.opts.source.file_format
                    )


def fetch(
    store: natsobj.ObjectStore,
    obj: PlannedObject,
    stack: contextlib.ExitStack,
    *,
    spill: bool,
    allow_missing_digest: bool,
) -> pa.NativeFile | str | None:
    """The planned version's bytes, whole and digest-checked (large ones spooled to a temp file
    when ``spill``), or None when that version was replaced or deleted: never a mix."""
    try:
        with store.get(obj.name, allow_missing_digest=allow_missing_digest) as reader:
            if reader.info.nuid != obj.nuid:
                return None
            if not spill or obj.size <= SPILL_BYTES:
                return pa.BufferReader(reader.read())
            path = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "object"
            with path.open("wb") as handle:
                for chunk in reader:
                    handle.write(chunk)
            return str(path)
    except (ObjectNotFound, ObjectChanged):
        return None
    except DigestMismatch:
        # The chunks of the planned version were purged and replaced under us.
        if store.get_info(obj.name, include_deleted=True).nuid != obj.nuid:
            return None
        raise


class SkipCounter:
    """Counts planned objects a task skipped and reports them once, when the task ends."""

    def __init__(self, bucket: str) -> None:
        self.bucket = bucket
        self.names: list[str] = []

    def add(self, obj: PlannedObject) -> None:
        self.names.append(obj.name)

    def __enter__(self) -> SkipCounter:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.names:
            return
        message = (
            f"natsobj stream: bucket {self.bucket!r}: skipped {len(self.names)} object(s) "
            f"replaced or deleted after the batch was planned: {self.names[:10]}; their newer "
            "versions (or deletes) come in a later batch"
        )
        log.warning(message)
        warnings.warn(message, ReplacedSincePlanned, stacklevel=2)


def _sequence(offset: dict) -> int:
    return int(offset.get("sequence", 0))


def _offset(sequence: int, status: StoreStatus) -> dict:
    return as_offset(replace(ChangeCursor.start_of(status), sequence=sequence))


def _check_same_bucket(offset: dict, status: StoreStatus) -> None:
    """The core rule (``ChangeCursor.check``), told as the checkpoint's problem."""
    try:
        cursor_of(offset).check(status)
    except BucketRecreated as exc:
        raise CheckpointOfAnotherBucket(
            f"the query's checkpoint is stale: {exc.message}", bucket=status.bucket
        ) from None
