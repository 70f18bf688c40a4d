"""PySpark DataFrames go through the ``natsobj`` Spark data source, executor to NATS.

A dataset is a prefix holding ``_manifest.json`` plus one object per part, so nothing is
collected to the driver in either direction; the manifest's info stands for the dataset.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dagster import TableColumn, TableSchema

from dagster_natsobj.handlers import Handler, Stored, Target, loaded_class
from natsobj.errors import ObjectNotFound

MANIFEST = "_manifest.json"


class SparkHandler(Handler):
    format = "spark"
    type_name = "pyspark.sql.DataFrame"

    def classes(self) -> tuple[type, ...]:
        cls = loaded_class("pyspark.sql", "DataFrame")
        return (cls,) if cls else ()

    def save(self, target: Target, value: Any, metadata: Mapping[str, str]) -> Stored:
        from natsobj.spark import write_dataframe

        manifest = write_dataframe(value, _store_url(target), target.bucket, target.name)
        info = target.store.get_info(manifest_name(target.name))
        parts = manifest.get("parts") or []
        return Stored(
            info,
            row_count=int(manifest["num_rows"]),
            schema=spark_table_schema(value.schema),
            extra={
                "parts": len(parts),
                "size": sum(int(p.get("size", 0)) for p in parts if isinstance(p, dict)),
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
        return read_dataframe(spark, _store_url(target), target.bucket, target.name)

    def exists(self, target: Target) -> bool:
        try:
            info = target.store.get_info(manifest_name(target.name))
        except ObjectNotFound:
            return False
        return not info.deleted


def manifest_name(prefix: str) -> str:
    return f"{prefix.rstrip('/')}/{MANIFEST}"


def spark_table_schema(schema: Any) -> TableSchema:
    return TableSchema(
        columns=[TableColumn(name=f.name, type=f.dataType.simpleString()) for f in schema.fields]
    )


def _store_url(target: Target) -> Any:
    """What executors connect with: the resolved settings, so `embedded` means this server."""
    return target.settings.resolved()
