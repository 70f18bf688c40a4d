"""Where each Dagster output lives in the bucket.

Object names double as paths in every other front end (CLI listings, fsspec, Spark prefixes),
so each segment is percent-escaped: a partition key with a slash, a ``..`` segment or a dynamic
step's ``[mapping]`` brackets can never change the shape of the path.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from urllib.parse import quote

from dagster import InputContext, MultiPartitionKey, OutputContext

# Characters common in asset keys and partition keys (dates, times, "us-east:1") stay readable.
_SAFE = "-_.~:=+,@ "

# Definition metadata that pins an asset to an object another system writes.
OBJECT_METADATA_KEY = "natsobj/object"
BUCKET_METADATA_KEY = "natsobj/bucket"
CONTENT_TYPE_METADATA_KEY = "natsobj/content_type"
# How long this asset's stored object lives (``"1h"``, ``"2d"``, seconds); overrides the IO
# manager's ``ttl``, so one intermediate asset can expire while its neighbours stay.
TTL_METADATA_KEY = "natsobj/ttl"


def escape_segment(segment: str) -> str:
    """Percent-escape one path segment; ``.`` and ``..`` are escaped as whole segments."""
    escaped = quote(str(segment), safe=_SAFE)
    if escaped in {"", ".", ".."}:
        return "".join(f"%{ord(c):02X}" for c in segment) or "%00"
    return escaped


def join(prefix: str, segments: Iterable[str]) -> str:
    """``prefix`` is the user's own path (slashes kept); segments are escaped."""
    parts = [p for p in prefix.strip("/").split("/") if p] if prefix else []
    parts.extend(escape_segment(s) for s in segments)
    return "/".join(parts)


def partition_segments(partition_key: str) -> list[str]:
    """Multi-partition keys become one segment per dimension, in Dagster's order (by name)."""
    if isinstance(partition_key, MultiPartitionKey):
        return [key for _, key in sorted(partition_key.keys_by_dimension.items())]
    return [partition_key]


def asset_object_name(prefix: str, key_path: Sequence[str], partition_key: str | None) -> str:
    segments = list(key_path)
    if partition_key is not None:
        segments += partition_segments(partition_key)
    return join(prefix, segments)


def op_output_object_name(prefix: str, identifier: Sequence[str]) -> str:
    """``identifier`` is Dagster's ``[run_id, step_key, output, mapping_key?]``."""
    return join(prefix, ["storage", *identifier])


def output_definition_metadata(context: InputContext | OutputContext) -> dict:
    """The definition metadata of the output that produced (or produces) the object."""
    if isinstance(context, InputContext):
        upstream = context.upstream_output
        return dict(upstream.definition_metadata or {}) if upstream is not None else {}
    return dict(context.definition_metadata or {})


def pinned_location(context: InputContext | OutputContext) -> tuple[str | None, str | None]:
    """(bucket, object) when the asset definition pins them, e.g. an observed source asset."""
    meta = output_definition_metadata(context)
    return _text(meta.get(BUCKET_METADATA_KEY)), _text(meta.get(OBJECT_METADATA_KEY))


def pinned_content_type(context: OutputContext) -> str | None:
    return _text(output_definition_metadata(context).get(CONTENT_TYPE_METADATA_KEY))


def pinned_ttl(context: OutputContext) -> str | None:
    """The output's own ``natsobj/ttl`` definition metadata, as written (parsed by the caller)."""
    return _text(output_definition_metadata(context).get(TTL_METADATA_KEY))


def _text(value: object) -> str | None:
    if value is None:
        return None
    return str(getattr(value, "value", value))
