"""Output metadata: where the object is and what it holds, in Dagster's standard keys."""

from __future__ import annotations

from typing import Any

from dagster import MetadataValue

from dagster_natsobj.handlers import Handler, Stored, Target
from dagster_natsobj.versions import VERSION_ID_KEY


def output_metadata(target: Target, handler: Handler, stored: Stored) -> dict[str, Any]:
    info = stored.info
    meta: dict[str, Any] = {
        "dagster/uri": MetadataValue.text(target.uri),
        "bucket": MetadataValue.text(target.bucket),
        "object": MetadataValue.text(target.name),
        "format": MetadataValue.text(handler.format),
        "python_type": MetadataValue.text(handler.type_name),
        "size": MetadataValue.int(int(stored.extra.get("size", info.size))),
        "chunks": MetadataValue.int(info.chunks),
        "digest": MetadataValue.text(info.digest),
        "nuid": MetadataValue.text(info.nuid),
        # the same id, in the word an input pins it by (dagster_natsobj.versions)
        VERSION_ID_KEY: MetadataValue.text(info.nuid),
    }
    if info.mtime is not None:
        meta["mtime"] = MetadataValue.timestamp(info.mtime)
    if info.expires is not None:  # the server deletes the object then (its TTL or a rule)
        meta["expires"] = MetadataValue.timestamp(info.expires)
    if stored.row_count is not None:
        meta["dagster/row_count"] = MetadataValue.int(stored.row_count)
    if stored.schema is not None:
        meta["dagster/column_schema"] = MetadataValue.table_schema(stored.schema)
    for key in ("parts", "generation"):
        if key in stored.extra:
            meta[key] = MetadataValue.int(int(stored.extra[key]))
    return meta
