"""Errors of the Spark data source: each says which bucket and prefix, and what to do next."""

from __future__ import annotations

from typing import Any

from natsobj.docs import doc_url
from natsobj.errors import BucketRecreated, NatsObjError


class SparkSourceError(NatsObjError):
    """Ends the message with a full stop so the appended hint reads as its own sentence."""

    def __init__(self, message: str, **where: Any) -> None:
        super().__init__(message if message.endswith((".", "!", "?")) else message + ".", **where)


class BadSparkOption(SparkSourceError, ValueError):
    """An option of ``format("natsobj")`` is missing or has a value that cannot work."""

    hint = f"See the option reference: {doc_url('spark', 'options')}"


class CatalogTableUnsupported(SparkSourceError):
    """Spark (through 4.3) keeps a catalog table's OPTIONS in the catalog but never hands them
    to a Python data source: ``PythonDataSourceV2.getTable`` drops the table's properties and
    the source is built from the query's own options, which a ``SELECT`` or ``INSERT`` on the
    table does not have. A table created with ``CREATE TABLE ... USING natsobj`` or
    ``saveAsTable`` can therefore not be read or written; refusing it up front beats a table
    that fails later with a missing-bucket message."""

    hint = (
        "Use a temporary view, which keeps its options: CREATE TEMPORARY VIEW t USING natsobj "
        "OPTIONS (bucket '...', path '...', url '...'), or "
        'spark.read.format("natsobj").options(...).load(...).createOrReplaceTempView("t").'
    )


class DatasetExists(SparkSourceError):
    hint = "Use mode 'overwrite' or 'append', or 'ignore' to keep the existing dataset."


class DatasetNotFound(SparkSourceError):
    hint = "Write it first, or check the bucket and prefix (`natsobj ls BUCKET PREFIX/`)."


class SchemaMismatch(SparkSourceError):
    hint = "Append needs the same columns and types; use mode 'overwrite' to change the schema."


class DatasetChanged(SparkSourceError):
    hint = (
        "A newer write deleted parts this read was planned on. Re-run the read, or keep more "
        "generations with option retain_generations."
    )


class WriteAborted(SparkSourceError):
    hint = "Spark aborted the write after another task failed; see that task's error."


class EmbeddedServerUnreachable(SparkSourceError):
    """A task cannot reach the embedded server the driver resolved ``embedded`` to."""

    hint = (
        "An embedded server listens on the driver machine's loopback only. On a cluster, set "
        "option url to a NATS server every executor can reach, e.g. nats://nats.internal:4222 "
        "(`natsobj serve --cluster 3` runs one for trying)."
    )


class CheckpointOfAnotherBucket(SparkSourceError, BucketRecreated):
    """A streaming query's checkpoint was written against a bucket of this name that has been
    deleted since: its offsets are sequences of a stream that is gone. The core's
    ``BucketRecreated``, with what to do about a checkpoint."""

    hint = (
        "Delete the query's checkpoint directory (or give the query a new one) to read the "
        "new bucket from option startingSequence, or set option onRecreated to restart to "
        "read it from its beginning."
    )
