"""Errors of the Spark data source: each says which bucket and prefix, and what to do next."""

from __future__ import annotations

from natsobj.errors import NatsObjError


class BadSparkOption(NatsObjError, ValueError):
    """An option of ``format("natsobj")`` is missing or has a value that cannot work."""

    hint = "See the option reference in docs/spark.md."


class DatasetExists(NatsObjError):
    hint = "Use mode 'overwrite' or 'append', or 'ignore' to keep the existing dataset."


class DatasetNotFound(NatsObjError):
    hint = "Write it first, or check the bucket and prefix (`natsobj ls BUCKET PREFIX/`)."


class SchemaMismatch(NatsObjError):
    hint = "Append needs the same columns and types; use mode 'overwrite' to change the schema."


class DatasetChanged(NatsObjError):
    hint = (
        "A newer write deleted parts this read was planned on. Re-run the read, or keep more "
        "generations with option retain_generations."
    )
