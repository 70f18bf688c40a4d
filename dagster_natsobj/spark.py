"""PySpark DataFrames go through the ``natsobj`` Spark data source, executor to NATS.

A dataset is a prefix holding ``_manifest.json`` plus one Parquet object per part, so nothing
is collected to the driver in either direction; the manifest's info stands for the dataset.
``natsobj.spark`` imports pyspark, so it is only imported when a DataFrame is involved.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from dagster import TableColumn, TableSchema

from dagster_natsobj.handlers import TTL, Handler, Stored, Target, loaded_class
from natsobj.errors import ObjectNotFound
from natsobj.local.embedded_rule import resolve_server

log = logging.getLogger("dagster_natsobj")


class SparkHandler(Handler):
    format = "spark"
    type_name = "pyspark.sql.DataFrame"

    def classes(self) -> tuple[type, ...]:
        cls = loaded_class("pyspark.sql", "DataFrame")
        return (cls,) if cls else ()

    def save(self, target: Target, value: Any, metadata: Mapping[str, str]) -> Stored:
        if TTL in metadata:
            # Parts written before the manifest would expire before it, leaving a manifest
            # that names missing parts: a dataset is kept until it is overwritten instead.
            log.warning(
                "ttl is not applied to the Spark dataset at %s: it is kept until overwritten",
                target.uri,
            )
        from natsobj.spark import write_dataframe
        from natsobj.spark.manifest import manifest_name

        manifest = write_dataframe(
            value, resolve_server(target.settings), target.bucket, target.name, mode="overwrite"
        )
        return Stored(
            target.store.get_info(manifest_name(target.name)),
            row_count=int(manifest["num_rows"]),
            schema=spark_table_schema(value.schema),
            extra={
                "size": int(manifest["num_bytes"]),
                "parts": int(manifest["num_parts"]),
                "generation": int(manifest["generation"]),
            },
        )

    def load(self, target: Target) -> Any:
        from pyspark.sql import SparkSession

        from natsobj.spark import read_dataframe

        if not self.exists(target):
            raise ObjectNotFound(
                "no Spark dataset (_manifest.json) under this prefix",
                bucket=target.bucket,
                name=target.name,
            )
        spark = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        return read_dataframe(spark, resolve_server(target.settings), target.bucket, target.name)

    def exists(self, target: Target) -> bool:
        from natsobj.spark.manifest import manifest_name

        try:
            target.store.get_info(manifest_name(target.name))
        except ObjectNotFound:
            return False
        return True


def spark_table_schema(schema: Any) -> TableSchema:
    return TableSchema(
        columns=[TableColumn(name=f.name, type=f.dataType.simpleString()) for f in schema.fields]
    )
