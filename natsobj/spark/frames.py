"""What the Dagster IO manager and the example DAGs call: one-line DataFrame writes and reads.

These run in the driver process, so they check options and the dataset there and raise plain
Python exceptions before Spark starts a job."""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from natsobj.parsing import format_duration
from natsobj.settings import ConnectionSettings
from natsobj.spark.errors import BadSparkOption, DatasetNotFound
from natsobj.spark.options import BINARY, SourceOptions, connection_settings, settings_options
from natsobj.spark.source import FORMAT_NAME, NatsObjDataSource
from natsobj.spark.storage import load_plan, open_store, read_manifest
from natsobj.spark.writer import check_target

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

WRITE_MODES = ("overwrite", "append", "errorifexists", "error", "ignore")


def register(spark: SparkSession) -> None:
    """Make ``format("natsobj")`` available in this session (auto-discovery does the same when
    the ``pyspark_natsobj`` module is installed). Registering twice is harmless: PySpark 4.0
    refuses a second registration of a name auto-discovery registered already, and the source
    is then there."""
    from pyspark.errors import AnalysisException

    try:
        spark.dataSource.register(NatsObjDataSource)
    except AnalysisException as exc:
        if exc.getCondition() != "DATA_SOURCE_ALREADY_EXISTS":
            raise


def spark_options(
    store_url: str | ConnectionSettings | None, bucket: str, prefix: str, **options: Any
) -> dict[str, str]:
    """Options for ``format("natsobj")``: credentials as separate options so Spark redacts them."""
    settings = (
        store_url
        if isinstance(store_url, ConnectionSettings)
        else connection_settings({"url": store_url} if store_url is not None else {})
    )
    if settings.embedded_dir is not None:
        # Pin `embedded` to this process's data directory: Spark's workers were started with
        # the environment and working directory the JVM had, which may differ by now.
        form = settings.servers[0].partition(":")[0]  # "embedded" or "embedded-if-running"
        settings = replace(settings, servers=[f"{form}://{settings.embedded_dir}"])
    out = {**settings_options(settings), "bucket": bucket, "path": prefix}
    out.update({k: _option_text(v) for k, v in options.items() if v is not None})
    return out


def write_dataframe(
    df: DataFrame,
    store_url: str | ConnectionSettings | None,
    bucket: str,
    prefix: str,
    mode: str = "errorifexists",
    **options: Any,
) -> dict[str, Any]:
    """Write ``df`` as a dataset and return its manifest (``num_rows``, ``parts``, ``schema``...).

    ``mode`` defaults to ``errorifexists``, as ``df.write`` does: replacing a dataset takes
    ``mode="overwrite"``.

    ``errorifexists`` and ``ignore`` are checked here and again at commit; two writers that
    commit in the same instant can still both succeed, the later manifest winning."""
    mode = mode.lower()
    if mode not in WRITE_MODES:
        raise BadSparkOption(f"unknown write mode {mode!r}; use one of {list(WRITE_MODES)}")
    if_exists = {"errorifexists": "error", "error": "error", "ignore": "ignore"}.get(mode)
    write_id = uuid.uuid4().hex
    opts = spark_options(
        store_url, bucket, prefix, write_id=write_id, if_exists=if_exists, **options
    )
    parsed = SourceOptions.parse(opts)
    with open_store(parsed, create=parsed.create_bucket) as store:
        existing = read_manifest(store, parsed.prefix)
    if existing is not None and if_exists == "ignore":
        return existing.as_dict()
    spark_mode = "overwrite" if mode == "overwrite" else "append"
    check_target(parsed, existing, df.schema, overwrite=spark_mode == "overwrite")
    register(df.sparkSession)
    df.write.format(FORMAT_NAME).mode(spark_mode).options(**opts).save()
    with open_store(parsed) as store:
        manifest = read_manifest(store, parsed.prefix)
    if manifest is None:
        raise DatasetNotFound(
            f"the write to {parsed.prefix!r} published no manifest", bucket=bucket
        )
    if manifest.write_id != write_id and if_exists != "ignore":
        warnings.warn(
            f"bucket {bucket!r}, prefix {parsed.prefix!r}: another writer committed generation "
            f"{manifest.generation} right after this write; returning its manifest",
            stacklevel=2,
        )
    return manifest.as_dict()


def read_dataframe(
    spark: SparkSession,
    store_url: str | ConnectionSettings | None,
    bucket: str,
    prefix: str,
    schema: StructType | str | None = None,
    **options: Any,
) -> DataFrame:
    """Read a dataset (or, with ``layout="binary"``, raw objects) as a DataFrame."""
    opts = spark_options(store_url, bucket, prefix, **options)
    parsed = SourceOptions.parse(opts)
    if parsed.layout != BINARY:
        with open_store(parsed) as store:
            load_plan(store, parsed)  # raises DatasetNotFound, warns when there is no manifest
    register(spark)
    reader = spark.read.format(FORMAT_NAME).options(**opts)
    if schema is not None:
        reader = reader.schema(schema)
    return reader.load()


def _option_text(value: Any) -> str:
    """An option value as the parser reads it back: ``bucket_placement={"tags": ["ssd"]}``
    as JSON, ``bucket_ttl=timedelta(days=7)`` as ``7d``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return json.dumps(dict(value))
    if isinstance(value, timedelta):
        return format_duration(value)
    return str(value)
